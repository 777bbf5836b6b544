//! `rex watch`: counts and per-state rates, refreshed in place on a
//! terminal and as one line per refresh otherwise.

use std::{
    io::{IsTerminal, Write},
    time::Instant,
};

use executor_any::AnyStorage;
use executor_core::{Client, TaskState, Timestamp, query::StateCounts, retry::parse_duration};
use serde_json::json;

use crate::{
    args::WatchArgs,
    commands::counts_json,
    error::{CliError, CliResult},
    table::{Table, time},
};

/// ANSI: clear the screen and move to its top-left corner.
const CLEAR: &str = "\x1b[2J\x1b[H";

/// `rex watch`. Rates are the change of each count per second since the
/// previous refresh (a net change: tasks entering minus tasks leaving),
/// blank on the first.
pub(crate) async fn run(
    client: &Client<AnyStorage>,
    args: &WatchArgs,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let interval = parse_duration(&args.interval).map_err(|e| CliError::store("bad --interval", e))?;
    if interval.is_zero() {
        return Err(CliError::usage("--interval must be longer than 0"));
    }
    let redraw = !json && std::io::stdout().is_terminal();
    let mut previous: Option<(StateCounts, Instant)> = None;
    let mut refresh = 0_u64;
    while args.iterations.is_none_or(|n| refresh < n) {
        if refresh > 0 {
            tokio::time::sleep(interval).await;
        }
        refresh += 1;
        let counts = client.counts().await.map_err(|e| CliError::store("counting tasks", e))?;
        let now = Instant::now();
        let rates: Option<Vec<f64>> = previous.as_ref().map(|(before, at)| {
            let secs = now.duration_since(*at).as_secs_f64().max(f64::EPSILON);
            TaskState::ALL.iter().map(|&s| (counts.get(s) as f64 - before.get(s) as f64) / secs).collect()
        });
        let at = time(Timestamp::now_system());
        if json {
            let rates = rates.as_ref().map(|r| {
                TaskState::ALL.iter().zip(r).map(|(s, r)| (s.as_str().to_owned(), json!(r))).collect()
            });
            let rates: serde_json::Value = rates.unwrap_or(serde_json::Value::Null);
            writeln!(out, "{}", json!({ "at": at, "counts": counts_json(&counts), "rates_per_s": rates }))?;
        } else if redraw {
            write!(
                out,
                "{CLEAR}rex watch: namespace {}, {at} (every {:?})\n\n",
                client.namespace(),
                interval
            )?;
            let mut table = Table::new(&["STATE", "TASKS", "PER SECOND"]);
            for (i, state) in TaskState::ALL.into_iter().enumerate() {
                let rate =
                    rates.as_ref().and_then(|r| r.get(i)).map_or_else(String::new, |r| format!("{r:+.1}"));
                table.row(vec![state.to_string(), counts.get(state).to_string(), rate]);
            }
            table.row(vec!["TOTAL".to_owned(), counts.total().to_string()]);
            table.write(out)?;
        } else {
            let cells: Vec<String> = TaskState::ALL
                .into_iter()
                .enumerate()
                .map(|(i, s)| match rates.as_ref().and_then(|r| r.get(i)) {
                    Some(r) => format!("{s}={} ({r:+.1}/s)", counts.get(s)),
                    None => format!("{s}={}", counts.get(s)),
                })
                .collect();
            writeln!(out, "{at} {}", cells.join(" "))?;
        }
        out.flush()?;
        previous = Some((counts, now));
    }
    Ok(())
}
