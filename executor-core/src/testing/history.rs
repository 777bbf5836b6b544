//! Checks of the throughput history methods: `add_history`, `history`,
//! `trim_history`.

use std::{collections::BTreeMap, time::Duration};

use crate::{
    Error, Namespace, Timestamp,
    id::MAX_ID_LEN,
    storage::{HistoryBucket, HistoryCount, HistoryStore, minute_of},
};

use super::{
    support::{err, ok},
    unique_namespace,
};

/// Every bucket of `ns` since the epoch.
async fn all<S: HistoryStore>(s: &S, ns: &Namespace) -> Vec<HistoryBucket> {
    ok("history", s.history(ns, Timestamp::default()).await)
}

/// Succeeded and failed per name, summed over minutes.
fn totals(buckets: &[HistoryBucket]) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for b in buckets {
        let t: &mut (u64, u64) = out.entry(b.name.clone()).or_default();
        t.0 += b.succeeded;
        t.1 += b.failed;
    }
    out
}

/// Ordered by minute then name, one bucket per (minute, name), minutes
/// whole and at or after `since`.
#[track_caller]
fn assert_well_formed(buckets: &[HistoryBucket], since: Timestamp) {
    for b in buckets {
        assert_eq!(b.minute, minute_of(b.minute), "bucket {b:?} starts on a whole minute");
        assert!(b.minute >= since, "bucket {b:?} is before since {since:?}");
    }
    for pair in buckets.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            (a.minute, &a.name) < (b.minute, &b.name),
            "not ordered by minute then name: {a:?} then {b:?}"
        );
    }
}

/// Counts added are read back in the bucket of the store's current
/// minute; empty counts add nothing; a fresh namespace has none.
pub async fn history_adds_read_back_in_the_current_minute<S: HistoryStore>(s: &S, ns: &Namespace) {
    assert!(all(s, ns).await.is_empty(), "a fresh namespace has no history");
    let before = ok("now", s.now(ns).await);
    let counts = [
        HistoryCount::new("send_mail", 3, 1),
        HistoryCount::new("report", 0, 2),
        HistoryCount::new("idle", 0, 0),
    ];
    ok("add_history", s.add_history(ns, &counts).await);
    let after = ok("now", s.now(ns).await);
    let buckets = all(s, ns).await;
    assert_well_formed(&buckets, Timestamp::default());
    for b in &buckets {
        assert!(
            minute_of(before) <= b.minute && b.minute <= minute_of(after),
            "bucket {b:?} is not in the store's current minute ({before:?}..={after:?})"
        );
    }
    let expected: BTreeMap<String, (u64, u64)> =
        [("report".to_owned(), (0, 2)), ("send_mail".to_owned(), (3, 1))].into_iter().collect();
    assert_eq!(totals(&buckets), expected, "counts read back exactly; empty counts add no bucket");
    ok("add_history", s.add_history(ns, &[]).await);
    assert_eq!(totals(&all(s, ns).await), expected, "an empty add changes nothing");
}

/// Repeated adds and adds from 8 concurrent callers (50 each) sum exactly.
pub async fn history_adds_sum_exactly<S: HistoryStore>(s: &S, ns: &Namespace) {
    let adder = |k: u64| async move {
        for _ in 0..50 {
            let counts = [HistoryCount::new("hot", 1, 2), HistoryCount::new(format!("own-{k}"), k, 1)];
            ok("add_history", s.add_history(ns, &counts).await);
        }
    };
    tokio::join!(adder(0), adder(1), adder(2), adder(3), adder(4), adder(5), adder(6), adder(7));
    let buckets = all(s, ns).await;
    assert_well_formed(&buckets, Timestamp::default());
    let got = totals(&buckets);
    assert_eq!(got.get("hot"), Some(&(400, 800)), "8 x 50 concurrent adds sum exactly");
    for k in 0..8u64 {
        assert_eq!(got.get(&format!("own-{k}")), Some(&(50 * k, 50)), "own-{k}");
    }
    assert_eq!(got.len(), 9, "`hot` and one name per adder, nothing else: {got:?}");
}

