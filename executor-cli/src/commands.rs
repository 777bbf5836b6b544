//! The task commands: connect, then counts, list, show, requeue, cancel,
//! delete and purge.

use std::{
    io::{BufRead, Write},
    str::FromStr,
    time::Duration,
};

use executor_any::AnyStorage;
use executor_core::{
    Client, Error, ListQuery, Namespace, TaskId, TaskRecord, TaskState,
    query::{CancelOutcome, StateCounts},
    retry::parse_duration,
    storage::Storage,
};
use serde_json::json;

use crate::{
    args::{Cli, ListArgs, PurgeArgs, RequeueArgs},
    error::{CliError, CliResult},
    table::{Table, opt_time, time},
};

/// How long connecting may take before the store counts as unreachable
/// (the drivers have their own, shorter limits; this one bounds the rest).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Most tasks asked for in one page (the store's limit).
const PAGE: usize = 1_000;

/// The dead-letter states `requeue --all-dead` moves back.
const DEAD: [TaskState; 3] = [TaskState::Failed, TaskState::Timeout, TaskState::Error];

/// A client on the store and namespace of the command line.
///
/// # Errors
/// Usage errors for a missing URL or namespace or a bad namespace; the
/// store's connect error.
pub(crate) async fn connect(cli: &Cli) -> CliResult<Client<AnyStorage>> {
    let url = cli.url.as_deref().filter(|u| !u.trim().is_empty()).ok_or_else(|| {
        CliError::usage(
            "no store given: set REX_URL or pass --url (redis://host:6379, mysql://user@host/db, postgres://user@host/db, ...)",
        )
    })?;
    let namespace = cli.namespace.as_deref().ok_or_else(|| {
        CliError::usage(
            "no namespace given: set REX_NAMESPACE or pass --namespace (the executor's namespace)",
        )
    })?;
    let namespace = Namespace::new(namespace).map_err(|e| CliError::store("bad --namespace", e))?;
    let storage = tokio::time::timeout(CONNECT_TIMEOUT, AnyStorage::connect(url))
        .await
        .map_err(|_| CliError::store("cannot reach the store", Error::Timeout(CONNECT_TIMEOUT)))?
        .map_err(|e| match e {
            Error::Invalid { .. } => CliError::store("bad store URL (--url or REX_URL)", e),
            e => CliError::store("cannot reach the store", e),
        })?;
    Ok(Client::without_name_check(storage, namespace))
}

/// A task id from the command line.
fn task_id(id: &str) -> CliResult<TaskId> {
    TaskId::new(id).map_err(|e| CliError::store("bad task id", e))
}

/// A state from the command line, in any case.
pub(crate) fn state(text: &str) -> CliResult<TaskState> {
    TaskState::from_str(text).map_err(|e| CliError::store("bad --state", e))
}

/// Tasks of `state` that `keep` accepts, paging until `max` are found or
/// the pages run out; and whether there may be more. `filtered` says that
/// `keep` rejects some tasks, so pages are asked at full size.
async fn collect(
    client: &Client<AnyStorage>,
    query: ListQuery,
    max: usize,
    filtered: bool,
    keep: impl Fn(&TaskRecord) -> bool,
) -> CliResult<(Vec<TaskRecord>, bool)> {
    let size = if filtered { PAGE } else { max.clamp(1, PAGE) };
    let mut found = Vec::new();
    let mut query = query;
    query.limit = size;
    query.cursor = None;
    loop {
        let page = client.list(query.clone()).await.map_err(|e| CliError::store("listing tasks", e))?;
        let mut tasks = page.tasks.into_iter();
        for task in tasks.by_ref() {
            if keep(&task) {
                found.push(task);
                if found.len() == max {
                    break;
                }
            }
        }
        let more = tasks.next().is_some() || page.next.is_some();
        match page.next {
            Some(cursor) if found.len() < max => query.cursor = Some(cursor),
            _ => return Ok((found, more)),
        }
    }
}

