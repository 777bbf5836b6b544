//! The attempt log column on PostgreSQL: a hand-edited log (jsonb of the
//! wrong shape) never makes
//! a task unreadable nor stops a claim, retry, reap or requeue; the next
//! append keeps the entries that parse. Logged errors are bounded.

use reliable_executor_postgres::PostgresStorage;

use crate::support::{cleanup, fresh};

/// Hand edits (jsonb holds only JSON), and how many of their entries
/// still read.
const GARBAGE: [(&str, usize); 7] = [
    ("null", 0),
    (r#"{"attempt":1}"#, 0),
    (r#""failed""#, 0),
    ("[1, 2, 3]", 0),
    (r#"[{"attempt":"one","ended_at":"now","outcome":7}]"#, 0),
    (r#"[{"attempt":1,"ended_at":5,"outcome":"failed"}, null]"#, 1),
    (r#"[{"attempt":1e300,"ended_at":-1,"outcome":"failed"}]"#, 0),
];

#[tokio::test]
async fn a_corrupt_attempt_log_breaks_no_read_or_transition() {
    let (storage, ns) = fresh().await;
    let damage = |id: String, log: String| {
        let (storage, ns): (&PostgresStorage, _) = (&storage, ns.as_str().to_owned());
        async move {
            sqlx::query(
                "UPDATE reliable_executor_tasks SET attempt_log = $1::jsonb WHERE ns = $2 AND id = $3",
            )
            .bind(log)
            .bind(ns)
            .bind(id)
            .execute(storage.pool())
            .await
            .unwrap_or_else(|e| panic!("damaging the attempt log: {e}"));
        }
    };
    executor_core::testing::corrupt_attempt_log_breaks_nothing(&storage, &ns, damage, &GARBAGE).await;
    cleanup(&storage, &ns).await;
}

/// An error longer than the log keeps is cut to 8,192 characters;
/// `last_error` keeps what the store was given (up to its own limit).
#[tokio::test]
async fn logged_errors_are_bounded() {
    let (storage, ns) = fresh().await;
    executor_core::testing::logged_errors_are_cut_to(&storage, &ns, 8_192).await;
    cleanup(&storage, &ns).await;
}
