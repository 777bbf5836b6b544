//! Reads: `get` (a plain `HMGET` of the task hash and its attempt log), `counts` (`HGETALL` of
//! each partition's count hash) and `list`, paging through the tasks of one
//! state with `list.lua`.
//!
//! Each state lives in one index ZSET (CREATED/PENDING in `due`, RUNNING in
//! `lease`, COMPLETED/CANCELLED in `done`, dead letter in `dead`), so a page
//! walks that index in (score, id) order and keeps the tasks in the state.
//! With a name ([`ListQuery::name`]) the script keeps only that name's
//! tasks: there is no index per name (it would cost every transition a
//! write), so a page of a rare name may come back short, or empty with a
//! `next`, after looking at `CALLS * BUDGET` entries; it never reads more.
//!
//! The cursor is `<partition>:<score>:<hex of the id>` of the last index
//! entry looked at, with `:<priority>:<queue>` after it inside a waiting
//! level other than the due ZSET: waiting tasks are listed level
//! by level, the due ZSET first, then the registered levels by queue name
//! and highest priority. Every part is checked before a call reaches Redis.
//!
//! A record that does not parse is skipped and reported in
//! [`Page::unreadable`] (no neighbour harm): one hand-edited task never hides the
//! rest of its state.

use executor_core::{
    Error, ListQuery, Namespace, Page, QueueName, Result, TaskId, TaskRecord, TaskState,
    query::{StateCounts, Unreadable},
    queue::MAX_PRIORITY,
};
use fred::{interfaces::HashesInterface, prelude::ClientLike, types::Value};

use crate::{
    RedisStorage,
    error::storage,
    record::{self, FIELDS, array, text},
};

/// Index entries one script call looks at, at most: about 2.5 ms of the
/// server's time when a name filter skips them all (5 us an entry measured
/// over a million), so a long walk never holds Redis up for long.
const BUDGET: usize = 500;
/// Script calls one page makes, at most; a page may come back short (never
/// empty-handed at the end: `next` is `None` only when every partition is done).
const CALLS: usize = 32;
/// Longest index member a cursor carries, in bytes (task ids are at most 191).
const MAX_CURSOR_ID: usize = 1024;

#[derive(Debug, PartialEq)]
struct Cursor {
    partition: u16,
    /// '' before the first entry, else a score as [`score_text`] writes it.
    score: String,
    id: Vec<u8>,
    /// The waiting level walked, `None` for the due ZSET (and every other
    /// state's index).
    level: Option<Level>,
}

/// A waiting level other than the due ZSET, in listing order: by queue
/// name, then highest priority first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Level {
    queue: QueueName,
    priority: std::cmp::Reverse<u8>,
}

impl Cursor {
    fn start(partition: u16) -> Self {
        Self { partition, score: String::new(), id: Vec::new(), level: None }
    }

    fn encode(&self) -> String {
        let hex: String = self.id.iter().map(|b| format!("{b:02x}")).collect();
        match &self.level {
            None => format!("{}:{}:{hex}", self.partition, self.score),
            Some(l) => format!("{}:{}:{hex}:{}:{}", self.partition, self.score, l.priority.0, l.queue),
        }
    }
}

/// A score as the cursor carries it: Rust's shortest form of the double
/// Redis printed (`1700000000000`, `1.5`, `inf`), never NaN.
fn score_text(redis: &str) -> Option<String> {
    let f: f64 = redis.parse().ok()?;
    (!f.is_nan()).then(|| f.to_string())
}

