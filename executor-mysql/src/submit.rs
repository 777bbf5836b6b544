//! Submitting tasks: plain and idempotent inserts (batched for
//! `submit_many`), and the debounce upsert.

use executor_core::{
    Debounce, Due, Error, Namespace, NewTask, Result, RetryPolicy, SubmitMode, SubmitOutcome, Submitted,
    TaskId,
};
use sqlx::{MySql, QueryBuilder, Row};

use crate::{
    MySqlStorage,
    conn::RunOn,
    error,
    sql::{ID_COLUMN_CHARS, NAME_COLUMN_CHARS, ms, now_ms, tasks, ts},
};

/// Most rows in one multi-row INSERT.
const BATCH_ROWS: usize = 500;
/// Most payload bytes in one multi-row INSERT, well under the server's
/// default 16 MiB `max_allowed_packet`.
const BATCH_BYTES: usize = 4 << 20;

/// A task checked against the columns, with its values ready to bind.
struct Checked {
    id: TaskId,
    name: String,
    payload: Vec<u8>,
    max_attempts: u32,
    due_abs: Option<i64>,
    due_offset: i64,
    max_duration: Option<i64>,
    timeout: Option<i64>,
    retry: Option<String>,
    mode: SubmitMode,
}

/// Refuses what the columns cannot hold, with a reason, instead of letting
/// the server truncate it.
fn validate(s: &MySqlStorage, task: NewTask) -> Result<Checked> {
    if task.payload.len() > s.opts.max_payload {
        return Err(Error::PayloadTooLarge { size: task.payload.len(), limit: s.opts.max_payload });
    }
    if task.id.as_str().chars().count() > ID_COLUMN_CHARS {
        return Err(Error::invalid(
            "task id",
            format!("longer than the {ID_COLUMN_CHARS} characters the MySQL column holds"),
        ));
    }
    let name_len = task.name.chars().count();
    if name_len == 0 || name_len > NAME_COLUMN_CHARS {
        return Err(Error::invalid(
            "task name",
            format!("`{}` must be 1 to {NAME_COLUMN_CHARS} characters long", task.name),
        ));
    }
    if let SubmitMode::Debounce(d) = &task.mode {
        let len = d.key.chars().count();
        if len == 0 || len > ID_COLUMN_CHARS {
            return Err(Error::invalid(
                "debounce key",
                format!("{len} characters; the MySQL column holds 1 to {ID_COLUMN_CHARS}"),
            ));
        }
    }
    let retry = match &task.retry {
        None => None,
        Some(RetryPolicy::Custom(_)) => {
            return Err(Error::invalid(
                "retry policy",
                "a custom backoff is code and cannot be stored with a task; set it as the handler's default",
            ));
        }
        Some(policy) => Some(serde_json::to_string(policy).map_err(Error::Encode)?),
    };
    let (due_abs, due_offset) = match task.due {
        Due::Now => (None, 0),
        Due::After(d) => (None, ms(d)),
        Due::At(t) => (Some(ts(t)), 0),
    };
    Ok(Checked {
        id: task.id,
        name: task.name,
        payload: task.payload,
        max_attempts: task.max_attempts.max(1),
        due_abs,
        due_offset,
        max_duration: task.max_duration.map(ms),
        timeout: task.timeout.map(ms),
        retry,
        mode: task.mode,
    })
}

/// One task, in one statement (plain, idempotent) or one short transaction
/// (debounce).
pub(crate) async fn submit(s: &MySqlStorage, ns: &Namespace, task: NewTask) -> Result<Submitted> {
    let row = validate(s, task)?;
    let out = match &row.mode {
        SubmitMode::Debounce(d) => {
            let d = d.clone();
            error::retry_lock_conflicts(|| debounce(s, ns, &row, &d)).await
        }
        SubmitMode::Plain | SubmitMode::Idempotent => insert_one(s, ns, &row).await,
    }?;
    s.notify_work();
    Ok(out)
}

async fn insert_one(s: &MySqlStorage, ns: &Namespace, row: &Checked) -> Result<Submitted> {
    let mut qb = insert_head();
    qb.push_values(std::iter::once(row), |mut b, r| push_row(&mut b, ns, r));
    match qb.build().execute_on(&s.conns).await {
        Ok(_) => Ok(Submitted { id: row.id.clone(), outcome: SubmitOutcome::Created }),
        Err(e) if error::is_duplicate(&e) => match row.mode {
            SubmitMode::Idempotent => Ok(Submitted { id: row.id.clone(), outcome: SubmitOutcome::Existing }),
            _ => Err(Error::DuplicateId(row.id.clone())),
        },
        Err(e) => Err(error::storage(e)),
    }
}

