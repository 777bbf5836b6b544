//! Throughput history: `history.lua` on the namespace's index
//! ZSET `<base0>history` and one HASH per minute, `<base0>history:<minute>`
//! (fields `s:<name>` and `f:<name>`), all in partition 0's hash tag, so
//! every call is one script on one slot, on a cluster too. The minute is
//! the server's `TIME`; the leader's [`RedisStorage::trim_history`] deletes
//! old minutes (no `EXPIRE`: the keep period is the executor's setting).

use executor_core::storage::HistoryStore;
use std::collections::BTreeMap;

use executor_core::{
    Namespace, Result, Timestamp,
    storage::{HistoryBucket, HistoryCount, check_history, minute_of},
};
use fred::types::Value;

use crate::{
    RedisStorage,
    args::instant_ms,
    error::shape,
    record::{array, text},
};

/// Plain digits, as the script writes them; `None` for anything else (a
/// negative or hand-edited count).
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|n| *n <= executor_core::storage::MAX_HISTORY_COUNT)
}

/// Adds one `field, value` pair of a minute's hash to `out`, or says why
/// it is left out.
fn add_field(
    out: &mut BTreeMap<(Timestamp, String), (u64, u64)>,
    minute: Timestamp,
    field: &Value,
    value: &Value,
) -> Result<(), String> {
    let field = text(field).ok_or("a field is not UTF-8")?;
    let value = text(value).ok_or_else(|| format!("field `{field}`: the value is not UTF-8"))?;
    let n = digits(&value).ok_or_else(|| format!("field `{field}`: `{value}` is not a count"))?;
    let (succeeded, name) = if let Some(name) = field.strip_prefix("s:") {
        (true, name)
    } else if let Some(name) = field.strip_prefix("f:") {
        (false, name)
    } else {
        return Err(format!("field `{field}` is neither `s:<name>` nor `f:<name>`"));
    };
    let bucket = out.entry((minute, name.to_owned())).or_default();
    if succeeded {
        bucket.0 = bucket.0.saturating_add(n);
    } else {
        bucket.1 = bucket.1.saturating_add(n);
    }
    Ok(())
}

impl RedisStorage {
    async fn history_op(&self, ns: &Namespace, args: Vec<Value>) -> Result<Value> {
        let keys = vec![self.inner.layout.history(ns)];
        self.run(&self.inner.scripts.history, keys, args).await
    }
}

impl HistoryStore for RedisStorage {
    /// Adds every count to the minute of the server's `TIME` in one
    /// script; the call's nonce makes a resend by fred add nothing twice.
    async fn add_history(&self, ns: &Namespace, counts: &[HistoryCount]) -> Result<()> {
        let counts = check_history(counts)?;
        if counts.is_empty() {
            return Ok(());
        }
        let mut args = Vec::with_capacity(2 + 3 * counts.len());
        args.push(Value::from("add"));
        args.push(Value::from(self.nonce()));
        for c in counts {
            args.push(Value::from(c.name.as_str()));
            args.push(Value::from(c.succeeded.to_string()));
            args.push(Value::from(c.failed.to_string()));
        }
        self.history_op(ns, args).await.map(drop)
    }

    /// Every bucket from `since` on, by minute then name. A minute or a
    /// field that does not parse (edited by hand) is left out with a
    /// warning; the rest still answers.
    async fn history(&self, ns: &Namespace, since: Timestamp) -> Result<Vec<HistoryBucket>> {
        let since = instant_ms("history since", since.min(Timestamp::MAX))?;
        let items = array(self.history_op(ns, vec![Value::from("read"), Value::from(since)]).await?)?;
        let mut out = BTreeMap::new();
        for pair in items.chunks(2) {
            let [minute, fields] = pair else {
                return Err(shape("history read: not a list of pairs"));
            };
            let minute = match text(minute).as_deref().and_then(digits).map(Timestamp::from_millis) {
                Some(m) if m == minute_of(m) && m <= Timestamp::MAX => m,
                _ => {
                    tracing::warn!(namespace = %ns, minute = ?minute, "left out an unreadable history minute");
                    continue;
                }
            };
            let fields = array(fields.clone())?;
            for fv in fields.chunks(2) {
                let [field, value] = fv else { continue };
                if let Err(reason) = add_field(&mut out, minute, field, value) {
                    tracing::warn!(namespace = %ns, %minute, %reason, "left out an unreadable history count");
                }
            }
        }
        Ok(out.into_iter().map(|((minute, name), (s, f))| HistoryBucket::new(minute, name, s, f)).collect())
    }

    /// Deletes every minute before `before` in one script; how many went.
    async fn trim_history(&self, ns: &Namespace, before: Timestamp) -> Result<u64> {
        let before = instant_ms("history before", before.min(Timestamp::MAX))?;
        let reply = self.history_op(ns, vec![Value::from("trim"), Value::from(before)]).await?;
        reply.as_u64().ok_or_else(|| shape(&format!("history trim answered {reply:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_counts_parse() {
        assert_eq!(digits("0"), Some(0));
        assert_eq!(digits("42"), Some(42));
        for bad in ["", "-1", "+1", "1.5", " 1", "1e3", "99999999999999999999"] {
            assert_eq!(digits(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn fields_split_at_their_kind_only() {
        let mut out = BTreeMap::new();
        let m = Timestamp::from_millis(60_000);
        let f = |s: &str| Value::from(s.to_owned());
        assert!(add_field(&mut out, m, &f("s:a:s:b"), &f("3")).is_ok());
        assert!(add_field(&mut out, m, &f("f:a:s:b"), &f("2")).is_ok());
        assert!(add_field(&mut out, m, &f("x:a"), &f("2")).is_err());
        assert!(add_field(&mut out, m, &f("s:a"), &f("-2")).is_err());
        assert_eq!(out.into_iter().collect::<Vec<_>>(), [((m, "a:s:b".to_owned()), (3, 2))]);
    }
}
