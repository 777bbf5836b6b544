//! Input the columns cannot hold is refused at submit with a reason, never
//! truncated and never sent when the server would drop the connection for
//! it; hand-edited rows never block a claim, never fail a page, and never
//! make a lookup reach another task.

use executor_core::storage::QueueControl;
use std::time::Duration;

use executor_core::{
    Client, Error, ListQuery, RetryPolicy, Submit, TaskId, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Debounce, Finish, Storage, SubmitMode},
    testing,
};
use reliable_executor_mysql::{MySqlOptions, MySqlStorage};

use crate::support::{EmptyDatabase, cleanup, fresh, pool};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test]
async fn oversized_payload_and_overlong_values_are_refused() -> TestResult {
    let storage = MySqlOptions::new().open(pool(2).await).await?;
    let ns = testing::unique_namespace("my-bad");
    // The payload limit is the client's one setting.
    let client = Client::without_name_check(storage.clone(), ns.clone()).max_payload(1024);

    let mut big = testing::new_task("big");
    big.payload = vec![b'x'; 1025];
    let err = client.submit_new(big.clone()).await.err();
    assert!(matches!(err, Some(Error::PayloadTooLarge { size: 1025, limit: 1024 })), "{err:?}");

    // A batch answers per task: the oversized one fails, the others land.
    let many = vec![testing::new_task("ok-1"), big, testing::new_task("ok-2")];
    let answers = client.submit_many(many).await;
    assert!(answers[0].is_ok() && answers[2].is_ok(), "{answers:?}");
    assert!(matches!(answers[1], Err(Error::PayloadTooLarge { .. })), "{answers:?}");

    // TaskId itself refuses more than 191 bytes; the column holds every id
    // it accepts, multi-byte ones included, byte for byte.
    assert!(TaskId::new("x".repeat(192)).is_err());
    let wide = format!("{}abc", "\u{1d11e}".repeat(47));
    assert_eq!(wide.len(), 191);
    let mut t = testing::new_task("placeholder");
    t.id = TaskId::new(wide.clone())?;
    storage.submit(&ns, t).await?;
    let back = storage.get(&ns, &TaskId::new(wide.clone())?).await?;
    assert_eq!(back.map(|r| r.id.into_string()), Some(wide));

    let mut long_name = testing::new_task("long-name");
    long_name.name = "n".repeat(256);
    let err = storage.submit(&ns, long_name).await.err();
    assert!(matches!(err, Some(Error::Invalid { what: "task name", .. })), "{err:?}");

    let mut long_key = testing::new_task("long-key");
    long_key.mode = SubmitMode::Debounce(Debounce::new("k".repeat(192), Duration::from_secs(1)));
    let err = storage.submit(&ns, long_key).await.err();
    assert!(matches!(err, Some(Error::Invalid { what: "debounce key", .. })), "{err:?}");

    let mut custom = testing::new_task("custom-retry");
    custom.retry = Some(RetryPolicy::custom("never", |_| Duration::from_secs(1)));
    let err = storage.submit(&ns, custom).await.err();
    assert!(matches!(err, Some(Error::Invalid { what: "retry policy", .. })), "{err:?}");

    // Nothing refused reached the table.
    assert_eq!(storage.counts(&ns).await?.total(), 3);
    cleanup(&storage, &ns).await;
    Ok(())
}