fn insert_head() -> QueryBuilder<MySql> {
    QueryBuilder::new(concat!(
        "INSERT INTO ",
        tasks!(),
        " (ns, id, name, state, payload, max_attempts, created_at, due_at, deadline, timeout_ms, retry, \
         debounce_key) "
    ))
}

fn push_row(b: &mut sqlx::query_builder::Separated<'_, MySql, &'static str>, ns: &Namespace, r: &Checked) {
    b.push_bind(ns.as_str().to_owned())
        .push_bind(r.id.as_str().to_owned())
        .push_bind(r.name.clone())
        .push("'CREATED'")
        .push_bind(r.payload.clone())
        .push_bind(r.max_attempts)
        .push(now_ms!())
        .push("COALESCE(")
        .push_bind_unseparated(r.due_abs)
        .push_unseparated(concat!(", ", now_ms!(), " + "))
        .push_bind_unseparated(r.due_offset)
        .push_unseparated(")")
        .push(concat!(now_ms!(), " + "))
        .push_bind_unseparated(r.max_duration)
        .push_bind(r.timeout)
        .push_bind(r.retry.clone())
        .push("NULL");
}

/// Many tasks: the plain and idempotent ones in multi-row INSERTs of up to
/// [`BATCH_ROWS`] rows; a batch that hits a duplicate id is redone row by
/// row so each task gets its own answer. Debounced ones go one by one.
pub(crate) async fn submit_many(
    s: &MySqlStorage,
    ns: &Namespace,
    tasks: Vec<NewTask>,
) -> Result<Vec<Result<Submitted>>> {
    let mut out: Vec<Option<Result<Submitted>>> = Vec::with_capacity(tasks.len());
    let mut batch: Vec<(usize, Checked)> = Vec::new();
    let mut singles: Vec<(usize, Checked)> = Vec::new();
    for (i, task) in tasks.into_iter().enumerate() {
        match validate(s, task) {
            Ok(row) if matches!(row.mode, SubmitMode::Debounce(_)) => {
                singles.push((i, row));
                out.push(None);
            }
            Ok(row) => {
                batch.push((i, row));
                out.push(None);
            }
            Err(e) => out.push(Some(Err(e))),
        }
    }
    let mut chunk: Vec<(usize, Checked)> = Vec::new();
    let mut bytes = 0;
    for item in batch {
        bytes += item.1.payload.len();
        chunk.push(item);
        if chunk.len() >= BATCH_ROWS || bytes >= BATCH_BYTES {
            insert_chunk(s, ns, std::mem::take(&mut chunk), &mut out).await?;
            bytes = 0;
        }
    }
    if !chunk.is_empty() {
        insert_chunk(s, ns, chunk, &mut out).await?;
    }
    for (i, row) in singles {
        let res = match &row.mode {
            SubmitMode::Debounce(d) => error::retry_lock_conflicts(|| debounce(s, ns, &row, d)).await,
            _ => insert_one(s, ns, &row).await,
        };
        out[i] = Some(res);
    }
    s.notify_work();
    Ok(out.into_iter().map(|r| r.unwrap_or_else(|| Err(Error::invalid("submit", "no answer")))).collect())
}

async fn insert_chunk(
    s: &MySqlStorage,
    ns: &Namespace,
    chunk: Vec<(usize, Checked)>,
    out: &mut [Option<Result<Submitted>>],
) -> Result<()> {
    let mut qb = insert_head();
    qb.push_values(chunk.iter(), |mut b, (_, r)| push_row(&mut b, ns, r));
    match qb.build().execute_on(&s.conns).await {
        Ok(_) => {
            for (i, r) in chunk {
                out[i] = Some(Ok(Submitted { id: r.id, outcome: SubmitOutcome::Created }));
            }
            Ok(())
        }
        // The statement failed as a whole: answer row by row.
        Err(e) if error::is_duplicate(&e) => {
            for (i, r) in chunk {
                out[i] = Some(insert_one(s, ns, &r).await);
            }
            Ok(())
        }
        Err(e) => Err(error::storage(e)),
    }
}