/// Names that differ only in bytes that other layers treat specially
/// (separators, spaces, case, unicode) stay distinct buckets; a name of
/// the longest length is kept; an empty or too long name is refused.
pub async fn history_names_stay_distinct<S: HistoryStore>(s: &S, ns: &Namespace) {
    let long = "n".repeat(MAX_ID_LEN);
    let names = [
        "a",
        "A",
        "a b",
        "a ",
        "a|b",
        "a:b",
        "a:s:b",
        "s:a",
        "1|a",
        "ünïcødé",
        "日本",
        "a\u{301}",
        long.as_str(),
    ];
    let counts: Vec<HistoryCount> =
        names.iter().zip(1u64..).map(|(n, i)| HistoryCount::new(*n, i, i * 100)).collect();
    ok("add_history", s.add_history(ns, &counts).await);
    let got = totals(&all(s, ns).await);
    let expected: BTreeMap<String, (u64, u64)> =
        names.iter().zip(1u64..).map(|(n, i)| ((*n).to_owned(), (i, i * 100))).collect();
    assert_eq!(got, expected, "every name is its own bucket, kept as given");
    for bad in [String::new(), "x".repeat(MAX_ID_LEN + 1)] {
        let e = err("add_history with a bad name", s.add_history(ns, &[HistoryCount::new(bad, 1, 0)]).await);
        assert!(matches!(e, Error::Invalid { .. }), "a bad name is Invalid, got {e:?}");
    }
    assert_eq!(totals(&all(s, ns).await), expected, "a refused add changes nothing");
}

/// One namespace's history is not another's.
pub async fn history_namespaces_are_isolated<S: HistoryStore>(s: &S, ns: &Namespace) {
    let other = unique_namespace("hist-other");
    ok("add_history", s.add_history(ns, &[HistoryCount::new("mine", 1, 0)]).await);
    ok("add_history", s.add_history(&other, &[HistoryCount::new("theirs", 0, 1)]).await);
    let mine = totals(&all(s, ns).await);
    let theirs = totals(&all(s, &other).await);
    ok("trim_history", s.trim_history(&other, Timestamp::MAX).await);
    assert_eq!(mine.into_iter().collect::<Vec<_>>(), [("mine".to_owned(), (1, 0))]);
    assert_eq!(theirs.into_iter().collect::<Vec<_>>(), [("theirs".to_owned(), (0, 1))]);
    assert!(all(s, &other).await.is_empty(), "trimming everything in the other namespace");
    assert_eq!(all(s, ns).await.len(), 1, "leaves this one's history");
}

/// `since` keeps the buckets whose minute is at or after it.
pub async fn history_since_filters<S: HistoryStore>(s: &S, ns: &Namespace) {
    ok("add_history", s.add_history(ns, &[HistoryCount::new("t", 2, 1)]).await);
    let buckets = all(s, ns).await;
    let [bucket] = buckets.as_slice() else { panic!("one add makes one bucket, got {buckets:?}") };
    let m = bucket.minute;
    let at = ok("history", s.history(ns, m).await);
    assert_eq!(at, buckets, "since = the bucket's minute includes it");
    let after = ok("history", s.history(ns, m.saturating_add(Duration::from_millis(1))).await);
    assert!(after.is_empty(), "since after the bucket's minute excludes it: {after:?}");
    let next = ok("history", s.history(ns, m.saturating_add(Duration::from_secs(60))).await);
    assert!(next.is_empty(), "a later minute excludes it: {next:?}");
    let earlier = ok("history", s.history(ns, m.saturating_sub(Duration::from_secs(3_600))).await);
    assert_eq!(earlier, buckets, "an earlier since includes it");
}

/// `trim_history(before)` deletes the buckets whose minute is before
/// `before` and keeps the others; an add after a trim starts from zero.
pub async fn history_trim_removes_older_keeps_newer<S: HistoryStore>(s: &S, ns: &Namespace) {
    ok("add_history", s.add_history(ns, &[HistoryCount::new("t", 5, 4), HistoryCount::new("u", 1, 0)]).await);
    let buckets = all(s, ns).await;
    let minutes: Vec<Timestamp> = buckets.iter().map(|b| b.minute).collect();
    let m = minutes.first().copied().unwrap_or_else(|| panic!("the add made no bucket"));
    assert!(minutes.iter().all(|x| *x == m), "one add, one minute: {buckets:?}");
    ok("trim_history", s.trim_history(ns, m).await);
    assert_eq!(all(s, ns).await, buckets, "trimming before the bucket's minute keeps it");
    let gone = ok("trim_history", s.trim_history(ns, m.saturating_add(Duration::from_millis(1))).await);
    assert!(gone >= 1, "trim answers what it deleted, got {gone}");
    assert!(all(s, ns).await.is_empty(), "trimming after the bucket's minute deletes it");
    ok("add_history", s.add_history(ns, &[HistoryCount::new("t", 1, 0)]).await);
    let again = totals(&all(s, ns).await);
    assert_eq!(
        again.into_iter().collect::<Vec<_>>(),
        [("t".to_owned(), (1, 0))],
        "counts start again from zero"
    );
    let now = ok("now", s.now(ns).await);
    ok("trim_history", s.trim_history(ns, now.saturating_add(Duration::from_secs(120))).await);
    assert!(all(s, ns).await.is_empty(), "a trim before a future instant deletes everything");
}