/// `rex counts`: every state, zeros included, and the total.
pub(crate) async fn counts(client: &Client<AnyStorage>, json: bool, out: &mut dyn Write) -> CliResult {
    let counts = client.counts().await.map_err(|e| CliError::store("counting tasks", e))?;
    if json {
        writeln!(out, "{}", counts_json(&counts))?;
        return Ok(());
    }
    let mut table = Table::new(&["STATE", "TASKS"]);
    for state in TaskState::ALL {
        table.row(vec![state.to_string(), counts.get(state).to_string()]);
    }
    table.row(vec!["TOTAL".to_owned(), counts.total().to_string()]);
    Ok(table.write(out)?)
}

/// Counts as a JSON object with every state, zeros included.
pub(crate) fn counts_json(counts: &StateCounts) -> serde_json::Value {
    TaskState::ALL.into_iter().map(|s| (s.as_str().to_owned(), json!(counts.get(s)))).collect()
}

/// `rex list`.
pub(crate) async fn list(
    client: &Client<AnyStorage>,
    args: &ListArgs,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let state = state(&args.state)?;
    if args.limit == 0 {
        return Err(CliError::usage("--limit must be at least 1"));
    }
    let mut query = ListQuery::new(state, PAGE);
    query.name.clone_from(&args.name);
    // The store filters by name (an index in the SQL stores), so a page is
    // only the wanted tasks.
    let (tasks, more) = collect(client, query, args.limit, false, |_| true).await?;
    if json {
        writeln!(out, "{}", serde_json::to_string(&tasks)?)?;
        return Ok(());
    }
    let mut table = Table::new(&[
        "ID",
        "NAME",
        "QUEUE",
        "PRIORITY",
        "ATTEMPTS",
        "CREATED",
        "DUE",
        "FINISHED",
        "LAST ERROR",
    ]);
    for t in &tasks {
        table.row(vec![
            t.id.to_string(),
            t.name.clone(),
            t.queue.to_string(),
            t.priority.to_string(),
            format!("{}/{}", t.attempts, t.max_attempts),
            time(t.created_at),
            time(t.due_at),
            opt_time(t.finished_at),
            t.last_error.as_deref().unwrap_or("-").replace('\n', " "),
        ]);
    }
    table.write(out)?;
    if more {
        writeln!(out, "(stopped at --limit {}: there may be more {state} tasks)", args.limit)?;
    }
    Ok(())
}

