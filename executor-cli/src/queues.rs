//! `rex queues`: the named queues of a namespace (depth, due tasks,
//! latency, paused, running tasks, limits, throttled claims), pausing or
//! resuming one fleet-wide, and setting or clearing its limits.

use std::io::Write;

use executor_any::AnyStorage;
use executor_core::{
    Client, QueueName, Timestamp,
    queue::{QueueInfo, QueueLimits},
    storage::Storage,
};
use serde_json::json;

use crate::{
    args::QueueAction,
    error::{CliError, CliResult},
    limits,
    table::Table,
};

/// An action with its input read and checked.
#[derive(Debug)]
pub(crate) enum Checked {
    Pause(QueueName),
    Resume(QueueName),
    Limit(QueueName, QueueLimits),
}

/// Checks the queue name and the limits of an action before anything is
/// asked of the store: bad input is a usage error (exit 2) even when the
/// store is down.
pub(crate) fn check(action: &QueueAction) -> CliResult<Checked> {
    let name = match action {
        QueueAction::Pause { name } | QueueAction::Resume { name } => name,
        QueueAction::Limit(args) => &args.name,
    };
    let queue = QueueName::new(name.as_str()).map_err(|e| CliError::store("bad queue name", e))?;
    Ok(match action {
        QueueAction::Pause { .. } => Checked::Pause(queue),
        QueueAction::Resume { .. } => Checked::Resume(queue),
        QueueAction::Limit(args) => Checked::Limit(queue, limits::parse(args)?),
    })
}

/// `rex queues [pause|resume NAME]`.
pub(crate) async fn run(
    client: &Client<AnyStorage>,
    action: Option<&QueueAction>,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let Some(action) = action else { return list(client, json, out).await };
    let (queue, verb) = match check(action)? {
        Checked::Limit(queue, limits) => return limit(client, queue, limits, json, out).await,
        Checked::Pause(queue) => {
            client.pause_queue(queue.as_str()).await.map_err(|e| CliError::store("pausing the queue", e))?;
            (queue, "paused")
        }
        Checked::Resume(queue) => {
            client
                .resume_queue(queue.as_str())
                .await
                .map_err(|e| CliError::store("resuming the queue", e))?;
            (queue, "resumed")
        }
    };
    if json {
        writeln!(out, "{}", json!({ "queue": queue.as_str(), verb: true }))?;
    } else {
        writeln!(out, "{verb} queue {queue}")?;
    }
    Ok(())
}

/// Sets (or, with none in `limits`, clears) `queue`'s limits; says so,
/// or with `--json` prints the queue's row as the list shows it now.
async fn limit(
    client: &Client<AnyStorage>,
    queue: QueueName,
    limits: QueueLimits,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    client
        .set_queue_limits(queue.as_str(), limits)
        .await
        .map_err(|e| CliError::store("setting the queue's limits", e))?;
    if json {
        let (listed, now) = listed(client).await?;
        // A queue the store no longer lists (no task, not paused, no
        // limits) reads as empty.
        let row = listed.into_iter().find(|q| q.queue == queue).unwrap_or_else(|| QueueInfo::new(queue));
        writeln!(out, "{}", json_row(&row, now))?;
    } else if limits.is_none() {
        writeln!(out, "cleared the limits of queue {queue}")?;
    } else {
        writeln!(out, "limited queue {queue}: {}", limits::cell(&limits))?;
    }
    Ok(())
}

/// Every queue the store lists, and the store's now when some queue has a
/// due task (latency is now minus the oldest due time, both on the store's
/// clock).
async fn listed(client: &Client<AnyStorage>) -> CliResult<(Vec<QueueInfo>, Option<Timestamp>)> {
    let listed = client.queues().await.map_err(|e| CliError::store("listing queues", e))?;
    let now = if listed.iter().any(|q| q.oldest_due.is_some()) {
        Some(
            client
                .storage()
                .now(client.namespace())
                .await
                .map_err(|e| CliError::store("reading the store's clock", e))?,
        )
    } else {
        None
    };
    Ok((listed, now))
}

fn latency(q: &QueueInfo, now: Option<Timestamp>) -> Option<u128> {
    q.oldest_due.zip(now).map(|(due, now)| now.since(due).as_millis())
}

