//! `rex schedules`: list the cron schedules of a namespace, pause, resume
//! or remove one.

use std::io::Write;

use executor_any::AnyStorage;
use executor_core::{Client, schedule::ScheduleInfo};
use serde_json::json;

use crate::{
    args::ScheduleAction,
    error::{CliError, CliResult},
    table::{Table, opt_time, time},
};

/// `rex schedules [pause|resume|remove NAME]`.
pub(crate) async fn run(
    client: &Client<AnyStorage>,
    action: Option<&ScheduleAction>,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let schedules = client.schedules();
    let (verb, name, found) = match action {
        None => return list(client, json, out).await,
        Some(ScheduleAction::Pause { name }) => ("paused", name, schedules.pause(name).await),
        Some(ScheduleAction::Resume { name }) => ("resumed", name, schedules.resume(name).await),
        Some(ScheduleAction::Remove { name }) => ("removed", name, schedules.remove(name).await),
    };
    if !found.map_err(|e| CliError::store("changing the schedule", e))? {
        return Err(CliError::not_found(format!(
            "schedule `{name}` not found in namespace `{}`",
            client.namespace()
        )));
    }
    if json {
        writeln!(out, "{}", json!({ "schedule": name, verb: true }))?;
    } else {
        writeln!(out, "{verb} schedule {name}")?;
    }
    Ok(())
}

/// Every schedule with its next fire time and last task.
async fn list(client: &Client<AnyStorage>, json: bool, out: &mut dyn Write) -> CliResult {
    let listed = client.schedules().list().await.map_err(|e| CliError::store("listing schedules", e))?;
    if json {
        let rows: Vec<serde_json::Value> = listed.iter().map(schedule_json).collect::<Result<_, _>>()?;
        writeln!(out, "{}", serde_json::Value::Array(rows))?;
        return Ok(());
    }
    let mut table =
        Table::new(&["NAME", "TASK", "CRON", "ZONE", "NEXT FIRE", "LAST TICK", "LAST TASK STATE", "PAUSED"]);
    for info in &listed {
        let s = &info.schedule;
        table.row(vec![
            s.name.clone(),
            s.task.clone(),
            s.cron.clone(),
            s.timezone.clone(),
            opt_time(info.next_fire),
            time(info.last_tick),
            info.last_state.map_or_else(|| "-".to_owned(), |st| st.to_string()),
            if info.paused { "yes" } else { "no" }.to_owned(),
        ]);
    }
    Ok(table.write(out)?)
}

/// One schedule as JSON: its definition (payload as JSON), times in
/// milliseconds since the epoch, as the task records have them.
fn schedule_json(info: &ScheduleInfo) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(&info.schedule)?;
    if let Some(object) = value.as_object_mut() {
        let payload = serde_json::from_str(&info.schedule.payload)
            .unwrap_or_else(|_| serde_json::Value::String(info.schedule.payload.clone()));
        object.insert("payload".to_owned(), payload);
        object.insert("paused".to_owned(), json!(info.paused));
        object.insert("next_fire".to_owned(), json!(info.next_fire));
        object.insert("last_tick".to_owned(), json!(info.last_tick));
        object.insert("last_task".to_owned(), json!(info.last_task));
        object.insert("last_state".to_owned(), json!(info.last_state));
    }
    Ok(value)
}
