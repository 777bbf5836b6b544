//! An HTTP service in the shape of the seeds': its own endpoints submit
//! tasks, and it mounts the admin API and dashboard under `/admin` and
//! Prometheus metrics at `/metrics`. Walkthrough: `docs/service.md`.
//!
//! ```sh
//! cargo run --example service                                  # MemoryStorage, port 8080
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --example service -- --storage redis
//! MYSQL_URL=mysql://root@127.0.0.1:3306/test cargo run --example service -- --storage mysql --port 8081
//! POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo run --example service -- --storage postgres --port 8082
//! ```
//!
//! On PostgreSQL, `POST /api/orders` writes the order row and submits its
//! `process_order` task in one transaction: the task exists if and only if
//! the order does.
//!
//! Ctrl-C or SIGTERM: stops accepting requests, drains running tasks, gives
//! back leases of the rest, then exits.

use std::{
    collections::HashSet,
    net::SocketAddr,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{Json, Router, extract::State, http::StatusCode, routing::post};
use clap::Parser;
use executor_admin::ApiError;
use executor_any::AnyStorage;
use executor_core::{Executor, TaskId, prelude::*, shutdown_signal};
use tokio::sync::watch;

// ---- the application's state, given to the executor with `.data(..)` ----

/// The payment gateway's client (simulated). Handlers receive it as
/// `Data<PaymentGateway>`; it is cloned for every attempt, so it is a
/// handle, as a real HTTP client or database pool is.
#[derive(Clone, Debug)]
struct PaymentGateway {
    /// Amounts above this are declined.
    limit_cents: u64,
    /// Idempotency keys of the charges made: stands for the gateway's own
    /// record, so a re-run of a task that already charged does not charge twice.
    charged: Arc<Mutex<HashSet<String>>>,
}

impl PaymentGateway {
    fn new(limit_cents: u64) -> Self {
        Self { limit_cents, charged: Arc::default() }
    }

    /// Charges `order` once per `key`.
    async fn charge(&self, key: &str, order: &OrderParam) -> Result<(), String> {
        tokio::time::sleep(Duration::from_millis(50)).await; // the HTTP call
        if order.amount_cents > self.limit_cents {
            return Err(format!(
                "payment gateway declined order {}: amount {} over the limit",
                order.order_id, order.amount_cents
            ));
        }
        self.charged.lock().unwrap_or_else(PoisonError::into_inner).insert(key.to_owned());
        Ok(())
    }

    fn charges(&self) -> usize {
        self.charged.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// Sends notifications (here: logs them) and counts them.
#[derive(Clone, Debug, Default)]
struct Notifier {
    sent: Arc<AtomicU64>,
}

// ---- handlers ----

/// An order to pay for and ship.
#[derive(Debug, Serialize, Deserialize)]
struct OrderParam {
    order_id: u64,
    amount_cents: u64,
}

/// Pays for an order through the gateway, with the task id as the charge's
/// idempotency key. Amounts over 1,000.00 are declined, so those orders
/// retry, then land in the dead letter.
#[reliable_task(name = "process_order", retry_limit = 2, retry_interval = "1s", max_duration = "60s")]
async fn process_order(
    order: OrderParam,
    gateway: Data<PaymentGateway>,
    ctx: TaskContext,
) -> Result<(), TaskError> {
    gateway.charge(ctx.id().as_str(), &order).await.map_err(TaskError::retry)?;
    tracing::info!(order = order.order_id, attempt = ctx.attempt(), "order paid");
    Ok(())
}

/// A message for a user, sent later.
#[derive(Debug, Serialize, Deserialize)]
struct Notification {
    user: String,
    message: String,
}

/// Sends a notification.
#[reliable_task(name = "send_notification", retry_limit = 5, retry_interval = "10s")]
async fn send_notification(n: Notification, notifier: Data<Notifier>) {
    notifier.sent.fetch_add(1, Ordering::Relaxed);
    tracing::info!(user = %n.user, message = %n.message, "notification sent");
}

// ---- the service's own endpoints ----

#[derive(Debug, Deserialize)]
struct NewOrder {
    order_id: u64,
    amount_cents: u64,
}

#[derive(Debug, Deserialize)]
struct NewNotification {
    user: String,
    message: String,
    /// Seconds from now (default 30).
    delay_secs: Option<u64>,
}

#[derive(Debug, Serialize)]
struct Accepted {
    task_id: String,
}

/// `POST /api/orders`: one task per order, id `order_<id>_pay`, so a
/// repeated request for the same order is refused (409) instead of paying
/// twice. On PostgreSQL the order row and its task are written in one
/// transaction (`submit_in`): a crash or an error between the two leaves
/// neither, never an order without its task.
async fn create_order(
    State(executor): State<Executor<AnyStorage>>,
    Json(order): Json<NewOrder>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let param = OrderParam { order_id: order.order_id, amount_cents: order.amount_cents };
    let task_id = format!("order_{}_pay", order.order_id);
    let task = process_order::with(param).id(task_id.clone());
    let id = match executor.client().storage() {
        AnyStorage::Postgres(pg) => {
            let db = |e: sqlx::Error| executor_core::Error::storage(e, true);
            let mut tx = pg.pool().begin().await.map_err(db)?;
            let written = sqlx::query(
                "INSERT INTO shop_orders (order_id, amount_cents) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            )
            .bind(
                i64::try_from(order.order_id)
                    .map_err(|_| executor_core::Error::invalid("order_id", "too large"))?,
            )
            .bind(
                i64::try_from(order.amount_cents)
                    .map_err(|_| executor_core::Error::invalid("amount", "too large"))?,
            )
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            if written.rows_affected() == 0 {
                return Err(executor_core::Error::DuplicateId(TaskId::new(task_id)?).into());
            }
            let id = task.submit_in(executor.client(), &mut *tx).await?.id;
            tx.commit().await.map_err(db)?;
            id
        }
        _ => task.submit(&executor).await?.id,
    };
    Ok((StatusCode::ACCEPTED, Json(Accepted { task_id: id.into_string() })))
}

/// `POST /api/notifications`: delayed by `delay_secs`.
async fn create_notification(
    State(executor): State<Executor<AnyStorage>>,
    Json(n): Json<NewNotification>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let delay = Duration::from_secs(n.delay_secs.unwrap_or(30));
    let id = send_notification::with(Notification { user: n.user, message: n.message })
        .delay(delay)
        .submit(&executor)
        .await?
        .id;
    Ok((StatusCode::ACCEPTED, Json(Accepted { task_id: id.into_string() })))
}

// ---- wiring ----

#[derive(Debug, Parser)]
#[command(about = "Example HTTP service on the reliable executor")]
struct Args {
    /// Port to listen on (127.0.0.1).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    #[command(flatten)]
    store: examples::StoreArgs,
    /// Namespace (key prefix / tenant) of this application's tasks.
    #[arg(long, default_value = "shop")]
    namespace: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    serve(args.store.connect().await?, &args).await
}

async fn serve(storage: AnyStorage, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    if let AnyStorage::Postgres(pg) = &storage {
        // The application's own table, beside the executor's.
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS shop_orders (order_id BIGINT PRIMARY KEY, amount_cents BIGINT NOT NULL, \
             created_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        )
        .execute(pg.pool())
        .await?;
    }
    // The recorder first, so the executor's metrics land in it.
    let metrics = executor_admin::install_prometheus()?;
    // The handlers' state: `build` refuses to start if a handler's `Data<T>` is missing.
    let gateway = PaymentGateway::new(100_000);
    let notifier = Notifier::default();
    let executor = Executor::builder(storage)
        .namespace(&args.namespace)
        .concurrency(16)
        .data(gateway.clone())
        .data(notifier.clone())
        .build()
        .await?;

    let app = Router::new()
        .route("/api/orders", post(create_order))
        .route("/api/notifications", post(create_notification))
        .with_state(executor.clone())
        .nest("/admin", executor_admin::admin_router(&executor))
        .merge(executor_admin::metrics_router(metrics));

    let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, storage = ?args.store.storage, namespace = %args.namespace,
        "listening: dashboard at /admin, API at /admin/api, metrics at /metrics");

    // One signal stops both the HTTP server and the executor.
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down: draining requests and running tasks");
        let _ = stop_tx.send(true);
    });
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let http = axum::serve(listener, app).with_graceful_shutdown(stopped(stop_rx.clone()));
    let (http, report) = tokio::join!(http.into_future(), executor.run_until(stopped(stop_rx)));
    http?;
    tracing::info!(report = ?report?, charges = gateway.charges(),
        notifications = notifier.sent.load(Ordering::Relaxed), "stopped");
    Ok(())
}