/// One queue as `--json` shows it: the admin API's `QueueView`.
fn json_row(q: &QueueInfo, now: Option<Timestamp>) -> serde_json::Value {
    json!({
        "queue": q.queue.as_str(),
        "waiting": q.waiting,
        "due": q.due,
        "oldest_due": q.oldest_due,
        "latency_ms": latency(q, now),
        "paused": q.paused,
        "running": q.running,
        "limits": limits::to_json(&q.limits),
        "throttled": q.throttled,
    })
}

/// Every queue with waiting or running tasks, paused or limited, by name.
async fn list(client: &Client<AnyStorage>, json: bool, out: &mut dyn Write) -> CliResult {
    let (listed, now) = listed(client).await?;
    if json {
        let rows: Vec<serde_json::Value> = listed.iter().map(|q| json_row(q, now)).collect();
        writeln!(out, "{}", serde_json::Value::Array(rows))?;
        return Ok(());
    }
    let mut table =
        Table::new(&["QUEUE", "WAITING", "DUE", "LATENCY", "PAUSED", "RUNNING", "THROTTLED", "LIMITS"]);
    for q in &listed {
        table.row(vec![
            q.queue.to_string(),
            q.waiting.to_string(),
            q.due.to_string(),
            latency(q, now).map_or_else(|| "-".to_owned(), span),
            if q.paused { "yes" } else { "no" }.to_owned(),
            q.running.to_string(),
            q.throttled.to_string(),
            limits::cell(&q.limits),
        ]);
    }
    Ok(table.write(out)?)
}