/// Issue 12 item 11: a payload over the server's `max_allowed_packet` made
/// the server drop the connection, reported as retryable, so a retrying
/// caller looped forever. The storage reads the packet size at connect and
/// refuses such a payload before sending it, alone in a batch.
#[tokio::test]
async fn payload_over_the_server_packet_is_refused_before_sending() -> TestResult {
    let storage = MySqlOptions::new().open(pool(2).await).await?;
    let ns = testing::unique_namespace("my-packet");
    let packet: i64 =
        sqlx::query_scalar("SELECT CAST(@@max_allowed_packet AS SIGNED)").fetch_one(storage.pool()).await?;
    let packet = usize::try_from(packet)?;
    // The store reports the packet as its hard cap, and a client set above
    // it gets the store's (the lower one applies).
    let cap = storage.max_payload().await?;
    assert!(cap < packet && cap > packet / 2, "cap {cap} for a packet of {packet}");
    let client = Client::without_name_check(storage.clone(), ns.clone()).max_payload(usize::MAX);
    assert_eq!(client.payload_limit().await?, cap);
    let mut huge = testing::new_task("huge");
    huge.payload = vec![b'x'; packet + 1];
    match storage.submit(&ns, huge.clone()).await {
        Err(Error::PayloadTooLarge { size, limit }) => {
            assert_eq!(size, packet + 1);
            assert!(limit < packet && limit > packet / 2, "limit {limit} for a packet of {packet}");
        }
        other => panic!("expected PayloadTooLarge, got {other:?}"),
    }
    let answers =
        storage.submit_many(&ns, vec![testing::new_task("a"), huge, testing::new_task("b")]).await?;
    assert!(answers[0].is_ok() && answers[2].is_ok(), "{answers:?}");
    assert!(matches!(answers[1], Err(Error::PayloadTooLarge { .. })), "{answers:?}");
    // The connection survived: the storage still answers.
    assert_eq!(storage.counts(&ns).await?.total(), 2);
    cleanup(&storage, &ns).await;
    Ok(())
}

async fn edit(storage: &MySqlStorage, sql: &'static str, ns: &str, id: &str) -> Result<(), sqlx::Error> {
    sqlx::query(sql).bind(ns).bind(id).execute(storage.pool()).await.map(|_| ())
}

