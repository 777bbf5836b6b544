//! Submitting tasks: plain and idempotent inserts (batched for
//! `submit_many`), and the debounce upsert.

use executor_core::{
    Error, Namespace, Result, SubmitOutcome, Submitted, TaskId,
    storage::{Debounce, NewTask, SubmitMode},
};
use executor_sql::dialect::{Submit, SubmitIn};
use executor_sql::{Dialect as _, ErrorClass as _};
use sqlx::{MySql, Row, mysql::MySqlArguments, query::Query};

use crate::{
    MySqlDialect,
    conn::{RunOn, execute_sent},
    error,
    sql::{self, ID_COLUMN_CHARS, NAME_COLUMN_CHARS, ms, sql},
};

/// Most rows in one multi-row INSERT.
const BATCH_ROWS: usize = 500;
/// Most bytes in one multi-row INSERT, well under the server's default
/// 16 MiB `max_allowed_packet`; a smaller packet lowers it (half a packet).
const BATCH_BYTES: usize = 4 << 20;
/// Bytes a row adds to a multi-row INSERT besides its payload, id, name,
/// retry policy and debounce key (the other values and the placeholders).
const ROW_OVERHEAD: usize = 256;

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
    queue: String,
    priority: u8,
    /// The submit's nonce ([`NewTask::nonce`]), kept in `submit_nonce`.
    nonce: u64,
}

impl Checked {
    /// Bytes this row adds to a statement.
    fn size(&self) -> usize {
        let key = match &self.mode {
            SubmitMode::Debounce(d) => d.key.len(),
            _ => 0,
        };
        self.payload.len()
            + self.id.as_str().len()
            + self.name.len()
            + self.retry.as_ref().map_or(0, String::len)
            + key
            + self.queue.len()
            + ROW_OVERHEAD
    }
}

/// Refuses, with a reason and before anything is sent, what the shared
/// ranges ([`NewTask::validate`]: so `now + delay` can never overflow a
/// BIGINT) or the columns cannot hold, and payloads over `limit` (the
/// option, and the server's packet size: a larger statement makes the
/// server drop the connection, which a caller would retry forever).
fn validate(task: NewTask, limit: usize) -> Result<Checked> {
    task.validate()?;
    let nonce = task.nonce();
    if task.payload.len() > limit {
        return Err(Error::PayloadTooLarge { size: task.payload.len(), limit });
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
    let retry = executor_sql::submit::stored_retry(task.retry.as_ref())?;
    let (due_abs, due_offset) = executor_sql::submit::due_columns(task.due)?;
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
        queue: task.queue.into(),
        priority: task.priority,
        nonce,
    })
}

/// One plain or idempotent task, one INSERT. A taken id answers
/// `Existing` to an idempotent submit; to a plain one, `Created` when this
/// very submit stored the task (a resend whose first try's answer was lost:
/// [`created_by`]) and [`Error::DuplicateId`] otherwise.
async fn insert_one(s: &MySqlDialect, ns: &Namespace, row: &Checked) -> Result<Submitted> {
    match execute_sent(insert(ns, std::iter::once(row)), &s.conns).await {
        Ok(_) => Ok(Submitted::new(row.id.clone(), SubmitOutcome::Created)),
        Err(e) if crate::MySqlDialect::is_duplicate(&e.error) => match row.mode {
            SubmitMode::Idempotent => Ok(Submitted::new(row.id.clone(), SubmitOutcome::Existing)),
            _ => created_by(s, ns, row).await,
        },
        Err(e) => Err(error::written(e, &row.id)),
    }
}

/// After an INSERT found `row.id` taken: `Created` when the stored task
/// carries this submit's nonce (the same submit sent again, whose lost
/// first try stored it), else [`Error::DuplicateId`]. A lookup that fails
/// leaves that question open: [`Error::OutcomeUnknown`], so the caller
/// sends the same submit again rather than one under a new id.
async fn created_by(s: &MySqlDialect, ns: &Namespace, row: &Checked) -> Result<Submitted> {
    let stored = crate::sql::bind_task(sqlx::query(sql!("submit/nonce")), ns, &row.id)
        .fetch_optional_on(&s.conns)
        .await
        .and_then(|r| r.map(|r| r.try_get::<Option<u64>, _>("submit_nonce")).transpose())
        .map_err(|e| Error::outcome_unknown(row.id.clone(), e))?;
    if stored.flatten() == Some(row.nonce) {
        Ok(Submitted::new(row.id.clone(), SubmitOutcome::Created))
    } else {
        Err(Error::DuplicateId(row.id.clone()))
    }
}

