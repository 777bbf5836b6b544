//! Throughput history edited by hand: a count that is not a whole number
//! (negative, text), a field of another shape, a minute that is not one,
//! and history keys of another type are left out or replaced, never a
//! panic or an error that stops the rest; an add onto a broken count
//! writes the count added; `purge` deletes the history keys.

use executor_core::storage::HistoryStore;
use executor_core::{Timestamp, storage::HistoryCount};
use fred::interfaces::{HashesInterface, KeysInterface, SortedSetsInterface};

use crate::common::corrupt::{Damage, TestResult};

/// Succeeded and failed per name, summed over minutes (an add may land in
/// the next minute).
async fn totals(d: &Damage) -> TestResult<Vec<(String, u64, u64)>> {
    let mut sums = std::collections::BTreeMap::<String, (u64, u64)>::new();
    for b in d.storage.history(&d.ns, Timestamp::default()).await? {
        let e = sums.entry(b.name).or_default();
        e.0 += b.succeeded;
        e.1 += b.failed;
    }
    Ok(sums.into_iter().map(|(n, (s, f))| (n, s, f)).collect())
}

#[tokio::test]
async fn unreadable_counts_are_left_out_and_the_rest_answers() -> TestResult {
    let d = Damage::new("history-bad").await;
    let counts = [HistoryCount::new("a", 1, 2), HistoryCount::new("b", 3, 4), HistoryCount::new("c", 5, 0)];
    d.storage.add_history(&d.ns, &counts).await?;
    let minute = d.storage.history(&d.ns, Timestamp::default()).await?[0].minute.as_millis();
    let bucket = d.key(&format!("history:{minute}"));
    let r = &d.redis;
    let _: () = r.hset(&bucket, ("s:a", "-5")).await?;
    let _: () = r.hset(&bucket, ("f:b", "lots")).await?;
    let _: () = r.hset(&bucket, ("x:c", "7")).await?;
    // A minute in the index whose hash is not a minute's start.
    let _: () = r.zadd(d.key("history"), None, None, false, false, (1.0, "garbage")).await?;
    let _: () = r.hset(d.key("history:garbage"), ("s:z", "9")).await?;
    assert_eq!(
        totals(&d).await?,
        [("a".to_owned(), 0, 2), ("b".to_owned(), 3, 0), ("c".to_owned(), 5, 0)],
        "the readable counts, and nothing of what does not parse"
    );
    // Adding onto a broken count writes the count added.
    d.storage.add_history(&d.ns, &[HistoryCount::new("b", 0, 1)]).await?;
    let now = totals(&d).await?;
    assert!(now.contains(&("b".to_owned(), 3, 1)), "{now:?}");

    // An index of another type is replaced, not an error.
    let _: () = r.del(d.key("history")).await?;
    let _: () = r.set(d.key("history"), "not a zset", None, None, false).await?;
    d.storage.add_history(&d.ns, &[HistoryCount::new("d", 1, 0)]).await?;
    assert!(totals(&d).await?.contains(&("d".to_owned(), 1, 0)), "{:?}", totals(&d).await?);
    assert!(d.storage.trim_history(&d.ns, Timestamp::MAX).await? >= 1, "the new index lists its minute");
    assert!(totals(&d).await?.is_empty());

    d.storage.add_history(&d.ns, &[HistoryCount::new("a", 1, 0)]).await?;
    d.storage.purge(&d.ns).await?;
    let index: i64 = r.exists(d.key("history")).await?;
    assert_eq!(index, 0, "purge deletes the history index");
    assert!(totals(&d).await?.is_empty(), "and its minutes");
    d.cleanup().await;
    Ok(())
}