#[tokio::test]
async fn corrupt_rows_never_block_a_claim_nor_fail_a_page() -> TestResult {
    let (storage, ns) = fresh().await;
    for id in ["bad-retry", "bad-time", "good"] {
        storage.submit(&ns, testing::new_task(id)).await?;
    }
    edit(
        &storage,
        "UPDATE reliable_executor_tasks SET retry = '{not json' WHERE ns = ? AND id = ?",
        ns.as_str(),
        "bad-retry",
    )
    .await?;
    edit(
        &storage,
        "UPDATE reliable_executor_tasks SET created_at = -5 WHERE ns = ? AND id = ?",
        ns.as_str(),
        "bad-time",
    )
    .await?;
    for (id, what) in [("bad-retry", "retry policy"), ("bad-time", "created_at")] {
        match storage.get(&ns, &TaskId::new(id)?).await {
            Err(Error::Corrupt { id: got, reason }) => {
                assert_eq!(got.as_str(), id);
                assert!(reason.contains(what), "{id}: {reason}");
            }
            other => panic!("{id}: expected Corrupt, got {other:?}"),
        }
    }

    // Issue 12 item 10: a page with unreadable rows lists the rest and
    // names the unreadable ones, instead of failing as a whole.
    let page = storage.list(&ns, ListQuery::new(TaskState::Created, 10)).await?;
    assert_eq!(page.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["good"]);
    let mut unreadable: Vec<&str> = page.unreadable.iter().map(|u| u.id.as_str()).collect();
    unreadable.sort_unstable();
    assert_eq!(unreadable, ["bad-retry", "bad-time"], "{page:?}");
    // A page boundary on an unreadable row still moves on.
    let mut seen = Vec::new();
    let mut q = ListQuery::new(TaskState::Created, 1);
    loop {
        let page = storage.list(&ns, q.clone()).await?;
        seen.extend(page.tasks.iter().map(|t| t.id.to_string()));
        seen.extend(page.unreadable.iter().map(|u| u.id.clone()));
        match page.next {
            Some(next) => q.cursor = Some(next),
            None => break,
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, ["bad-retry", "bad-time", "good"]);

    // The claim hands out the good task and moves the unreadable waiting
    // ones to ERROR with the reason; a second claim finds nothing.
    let me = WorkerId::generate();
    let claimed = storage.claim(&ns, &me, &ClaimPlan::default_queue(10), Duration::from_secs(30)).await?;
    assert_eq!(claimed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["good"]);
    assert!(
        storage.claim(&ns, &me, &ClaimPlan::default_queue(10), Duration::from_secs(30)).await?.is_empty()
    );
    let counts = storage.counts(&ns).await?;
    assert_eq!((counts.get(TaskState::Error), counts.get(TaskState::Running), counts.total()), (2, 1, 3));
    let row: (String, Option<String>) = sqlx::query_as(
        "SELECT state, last_error FROM reliable_executor_tasks WHERE ns = ? AND id = 'bad-retry'",
    )
    .bind(ns.as_str())
    .fetch_one(storage.pool())
    .await?;
    assert_eq!(row.0, "ERROR");
    assert!(row.1.unwrap_or_default().contains("corrupt record"));

    // `delete` is the way out for an unreadable row.
    assert!(storage.delete(&ns, &TaskId::new("bad-time")?).await?);
    assert_eq!(storage.get(&ns, &TaskId::new("bad-time")?).await?, None);
    cleanup(&storage, &ns).await;
    Ok(())
}

/// Issue 12 item 15: a state edited by hand to another spelling
/// (`'created'`) read as CREATED but never ran, and the counts lied. The
/// `ck_tasks_state` constraint refuses any value but the eight states, and
/// the migration that adds it first moves rows already holding one to
/// ERROR with the reason.
#[tokio::test]
async fn states_are_exactly_the_eight() -> TestResult {
    let (storage, ns) = fresh().await;
    storage.submit(&ns, testing::new_task("t")).await?;
    for bad in ["created", "Pending", "BOGUS", "", "RUNNING "] {
        let refused = sqlx::query("UPDATE reliable_executor_tasks SET state = ? WHERE ns = ? AND id = 't'")
            .bind(bad)
            .bind(ns.as_str())
            .execute(storage.pool())
            .await;
        assert!(refused.is_err(), "state {bad:?} was accepted");
    }
    assert_eq!(storage.get(&ns, &TaskId::new("t")?).await?.map(|r| r.state), Some(TaskState::Created));
    cleanup(&storage, &ns).await;

    // A database from before the constraint, with such rows in it.
    let db = EmptyDatabase::create("states").await?;
    let result = async {
        let pool = db.pool(2).await?;
        let first = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/migrations/20261130000001_tasks.sql"
        ))?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(first)).execute(&pool).await?;
        for (id, state) in [("lower", "created"), ("mixed", "Pending"), ("ok", "CREATED")] {
            sqlx::query(
                "INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, \
                 due_at) VALUES ('old', ?, 'x', ?, 'null', 1, 1, 1)",
            )
            .bind(id)
            .bind(state)
            .execute(&pool)
            .await?;
        }
        let storage = MySqlOptions::new().max_connections(2).open(pool).await?;
        let ns = executor_core::Namespace::new("old")?;
        let counts = storage.counts(&ns).await?;
        assert_eq!((counts.get(TaskState::Error), counts.get(TaskState::Created), counts.total()), (2, 1, 3));
        let lower = storage.get(&ns, &TaskId::new("lower")?).await?.ok_or("lower is gone")?;
        assert_eq!(lower.state, TaskState::Error);
        assert!(lower.last_error.unwrap_or_default().contains("unknown state `created`"));
        Ok::<_, Box<dyn std::error::Error>>(())
    }
    .await;
    db.drop_now().await?;
    result
}

/// Issue 12 item 9: under the `_bin` collations `'pad'` equals `'pad '`
/// (PAD SPACE), so a lookup of `pad` reached a row whose id was edited to
/// `'pad '`. Every lookup by id compares the byte length too.
#[tokio::test]
async fn ids_compare_exactly() -> TestResult {
    let (storage, ns) = fresh().await;
    storage.submit(&ns, testing::new_task("pad-seed")).await?;
    sqlx::query("UPDATE reliable_executor_tasks SET id = 'pad ' WHERE ns = ? AND id = 'pad-seed'")
        .bind(ns.as_str())
        .execute(storage.pool())
        .await?;
    let pad = TaskId::new("pad")?;
    assert_eq!(storage.get(&ns, &pad).await?, None, "get reached `pad `");
    assert!(matches!(storage.cancel(&ns, &pad).await, Err(Error::NotFound(_))), "cancel reached `pad `");
    assert!(matches!(storage.requeue(&ns, &pad).await, Err(Error::NotFound(_))), "requeue reached `pad `");
    assert!(!storage.delete(&ns, &pad).await?, "delete reached `pad `");
    let state: String =
        sqlx::query_scalar("SELECT state FROM reliable_executor_tasks WHERE ns = ? AND id = 'pad '")
            .bind(ns.as_str())
            .fetch_one(storage.pool())
            .await?;
    assert_eq!(state, "CREATED", "the hand-edited row was changed through another id");
    // `pad` itself cannot be stored beside it (the primary key pads too).
    assert!(matches!(storage.submit(&ns, testing::new_task("pad")).await, Err(Error::DuplicateId(_))));
    // The row still lists, as unreadable (its id is not a valid TaskId).
    let page = storage.list(&ns, ListQuery::new(TaskState::Created, 10)).await?;
    assert_eq!(page.unreadable.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["pad "]);
    cleanup(&storage, &ns).await;
    Ok(())
}

