//! Paging through the tasks of one state with `list.lua`.
//!
//! Each state lives in one index ZSET (CREATED/PENDING in `due`, RUNNING in
//! `lease`, COMPLETED/CANCELLED in `done`, dead letter in `dead`), so a page
//! walks that index in (score, id) order and keeps the tasks in the state.
//! The cursor is `<partition>:<score>:<id>` of the last index entry looked at.

use executor_core::{Error, ListQuery, Namespace, Page, Result, TaskState};
use fred::types::Value;

use crate::{
    RedisStorage,
    record::{self, array, text},
};

/// Index entries one script call looks at, at most.
const BUDGET: usize = 2000;
/// Script calls one page makes, at most; a page may come back short (never
/// empty-handed at the end: `next` is `None` only when every partition is done).
const CALLS: usize = 8;

struct Cursor {
    partition: u16,
    score: String,
    id: String,
}

fn parse_cursor(text: &str, partitions: u16) -> Result<Cursor> {
    let bad = || Error::invalid("cursor", format!("`{text}` was not made by this storage"));
    let mut parts = text.splitn(3, ':');
    let partition: u16 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let score = parts.next().ok_or_else(bad)?.to_owned();
    let id = parts.next().ok_or_else(bad)?.to_owned();
    if partition >= partitions || !(score.is_empty() || score.parse::<f64>().is_ok()) {
        return Err(bad());
    }
    Ok(Cursor { partition, score, id })
}

impl RedisStorage {
    pub(crate) async fn list_tasks(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        let limit = query.limit.clamp(1, 1000);
        let mut cursor = match &query.cursor {
            Some(c) => parse_cursor(c, self.partitions())?,
            None => Cursor { partition: 0, score: String::new(), id: String::new() },
        };
        let mut tasks = Vec::new();
        for _ in 0..CALLS {
            let keys = self.keys(ns, cursor.partition);
            let index = match query.state {
                TaskState::Created | TaskState::Pending => keys.due(),
                TaskState::Running => keys.lease(),
                TaskState::Completed | TaskState::Cancelled => keys.done(),
                TaskState::Failed | TaskState::Timeout | TaskState::Error => keys.dead(),
            };
            let args = vec![
                Value::from(keys.base.as_str()),
                Value::from("0"),
                Value::from(query.state.as_str()),
                Value::from(cursor.score.as_str()),
                Value::from(cursor.id.as_str()),
                Value::from((limit - tasks.len()).to_string()),
                Value::from(BUDGET.to_string()),
            ];
            let reply = array(self.run(&self.inner.scripts.list, vec![index.to_owned()], args).await?)?;
            let mut reply = reply.into_iter();
            let at_end = reply.next().and_then(|v| text(&v)).as_deref() == Some("1");
            let score = reply.next().and_then(|v| text(&v)).unwrap_or_default();
            let id = reply.next().and_then(|v| text(&v)).unwrap_or_default();
            for entry in array(reply.next().unwrap_or(Value::Null))? {
                let (id, values) = record::parse_entry(entry)?;
                tasks.push(record::parse(&id, &values)?);
            }
            cursor = Cursor { partition: cursor.partition, score, id };
            if at_end {
                if cursor.partition + 1 >= self.partitions() {
                    return Ok(Page { tasks, next: None });
                }
                cursor = Cursor { partition: cursor.partition + 1, score: String::new(), id: String::new() };
            }
            if tasks.len() >= limit {
                break;
            }
        }
        let next = format!("{}:{}:{}", cursor.partition, cursor.score, cursor.id);
        Ok(Page { tasks, next: Some(next) })
    }
}
