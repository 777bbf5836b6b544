//! Submitting tasks: plain and idempotent inserts (one statement for a
//! whole batch, its rows as arrays), the debounce upsert, and the same
//! inside a transaction of the caller's ([`PostgresStorage::submit_in`]).

use executor_core::{
    Error, Namespace, Result, SubmitOutcome, Submitted, TaskId,
    storage::{Debounce, NewTask, SubmitMode},
};
use executor_sql::Dialect as _;
use executor_sql::dialect::{Submit, SubmitIn};
use sqlx::{PgConnection, Row};

use crate::{
    PostgresDialect,
    conn::{Conns, RunOn, fetch_all_sent},
    error,
    sql::{int, ms, sql},
};

/// Most rows in one INSERT.
const BATCH_ROWS: usize = 1000;
/// Most payload bytes in one INSERT.
const BATCH_BYTES: usize = 8 << 20;

/// A task checked against the columns, with its values ready to bind.
pub(crate) struct Checked {
    id: TaskId,
    name: String,
    payload: Vec<u8>,
    max_attempts: i32,
    due_abs: Option<i64>,
    due_offset: i64,
    max_duration: Option<i64>,
    timeout: Option<i64>,
    retry: Option<String>,
    mode: SubmitMode,
    queue: String,
    priority: i16,
    /// The submit's nonce ([`NewTask::nonce`]), kept in `submit_nonce`
    /// (a BIGINT: the same 64 bits, signed).
    nonce: i64,
}

/// Refuses, with a reason and before anything is sent, what the shared
/// ranges ([`NewTask::validate`]: so `now + delay` can never overflow a
/// BIGINT) or this store cannot hold, and payloads over `limit`.
pub(crate) fn validate(task: NewTask, limit: usize) -> Result<Checked> {
    task.validate()?;
    let nonce = task.nonce().cast_signed();
    if task.payload.len() > limit {
        return Err(Error::PayloadTooLarge { size: task.payload.len(), limit });
    }
    if let SubmitMode::Debounce(d) = &task.mode
        && (d.key.is_empty() || d.key.len() > executor_core::id::MAX_ID_LEN || d.key.contains('\0'))
    {
        return Err(Error::invalid(
            "debounce key",
            format!("{} bytes; 1 to {} without NUL", d.key.len(), executor_core::id::MAX_ID_LEN),
        ));
    }
    let retry = executor_sql::submit::stored_retry(task.retry.as_ref())?;
    let (due_abs, due_offset) = executor_sql::submit::due_columns(task.due)?;
    Ok(Checked {
        id: task.id,
        name: task.name,
        payload: task.payload,
        max_attempts: int(task.max_attempts.max(1)),
        due_abs,
        due_offset,
        max_duration: task.max_duration.map(ms),
        timeout: task.timeout.map(ms),
        retry,
        mode: task.mode,
        queue: task.queue.into(),
        priority: i16::from(task.priority),
        nonce,
    })
}

/// The INSERT of plain and idempotent tasks: every row's values as arrays,
/// so a batch of any size is one statement of one shape (one prepared
/// statement). A taken id inserts nothing and is not returned (`ON
/// CONFLICT DO NOTHING`): the caller tells a duplicate from the ids that
/// come back. Only the primary key can conflict (the rows carry no
/// debounce key). Each row keeps its submit's nonce.
const INSERT_SQL: &str = sql!("submit/insert");

fn insert_query<'a>(
    ns: &'a Namespace,
    rows: &[&Checked],
) -> sqlx::query::Query<'a, sqlx::Postgres, sqlx::postgres::PgArguments> {
    sqlx::query(INSERT_SQL)
        .bind(ns.as_str())
        .bind(rows.iter().map(|r| r.id.as_str().to_owned()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.name.clone()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.payload.clone()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.max_attempts).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.due_abs).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.due_offset).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.max_duration).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.timeout).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.retry.clone()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.queue.clone()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.priority).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.nonce).collect::<Vec<_>>())
}

/// The answers of an INSERT that returned `inserted`: the first row of each
/// returned id was created; every other row's id was taken (by a stored
/// task, or by an earlier row of the same batch).
fn answers(rows: &[&Checked], inserted: &[String]) -> Vec<Result<Submitted>> {
    let mut fresh: std::collections::HashSet<&str> = inserted.iter().map(String::as_str).collect();
    rows.iter()
        .map(|r| {
            if fresh.remove(r.id.as_str()) {
                Ok(Submitted::new(r.id.clone(), SubmitOutcome::Created))
            } else if matches!(r.mode, SubmitMode::Idempotent) {
                Ok(Submitted::new(r.id.clone(), SubmitOutcome::Existing))
            } else {
                Err(Error::DuplicateId(r.id.clone()))
            }
        })
        .collect()
}