/// Issue 12 item 11: a cursor this store did not make (`0:x:y` parsed as
/// finished_at 0, id `x:y`) is refused, not misread.
#[tokio::test]
async fn foreign_cursors_are_invalid() -> TestResult {
    let (storage, ns) = fresh().await;
    storage.submit(&ns, testing::new_task("c")).await?;
    for foreign in ["0:x:y", "-:c", "my1.0.zz", "my1.-1.63"] {
        let mut q = ListQuery::new(TaskState::Created, 10);
        q.cursor = Some(foreign.to_owned());
        let e = storage.list(&ns, q).await.err();
        assert!(matches!(e, Some(Error::Invalid { what: "cursor", .. })), "{foreign}: {e:?}");
    }
    cleanup(&storage, &ns).await;
    Ok(())
}

/// Issue 12 item 7: durations past the shared range used to reach the
/// server as BIGINT overflows (error 1690), reported as retryable. They are
/// refused at the entry points with a non-retryable `Invalid`; the longest
/// valid ones are stored and read back.
#[tokio::test]
async fn out_of_range_durations_are_invalid_not_retryable() -> TestResult {
    let (storage, ns) = fresh().await;
    let mut late = testing::new_task("late");
    late.due = executor_core::storage::Due::After(Duration::MAX);
    let e = storage.submit(&ns, late).await.err();
    assert!(
        matches!(&e, Some(Error::Invalid { .. })) && !e.as_ref().is_some_and(Error::is_retryable),
        "{e:?}"
    );
    storage.submit(&ns, testing::new_task("run")).await?;
    let claimed =
        storage.claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), Duration::MAX).await?;
    let lease = claimed.first().and_then(|t| t.lease()).ok_or("nothing claimed")?;
    let bad = Finish::Retry { delay: Duration::MAX, error: "never".to_owned() };
    let e = storage.finish(&ns, &lease, bad).await.err();
    assert!(
        matches!(&e, Some(Error::Invalid { .. })) && !e.as_ref().is_some_and(Error::is_retryable),
        "{e:?}"
    );
    // A heartbeat and a leadership term of Duration::MAX do not overflow.
    let hb = storage.heartbeat(&ns, std::slice::from_ref(&lease), Duration::MAX).await?;
    assert!(hb.lost.is_empty(), "{hb:?}");
    assert!(storage.acquire_leadership(&ns, &WorkerId::generate(), Duration::MAX).await?.is_some());
    assert_eq!(storage.finish(&ns, &lease, Finish::Completed).await?, TaskState::Completed);
    assert!(matches!(storage.cancel(&ns, &lease.id).await, Err(Error::IllegalTransition { .. })));
    cleanup(&storage, &ns).await;
    Ok(())
}

