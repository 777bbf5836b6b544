//! A namespace that retains many finished tasks (a day of history at a
//! high rate) must not make the statements that look at waiting tasks, or
//! the trim of the expired ones, read that history. `queues` once did: with a million finished tasks retained
//! (`mysql_bench`), MariaDB planned its "which queues have waiting tasks"
//! loose index scan as a scan of the whole namespace, 3.5 s per call on
//! the leader's every sample. Each statement here is measured by the
//! server's own row counters (`Handler_read_*`), not by time: the least
//! rows read over a few calls (the counters are global, other tests add to
//! them) must stay far below the history's size.

use executor_core::storage::QueueControl;
use std::time::Duration;

use executor_core::{
    Namespace, QueueName, Timestamp, WorkerId,
    query::Retention,
    queue::ClaimPlan,
    storage::{Finish, Storage, TierStorage},
    testing,
};
use reliable_executor_mysql::MySqlStorage;

use crate::support::{cleanup, fresh};

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Finished tasks retained in the namespace.
const HISTORY: u32 = 50_000;
/// At most this many rows read by one call: a twentieth of the history.
const BOUND: u64 = 2_500;

/// Rows the server has read so far, all sessions together.
async fn rows_read(s: &MySqlStorage) -> Result<u64, sqlx::Error> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Handler_read_first', 'Handler_read_key', \
         'Handler_read_last', 'Handler_read_next', 'Handler_read_prev', 'Handler_read_rnd', \
         'Handler_read_rnd_next')",
    )
    .fetch_all(s.pool())
    .await?;
    Ok(rows.iter().filter_map(|(_, v)| v.parse::<u64>().ok()).sum())
}

/// The least rows read by `call` over five calls, less what reading the
/// counters itself costs (measured the same way with nothing between).
async fn least_read<F, Fut>(s: &MySqlStorage, mut call: F) -> TestResult<u64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = TestResult>,
{
    let mut idle = u64::MAX;
    let mut least = u64::MAX;
    for _ in 0..5 {
        let a = rows_read(s).await?;
        let b = rows_read(s).await?;
        idle = idle.min(b.saturating_sub(a));
        let before = rows_read(s).await?;
        call().await?;
        let after = rows_read(s).await?;
        least = least.min(after.saturating_sub(before));
    }
    Ok(least.saturating_sub(idle))
}

/// An error (not a panic, so the namespace is still cleaned up) when
/// `read` rows is not below `BOUND`.
fn within_bound(read: u64, what: &str) -> TestResult {
    if read < BOUND {
        Ok(())
    } else {
        Err(format!("{what} read {read} rows with {HISTORY} finished tasks retained (bound {BOUND})").into())
    }
}

/// The numbers 0 to 9 as a derived table (`d`); five of them joined count
/// to 99,999 on MySQL 8 too, which has no `seq_1_to_n` tables.
const DIGITS: &str = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 \
                      UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)";

/// `HISTORY` COMPLETED tasks finished in the last minutes, in `queue`,
/// written in one statement (ten-row tables joined, so MySQL 8 runs it too).
async fn retain_history(s: &MySqlStorage, ns: &Namespace, queue: &str) -> Result<(), sqlx::Error> {
    let digits = DIGITS;
    let sql = format!(
        "INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence, \
         created_at, due_at, started_at, finished_at, queue) \
         SELECT ?, CONCAT('h-', n), 'noop', 'COMPLETED', 'null', 1, 3, 1, 1, 1, 1, \
         CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - n, ? FROM \
         (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS n \
          FROM {digits} a, {digits} b, {digits} c, {digits} e, {digits} f) s WHERE n < ?"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(ns.as_str())
        .bind(queue)
        .bind(HISTORY)
        .execute(s.pool())
        .await?;
    Ok(())
}

/// `n` COMPLETED tasks finished in 1970, ids `y-0`.. (after the history's
/// `h-` ids).
async fn expire(s: &MySqlStorage, ns: &Namespace, n: u32) -> Result<(), sqlx::Error> {
    let digits = DIGITS;
    let sql = format!(
        "INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence, \
         created_at, due_at, started_at, finished_at) \
         SELECT ?, CONCAT('y-', n), 'noop', 'COMPLETED', 'null', 1, 3, 1, 1, 1, 1, 1000 + n FROM \
         (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS n \
         FROM {digits} a, {digits} b, {digits} c, {digits} e, {digits} f) s \
         WHERE n < ?"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql)).bind(ns.as_str()).bind(n).execute(s.pool()).await?;
    Ok(())
}

