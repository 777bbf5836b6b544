//! One heartbeat call per tick renews every in-flight lease; a lost lease or
//! a cancel request reaches the handler through its cancellation token.

use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::run::{Shared, StopReason};
use crate::{
    TaskId,
    storage::{ExecutorStorage, Lease},
};

pub(super) async fn run<S: ExecutorStorage>(shared: Arc<Shared<S>>, stop: CancellationToken) {
    let config = shared.config().clone();
    let mut tick = tokio::time::interval(config.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let leases: Vec<Lease> = shared.in_flight().values().map(|f| f.lease.clone()).collect();
        if leases.is_empty() {
            continue;
        }
        let sent_at = Instant::now();
        let storage = shared.executor.client().storage_arc();
        match storage.heartbeat(shared.executor.namespace(), &leases, config.lease).await {
            Ok(report) => {
                let lost: std::collections::HashSet<&TaskId> = report.lost.iter().collect();
                {
                    let mut map = shared.in_flight();
                    for lease in &leases {
                        if let Some(f) = map.get_mut(&lease.id)
                            && !lost.contains(&lease.id)
                            && f.lease.fence == lease.fence
                        {
                            f.lease_expires = sent_at + config.lease;
                        }
                    }
                }
                let cancel: std::collections::HashSet<&TaskId> = report.cancel_requested.iter().collect();
                // The report names tasks; the leases sent name the attempts,
                // so only the attempt this heartbeat spoke for is stopped.
                for lease in &leases {
                    if lost.contains(&lease.id) {
                        if shared.stop_attempt(&lease.id, lease.fence, StopReason::LeaseLost) {
                            tracing::warn!(task.id = %lease.id, fence = lease.fence, "lease lost; stopping the attempt");
                        } else {
                            // The attempt had already returned: its finish
                            // raced this heartbeat. Nothing was stopped.
                            tracing::debug!(task.id = %lease.id, fence = lease.fence, "lease reported lost after the attempt returned");
                        }
                    } else if cancel.contains(&lease.id)
                        && shared.stop_attempt(&lease.id, lease.fence, StopReason::CancelRequested)
                    {
                        tracing::info!(task.id = %lease.id, "cancel requested; asking the handler to stop");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, leases = leases.len(), "heartbeat failed"),
        }
        // A lease that could not be renewed in time may be reaped and run
        // elsewhere: stop its attempt before that can happen (no two live attempts).
        let now = Instant::now();
        let expiring: Vec<Lease> = shared
            .in_flight()
            .values()
            .filter(|f| f.reason.is_none() && !f.finishing && f.lease_expires <= now + config.heartbeat)
            .map(|f| f.lease.clone())
            .collect();
        for lease in &expiring {
            if shared.stop_attempt(&lease.id, lease.fence, StopReason::LeaseLost) {
                tracing::error!(task.id = %lease.id, "lease could not be renewed in time; stopping the attempt");
            }
        }
    }
}