/// Issue 16: a hand-edited queue or priority never blocks a claim. A queue
/// name with a trailing space still matches its queue (`ascii_bin` pads
/// with spaces) but is no valid name: the claim moves the row to ERROR
/// with the reason and hands out its neighbours. A priority above 9 is
/// refused by `ck_tasks_priority`; with the checks off (MariaDB's
/// `check_constraint_checks`), the claim dead-letters it before its UPDATE
/// (which the constraint would refuse, failing the batch). A
/// waiting row whose queue is no valid name at all is left out of
/// `queues` instead of failing it.
#[tokio::test]
async fn corrupt_queue_or_priority_never_blocks_a_claim() -> TestResult {
    use executor_core::{QueueName, queue::ClaimPlan};

    let (storage, ns) = fresh().await;
    let mail = QueueName::new("mail")?;
    for (id, priority) in [("bad-queue", 9), ("bad-prio", 8), ("good-1", 5), ("good-2", 0), ("stray", 0)] {
        let mut t = testing::new_task(id);
        t.queue = mail.clone();
        t.priority = priority;
        storage.submit(&ns, t).await?;
    }
    edit(
        &storage,
        "UPDATE reliable_executor_tasks SET queue = 'mail ' WHERE ns = ? AND id = ?",
        ns.as_str(),
        "bad-queue",
    )
    .await?;
    edit(
        &storage,
        "UPDATE reliable_executor_tasks SET queue = 'no such/queue' WHERE ns = ? AND id = ?",
        ns.as_str(),
        "stray",
    )
    .await?;
    let refused = edit(
        &storage,
        "UPDATE reliable_executor_tasks SET priority = 12 WHERE ns = ? AND id = ?",
        ns.as_str(),
        "bad-prio",
    )
    .await;
    assert!(refused.is_err(), "ck_tasks_priority refuses a priority of 12");
    // MariaDB can turn the checks off for a session; MySQL cannot, and
    // there the row simply keeps its valid priority.
    let mut conn = storage.pool().acquire().await?;
    let edited = if sqlx::query("SET SESSION check_constraint_checks = 0").execute(&mut *conn).await.is_ok() {
        sqlx::query("UPDATE reliable_executor_tasks SET priority = 12 WHERE ns = ? AND id = 'bad-prio'")
            .bind(ns.as_str())
            .execute(&mut *conn)
            .await?;
        sqlx::query("SET SESSION check_constraint_checks = 1").execute(&mut *conn).await?;
        true
    } else {
        false
    };
    drop(conn);

    let infos = storage.queues(&ns).await?;
    assert!(infos.iter().all(|i| i.queue.as_str() == "mail"), "the stray row is left out: {infos:?}");

    let me = WorkerId::generate();
    let claimed =
        storage.claim(&ns, &me, &ClaimPlan::single(mail.clone(), 10), Duration::from_secs(30)).await?;
    let ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
    if edited {
        assert_eq!(ids, ["good-1", "good-2"], "the neighbours are claimed, in priority order");
    } else {
        assert_eq!(ids, ["bad-prio", "good-1", "good-2"]);
    }
    assert!(storage.claim(&ns, &me, &ClaimPlan::single(mail, 10), Duration::from_secs(30)).await?.is_empty());
    let mut dead = vec![("bad-queue", "queue")];
    if edited {
        dead.push(("bad-prio", "priority"));
    }
    for (id, what) in dead {
        let row: (String, Option<String>) =
            sqlx::query_as("SELECT state, last_error FROM reliable_executor_tasks WHERE ns = ? AND id = ?")
                .bind(ns.as_str())
                .bind(id)
                .fetch_one(storage.pool())
                .await?;
        let reason = row.1.unwrap_or_default();
        assert_eq!(row.0, "ERROR", "{id}");
        assert!(reason.contains("corrupt record") && reason.contains(what), "{id}: {reason}");
        if id == "bad-queue" {
            match storage.get(&ns, &TaskId::new(id)?).await {
                Err(Error::Corrupt { reason, .. }) => assert!(reason.contains(what), "{id}: {reason}"),
                other => panic!("{id}: expected Corrupt, got {other:?}"),
            }
        } else {
            // Brought into range so the row can be written at all; the
            // reason keeps the value.
            let rec = storage.get(&ns, &TaskId::new(id)?).await?.ok_or("bad-prio is gone")?;
            assert_eq!((rec.state, rec.priority), (TaskState::Error, 9));
            assert!(rec.last_error.unwrap_or_default().contains("priority 12"));
        }
    }
    cleanup(&storage, &ns).await;
    Ok(())
}
