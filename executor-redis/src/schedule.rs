//! Cron schedules: `schedule.lua` on the namespace's `schedules` hash
//! (name → the [`Schedule`] as JSON) and `schedules:state` hash (name →
//! paused, cursor, fence, nonce of the last advance, last task), both in
//! partition 0's hash tag beside the leader, so every change is one script
//! on one slot, on a cluster too.

use executor_core::storage::ScheduleStore;
use executor_core::{
    Error, Namespace, Result, TaskId, Timestamp,
    schedule::Schedule,
    storage::{Advance, MAX_FENCE, ScheduleEntry},
};
use fred::types::Value;

use crate::{
    RedisStorage,
    args::instant_ms,
    error::shape,
    record::{array, text},
};

/// Plain digits as the script writes them (`str::parse` would also take a
/// leading `+`, which the script refuses).
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A stored state, `<paused 0|1> <cursor ms> <fence> <nonce> [<task>]`, as
/// `schedule.lua` writes it; `None` when it has another shape.
fn parse_state(state: &str) -> Option<(bool, Timestamp, u64, Option<TaskId>)> {
    let mut parts = state.split(' ');
    let paused = match parts.next()? {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    let cursor = digits(parts.next()?)?;
    let fence = digits(parts.next()?)?;
    let _nonce = parts.next()?;
    let task = parts.next().map(TaskId::new).transpose().ok()?;
    if parts.next().is_some() || cursor > Timestamp::MAX.as_millis() || fence > MAX_FENCE {
        return None;
    }
    Some((paused, Timestamp::from_millis(cursor), fence, task))
}

/// One `{name, json, state}` triple of a `list` reply, or why it is left
/// out.
fn entry(name: &Value, json: &Value, state: &Value) -> Result<ScheduleEntry, String> {
    let name = text(name).ok_or("the name is not UTF-8")?;
    let json = text(json).ok_or_else(|| format!("schedule `{name}`: the definition is not UTF-8"))?;
    let schedule: Schedule = serde_json::from_str(&json)
        .map_err(|e| format!("schedule `{name}`: the definition does not parse: {e}"))?;
    if schedule.name != name {
        return Err(format!("schedule `{name}`: the definition names `{}`", schedule.name));
    }
    let state = text(state).ok_or_else(|| format!("schedule `{name}`: it has no state"))?;
    let (paused, cursor, fence, last_task) = parse_state(&state)
        .ok_or_else(|| format!("schedule `{name}`: its state `{state}` does not parse"))?;
    let mut entry = ScheduleEntry::new(schedule, cursor);
    entry.paused = paused;
    entry.fence = fence;
    entry.last_task = last_task;
    Ok(entry)
}

impl RedisStorage {
    /// Runs one operation of `schedule.lua` on `ns`'s schedule keys.
    async fn schedule_op(&self, ns: &Namespace, args: Vec<Value>) -> Result<Value> {
        let keys = self.inner.layout.schedules(ns).to_vec();
        self.run(&self.inner.scripts.schedule, keys, args).await
    }

    /// A `0`/`1` reply as a bool.
    fn flag(reply: &Value, op: &str) -> Result<bool> {
        match reply.as_u64() {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => Err(shape(&format!("schedule {op} answered {reply:?}"))),
        }
    }
}

impl ScheduleStore for RedisStorage {
    /// Stores the definition; a new schedule's state starts at the store's
    /// clock, so no tick before it was added fires, and an existing one
    /// keeps its state (a state that no longer parses starts again).
    async fn put_schedule(&self, ns: &Namespace, schedule: &Schedule) -> Result<()> {
        let json = serde_json::to_string(schedule).map_err(|e| Error::invalid("schedule", e.to_string()))?;
        let args = vec![Value::from("put"), Value::from(schedule.name.as_str()), Value::from(json)];
        self.schedule_op(ns, args).await.map(drop)
    }

    /// Every schedule by name; one whose definition or state does not parse
    /// (edited by hand) is left out with a warning, so one bad entry never
    /// stops the leader from firing the others.
    async fn schedules(&self, ns: &Namespace) -> Result<Vec<ScheduleEntry>> {
        let items = array(self.schedule_op(ns, vec![Value::from("list")]).await?)?;
        let mut entries = Vec::with_capacity(items.len() / 3);
        for triple in items.chunks(3) {
            let [name, json, state] = triple else {
                return Err(shape("schedule list: not a list of triples"));
            };
            match entry(name, json, state) {
                Ok(e) => entries.push(e),
                Err(reason) => tracing::warn!(namespace = %ns, %reason, "left out an unreadable schedule"),
            }
        }
        entries.sort_by(|a, b| a.schedule.name.cmp(&b.schedule.name));
        Ok(entries)
    }

    /// Deletes the definition and the state in one script, so no half of a
    /// schedule is left behind; whether the definition existed.
    async fn remove_schedule(&self, ns: &Namespace, name: &str) -> Result<bool> {
        let reply = self.schedule_op(ns, vec![Value::from("remove"), Value::from(name)]).await?;
        Self::flag(&reply, "remove")
    }

    /// Sets the paused flag and keeps the rest of the state; whether the
    /// schedule exists (a missing one is never created).
    async fn pause_schedule(&self, ns: &Namespace, name: &str, paused: bool) -> Result<bool> {
        let args = vec![Value::from("pause"), Value::from(name), Value::from(if paused { "1" } else { "0" })];
        Self::flag(&self.schedule_op(ns, args).await?, "pause")
    }

    /// Moves the cursor only from `advance.from` and only for a token at
    /// least the stored fence, in one script, so a deposed leader never
    /// moves a schedule its successor has moved. The nonce lets a resent
    /// call answer `true` like the first one did.
    async fn advance_schedule(&self, ns: &Namespace, name: &str, advance: &Advance) -> Result<bool> {
        if advance.token > MAX_FENCE {
            return Err(Error::invalid(
                "fencing token",
                format!("must be at most {MAX_FENCE}, got {}", advance.token),
            ));
        }
        let args = vec![
            Value::from("advance"),
            Value::from(name),
            Value::from(instant_ms("schedule cursor", advance.from)?),
            Value::from(instant_ms("schedule cursor", advance.to)?),
            Value::from(advance.token.to_string()),
            Value::from(self.nonce()),
            Value::from(advance.task.as_ref().map_or("", TaskId::as_str)),
        ];
        Self::flag(&self.schedule_op(ns, args).await?, "advance")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_only_in_their_one_shape() {
        let max = Timestamp::MAX.as_millis();
        assert_eq!(parse_state("0 5 0 -"), Some((false, Timestamp::from_millis(5), 0, None)));
        let full = parse_state(&format!("1 {max} {MAX_FENCE} ab12 daily@2026-12-01T01:00:00Z"));
        let task = TaskId::new("daily@2026-12-01T01:00:00Z").ok();
        assert_eq!(full, Some((true, Timestamp::MAX, MAX_FENCE, task)));
        for bad in [
            "",
            "2 5 0 -",
            "0 -5 0 -",
            "0 5 0",
            "0 5 x -",
            "0 +5 0 -",
            "0 5 0 - a b",
            "0 5 0 - ",
            &format!("0 {} 0 -", max + 1),
            &format!("0 5 {} -", MAX_FENCE + 1),
        ] {
            assert_eq!(parse_state(bad), None, "{bad:?}");
        }
    }
}
