//! Shared by the integration tests: an executor on MemoryStorage with a
//! handler that succeeds and one that fails until told otherwise.

pub(crate) mod corrupt;
pub(crate) mod no_schedules;

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::{Body, to_bytes},
    http::{Request, StatusCode, header},
};
use executor_core::{Executor, Handler, MemoryStorage, RetryPolicy, TaskError, TaskOptions};
use tower::ServiceExt as _;

pub(crate) type BoxResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// `echo` completes; `sync_crm` fails (no retries) while `broken` is set;
/// `import_feed` always fails and retries in an hour.
pub(crate) async fn executor(namespace: &str, broken: Arc<AtomicBool>) -> BoxResult<Executor<MemoryStorage>> {
    executor_on(MemoryStorage::new(), namespace, broken).await
}

/// [`executor`] on another store.
pub(crate) async fn executor_on<S: executor_core::storage::ExecutorStorage>(
    storage: S,
    namespace: &str,
    broken: Arc<AtomicBool>,
) -> BoxResult<Executor<S>> {
    let executor = Executor::builder(storage)
        .namespace(namespace)
        .concurrency(4)
        .handler(Handler::new("echo", |_: serde_json::Value, _ctx| async {}))
        .handler(
            Handler::new("sync_crm", move |customer: u64, _ctx| {
                let broken = Arc::clone(&broken);
                async move {
                    if broken.load(Ordering::SeqCst) {
                        Err(TaskError::abort(format!(
                            "CRM rejected customer {customer}: <field> `email` missing"
                        )))
                    } else {
                        Ok(())
                    }
                }
            })
            .options(TaskOptions::new().retry_limit(0)),
        )
        .handler(
            Handler::new("import_feed", |url: String, _ctx| async move {
                Err::<(), _>(TaskError::retry(format!("GET {url}: 502 Bad Gateway")))
            })
            .options(TaskOptions::new().retry_limit(5).retry(RetryPolicy::fixed(Duration::from_secs(3600)))),
        )
        .build()
        .await?;
    Ok(executor)
}

/// Polls `check` every 20 ms until it returns true or `timeout` passes.
pub(crate) async fn eventually<F, Fut>(what: &str, timeout: Duration, mut check: F) -> BoxResult
where
    F: FnMut() -> Fut,
    Fut: Future<Output = BoxResult<bool>>,
{
    let start = tokio::time::Instant::now();
    loop {
        if check().await? {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(format!("timed out after {timeout:?} waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One request through the router: status, content type and body text.
pub(crate) async fn call(
    app: &Router,
    method: &str,
    uri: &str,
    json_body: Option<&str>,
) -> BoxResult<(StatusCode, String, String)> {
    let mut req = Request::builder().method(method).uri(uri);
    let body = match json_body {
        Some(b) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(b.to_owned())
        }
        None => Body::empty(),
    };
    let resp = app.clone().oneshot(req.body(body)?).await?;
    let status = resp.status();
    let ctype =
        resp.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let bytes = to_bytes(resp.into_body(), 64 << 20).await?;
    Ok((status, ctype, String::from_utf8(bytes.to_vec())?))
}

/// A JSON request: status and parsed body.
pub(crate) async fn json(
    app: &Router,
    method: &str,
    uri: &str,
    body: Option<&str>,
) -> BoxResult<(StatusCode, serde_json::Value)> {
    let (status, ctype, text) = call(app, method, uri, body).await?;
    if !ctype.starts_with("application/json") {
        return Err(format!("{method} {uri}: {status} with content type `{ctype}`, not JSON: {text}").into());
    }
    Ok((status, serde_json::from_str(&text)?))
}
