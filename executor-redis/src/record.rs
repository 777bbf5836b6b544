//! Task hashes to [`TaskRecord`]s and back: the field names of
//! `lua/common/01_values.lua` (`FIELDS`), in the same order.
//!
//! Also the reply helpers every section shares: [`array`], [`text`], [`ids`]
//! and [`log_aside`].

use std::{str::FromStr, time::Duration};

use executor_core::{
    Error, QueueName, Result, RetryPolicy, TaskId, TaskRecord, TaskState, Timestamp, WorkerId,
    attempt_log::AttemptRecord, queue::MAX_PRIORITY,
};
use fred::types::Value;

/// Field names, in the order `HMGET` and the scripts return them. `g`
/// (queue) and `v` (priority) are absent for the default queue at priority
/// 0, so records written before queues existed read as those.
pub(crate) const FIELDS: [&str; 20] =
    ["s", "n", "p", "a", "m", "f", "c", "d", "b", "z", "x", "o", "r", "e", "w", "l", "q", "k", "g", "v"];

/// The attempt log's hash field (`TaskRecord::attempt_log`, a JSON array
/// `lua/common/04_attempt_log.lua` appends to). Not in [`FIELDS`]: claims never read it,
/// only `get` and `due_before` do.
pub(crate) const LOG_FIELD: &str = "y";

/// The attempt log of task `id` from the reply of [`LOG_FIELD`], read
/// leniently: nil, non-UTF-8 text or JSON that does not parse reads as
/// empty (with a warning), so a hand-edited log never makes the task
/// unreadable.
pub(crate) fn attempt_log(id: &TaskId, v: Option<&Value>) -> Vec<AttemptRecord> {
    let Some(v) = v.filter(|v| !matches!(v, Value::Null)) else { return Vec::new() };
    match bytes(v).and_then(|b| std::str::from_utf8(b).ok()) {
        Some(json) => executor_core::storage::decode_attempt_log(id, json),
        None => {
            tracing::warn!(task = %id, "the stored attempt log is not UTF-8 text; shown as empty");
            Vec::new()
        }
    }
}

/// The bytes of a bulk-string reply; `None` for nil.
pub(crate) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::String(s) => Some(s.as_bytes()),
        Value::Bytes(b) => Some(b),
        _ => None,
    }
}

/// The text of a reply (integers as digits); `None` for nil or non-UTF-8.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::Integer(i) => Some(i.to_string()),
        Value::Double(d) => Some(d.to_string()),
        other => bytes(other).and_then(|b| std::str::from_utf8(b).ok()).map(str::to_owned),
    }
}

/// A reply as a list.
pub(crate) fn array(v: Value) -> Result<Vec<Value>> {
    match v {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(Vec::new()),
        other => Err(crate::error::shape(&format!("expected an array, got {:?}", other.kind()))),
    }
}

struct Fields<'a> {
    id: &'a str,
    values: &'a [Value],
}