/// The INSERT of `rows`, one row per task (see the file).
fn insert<'a>(
    ns: &Namespace,
    rows: impl ExactSizeIterator<Item = &'a Checked>,
) -> Query<'static, MySql, MySqlArguments> {
    let mut q = sql::query(sql::slice(sql!("submit/insert"), "rows", rows.len()));
    for r in rows {
        q = q
            .bind(ns.as_str().to_owned())
            .bind(r.id.as_str().to_owned())
            .bind(r.name.clone())
            .bind(r.payload.clone())
            .bind(r.max_attempts)
            .bind(r.due_abs)
            .bind(r.due_offset)
            .bind(r.max_duration)
            .bind(r.timeout)
            .bind(r.retry.clone())
            .bind(r.queue.clone())
            .bind(r.priority)
            .bind(r.nonce);
    }
    q
}

async fn insert_chunk(
    s: &MySqlDialect,
    ns: &Namespace,
    chunk: Vec<(usize, Checked)>,
    out: &mut [Option<Result<Submitted>>],
) {
    match execute_sent(insert(ns, chunk.iter().map(|(_, r)| r)), &s.conns).await {
        Ok(_) => {
            for (i, r) in chunk {
                out[i] = Some(Ok(Submitted::new(r.id, SubmitOutcome::Created)));
            }
        }
        // Sent, and the answer lost: every row may or may not be stored.
        // Each carries its nonce, so a resend of its submit answers
        // `Created` either way.
        Err(e) if e.sent && error::answer_lost(&e.error) => {
            let shown = e.error.to_string();
            for (i, r) in chunk {
                out[i] = Some(Err(Error::outcome_unknown(
                    r.id,
                    format!("the batch insert holding this task lost its connection: {shown}"),
                )));
            }
        }
        // No connection: nothing was sent.
        Err(e) if !e.sent => {
            let e = error::storage(e.error);
            let (shown, retryable) = (e.to_string(), e.is_retryable());
            for (i, _) in chunk {
                out[i] = Some(Err(Error::storage(shown.clone(), retryable)));
            }
        }
        // Refused as a whole, nothing written: answer row by row.
        Err(e) => {
            if !crate::MySqlDialect::is_duplicate(&e.error) {
                tracing::warn!(error = %e.error, rows = chunk.len(), "batch insert refused; inserting its rows one by one");
            }
            for (i, r) in chunk {
                out[i] = Some(insert_one(s, ns, &r).await);
            }
        }
    }
}

/// Rounds of a debounce whose waiting task was claimed in between.
const DEBOUNCE_ROUNDS: usize = 5;

