//! Cron schedules as MySQL keeps them: a hand-edited row is left out of the
//! list without hiding the others; "whether it exists / moved" counts rows
//! matched, not rows changed; names compare exactly; a definition the
//! server could not take is refused before it is sent.

use executor_core::storage::ScheduleStore;
use std::time::Duration;

use executor_core::{
    Error, TaskId,
    schedule::Schedule,
    storage::{Advance, Storage},
};

use crate::support::{cleanup, fresh};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn schedule(name: &str) -> Result<Schedule, Error> {
    Schedule::new(name, "report", "0 0 2 * * *", "UTC")
}

fn names(entries: &[executor_core::storage::ScheduleEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.schedule.name.as_str()).collect()
}

/// One row's JSON broken by hand, another's definition renamed: `schedules`
/// leaves exactly those out and still answers the rest.
#[tokio::test]
async fn a_corrupt_row_is_left_out_of_the_list() -> TestResult {
    let (s, ns) = fresh().await;
    let run = async {
        for name in ["alpha", "broken", "gamma", "renamed"] {
            s.put_schedule(&ns, &schedule(name)?).await?;
        }
        sqlx::query(
            "UPDATE reliable_executor_schedules SET definition = '{\"name\": \"broken\", \"task\": ' \
             WHERE ns = ? AND name = 'broken'",
        )
        .bind(ns.as_str())
        .execute(s.pool())
        .await?;
        let listed = s.schedules(&ns).await?;
        assert_eq!(names(&listed), ["alpha", "gamma", "renamed"], "only the broken row is left out");

        // A definition naming another schedule would make the leader move
        // that one's cursor: left out too.
        sqlx::query(
            "UPDATE reliable_executor_schedules \
             SET definition = REPLACE(definition, '\"renamed\"', '\"alpha\"') WHERE ns = ? AND name = 'renamed'",
        )
        .bind(ns.as_str())
        .execute(s.pool())
        .await?;
        let listed = s.schedules(&ns).await?;
        assert_eq!(names(&listed), ["alpha", "gamma"]);
        assert_eq!(listed[0].schedule, schedule("alpha")?, "the others read back whole");

        // The broken row still exists: it can be removed (or replaced).
        assert!(s.remove_schedule(&ns, "broken").await?);
        s.put_schedule(&ns, &schedule("renamed")?).await?;
        assert_eq!(names(&s.schedules(&ns).await?), ["alpha", "gamma", "renamed"], "a put repairs it");
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let outcome = run.await;
    cleanup(&s, &ns).await;
    outcome
}

/// MySQL counts only changed rows unless the client asks for found rows;
/// sqlx does, and these answers depend on it: a pause of a paused schedule
/// and a move that changes no value both still answer `true`.
#[tokio::test]
async fn unchanged_rows_still_count() -> TestResult {
    let (s, ns) = fresh().await;
    let run = async {
        s.put_schedule(&ns, &schedule("same")?).await?;
        assert!(s.pause_schedule(&ns, "same", false).await?, "resuming a running one");
        assert!(s.pause_schedule(&ns, "same", true).await?);
        assert!(s.pause_schedule(&ns, "same", true).await?, "pausing a paused one");
        let c0 = s.schedules(&ns).await?[0].cursor;
        let c1 = c0.saturating_add(Duration::from_secs(60));
        let task = Some(TaskId::new("same@1")?);
        assert!(s.advance_schedule(&ns, "same", &Advance::new(c0, c1, 2, task.clone())).await?);
        assert!(
            s.advance_schedule(&ns, "same", &Advance::new(c1, c1, 2, task.clone())).await?,
            "a move to where it is, same token and task"
        );
        assert!(s.advance_schedule(&ns, "same", &Advance::new(c1, c1, 2, None)).await?);
        let e = &s.schedules(&ns).await?[0];
        assert_eq!((e.cursor, e.fence, e.last_task.clone(), e.paused), (c1, 2, task, true));
        // Putting the same definition again changes nothing and is no error.
        s.put_schedule(&ns, &schedule("same")?).await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let outcome = run.await;
    cleanup(&s, &ns).await;
    outcome
}

/// `utf8mb4_bin` pads with spaces, so `name = 'exact '` would match the row
/// `exact`; the statements compare the byte length too.
#[tokio::test]
async fn names_compare_exactly() -> TestResult {
    let (s, ns) = fresh().await;
    let run = async {
        s.put_schedule(&ns, &schedule("exact")?).await?;
        let c0 = s.schedules(&ns).await?[0].cursor;
        assert!(!s.pause_schedule(&ns, "exact ", true).await?);
        assert!(!s.advance_schedule(&ns, "exact ", &Advance::new(c0, c0, 1, None)).await?);
        assert!(!s.remove_schedule(&ns, "exact ").await?);
        assert!(!s.remove_schedule(&ns, "EXACT").await?);
        let e = &s.schedules(&ns).await?[0];
        assert_eq!((e.schedule.name.as_str(), e.paused, e.fence), ("exact", false, 0));
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let outcome = run.await;
    cleanup(&s, &ns).await;
    outcome
}

/// A payload within the limit can escape to a definition over it (each `"`
/// inside a JSON string doubles): refused as too large, not sent for the
/// server to drop the connection.
#[tokio::test]
async fn a_definition_over_the_packet_limit_is_refused() -> TestResult {
    let (s, ns) = fresh().await;
    let run = async {
        let limit = s.max_payload().await?;
        let quotes = "\\\"".repeat(limit / 3);
        let payload = format!("\"{quotes}\"");
        assert!(payload.len() < limit, "the payload alone is within the limit");
        let big = schedule("big")?.payload_json(payload)?;
        let err = s.put_schedule(&ns, &big).await.err();
        assert!(matches!(err, Some(Error::PayloadTooLarge { limit: l, .. }) if l == limit), "{err:?}");
        assert!(s.schedules(&ns).await?.is_empty());
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let outcome = run.await;
    cleanup(&s, &ns).await;
    outcome
}