impl Fields<'_> {
    fn corrupt(&self, reason: String) -> Error {
        Error::Corrupt { id: TaskId::new(self.id).unwrap_or_else(|_| TaskId::generate()), reason }
    }

    fn raw(&self, i: usize) -> Option<&Value> {
        self.values.get(i).filter(|v| !matches!(v, Value::Null))
    }

    fn text(&self, i: usize) -> Result<Option<String>> {
        match self.raw(i) {
            None => Ok(None),
            Some(v) => {
                text(v).map(Some).ok_or_else(|| self.corrupt(format!("field `{}` is not UTF-8", FIELDS[i])))
            }
        }
    }

    fn required(&self, i: usize) -> Result<String> {
        self.text(i)?.ok_or_else(|| self.corrupt(format!("field `{}` is missing", FIELDS[i])))
    }

    /// A numeric field, parsed without copying the reply (most replies are
    /// bulk strings; integers come from RESP3 or hand edits).
    fn number<T: FromStr>(&self, i: usize) -> Result<Option<T>> {
        let owned;
        let t: &str = match self.raw(i) {
            None => return Ok(None),
            Some(Value::String(s)) => s,
            Some(Value::Bytes(b)) => std::str::from_utf8(b)
                .map_err(|_| self.corrupt(format!("field `{}` is not UTF-8", FIELDS[i])))?,
            Some(_) => {
                owned = self.text(i)?.unwrap_or_default();
                &owned
            }
        };
        t.parse().map(Some).map_err(|_| {
            self.corrupt(format!("field `{}` should be a number, found `{}`", FIELDS[i], t.escape_debug()))
        })
    }

    fn required_number<T: FromStr>(&self, i: usize) -> Result<T> {
        self.number(i)?.ok_or_else(|| self.corrupt(format!("field `{}` is missing", FIELDS[i])))
    }

    fn time(&self, i: usize) -> Result<Option<Timestamp>> {
        Ok(self.number::<u64>(i)?.map(Timestamp::from_millis))
    }
}

/// Builds a record from the 18 field values of `FIELDS`.
///
/// # Errors
/// [`Error::Corrupt`] naming the field that does not parse.
pub(crate) fn parse(id: &str, values: &[Value]) -> Result<TaskRecord> {
    let f = Fields { id, values };
    let task_id = TaskId::new(id).map_err(|e| f.corrupt(format!("the id is not valid: {e}")))?;
    let state_text = f.required(0)?;
    let state = TaskState::from_str(&state_text)
        .map_err(|_| f.corrupt(format!("unknown state `{}`", state_text.escape_debug())))?;
    let payload = match f.raw(2) {
        None => return Err(f.corrupt("field `p` (payload) is missing".into())),
        Some(v) => bytes(v).map(<[u8]>::to_vec).unwrap_or_else(|| text(v).unwrap_or_default().into_bytes()),
    };
    let retry = match f.text(12)? {
        None => None,
        Some(json) => Some(
            serde_json::from_str::<RetryPolicy>(&json)
                .map_err(|e| f.corrupt(format!("field `r` (retry policy) does not parse: {e}")))?,
        ),
    };
    let worker = match f.text(14)? {
        None => None,
        Some(w) => Some(WorkerId::new(w).map_err(|e| f.corrupt(format!("field `w` (worker): {e}")))?),
    };
    // Worker, lease and cancel flag stay in the hash after an attempt ends
    // (finish.lua writes less that way); they mean something only while RUNNING.
    let running = state == TaskState::Running;
    let worker = worker.filter(|_| running);
    let created_at = f.time(6)?.ok_or_else(|| f.corrupt("field `c` is missing".into()))?;
    let due_at = f.time(7)?.ok_or_else(|| f.corrupt("field `d` is missing".into()))?;
    let mut task = TaskRecord::new(task_id, f.required(1)?, state, payload, created_at, due_at);
    // A fresh task has no attempts and no fence yet: submit.lua leaves them out.
    task.attempts = f.number(3)?.unwrap_or(0);
    task.max_attempts = f.required_number(4)?;
    task.fence = f.number(5)?.unwrap_or(0);
    task.started_at = f.time(8)?;
    task.finished_at = f.time(9)?;
    task.deadline = f.time(10)?;
    task.timeout = f.number::<u64>(11)?.map(Duration::from_millis);
    task.retry = retry;
    task.last_error = f.text(13)?;
    task.worker = worker;
    task.lease_until = f.time(15)?.filter(|_| running);
    task.cancel_requested = running && f.text(16)?.as_deref() == Some("1");
    task.debounce_key = f.text(17)?;
    if let Some(queue) = f.text(18)? {
        task.queue = QueueName::new(queue).map_err(|e| f.corrupt(format!("field `g` (queue): {e}")))?;
    }
    task.priority = f.number::<u8>(19)?.unwrap_or(0);
    if task.priority > MAX_PRIORITY {
        return Err(f.corrupt(format!("field `v` (priority) {} is above {MAX_PRIORITY}", task.priority)));
    }
    Ok(task)
}

