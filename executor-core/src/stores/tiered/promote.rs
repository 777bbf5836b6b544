//! Promotion: moving tasks that come within the horizon from cold to hot.

use metrics::{counter, histogram};

use super::TieredStorage;
use crate::{
    Error, Namespace, Result,
    metrics::{PROMOTED, PROMOTION_LAG_SECONDS, PROMOTION_REFUSED},
    storage::TierStorage,
};

/// A point in one task's move where a test can simulate a crash
/// ([`TieredStorage::crash_after`]).
#[cfg(feature = "testing")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromoteStep {
    /// After the insert into hot, before the delete from cold.
    Inserted,
}

impl<H: TierStorage, C: TierStorage> TieredStorage<H, C> {
    /// Moves up to one batch of tasks due within the horizon from cold to
    /// hot; returns how many moved. Each move: insert into hot (a no-op if it
    /// is there already), then delete from cold if its fence is unchanged.
    ///
    /// A task the hot store refuses as invalid or corrupt (a record damaged in
    /// the cold store) stays where it is, is logged, and does not stop the
    /// others from moving (no neighbour harm).
    ///
    /// # Errors
    /// Store failures; what moved before the failure stays moved.
    pub async fn promote(&self, ns: &Namespace) -> Result<usize> {
        let now = self.cold.now(ns).await?;
        let due = self.cold.due_before(ns, now.saturating_add(self.horizon), self.promote_batch).await?;
        let mut moved = 0;
        for record in due {
            let id = record.id.clone();
            let fence = record.fence;
            let entered_horizon = record.due_at.saturating_sub(self.horizon);
            match self.hot.import(ns, record).await {
                Ok(_) => {}
                Err(e @ (Error::Invalid { .. } | Error::Corrupt { .. })) => {
                    tracing::error!(error = %e, task.id = %id, "the hot store refuses this cold task; it stays cold (inspect or delete it)");
                    counter!(PROMOTION_REFUSED).increment(1);
                    continue;
                }
                Err(e) => return Err(e),
            }
            #[cfg(feature = "testing")]
            self.crash_point(PromoteStep::Inserted)?;
            if !self.cold.remove(ns, &id, fence).await? {
                // The cold copy changed after we read it (cancelled): follow it.
                if let Some(cold) = self.cold.get(ns, &id).await?
                    && cold.state.is_terminal()
                {
                    let _ = self.hot.cancel(ns, &id).await;
                    continue;
                }
            }
            moved += 1;
            counter!(PROMOTED).increment(1);
            histogram!(PROMOTION_LAG_SECONDS).record(now.since(entered_horizon).as_secs_f64());
        }
        if moved > 0 {
            tracing::debug!(moved, "promoted tasks from the cold store");
        }
        Ok(moved)
    }

    #[cfg(feature = "testing")]
    fn crash_point(&self, step: PromoteStep) -> Result<()> {
        let armed = self.crash_after.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        match armed {
            Some(s) if s == step => Err(Error::storage(format!("injected crash after {step:?}"), true)),
            other => {
                *self.crash_after.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = other;
                Ok(())
            }
        }
    }

    /// Test hook (feature `testing`): the next promotion stops with an error
    /// right after `step`, as if the process died there.
    #[cfg(feature = "testing")]
    pub fn crash_after(&self, step: super::PromoteStep) {
        *self.crash_after.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(step);
    }
}