/// The debounce upsert: inserts the task, or, when a task waits under the
/// key, moves its due time to `min(now + window, created_at + max_wait)` and
/// replaces its payload. The `waiting_key` unique index binds the key only
/// while the task waits, so a claimed task lets go of it at once.
///
/// `LAST_INSERT_ID(x)` in the update clause reports which way the row went
/// (0: inserted, 2: a waiting task under the key was updated, 1: the id is
/// taken by a task that is not waiting under this key). The transaction
/// keeps the row locked while its id is read back, so a concurrent claim
/// either took it before (and the key no longer binds) or waits until after.
async fn debounce(s: &MySqlStorage, ns: &Namespace, row: &Checked, d: &Debounce) -> Result<Submitted> {
    let window = ms(d.window);
    let max_wait = d.max_wait.map(ms);
    let mut c = s.conns.get().await.map_err(error::storage)?;
    let mut tx = c.begin_read_committed().await.map_err(error::storage)?;
    let done = sqlx::query(concat!(
        "INSERT INTO ",
        tasks!(),
        " (ns, id, name, state, payload, max_attempts, created_at, due_at, deadline, timeout_ms, retry, \
         debounce_key) VALUES (?, ?, ?, 'CREATED', ?, ?, ",
        now_ms!(),
        ", ",
        now_ms!(),
        " + LEAST(?, COALESCE(?, ?)), ",
        now_ms!(),
        " + ?, ?, ?, ?) ON DUPLICATE KEY UPDATE \
         due_at = IF(waiting_key <=> ?, LEAST(",
        now_ms!(),
        " + ?, COALESCE(created_at + ?, ",
        now_ms!(),
        " + ?)), due_at), \
         payload = IF(waiting_key <=> ?, ?, payload), \
         fence = fence + 0 * LAST_INSERT_ID(IF(waiting_key <=> ?, 2, 1))"
    ))
    .bind(ns.as_str())
    .bind(row.id.as_str())
    .bind(&row.name)
    .bind(&row.payload)
    .bind(row.max_attempts)
    .bind(window)
    .bind(max_wait)
    .bind(window)
    .bind(row.max_duration)
    .bind(row.timeout)
    .bind(&row.retry)
    .bind(&d.key)
    // The update clause binds its values again (VALUES() is deprecated in
    // MySQL 8 and MariaDB has no row alias).
    .bind(&d.key)
    .bind(window)
    .bind(max_wait)
    .bind(window)
    .bind(&d.key)
    .bind(&row.payload)
    .bind(&d.key)
    .execute(&mut *tx)
    .await
    .map_err(error::storage)?;
    let outcome = match done.last_insert_id() {
        0 => Submitted { id: row.id.clone(), outcome: SubmitOutcome::Created },
        2 => {
            let id = waiting_under(&mut tx, ns, &d.key).await?.ok_or_else(|| {
                Error::storage(std::io::Error::other("debounced task vanished inside its transaction"), true)
            })?;
            Submitted { id, outcome: SubmitOutcome::Debounced }
        }
        _ => {
            // The id is taken by another task. A task may still wait under
            // the key with another id: the upsert met the primary key first.
            match waiting_under(&mut tx, ns, &d.key).await? {
                Some(id) => {
                    sqlx::query(concat!(
                        "UPDATE ",
                        tasks!(),
                        " SET due_at = LEAST(",
                        now_ms!(),
                        " + ?, COALESCE(created_at + ?, ",
                        now_ms!(),
                        " + ?)), payload = ? WHERE ns = ? AND id = ?"
                    ))
                    .bind(window)
                    .bind(max_wait)
                    .bind(window)
                    .bind(&row.payload)
                    .bind(ns.as_str())
                    .bind(id.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(error::storage)?;
                    Submitted { id, outcome: SubmitOutcome::Debounced }
                }
                None => {
                    tx.rollback().await.map_err(error::storage)?;
                    c.done();
                    return Err(Error::DuplicateId(row.id.clone()));
                }
            }
        }
    };
    tx.commit().await.map_err(error::storage)?;
    c.done();
    Ok(outcome)
}

async fn waiting_under(
    tx: &mut sqlx::Transaction<'_, MySql>,
    ns: &Namespace,
    key: &str,
) -> Result<Option<TaskId>> {
    let row =
        sqlx::query(concat!("SELECT id FROM ", tasks!(), " WHERE ns = ? AND waiting_key = ? FOR UPDATE"))
            .bind(ns.as_str())
            .bind(key)
            .fetch_optional(&mut **tx)
            .await
            .map_err(error::storage)?;
    match row {
        None => Ok(None),
        Some(r) => {
            let raw: String = r.try_get("id").map_err(error::storage)?;
            TaskId::new(raw.clone()).map(Some).map_err(|e| crate::row::corrupt(&raw, e.to_string()))
        }
    }
}