/// Splits a script's `{id, fields...}` entry.
pub(crate) fn parse_entry(entry: Value) -> Result<(String, Vec<Value>)> {
    let mut items = array(entry)?;
    if items.len() != FIELDS.len() + 1 {
        return Err(crate::error::shape("a task entry of the wrong length"));
    }
    let values = items.split_off(1);
    // Lossy: an index member that is not UTF-8 (a hand-made entry) still
    // names its entry, and fails to parse as an id instead of failing the call.
    let id = items
        .first()
        .and_then(bytes)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .ok_or_else(|| crate::error::shape("a task entry without id"))?;
    Ok((id, values))
}

/// A list of ids in a script reply.
pub(crate) fn ids(v: Option<Value>) -> Result<Vec<TaskId>> {
    array(v.unwrap_or(Value::Null))?
        .iter()
        .filter_map(text)
        .map(|id| TaskId::new(id).map_err(|e| crate::error::shape(&format!("an id that is not valid: {e}"))))
        .collect()
}

/// Logs the records a script set aside as corrupt (`set_aside` in
/// `lua/common/06_records.lua`): `{{id, reason}...}`.
pub(crate) fn log_aside(script: &str, v: Option<Value>) {
    let Ok(entries) = array(v.unwrap_or(Value::Null)) else { return };
    for entry in entries {
        let items = array(entry).unwrap_or_default();
        let id = items.first().and_then(text).unwrap_or_default();
        let reason = items.get(1).and_then(text).unwrap_or_default();
        tracing::warn!(task = %id, %reason, script, "corrupt task record set aside (ERROR, dead letter)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> Vec<Value> {
        FIELDS
            .iter()
            .map(|f| pairs.iter().find(|(k, _)| k == f).map(|(_, v)| Value::from(*v)).unwrap_or(Value::Null))
            .collect()
    }

    #[test]
    fn a_fresh_task_parses() -> Result<()> {
        let v =
            values(&[("s", "CREATED"), ("n", "noop"), ("p", "{}"), ("m", "3"), ("c", "1000"), ("d", "1500")]);
        let r = parse("t1", &v)?;
        assert_eq!(r.state, TaskState::Created);
        assert_eq!(r.max_attempts, 3);
        assert_eq!(r.due_at, Timestamp::from_millis(1500));
        assert!(!r.cancel_requested);
        Ok(())
    }

    #[test]
    fn garbage_is_corrupt_with_the_field_named() {
        let v = values(&[
            ("s", "CREATED"),
            ("n", "x"),
            ("p", "{}"),
            ("a", "zero"),
            ("m", "3"),
            ("f", "0"),
            ("c", "1"),
            ("d", "1"),
        ]);
        let err = parse("t1", &v).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("`a`") && err.contains("zero"), "{err}");
        let fresh = [("s", "CREATED"), ("n", "x"), ("p", "{}"), ("m", "3"), ("c", "1"), ("d", "1")];
        for (field, bad) in [("v", "10"), ("v", "high"), ("g", "no space")] {
            let mut pairs = fresh.to_vec();
            pairs.push((field, bad));
            let err = parse("t1", &values(&pairs)).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(&format!("`{field}`")), "{field}={bad}: {err}");
        }
        let mut pairs = fresh.to_vec();
        pairs.extend([("g", "emails"), ("v", "7")]);
        let r = parse("t1", &values(&pairs)).map_err(|e| e.to_string());
        assert_eq!(r.map(|r| (r.queue.to_string(), r.priority)), Ok(("emails".to_owned(), 7)));
        let v = values(&[("s", "SLEEPING")]);
        let err = parse("t1", &v).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown state"), "{err}");
    }
}
