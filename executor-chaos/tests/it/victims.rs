//! Victims: tasks that go wrong on purpose among ordinary ones,
//! on a private store with no other fault, so any harm to a neighbour shows.
//! Each kind found a bug before its fix:
//! - a corrupt record (Redis: the hash replaced by a string or a list,
//!   fence/attempts/due not numbers or out of range, an unknown or deleted
//!   state; MariaDB: a mixed-case or unknown state, attempts/fence at the
//!   column's maximum; PostgreSQL: attempts/fence at the column's maximum,
//!   a retry policy that is not JSON, a negative due time) must end `ERROR`,
//!   be reported unreadable or be gone,
//!   and `Storage::delete` must remove it. Before the fix a Redis hash of
//!   another type failed the claim script half way, a list page failed on one
//!   bad record, and a `Pending` row was never claimed (stuck);
//! - a payload whose `Deserialize` panics and a handler that panics before
//!   returning its future must be dead-lettered with the panic message
//!   (before: stuck `RUNNING` for ever);
//! - `TaskError::retry_after(.., Duration::MAX)` must be dead-lettered at
//!   once (before: MariaDB refused the write, the task was reaped and re-run
//!   by healthy workers; Redis stored a due time that no longer parsed).
//!
//! The checker also demands 0 tasks stuck `RUNNING` and 0 healthy re-runs.

use crate::common::{chaos_run, figure, one_at_a_time, victim_outcomes};

fn victims_run(storage: &str, tasks: &str, per_kind: &str) -> Result<(), String> {
    // The runs share the machine's 2 cores: one at a time.
    let _one = one_at_a_time();
    let summary = chaos_run(&[
        "--storage",
        storage,
        "--workers",
        "2",
        "--tasks",
        tasks,
        "--seconds",
        "5",
        "--faults",
        "none",
        "--victims",
        per_kind,
        "--drain-seconds",
        "40",
    ])?;
    let victims = figure(&summary, "victims:");
    assert!(summary.contains("RESULT: PASS"), "{summary}");
    assert_eq!(figure(&summary, "stuck RUNNING at the end:"), Some(0), "{summary}");
    assert_eq!(figure(&summary, "healthy tasks re-run:"), Some(0), "{summary}");
    assert_eq!(figure(&summary, "victims as expected:"), victims, "{summary}");
    assert_eq!(figure(&summary, "victims deleted at the end:"), victims, "{summary}");
    let outcomes = victim_outcomes(&summary);
    for kind in ["panicdecode -> ", "panicstart -> ", "retryoverflow -> ", "corrupt "] {
        assert!(outcomes.contains(kind), "no {kind} victim: {summary}");
    }
    // Nearly every corrupt victim is edited before it is due (1.5 s).
    assert!(figure(&summary, "victims:").is_some(), "{summary}");
    if storage == "postgres" {
        // With no other fault every edit lands while its task waits.
        for corrupt in [
            "corrupt attempts-max -> ERROR",
            "corrupt fence-max -> ERROR",
            "corrupt retry-not-json -> unreadable",
            "corrupt due-negative -> unreadable",
        ] {
            assert!(outcomes.contains(corrupt), "no {corrupt}: {summary}");
        }
    }
    Ok(())
}

#[test]
fn victims_on_redis_end_dead_lettered_without_harming_neighbours() -> Result<(), String> {
    // 8 of each kind: every one of the 8 Redis corruptions once.
    victims_run("redis", "600", "8")
}

#[test]
fn victims_on_mysql_end_dead_lettered_without_harming_neighbours() -> Result<(), String> {
    // 4 of each kind: the 4 MariaDB corruptions; the retry overflows share
    // group commits with the ordinary tasks' finishes.
    victims_run("mysql", "1200", "4")
}

/// Tiered (Redis hot, MariaDB cold): corrupt records in both tiers, the
/// MariaDB ones submitted past the horizon so the promotion meets them.
/// Found by this test: one cold row whose `fence` is 2^64-1 failed every
/// promotion ("storage housekeeping failed: invalid fence:
/// 18446744073709551615 is past 9007199254740991", the Redis import refusing
/// the batch), so every later far task stayed `CREATED` in the cold tier
/// (151 of 600 in the first run). Fixed in two steps: the promotion leaves a
/// refused row cold and goes on (d56b19b), and MySQL's `due_before` moves a
/// row past `MAX_FENCE` to ERROR with the reason, as its claim does.
#[test]
fn victims_on_tiered_end_dead_lettered_without_harming_neighbours() -> Result<(), String> {
    victims_run("tiered", "600", "12")
}

/// PostgreSQL: the four corruptions its CHECK constraints let through
/// (attempts at `INTEGER`'s maximum, fence at `BIGINT`'s, a retry policy
/// that is not JSON, a negative due time), each edited while the task waits.
/// The claim moves each row to `ERROR` with a reason starting "corrupt
/// record" (the last two stay unreadable to `get`, which says why).
#[test]
fn victims_on_postgres_end_dead_lettered_without_harming_neighbours() -> Result<(), String> {
    victims_run("postgres", "600", "4")
}
