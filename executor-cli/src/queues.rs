//! `rex queues`: the named queues of a namespace (depth, due tasks,
//! latency, paused), and pausing or resuming one fleet-wide.

use std::io::Write;

use executor_any::AnyStorage;
use executor_core::{Client, QueueInfo, QueueName, storage::Storage};
use serde_json::json;

use crate::{
    args::QueueAction,
    error::{CliError, CliResult},
    table::Table,
};

/// Checks the queue name of an action before anything is asked of the
/// store: a bad name is a usage error (exit 2) even when the store is down.
pub(crate) fn check(action: &QueueAction) -> CliResult<QueueName> {
    let (QueueAction::Pause { name } | QueueAction::Resume { name }) = action;
    QueueName::new(name.as_str()).map_err(|e| CliError::store("bad queue name", e))
}

/// `rex queues [pause|resume NAME]`.
pub(crate) async fn run(
    client: &Client<AnyStorage>,
    action: Option<&QueueAction>,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let Some(action) = action else { return list(client, json, out).await };
    let queue = check(action)?;
    let verb = match action {
        QueueAction::Pause { .. } => {
            client.pause_queue(queue.as_str()).await.map_err(|e| CliError::store("pausing the queue", e))?;
            "paused"
        }
        QueueAction::Resume { .. } => {
            client
                .resume_queue(queue.as_str())
                .await
                .map_err(|e| CliError::store("resuming the queue", e))?;
            "resumed"
        }
    };
    if json {
        writeln!(out, "{}", json!({ "queue": queue.as_str(), verb: true }))?;
    } else {
        writeln!(out, "{verb} queue {queue}")?;
    }
    Ok(())
}

/// Every queue with waiting tasks or paused, by name. Latency is the
/// store's now minus the oldest due time (both on the store's clock); the
/// clock is read only when some queue has a due task.
async fn list(client: &Client<AnyStorage>, json: bool, out: &mut dyn Write) -> CliResult {
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
    let latency = |q: &QueueInfo| q.oldest_due.zip(now).map(|(due, now)| now.since(due).as_millis());
    if json {
        let rows: Vec<serde_json::Value> = listed
            .iter()
            .map(|q| {
                json!({
                    "queue": q.queue.as_str(),
                    "waiting": q.waiting,
                    "due": q.due,
                    "oldest_due": q.oldest_due,
                    "latency_ms": latency(q),
                    "paused": q.paused,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::Value::Array(rows))?;
        return Ok(());
    }
    let mut table = Table::new(&["QUEUE", "WAITING", "DUE", "LATENCY", "PAUSED"]);
    for q in &listed {
        table.row(vec![
            q.queue.to_string(),
            q.waiting.to_string(),
            q.due.to_string(),
            latency(q).map_or_else(|| "-".to_owned(), span),
            if q.paused { "yes" } else { "no" }.to_owned(),
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
        assert_eq!(output(&client, None, false).await?, "QUEUE  WAITING  DUE  LATENCY  PAUSED\n");
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
        assert_eq!((cells[0], cells[1], cells[2], cells[4]), ("emails", "3", "2", "no"), "{table}");
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
        assert!(output(&client, None, false).await?.lines().nth(1).is_some_and(|l| l.ends_with("yes")));
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
}