/// The answers of an INSERT that returned `inserted`, where a plain row
/// whose id was taken is `Created` if the stored task carries its nonce:
/// the same submit sent again, whose lost first try stored it. One lookup
/// for all such rows, only when there are any; a lookup that fails leaves
/// them unknown ([`Error::OutcomeUnknown`]), so their callers send the same
/// submits again rather than new ones.
async fn answers_own(
    conns: &Conns,
    ns: &Namespace,
    rows: &[&Checked],
    inserted: &[String],
) -> Vec<Result<Submitted>> {
    let mut out = answers(rows, inserted);
    let taken: Vec<usize> = out
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, Err(Error::DuplicateId(_))))
        .map(|(i, _)| i)
        .collect();
    if taken.is_empty() {
        return out;
    }
    let ids: Vec<String> = taken.iter().map(|&i| rows[i].id.as_str().to_owned()).collect();
    let found = sqlx::query(sql!("submit/nonces"))
        .bind(ns.as_str())
        .bind(&ids)
        .fetch_all_on(conns)
        .await
        .and_then(|found| {
            found
                .iter()
                .map(|r| Ok((r.try_get::<String, _>("id")?, r.try_get::<Option<i64>, _>("submit_nonce")?)))
                .collect::<Result<std::collections::HashMap<String, Option<i64>>, sqlx::Error>>()
        });
    for i in taken {
        let row = rows[i];
        out[i] = match &found {
            Ok(stored) if stored.get(row.id.as_str()) == Some(&Some(row.nonce)) => {
                Ok(Submitted::new(row.id.clone(), SubmitOutcome::Created))
            }
            Ok(_) => Err(Error::DuplicateId(row.id.clone())),
            Err(e) => Err(Error::outcome_unknown(
                row.id.clone(),
                format!("the id is taken and its task could not be read: {e}"),
            )),
        };
    }
    out
}

fn returned_ids(rows: &[sqlx::postgres::PgRow]) -> Result<Vec<String>> {
    rows.iter().map(|r| r.try_get::<String, _>("id").map_err(error::storage)).collect()
}

/// One plain or idempotent task, one INSERT. A taken id answers
/// `Existing` to an idempotent submit; to a plain one, `Created` when this
/// very submit stored the task ([`answers_own`]) and
/// [`Error::DuplicateId`] otherwise.
async fn insert_one(s: &PostgresDialect, ns: &Namespace, row: &Checked) -> Result<Submitted> {
    let rows =
        fetch_all_sent(insert_query(ns, &[row]), &s.conns).await.map_err(|e| error::written(e, &row.id))?;
    // The INSERT ran: an answer that does not read leaves its outcome open.
    let inserted = returned_ids(&rows).map_err(|e| Error::outcome_unknown(row.id.clone(), e))?;
    answers_own(&s.conns, ns, &[row], &inserted)
        .await
        .pop()
        .unwrap_or_else(|| Err(Error::storage(std::io::Error::other("submit got no answer"), true)))
}

async fn insert_chunk(
    s: &PostgresDialect,
    ns: &Namespace,
    chunk: &[(usize, Checked)],
    out: &mut [Option<Result<Submitted>>],
) {
    let rows: Vec<&Checked> = chunk.iter().map(|(_, r)| r).collect();
    let lost = |out: &mut [Option<Result<Submitted>>], shown: String| {
        for (i, r) in chunk {
            out[*i] = Some(Err(Error::outcome_unknown(
                r.id.clone(),
                format!("the batch insert holding this task lost its answer: {shown}"),
            )));
        }
    };
    match fetch_all_sent(insert_query(ns, &rows), &s.conns).await {
        Ok(done) => match returned_ids(&done) {
            Ok(inserted) => {
                for ((i, _), answer) in chunk.iter().zip(answers_own(&s.conns, ns, &rows, &inserted).await) {
                    out[*i] = Some(answer);
                }
            }
            // The INSERT ran; its answer does not read.
            Err(e) => lost(out, e.to_string()),
        },
        // Sent, and the answer lost: every row may or may not be stored.
        // Each carries its nonce, so a resend of its submit answers
        // `Created` either way.
        Err(e) if e.sent && error::answer_lost(&e.error) => lost(out, e.error.to_string()),
        // No connection: nothing was sent.
        Err(e) if !e.sent => {
            let e = error::storage(e.error);
            let (shown, retryable) = (e.to_string(), e.is_retryable());
            for (i, _) in chunk {
                out[*i] = Some(Err(Error::storage(shown.clone(), retryable)));
            }
        }
        // Refused as a whole, nothing written: answer row by row.
        Err(e) => {
            tracing::warn!(error = %e.error, rows = chunk.len(), "batch insert refused; inserting its rows one by one");
            for (i, r) in chunk {
                out[*i] = Some(insert_one(s, ns, r).await);
            }
        }
    }
}