/// The debounce, in autocommit statements (no transaction waits for this
/// client while it holds a row lock: a stopped process holds nothing others need):
///
/// 1. the task waiting under the key, if any (the `waiting_key` unique
///    index binds a key to at most one waiting task);
/// 2. if one waits, one UPDATE moves its due time to
///    `min(now + window, created_at + max_wait)` and replaces its payload,
///    conditional on it still waiting under the key: one row changed means
///    that task carries this payload (a claim that took it first leaves no
///    row to change, and the next round inserts a new task);
/// 3. if none waits, the task is inserted; a duplicate on the key means one
///    started waiting meanwhile (next round), a duplicate on the id means
///    the id is taken by a task not waiting under this key
///    ([`Error::DuplicateId`], unless this very submit stored it:
///    [`created_by`]).
///
/// A write whose answer was lost is [`Error::OutcomeUnknown`]: sent again,
/// the submit finds its task waiting (and moves it) or, once claimed, finds
/// its own nonce on it.
async fn debounce(s: &MySqlDialect, ns: &Namespace, row: &Checked, d: &Debounce) -> Result<Submitted> {
    let window = ms(d.window);
    let max_wait = d.max_wait.map(ms);
    for _ in 0..DEBOUNCE_ROUNDS {
        if let Some((id, nonce)) = waiting_under(s, ns, &d.key).await? {
            // This submit's own task (a resend after a lost answer): left
            // as it is, answered as the first time.
            if nonce == Some(row.nonce) {
                return Ok(Submitted::new(id, SubmitOutcome::Created));
            }
            let moved =
                error::retry_lock_conflicts(|| move_waiting(s, ns, &id, window, max_wait, row, d)).await?;
            if moved {
                return Ok(Submitted::new(id, SubmitOutcome::Debounced));
            }
            continue;
        }
        let inserted = sqlx::query(sql!("submit/insert_debounced"))
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
            .bind(&row.queue)
            .bind(row.priority)
            .bind(row.nonce);
        match execute_sent(inserted, &s.conns).await {
            Ok(_) => return Ok(Submitted::new(row.id.clone(), SubmitOutcome::Created)),
            // The id is taken. If that task waits under this key, the next
            // round finds it; otherwise the id belongs to another task, or
            // to this very submit's lost first try.
            Err(e) if error::is_duplicate_id(&e.error) => {
                if waiting_key_of(s, ns, &row.id).await?.as_deref() != Some(d.key.as_str()) {
                    return created_by(s, ns, row).await;
                }
            }
            // Another task started waiting under the key: the next round
            // moves it.
            Err(e) if crate::MySqlDialect::is_duplicate(&e.error) => {}
            Err(e) => return Err(error::written(e, &row.id)),
        }
    }
    Err(Error::storage(std::io::Error::other("the debounce key kept changing hands; try again"), true))
}

/// Moves the due time of `id` and replaces its payload if it still waits
/// under the key; answers whether it did.
async fn move_waiting(
    s: &MySqlDialect,
    ns: &Namespace,
    id: &TaskId,
    window: i64,
    max_wait: Option<i64>,
    row: &Checked,
    d: &Debounce,
) -> Result<bool> {
    let q =
        sqlx::query(sql!("submit/move_waiting")).bind(window).bind(max_wait).bind(window).bind(&row.payload);
    let done = execute_sent(crate::sql::bind_task(q, ns, id).bind(&d.key), &s.conns)
        .await
        .map_err(|e| error::written(e, &row.id))?;
    Ok(done.rows_affected() > 0)
}

/// The task waiting under `key`, if any, and the nonce of its submit.
async fn waiting_under(s: &MySqlDialect, ns: &Namespace, key: &str) -> Result<Option<(TaskId, Option<u64>)>> {
    let row = sqlx::query(sql!("submit/waiting_under"))
        .bind(ns.as_str())
        .bind(key)
        .fetch_optional_on(&s.conns)
        .await
        .map_err(error::storage)?;
    match row {
        None => Ok(None),
        Some(r) => {
            let raw: String = r.try_get("id").map_err(error::storage)?;
            let nonce: Option<u64> = r.try_get("submit_nonce").map_err(error::storage)?;
            let id = TaskId::new(raw.clone()).map_err(|e| executor_sql::row::corrupt(&raw, e.to_string()))?;
            Ok(Some((id, nonce)))
        }
    }
}

/// The key `id` waits under, if it waits under one.
async fn waiting_key_of(s: &MySqlDialect, ns: &Namespace, id: &TaskId) -> Result<Option<String>> {
    let row = crate::sql::bind_task(sqlx::query(sql!("submit/waiting_key")), ns, id)
        .fetch_optional_on(&s.conns)
        .await
        .map_err(error::storage)?;
    match row {
        None => Ok(None),
        Some(r) => r.try_get("waiting_key").map_err(error::storage),
    }
}

