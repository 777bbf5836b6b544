//! The store as the cold tier of `TieredStorage` (long delays wait in it and
//! move to the hot store shortly before they are due), with an in-memory
//! hot tier.

use std::time::Duration;

use executor_core::{
    MemoryStorage, TieredStorage,
    storage::{Due, Storage},
    testing,
};

use super::{TestDb, TestResult, cleanup, fresh, run};

/// A long delay is stored in the cold tier, stays there while beyond the
/// horizon, and moves to the hot tier once within it.
pub async fn long_delays_wait_in_the_cold_tier_and_move_to_hot_before_due<D: TestDb>() -> TestResult {
    let (cold, ns) = fresh::<D>().await;
    let hot = MemoryStorage::new();
    let tiered = TieredStorage::new(hot.clone(), cold.clone()).horizon(Duration::from_millis(500));
    let mut later = testing::new_task("later");
    later.due = Due::After(Duration::from_millis(1500));
    let submitted = tokio::time::Instant::now();
    let id = tiered.submit(&ns, later).await?.id;
    assert!(
        cold.get(&ns, &id).await?.is_some(),
        "a long delay is stored in {}",
        <D::Dialect as crate::ErrorClass>::SERVER
    );
    assert!(hot.get(&ns, &id).await?.is_none());

    // Nothing moves while the task is beyond the horizon.
    assert_eq!(tiered.promote(&ns).await?, 0);
    let moved_at = loop {
        if tiered.promote(&ns).await? == 1 {
            break submitted.elapsed();
        }
        assert!(submitted.elapsed() < Duration::from_secs(5), "never promoted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Due 1.5 s after submit, horizon 0.5 s: it moves about 1 s after submit.
    assert!(moved_at >= Duration::from_millis(950), "promoted {moved_at:?} after submit, before the horizon");
    assert!(cold.get(&ns, &id).await?.is_none(), "the cold copy is removed");
    let hot_copy = hot.get(&ns, &id).await?.ok_or("not in hot")?;
    assert_eq!(hot_copy.payload, br#"{"n":1}"#.to_vec());
    cleanup(&cold, &ns).await;
    hot.remove_namespace(&ns);
    Ok(())
}

/// A cold row no tier can take (fence past `MAX_FENCE`, edited by hand) is
/// moved to ERROR with the reason when the promotion reads it, instead of
/// waiting in the cold tier for ever; its neighbour moves on.
pub async fn a_cold_row_past_the_fence_range_is_dead_lettered_by_the_promotion<D: TestDb>() -> TestResult {
    let (cold, ns) = fresh::<D>().await;
    let hot = MemoryStorage::new();
    let tiered = TieredStorage::new(hot.clone(), cold.clone()).horizon(Duration::from_secs(3_600));
    for id in ["bad", "good"] {
        let mut t = testing::new_task(id);
        t.due = Due::After(Duration::from_secs(60));
        cold.submit(&ns, t).await?;
    }
    // Past what a tier keeps (`MAX_FENCE`, 2^53 - 1), within every
    // dialect's column.
    run(
        &cold,
        "UPDATE reliable_executor_tasks SET fence = 9007199254740993 WHERE ns = $1 AND id = 'bad'",
        &[ns.as_str()],
    )
    .await?;
    assert_eq!(tiered.promote(&ns).await?, 1, "the good task moves");
    let bad = cold.get(&ns, &"bad".try_into()?).await?.ok_or("the bad row vanished")?;
    assert_eq!(bad.state, executor_core::TaskState::Error, "{bad:?}");
    assert!(bad.last_error.as_deref().unwrap_or_default().contains("fence"), "{bad:?}");
    assert!(hot.get(&ns, &"good".try_into()?).await?.is_some(), "the neighbour was promoted");
    cleanup(&cold, &ns).await;
    hot.remove_namespace(&ns);
    Ok(())
}