/// The debounce as one upsert on the `uk_waiting_key` partial index: the
/// task waiting under the key, if any, gets its due time moved to
/// `min(now + window, created_at + max_wait)` and the new payload;
/// otherwise a task is inserted with the given id. `xmax = 0` tells an
/// inserted row from an updated one. A duplicate of the primary key means
/// the id is taken by a task not waiting under this key. The task this very
/// submit created (its nonce: a resend after a lost answer) is left as it
/// is, and no row comes back.
const DEBOUNCE_SQL: &str = sql!("submit/debounce");

/// The debounce on a connection of the storage's own. The upsert's answer
/// lost after it was sent is [`Error::OutcomeUnknown`]: sent again, the
/// submit moves its task if it still waits, or finds its own nonce on it
/// ([`answers_own`]) once claimed.
async fn debounce_on(conns: &Conns, ns: &Namespace, row: &Checked, d: &Debounce) -> Result<Submitted> {
    let mut c = conns.get().await.map_err(error::storage)?;
    let out = debounce(&mut c, ns, row, d).await;
    // A refused statement was read in full: the connection is in step.
    if out.is_ok()
        || matches!(&out, Err(e) if error::certainly_not_applied(e) || matches!(e, Error::DuplicateId(_)))
    {
        c.done();
    }
    match out {
        Err(Error::DuplicateId(_)) => answers_own(conns, ns, &[row], &[])
            .await
            .pop()
            .unwrap_or_else(|| Err(Error::DuplicateId(row.id.clone()))),
        Err(Error::Storage { source, .. })
            if source.downcast_ref::<sqlx::Error>().is_some_and(error::answer_lost) =>
        {
            Err(Error::outcome_unknown(row.id.clone(), source))
        }
        other => other,
    }
}

async fn debounce(conn: &mut PgConnection, ns: &Namespace, row: &Checked, d: &Debounce) -> Result<Submitted> {
    let done = sqlx::query(DEBOUNCE_SQL)
        .bind(ns.as_str())
        .bind(row.id.as_str())
        .bind(&row.name)
        .bind(&row.payload)
        .bind(row.max_attempts)
        .bind(ms(d.window))
        .bind(d.max_wait.map(ms))
        .bind(row.max_duration)
        .bind(row.timeout)
        .bind(&row.retry)
        .bind(&d.key)
        .bind(&row.queue)
        .bind(row.priority)
        .bind(row.nonce)
        .fetch_optional(&mut *conn)
        .await;
    match done {
        // This submit's own task, still waiting: answered as the first time.
        Ok(None) => Ok(Submitted::new(row.id.clone(), SubmitOutcome::Created)),
        Ok(Some(r)) => {
            let raw: String = r.try_get("id").map_err(error::storage)?;
            let inserted: bool = r.try_get("inserted").map_err(error::storage)?;
            let id = TaskId::new(raw.clone()).map_err(|e| executor_sql::row::corrupt(&raw, e.to_string()))?;
            Ok(Submitted::new(id, if inserted { SubmitOutcome::Created } else { SubmitOutcome::Debounced }))
        }
        Err(e) if error::is_duplicate_id(&e) => Err(Error::DuplicateId(row.id.clone())),
        Err(e) => Err(error::storage(e)),
    }
}