/// `rex show`: every field of the record, then every attempt (the attempt
/// log and the current or last one) as a table.
pub(crate) async fn show(
    client: &Client<AnyStorage>,
    id: &str,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let id = task_id(id)?;
    let record =
        client.status(&id).await.map_err(|e| CliError::store("reading the task", e))?.ok_or_else(|| {
            CliError::not_found(format!("task `{id}` not found in namespace `{}`", client.namespace()))
        })?;
    if json {
        // The record as stored (its `attempt_log` included), and every
        // attempt joined with the current one, as the table below shows.
        let mut value = serde_json::to_value(&record)?;
        if let Some(fields) = value.as_object_mut() {
            fields.insert("all_attempts".to_owned(), serde_json::to_value(record.all_attempts())?);
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    let r = &record;
    let or_dash = |s: Option<String>| s.unwrap_or_else(|| "-".to_owned());
    let retry = match &r.retry {
        Some(policy) => serde_json::to_string(policy)?,
        None => "- (the handler's default)".to_owned(),
    };
    let fields = [
        ("id", r.id.to_string()),
        ("name", r.name.clone()),
        ("state", r.state.to_string()),
        ("queue", r.queue.to_string()),
        ("priority", r.priority.to_string()),
        ("attempts", format!("{} of {}", r.attempts, r.max_attempts)),
        ("fence", r.fence.to_string()),
        ("created_at", time(r.created_at)),
        ("due_at", time(r.due_at)),
        ("started_at", opt_time(r.started_at)),
        ("finished_at", opt_time(r.finished_at)),
        ("deadline", opt_time(r.deadline)),
        ("timeout", or_dash(r.timeout.map(|d| format!("{d:?}")))),
        ("retry", retry),
        ("last_error", or_dash(r.last_error.clone())),
        ("worker", or_dash(r.worker.as_ref().map(ToString::to_string))),
        ("lease_until", opt_time(r.lease_until)),
        ("cancel_requested", r.cancel_requested.to_string()),
        ("debounce_key", or_dash(r.debounce_key.clone())),
    ];
    for (field, value) in fields {
        writeln!(out, "{field:<16} {value}")?;
    }
    let payload = match serde_json::from_slice::<serde_json::Value>(&r.payload) {
        Ok(v) => serde_json::to_string_pretty(&v)?,
        Err(_) => String::from_utf8_lossy(&r.payload).into_owned(),
    };
    writeln!(out, "payload:\n{payload}")?;
    attempts_table(r, out)
}

/// The attempts of `rex show`: the attempt log and the current or last
/// attempt, oldest first.
fn attempts_table(r: &TaskRecord, out: &mut dyn Write) -> CliResult {
    let attempts = r.all_attempts();
    if attempts.is_empty() {
        writeln!(out, "attempts: none yet")?;
        return Ok(());
    }
    writeln!(out, "attempts:")?;
    let mut table = Table::new(&["#", "WORKER", "STARTED", "ENDED", "DURATION", "OUTCOME", "ERROR"]);
    for a in attempts {
        table.row(vec![
            a.attempt.to_string(),
            a.worker.as_ref().map_or_else(|| "-".to_owned(), ToString::to_string),
            opt_time(a.started_at),
            opt_time(a.ended_at),
            a.duration().map_or_else(|| "-".to_owned(), |d| format!("{d:?}")),
            a.outcome.to_string(),
            a.error.as_deref().unwrap_or("-").replace('\n', " "),
        ]);
    }
    table.write(out)?;
    if r.attempt_log.len() >= executor_core::attempt_log::MAX_ATTEMPT_LOG {
        writeln!(
            out,
            "(the store keeps the last {} ended attempts)",
            executor_core::attempt_log::MAX_ATTEMPT_LOG
        )?;
    }
    Ok(())
}

/// `rex requeue ID` or `rex requeue --all-dead`.
pub(crate) async fn requeue(
    client: &Client<AnyStorage>,
    args: &RequeueArgs,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let Some(id) = args.id.as_deref().filter(|_| !args.all_dead) else {
        return requeue_all_dead(client, json, out).await;
    };
    let id = task_id(id)?;
    client.requeue(&id).await.map_err(|e| CliError::store("requeue", e))?;
    if json {
        writeln!(out, "{}", json!({ "requeued": [id.to_string()] }))?;
    } else {
        writeln!(out, "requeued {id}: PENDING, due now")?;
    }
    Ok(())
}

/// Requeues every dead letter listed at the start. A task that left its
/// state meanwhile (a worker or another operator got there first) is
/// counted as skipped, not as an error.
async fn requeue_all_dead(client: &Client<AnyStorage>, json: bool, out: &mut dyn Write) -> CliResult {
    let mut requeued = Vec::new();
    let mut skipped = 0_u64;
    let mut per_state = Vec::new();
    for state in DEAD {
        // Listed in full before the first requeue: requeueing moves tasks
        // out of the state and would shift the cursor under the pages.
        let (tasks, _) = collect(client, ListQuery::new(state, PAGE), usize::MAX, false, |_| true).await?;
        let mut n = 0_u64;
        for task in tasks {
            match client.requeue(&task.id).await {
                Ok(()) => {
                    n += 1;
                    requeued.push(task.id.to_string());
                }
                Err(Error::NotFound(_) | Error::IllegalTransition { .. }) => skipped += 1,
                Err(e) => return Err(CliError::store(&format!("requeue of {}", task.id), e)),
            }
        }
        per_state.push((state, n));
    }
    if json {
        writeln!(out, "{}", json!({ "requeued": requeued, "skipped": skipped }))?;
        return Ok(());
    }
    let detail: Vec<String> = per_state.iter().map(|(s, n)| format!("{s} {n}")).collect();
    write!(out, "requeued {} tasks ({})", requeued.len(), detail.join(", "))?;
    if skipped > 0 {
        write!(out, "; skipped {skipped} that changed state meanwhile")?;
    }
    writeln!(out)?;
    Ok(())
}

/// `rex cancel`.
pub(crate) async fn cancel(
    client: &Client<AnyStorage>,
    id: &str,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let id = task_id(id)?;
    let outcome = client.cancel(&id).await.map_err(|e| CliError::store("cancel", e))?;
    if json {
        writeln!(out, "{}", json!({ "id": id.to_string(), "outcome": outcome.as_str() }))?;
    } else if outcome == CancelOutcome::Cancelled {
        writeln!(out, "cancelled {id}")?;
    } else {
        writeln!(out, "cancel requested: {id} is running; its worker is told at its next heartbeat")?;
    }
    Ok(())
}

/// `rex run-now`.
pub(crate) async fn run_now(
    client: &Client<AnyStorage>,
    id: &str,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let id = task_id(id)?;
    client.run_now(&id).await.map_err(|e| CliError::store("run now", e))?;
    if json {
        writeln!(out, "{}", json!({ "id": id.to_string(), "due": "now" }))?;
    } else {
        writeln!(out, "{id} is due now")?;
    }
    Ok(())
}

/// `rex delete`.
pub(crate) async fn delete(
    client: &Client<AnyStorage>,
    id: &str,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let id = task_id(id)?;
    if !client.delete(&id).await.map_err(|e| CliError::store("delete", e))? {
        return Err(CliError::not_found(format!(
            "task `{id}` not found in namespace `{}`",
            client.namespace()
        )));
    }
    if json {
        writeln!(out, "{}", json!({ "deleted": [id.to_string()] }))?;
    } else {
        writeln!(out, "deleted {id}")?;
    }
    Ok(())
}

/// `rex purge`: deletes the tasks of a finished state that finished before
/// now minus `--older-than` (the store's clock), after a confirmation.
pub(crate) async fn purge(
    client: &Client<AnyStorage>,
    args: &PurgeArgs,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let state = state(&args.state)?;
    if !state.is_terminal() {
        return Err(CliError::usage(format!(
            "purge takes a finished state (COMPLETED, FAILED, TIMEOUT, ERROR, CANCELLED), not {state}"
        )));
    }
    let age = parse_duration(&args.older_than).map_err(|e| CliError::usage(format!("--older-than: {e}")))?;
    // finished_at is on the store's clock: the cutoff is too.
    let now = client
        .storage()
        .now(client.namespace())
        .await
        .map_err(|e| CliError::store("reading the store's clock", e))?;
    let cutoff = now.saturating_sub(age);
    let (tasks, _) = collect(client, ListQuery::new(state, PAGE), usize::MAX, true, |t| {
        t.finished_at.is_some_and(|f| f <= cutoff)
    })
    .await?;
    if !tasks.is_empty() && !args.yes && !confirm(tasks.len())? {
        return Err(CliError::usage("nothing deleted (not confirmed; --yes skips the question)"));
    }
    let mut deleted = 0_u64;
    for task in &tasks {
        if client.delete(&task.id).await.map_err(|e| CliError::store(&format!("delete of {}", task.id), e))? {
            deleted += 1;
        }
    }
    if json {
        writeln!(out, "{}", json!({ "deleted": deleted }))?;
    } else {
        writeln!(out, "deleted {deleted} {state} tasks finished before {}", time(cutoff))?;
    }
    Ok(())
}

/// Asks on stderr, reads the answer from stdin; only `y` or `yes` agree.
fn confirm(n: usize) -> CliResult<bool> {
    eprint!("Delete {n} tasks? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}
