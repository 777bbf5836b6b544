//! Prometheus export of the executor's metrics: one call installs the
//! recorder, then either mount [`metrics_router`] on your own axum router or
//! let [`install_prometheus_listener`] serve `/metrics` on a port of its own.

use std::{net::SocketAddr, time::Duration};

use axum::{Router, extract::State, http::header, response::IntoResponse, routing::get};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

/// Histogram buckets in seconds for attempt run time and queue wait: from
/// one millisecond (a cache write) to ten minutes (a report), roughly 1-2.5-5
/// per decade so a p99 is never more than one bucket off.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    600.0,
];

/// How often the histograms are drained when [`install_prometheus`] runs
/// the upkeep task itself.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// A [`PrometheusBuilder`] with [`LATENCY_BUCKETS`] on every `*_seconds`
/// histogram. Start from it to add global labels or a push gateway.
///
/// # Errors
/// Never with these constant buckets; the type is the exporter's.
pub fn prometheus_builder() -> Result<PrometheusBuilder, BuildError> {
    PrometheusBuilder::new().set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), LATENCY_BUCKETS)
}

/// Installs the process-wide Prometheus recorder with help texts
/// ([`executor_core::metrics::describe`]) and latency buckets, and returns the
/// handle that renders a scrape. Inside a tokio runtime it also spawns the
/// upkeep task that drains histograms every [`UPKEEP_INTERVAL`]; outside one,
/// call [`PrometheusHandle::run_upkeep`] yourself.
///
/// There is one recorder per process: call this once, at start-up, before
/// building the executor.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use executor_core::{Client, MemoryStorage, Namespace, TaskBuilder, TaskOptions};
///
/// let handle = reliable_executor_admin::install_prometheus()?;
/// let app = axum::Router::new().merge(reliable_executor_admin::metrics_router(handle.clone()));
/// # let _ = app;
/// let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("shop")?);
/// TaskBuilder::new("send_mail", "ada", TaskOptions::new()).submit(&client).await?;
/// let scrape = handle.render();
/// assert!(scrape.contains("# HELP reliable_executor_submitted_total Tasks submitted"));
/// assert!(scrape.contains(r#"reliable_executor_submitted_total{task="send_mail",outcome="created"} 1"#));
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`BuildError::FailedToSetGlobalRecorder`] if a recorder is already installed.
pub fn install_prometheus() -> Result<PrometheusHandle, BuildError> {
    let handle = prometheus_builder()?.install_recorder()?;
    executor_core::metrics::describe();
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let upkeep = handle.clone();
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(UPKEEP_INTERVAL).await;
                upkeep.run_upkeep();
            }
        });
    }
    Ok(handle)
}

/// Installs the recorder and serves it on a listener of its own at `addr`
/// (any path answers with the scrape), for services that have no HTTP
/// server or want metrics on a separate port. Must be called inside a tokio
/// runtime, or it starts a thread with its own.
///
/// # Errors
/// A recorder is already installed, or the address cannot be bound.
pub fn install_prometheus_listener(addr: SocketAddr) -> Result<(), BuildError> {
    prometheus_builder()?.with_http_listener(addr).install()?;
    executor_core::metrics::describe();
    Ok(())
}

/// A router with `GET /metrics` rendering `handle` in the Prometheus text
/// format. Merge it into the service's own router.
pub fn metrics_router(handle: PrometheusHandle) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(handle)
}

async fn scrape(State(handle): State<PrometheusHandle>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render())
}