impl Submit for PostgresDialect {
    /// One task, in one statement.
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        let row = validate(task, self.max_payload().await?)?;
        let out = match &row.mode {
            SubmitMode::Debounce(d) => debounce_on(&self.conns, ns, &row, d).await,
            SubmitMode::Plain | SubmitMode::Idempotent => insert_one(self, ns, &row).await,
            other => {
                Err(Error::unsupported("submit", format!("submit mode {other:?} is newer than this store")))
            }
        }?;
        self.notify_work(ns);
        Ok(out)
    }

    /// Many tasks: the plain and idempotent ones in INSERTs of up to
    /// `BATCH_ROWS` rows (one statement each, whatever the size). Each
    /// task is validated first and an invalid one is refused alone; a
    /// taken id answers its own item only. A batch the server refuses for
    /// another reason (nothing was written) is redone row by row, so each
    /// task gets its own answer and one bad row never fails its neighbours
    /// (bad input harms no neighbour). A batch whose connection was lost after it was sent
    /// has an unknown outcome: each of its tasks gets its own
    /// [`Error::OutcomeUnknown`]. Debounced ones go one by one.
    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        let limit = self.max_payload().await?;
        let mut out: Vec<Option<Result<Submitted>>> = Vec::with_capacity(tasks.len());
        let mut batch: Vec<(usize, Checked)> = Vec::new();
        let mut singles: Vec<(usize, Checked)> = Vec::new();
        for (i, task) in tasks.into_iter().enumerate() {
            match validate(task, limit) {
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
        let mut start = 0;
        while start < batch.len() {
            let mut end = start;
            let mut bytes = 0;
            while end < batch.len()
                && end - start < BATCH_ROWS
                && (end == start || bytes + batch[end].1.payload.len() <= BATCH_BYTES)
            {
                bytes += batch[end].1.payload.len();
                end += 1;
            }
            insert_chunk(self, ns, &batch[start..end], &mut out).await;
            start = end;
        }
        for (i, row) in singles {
            out[i] = Some(match &row.mode {
                SubmitMode::Debounce(d) => debounce_on(&self.conns, ns, &row, d).await,
                _ => insert_one(self, ns, &row).await,
            });
        }
        self.notify_work(ns);
        Ok(out
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(Error::storage(std::io::Error::other("submit got no answer"), true)))
            })
            .collect())
    }
}

impl SubmitIn<sqlx::PgConnection> for PostgresDialect {
    /// Submits `task` inside the caller's transaction (or on any connection
    /// of theirs): one INSERT (or the debounce upsert) on `conn`. The task
    /// is visible to claims only once the transaction commits, and is gone
    /// if it rolls back; the commit wakes idle claimers in every process
    /// (NOTIFY is delivered on commit). Idempotent and debounced submits
    /// keep their meaning: an id taken by a committed task, or by an
    /// uncommitted one of another transaction once that commits, answers
    /// `Existing`; a debounce moves the task waiting under its key, and
    /// waits for another transaction's uncommitted task under the same key
    /// to commit or roll back first.
    ///
    /// ```no_run
    /// # async fn run(storage: reliable_executor_postgres::PostgresStorage) -> executor_core::Result<()> {
    /// use executor_core::{Namespace, TaskId, storage::NewTask};
    ///
    /// let ns = Namespace::new("shop")?;
    /// let mut tx = storage.pool().begin().await.map_err(|e| executor_core::Error::storage(e, true))?;
    /// sqlx::query("INSERT INTO orders (id) VALUES ($1)").bind(42_i64).execute(&mut *tx).await
    ///     .map_err(|e| executor_core::Error::storage(e, false))?;
    /// let task = NewTask::new(TaskId::new("order-42")?, "process_order", br#"{"id":42}"#.to_vec());
    /// storage.submit_in(&mut tx, &ns, task).await?;
    /// tx.commit().await.map_err(|e| executor_core::Error::storage(e, true))?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As a submit; a store error leaves the transaction for the caller to
    /// roll back (PostgreSQL refuses every later statement of a
    /// transaction after an error).
    async fn submit_in(&self, conn: &mut PgConnection, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        let row = validate(task, self.max_payload().await?)?;
        match &row.mode {
            SubmitMode::Debounce(d) => debounce(&mut *conn, ns, &row, d).await,
            SubmitMode::Plain | SubmitMode::Idempotent => {
                let rows = insert_query(ns, &[&row]).fetch_all(&mut *conn).await.map_err(error::storage)?;
                answers(&[&row], &returned_ids(&rows)?).pop().unwrap_or_else(|| {
                    Err(Error::storage(std::io::Error::other("submit got no answer"), true))
                })
            }
            other => {
                Err(Error::unsupported("submit", format!("submit mode {other:?} is newer than this store")))
            }
        }
    }
}