/// A span of milliseconds, short: `850ms`, `12.3s`, `5m02s`, `2h03m`, `3d04h`.
fn span(ms: u128) -> String {
    let (s, m, h, d) = (ms / 1000, ms / 60_000, ms / 3_600_000, ms / 86_400_000);
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{s}.{}s", ms % 1000 / 100),
        60_000..3_600_000 => format!("{m}m{:02}s", s % 60),
        3_600_000..86_400_000 => format!("{h}h{:02}m", m % 60),
        _ => format!("{d}d{:02}h", h % 24),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use executor_core::{MemoryStorage, Namespace, TaskBuilder, TaskOptions};

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn spans_are_short() {
        let cases = [
            (0, "0ms"),
            (850, "850ms"),
            (12_345, "12.3s"),
            (302_000, "5m02s"),
            (7_380_000, "2h03m"),
            (273_600_000, "3d04h"),
        ];
        for (ms, text) in cases {
            assert_eq!(span(ms), text, "{ms}");
        }
    }

    async fn output(
        client: &Client<AnyStorage>,
        action: Option<&QueueAction>,
        json: bool,
    ) -> Result<String, String> {
        let mut out = Vec::new();
        run(client, action, json, &mut out).await.map_err(|e| format!("exit {}: {e}", e.code))?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The table and JSON of a seeded memory store, in one process (each
    /// `rex` run on `memory:` starts empty).
    #[tokio::test]
    async fn lists_pauses_and_resumes_on_memory() -> TestResult {
        let client = Client::without_name_check(AnyStorage::from(MemoryStorage::new()), Namespace::new("q")?);
        assert_eq!(
            output(&client, None, false).await?,
            "QUEUE  WAITING  DUE  LATENCY  PAUSED  RUNNING  THROTTLED  LIMITS\n"
        );
        assert_eq!(output(&client, None, true).await?, "[]\n");
        for (id, delay) in [("mail-1", None), ("mail-2", None), ("mail-3", Some(Duration::from_secs(3600)))] {
            let mut task =
                TaskBuilder::new("send_mail", id, TaskOptions::new()).id(id).queue("emails").priority(3);
            if let Some(d) = delay {
                task = task.delay(d);
            }
            task.submit(&client).await?;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;

        let table = output(&client, None, false).await?;
        let row = table.lines().nth(1).ok_or("no row")?;
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            (cells[0], cells[1], cells[2], cells[4], cells[5], cells[6], cells[7]),
            ("emails", "3", "2", "no", "0", "0", "-"),
            "{table}"
        );
        assert!(cells[3].ends_with("ms") || cells[3].ends_with('s'), "{table}");

        let listed: serde_json::Value = serde_json::from_str(&output(&client, None, true).await?)?;
        let emails = &listed[0];
        assert_eq!(
            (&emails["queue"], &emails["waiting"], &emails["due"]),
            (&json!("emails"), &json!(3), &json!(2))
        );
        assert!(emails["latency_ms"].as_u64().is_some_and(|l| l >= 20), "{emails}");
        assert!(emails["oldest_due"].as_u64().is_some(), "{emails}");

        let pause = QueueAction::Pause { name: "emails".to_owned() };
        assert_eq!(output(&client, Some(&pause), false).await?, "paused queue emails\n");
        let paused = output(&client, None, false).await?;
        assert!(
            paused.lines().nth(1).is_some_and(|l| l.split_whitespace().nth(4) == Some("yes")),
            "{paused}"
        );
        let resume = QueueAction::Resume { name: "emails".to_owned() };
        assert_eq!(output(&client, Some(&resume), true).await?, "{\"queue\":\"emails\",\"resumed\":true}\n");
        assert!(client.queues().await?.iter().all(|q| !q.paused));

        let bad = QueueAction::Pause { name: "e mails".to_owned() };
        let err =
            run(&client, Some(&bad), false, &mut Vec::new()).await.err().ok_or("a bad name was accepted")?;
        assert_eq!(err.code, CliError::USAGE, "{err}");
        assert!(err.message.starts_with("bad queue name: "), "{err}");
        Ok(())
    }

    fn limit(concurrency: Option<&str>, rate: Option<&str>, clear: bool) -> QueueAction {
        QueueAction::Limit(crate::args::LimitArgs {
            name: "emails".to_owned(),
            concurrency: concurrency.map(str::to_owned),
            rate: rate.map(str::to_owned),
            burst: None,
            clear,
        })
    }

    /// Limits set, listed with running tasks and throttled claims, cleared.
    #[tokio::test]
    async fn limits_on_memory() -> TestResult {
        use executor_core::{WorkerId, queue::ClaimPlan};

        let client = Client::without_name_check(AnyStorage::from(MemoryStorage::new()), Namespace::new("l")?);
        for id in ["mail-1", "mail-2", "mail-3"] {
            TaskBuilder::new("send_mail", id, TaskOptions::new())
                .id(id)
                .queue("emails")
                .submit(&client)
                .await?;
        }
        let set = output(&client, Some(&limit(Some("1"), Some("600/1m"), false)), false).await?;
        assert_eq!(set, "limited queue emails: c=1 r=600/1m\n");
        let plan = ClaimPlan::single(QueueName::new("emails")?, 3);
        let worker = WorkerId::generate();
        let claimed =
            client.storage().claim(client.namespace(), &worker, &plan, Duration::from_secs(60)).await?;
        assert_eq!(claimed.len(), 1);

        let table = output(&client, None, false).await?;
        assert_eq!(
            table.lines().next(),
            Some("QUEUE   WAITING  DUE  LATENCY  PAUSED  RUNNING  THROTTLED  LIMITS")
        );
        let row = table.lines().nth(1).ok_or("no row")?;
        let cells: Vec<&str> = row.split_whitespace().collect();
        // Throttled counts claims cut short; how many per claim is the store's.
        assert_eq!((cells[4], cells[5], &cells[7..]), ("no", "1", &["c=1", "r=600/1m"][..]), "{table}");
        assert!(cells[6].parse::<u64>().is_ok_and(|n| n >= 1), "{table}");

        let listed: serde_json::Value = serde_json::from_str(&output(&client, None, true).await?)?;
        assert_eq!(
            (&listed[0]["running"], &listed[0]["limits"]),
            (&json!(1), &json!({"concurrency": 1, "rate": {"starts": 600, "per_ms": 60000, "burst": 600}})),
            "{listed}"
        );
        assert!(listed[0]["throttled"].as_u64().is_some_and(|n| n >= 1), "{listed}");

        let cleared = output(&client, Some(&limit(None, None, true)), true).await?;
        let row: serde_json::Value = serde_json::from_str(&cleared)?;
        assert_eq!(
            (&row["queue"], &row["limits"]),
            (&json!("emails"), &json!({"concurrency": null, "rate": null}))
        );
        assert!(client.queues().await?.iter().all(|q| q.limits.is_none()));
        assert_eq!(
            output(&client, Some(&limit(None, None, true)), false).await?,
            "cleared the limits of queue emails\n"
        );

        let err = run(&client, Some(&limit(Some("0"), None, false)), false, &mut Vec::new())
            .await
            .err()
            .ok_or("a concurrency of 0 was accepted")?;
        assert_eq!(err.code, CliError::USAGE, "{err}");
        Ok(())
    }
}