/// Parses a cursor this storage made, refusing anything else: a partition
/// outside the storage's, a score that is not a number in the form
/// [`score_text`] writes (`nan`, `1e400`, `0x1`), an id part that is not
/// even-length lowercase hex of at most [`MAX_CURSOR_ID`] bytes.
fn parse_cursor(text: &str, partitions: u16) -> Result<Cursor> {
    let bad = |why: &str| {
        Error::invalid("cursor", format!("`{}` was not made by this storage: {why}", text.escape_debug()))
    };
    let mut parts = text.splitn(4, ':');
    let (Some(partition), Some(score), Some(hex)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("expected <partition>:<score>:<id>"));
    };
    let level = match parts.next() {
        None => None,
        Some(rest) => {
            let (priority, queue) = rest.split_once(':').ok_or_else(|| bad("expected <priority>:<queue>"))?;
            let priority = priority
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= MAX_PRIORITY && priority.len() == 1)
                .ok_or_else(|| bad("the priority is not 0 to 9"))?;
            let queue = QueueName::new(queue).map_err(|_| bad("the queue is not a queue name"))?;
            if queue.is_default() && priority == 0 {
                return Err(bad("the default queue at priority 0 is the due index"));
            }
            Some(Level { queue, priority: std::cmp::Reverse(priority) })
        }
    };
    let partition: u16 = partition.parse().map_err(|_| bad("the partition is not a number"))?;
    if partition >= partitions {
        return Err(bad("no such partition"));
    }
    if score.is_empty() != hex.is_empty() {
        return Err(bad("score and id go together"));
    }
    if !score.is_empty() && score_text(score).as_deref() != Some(score) {
        return Err(bad("the score is not a number"));
    }
    if hex.len() % 2 != 0 || hex.len() > MAX_CURSOR_ID * 2 {
        return Err(bad("the id is not hex"));
    }
    let id = (0..hex.len())
        .step_by(2)
        .map(|i| {
            let pair =
                hex.get(i..i + 2).filter(|p| p.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
            pair.and_then(|p| u8::from_str_radix(p, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| bad("the id is not hex"))?;
    Ok(Cursor { partition, score: score.to_owned(), id, level })
}

impl RedisStorage {
    pub(crate) async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        let key = self.keys(ns, self.inner.layout.partition_of(id)).task(id.as_str());
        let client = self.client()?.with_options(&self.inner.options);
        let mut names = FIELDS.to_vec();
        names.push(record::LOG_FIELD);
        let mut values = match client.hmget::<Value, _, _>(key, names).await {
            Ok(values) => array(values)?,
            // A server error reply's first word is its code (the Redis
            // protocol's only type for errors; fred keeps the reply as text).
            Err(e) if e.details().starts_with("WRONGTYPE") => {
                let reason = "the key holds a value that is not a task hash (edited by hand?); \
                              `delete` removes it";
                return Err(Error::Corrupt { id: id.clone(), reason: reason.to_owned() });
            }
            Err(e) => return Err(storage(e)),
        };
        let log = if values.len() > FIELDS.len() { values.pop() } else { None };
        if values.iter().all(|v| matches!(v, Value::Null)) {
            return Ok(None);
        }
        let mut task = record::parse(id.as_str(), &values)?;
        task.attempt_log = record::attempt_log(id, log.as_ref());
        Ok(Some(task))
    }

    pub(crate) async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        let mut totals = std::collections::BTreeMap::<TaskState, i64>::new();
        for p in 0..self.partitions() {
            let client = self.client()?.with_options(&self.inner.options);
            let pairs: std::collections::HashMap<String, String> =
                client.hgetall(self.keys(ns, p).counts()).await.map_err(storage)?;
            for (state, n) in pairs {
                if let (Ok(state), Ok(n)) = (state.parse::<TaskState>(), n.parse::<i64>()) {
                    *totals.entry(state).or_default() += n;
                }
            }
        }
        Ok(totals
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(s, n)| (s, u64::try_from(n).unwrap_or(0)))
            .collect())
    }

    pub(crate) async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        query.validate()?;
        let limit = query.limit;
        let mut cursor = match &query.cursor {
            Some(c) => parse_cursor(c, self.partitions())?,
            None => Cursor::start(0),
        };
        let mut page = Page::default();
        for _ in 0..CALLS {
            let keys = self.keys(ns, cursor.partition);
            let level_key = cursor.level.as_ref().map(|l| keys.level(l.queue.as_str(), l.priority.0));
            let index = match query.state {
                TaskState::Created | TaskState::Pending => level_key.as_deref().unwrap_or(keys.due()),
                TaskState::Running => keys.lease(),
                TaskState::Completed | TaskState::Cancelled => keys.done(),
                TaskState::Failed | TaskState::Timeout | TaskState::Error => keys.dead(),
            };
            let args = vec![
                Value::from(keys.base.as_str()),
                Value::from("0"),
                Value::from(query.state.as_str()),
                Value::from(cursor.score.as_str()),
                Value::Bytes(cursor.id.clone().into()),
                Value::from((limit - page.tasks.len()).to_string()),
                Value::from(BUDGET.to_string()),
                Value::from(query.name.as_deref().unwrap_or_default()),
            ];
            let reply = array(self.run(&self.inner.scripts.list, vec![index.to_owned()], args).await?)?;
            let mut reply = reply.into_iter();
            let at_end = reply.next().and_then(|v| text(&v)).as_deref() == Some("1");
            let score = reply.next().and_then(|v| text(&v)).unwrap_or_default();
            let id = reply.next().map(|v| record::bytes(&v).map(<[u8]>::to_vec).unwrap_or_default());
            for entry in array(reply.next().unwrap_or(Value::Null))? {
                let (id, values) = record::parse_entry(entry)?;
                match record::parse(&id, &values) {
                    Ok(task) => page.tasks.push(task),
                    Err(e) => page.unreadable.push(Unreadable::new(id, reason(e))),
                }
            }
            for entry in array(reply.next().unwrap_or(Value::Null))? {
                let items = array(entry)?;
                let id = items.first().and_then(text).unwrap_or_default();
                let reason = items.get(1).and_then(text).unwrap_or_default();
                page.unreadable.push(Unreadable::new(id, reason));
            }
            let score = if score.is_empty() { Some(String::new()) } else { score_text(&score) };
            let Some(score) = score else {
                return Err(crate::error::shape("list answered a score that is not a number"));
            };
            cursor = Cursor {
                partition: cursor.partition,
                id: id.unwrap_or_default(),
                score,
                level: cursor.level,
            };
            if at_end {
                let next = if query.state.is_waiting() {
                    self.next_level(&keys.levels(), cursor.level.as_ref()).await?
                } else {
                    None
                };
                if let Some(level) = next {
                    cursor = Cursor { level: Some(level), ..Cursor::start(cursor.partition) };
                } else if cursor.partition + 1 >= self.partitions() {
                    return Ok(page);
                } else {
                    cursor = Cursor::start(cursor.partition + 1);
                }
            }
            if page.tasks.len() >= limit {
                break;
            }
        }
        page.next = Some(cursor.encode());
        Ok(page)
    }
}