#[tokio::test]
async fn waiting_statements_do_not_read_the_history() -> TestResult {
    let (s, ns) = fresh().await;
    let out = async {
        retain_history(&s, &ns, "default").await?;
        sqlx::query("ANALYZE TABLE reliable_executor_tasks").execute(s.pool()).await?;
        // Waiting work in two queues; a third holds nothing but history.
        let mut waiting = Vec::new();
        for i in 0..6 {
            waiting.push(testing::new_task(&format!("d-{i}")));
        }
        for i in 0..3 {
            let mut t = testing::new_task(&format!("e-{i}"));
            t.queue = QueueName::new("emails")?;
            waiting.push(t);
        }
        for r in s.submit_many(&ns, waiting).await? {
            r?;
        }
        let mut gone = testing::new_task("z-0");
        gone.queue = QueueName::new("zz-history")?;
        s.submit_many(&ns, vec![gone]).await?.remove(0)?;
        let worker = WorkerId::new("history-test")?;
        let plan = ClaimPlan::single(QueueName::new("zz-history")?, 1);
        let claimed = s.claim(&ns, &worker, &plan, Duration::from_secs(30)).await?;
        if claimed.len() != 1 {
            return Err(format!("claimed {} zz-history tasks, want 1", claimed.len()).into());
        }
        let lease = claimed[0].lease().ok_or("a claimed task has a lease")?;
        s.finish(&ns, &lease, Finish::Completed).await?;

        let listed: Vec<(String, u64)> =
            s.queues(&ns).await?.into_iter().map(|q| (q.queue.as_str().to_owned(), q.waiting)).collect();
        let want = vec![("default".to_owned(), 6), ("emails".to_owned(), 3)];
        if listed != want {
            return Err(format!(
                "queues listed {listed:?}, want {want:?}: the queues with waiting tasks, and only those"
            )
            .into());
        }

        let queues = least_read(&s, || async {
            s.queues(&ns).await?;
            Ok(())
        })
        .await?;
        within_bound(queues, "queues")?;

        let due = least_read(&s, || async {
            let due = s.due_before(&ns, Timestamp::from_millis(u64::MAX / 4), 100).await?;
            if due.len() != 9 {
                return Err(format!("due_before listed {} tasks, want the nine waiting", due.len()).into());
            }
            Ok(())
        })
        .await?;
        within_bound(due, "due_before")?;

        let wait = least_read(&s, || async {
            s.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(5)).await?;
            Ok(())
        })
        .await?;
        within_bound(wait, "wait_for_work of the default queue")?;
        let served = [QueueName::default(), QueueName::new("emails")?, QueueName::new("zz-history")?];
        let wait_queues = least_read(&s, || async {
            s.wait_for_work(&ns, &served, Duration::from_secs(5)).await?;
            Ok(())
        })
        .await?;
        within_bound(wait_queues, "wait_for_work of three queues")?;
        // Twice as many expired tasks, whose ids sort after the retained
        // ones: with most of the namespace expired MariaDB would rather walk
        // it in id order (through the retained) than read `ix_finished`.
        expire(&s, &ns, 2 * HISTORY).await?;
        sqlx::query("ANALYZE TABLE reliable_executor_tasks").execute(s.pool()).await?;
        let day = Retention::default().completed(Duration::from_secs(86_400));
        let trim = least_read(&s, || async {
            let n = s.trim(&ns, &day, 1_000).await?;
            if n != 1_000 {
                return Err(format!("trim deleted {n} of the expired tasks, want 1000").into());
            }
            Ok(())
        })
        .await?;
        // A call reads the 1,000 it deletes twice (the select, the delete by
        // primary key); walking the namespace would read the history too.
        if trim > 10_000 {
            return Err(format!("trim by age read {trim} rows to delete 1000 with {HISTORY} retained").into());
        }
        // By count: keep the newest `HISTORY - 1` completed tasks; the
        // cutoff walks that many entries of the index, not the namespace's
        // other rows.
        let by_count = Retention::default().completed(Duration::from_secs(86_400)).completed_max(1_000);
        let trim_count = least_read(&s, || async {
            s.trim(&ns, &by_count, 100).await?;
            Ok(())
        })
        .await?;
        if trim_count > 20_000 {
            return Err(format!("trim by count read {trim_count} rows to keep 1000 of {HISTORY}").into());
        }
        eprintln!(
            "rows read with {HISTORY} finished tasks retained: queues {queues}, due_before {due}, \
             wait_for_work of the default queue {wait}, of three queues {wait_queues}, trim by age {trim}, trim by count {trim_count}"
        );
        TestResult::Ok(())
    }
    .await;
    cleanup(&s, &ns).await;
    out
}