impl Submit for MySqlDialect {
    /// One task, in one statement (plain, idempotent) or a few autocommit
    /// statements (debounce).
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        let row = validate(task, self.max_payload().await?)?;
        let out = match &row.mode {
            SubmitMode::Debounce(d) => debounce(self, ns, &row, d).await,
            SubmitMode::Plain | SubmitMode::Idempotent => insert_one(self, ns, &row).await,
            other => {
                Err(Error::unsupported("submit", format!("submit mode {other:?} is newer than this store")))
            }
        }?;
        self.notify_work();
        Ok(out)
    }

    /// Many tasks: the plain and idempotent ones in multi-row INSERTs of up to
    /// `BATCH_ROWS` rows. Each task is validated first and an invalid one is
    /// refused alone. A batch the server refuses (a duplicate id, any other
    /// error reply: nothing was written) is redone row by row, so each task
    /// gets its own answer and one bad row never fails its neighbours
    /// (bad input harms no neighbour). A batch whose connection was lost after it was sent has
    /// an unknown outcome: each of its tasks gets its own
    /// [`Error::OutcomeUnknown`]. Debounced ones go one by one.
    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        let limit = self.max_payload().await?;
        let batch_bytes = BATCH_BYTES.min(self.packet_size().await? / 2);
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
        let mut chunk: Vec<(usize, Checked)> = Vec::new();
        let mut bytes = 0;
        for item in batch {
            if !chunk.is_empty() && bytes + item.1.size() > batch_bytes {
                insert_chunk(self, ns, std::mem::take(&mut chunk), &mut out).await;
                bytes = 0;
            }
            bytes += item.1.size();
            chunk.push(item);
            if chunk.len() >= BATCH_ROWS {
                insert_chunk(self, ns, std::mem::take(&mut chunk), &mut out).await;
                bytes = 0;
            }
        }
        if !chunk.is_empty() {
            insert_chunk(self, ns, chunk, &mut out).await;
        }
        for (i, row) in singles {
            let res = match &row.mode {
                SubmitMode::Debounce(d) => debounce(self, ns, &row, d).await,
                _ => insert_one(self, ns, &row).await,
            };
            out[i] = Some(res);
        }
        self.notify_work();
        Ok(out
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(Error::storage(std::io::Error::other("submit got no answer"), true)))
            })
            .collect())
    }
}

impl SubmitIn<sqlx::MySqlConnection> for MySqlDialect {
    /// Submits `task` inside the caller's transaction (or on any connection
    /// of theirs): one INSERT on `conn`. The task is visible to claims only
    /// once the transaction commits, and is gone if it rolls back. MySQL has
    /// no notification on commit, so claimers in other processes (and this
    /// one) see it at their next poll, within the poll interval's maximum
    /// (250 ms by default, [`crate::MySqlOptions::poll_interval`]).
    /// Idempotent submits keep their meaning (an id taken by a committed
    /// task answers `Existing`; one taken by another open transaction waits
    /// for it, as InnoDB does); a duplicate id refuses only this statement
    /// and leaves the transaction usable. A debounced submit is refused:
    /// MySQL's debounce is several statements that must not hold their
    /// locks until the caller commits.
    ///
    /// ```no_run
    /// # async fn run(storage: reliable_executor_mysql::MySqlStorage) -> Result<(), Box<dyn std::error::Error>> {
    /// use executor_core::{Namespace, TaskId, storage::NewTask};
    ///
    /// let ns = Namespace::new("shop")?;
    /// let mut tx = storage.pool().begin().await?;
    /// sqlx::query("INSERT INTO orders (id) VALUES (?)").bind(42_i64).execute(&mut *tx).await?;
    /// let task = NewTask::new(TaskId::new("order-42")?, "process_order", br#"{"id":42}"#.to_vec());
    /// storage.submit_in(&mut tx, &ns, task).await?;
    /// tx.commit().await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As a submit; [`Error::Unsupported`] for a debounced submit.
    async fn submit_in(
        &self,
        conn: &mut sqlx::MySqlConnection,
        ns: &Namespace,
        task: NewTask,
    ) -> Result<Submitted> {
        let row = validate(task, self.max_payload().await?)?;
        if !matches!(row.mode, SubmitMode::Plain | SubmitMode::Idempotent) {
            return Err(Error::unsupported(
                "submit_in",
                "a debounced submit cannot join a MySQL transaction (its statements must not hold locks \
                 until the caller commits); submit it after the commit, or use PostgreSQL",
            ));
        }
        match insert(ns, std::iter::once(&row)).execute(&mut *conn).await {
            Ok(_) => Ok(Submitted::new(row.id.clone(), SubmitOutcome::Created)),
            Err(e) if crate::MySqlDialect::is_duplicate(&e) => match row.mode {
                SubmitMode::Idempotent => Ok(Submitted::new(row.id.clone(), SubmitOutcome::Existing)),
                _ => Err(Error::DuplicateId(row.id.clone())),
            },
            Err(e) => Err(error::storage(e)),
        }
    }
}