impl RedisStorage {
    /// The waiting level listed after `after` (`None`: the due ZSET) in a
    /// partition whose level registry is `registry` (`lua/common/02_keys.lua`).
    async fn next_level(&self, registry: &str, after: Option<&Level>) -> Result<Option<Level>> {
        let client = self.client()?.with_options(&self.inner.options);
        let reg: std::collections::HashMap<String, String> = match client.hgetall(registry).await {
            Ok(reg) => reg,
            // A registry edited into another type lists no level; the due
            // ZSET was listed. (The reply's first word is its error code.)
            Err(e) if e.details().starts_with("WRONGTYPE") => return Ok(None),
            Err(e) => return Err(storage(e)),
        };
        let mut levels: Vec<Level> = reg
            .into_iter()
            .filter_map(|(q, digits)| QueueName::new(q).ok().map(|q| (q, digits)))
            .flat_map(|(queue, digits)| {
                digits
                    .bytes()
                    .filter(u8::is_ascii_digit)
                    .map(|d| Level { queue: queue.clone(), priority: std::cmp::Reverse(d - b'0') })
                    .collect::<Vec<_>>()
            })
            .filter(|l| !(l.queue.is_default() && l.priority.0 == 0))
            .collect();
        levels.sort();
        Ok(levels.into_iter().find(|l| after.is_none_or(|a| l > a)))
    }
}

/// The reason of a parse error, without the id the page already names.
fn reason(e: Error) -> String {
    match e {
        Error::Corrupt { reason, .. } => reason,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() -> Result<()> {
        let c = Cursor { partition: 2, score: "1700000000000".into(), id: b"a:b{c}".to_vec(), level: None };
        assert_eq!(parse_cursor(&c.encode(), 3)?, c);
        let level = Level { queue: QueueName::new("mail:eu")?, priority: std::cmp::Reverse(7) };
        let c = Cursor { level: Some(level), ..c };
        assert_eq!(c.encode(), "2:1700000000000:613a627b637d:7:mail:eu");
        assert_eq!(parse_cursor(&c.encode(), 3)?, c);
        assert_eq!(parse_cursor("0::", 1)?, Cursor::start(0));
        assert_eq!(score_text("1.7e12").as_deref(), Some("1700000000000"));
        assert_eq!(score_text("inf").as_deref(), Some("inf"));
        Ok(())
    }

    #[test]
    fn foreign_cursors_are_refused() {
        let hex_y = "79";
        for bad in [
            "0:nan:79".to_owned(),
            format!("0:NaN:{hex_y}"),
            "0:1e400:79".into(),
            "0:0x10:79".into(),
            "0: 1:79".into(),
            "0:1:y".into(),
            "0:1:7".into(),
            "0:1:7G".into(),
            "0:1:".into(),
            "0::79".into(),
            "3:1:79".into(),
            "-1:1:79".into(),
            "65536:1:79".into(),
            "0:1".into(),
            "0:1:79:10:mail".into(),
            "0:1:79:7".into(),
            "0:1:79:7:no space".into(),
            "0:1:79:0:default".into(),
            "%%not-a-cursor%%".into(),
            format!("0:1:{}", "61".repeat(MAX_CURSOR_ID + 1)),
        ] {
            let e = parse_cursor(&bad, 3);
            assert!(matches!(e, Err(Error::Invalid { .. })), "{bad} accepted: {e:?}");
        }
    }
}
