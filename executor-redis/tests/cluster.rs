//! The conformance suite against a real Redis Cluster (`REDIS_CLUSTER_URL`,
//! e.g. `redis-cluster://127.0.0.1:17001?node=127.0.0.1:17002`; `scripts/test.sh`
//! starts a local 3-primary cluster and sets it): once with one partition per
//! namespace, once with namespaces split into 4 partitions spread over slots
//! (the wake marker then lives in another slot and is set by a separate
//! command).

mod common;

use executor_core::Namespace;
use executor_redis::RedisStorage;

async fn connect(partitions: u16) -> RedisStorage {
    let Ok(url) = std::env::var("REDIS_CLUSTER_URL") else {
        panic!(
            "REDIS_CLUSTER_URL is not set. Run `scripts/test.sh` (it starts a local 3-primary cluster), or \
             `source scripts/services.sh; source scripts/test.d/redis-cluster.sh` and then cargo test, or \
             point it at a cluster of yours: redis-cluster://host:port?node=host2:port2"
        )
    };
    common::connect_with(RedisStorage::builder(&url).partitions(partitions), &url).await
}

async fn fresh() -> (RedisStorage, Namespace) {
    (connect(1).await, executor_core::testing::unique_namespace("cluster"))
}

async fn fresh_partitioned() -> (RedisStorage, Namespace) {
    (connect(4).await, executor_core::testing::unique_namespace("cluster-p4"))
}

mod one_partition {
    use super::{common::cleanup, fresh};

    executor_core::storage_conformance_tests!(fresh, cleanup);
    executor_core::tier_conformance_tests!(fresh, cleanup);
}

mod four_partitions {
    use super::{common::cleanup, fresh_partitioned};

    // The three checks left out hold per partition only; see tests/partitioned.rs.
    executor_core::__storage_conformance_tests! {
        fresh_partitioned, cleanup;
        submit_and_get,
        duplicate_id_refused,
        idempotent_submit_returns_existing,
        delayed_task_not_claimed_before_due,
        run_at,
        claim_increments_fence_and_attempts,
        complete_with_fence,
        stale_fence_refused,
        retry_moves_to_pending_with_delay,
        fail_timeout_error_dead_letter,
        release_does_not_count_attempt,
        finish_many_answers_each_item,
        finish_many_completed_with_a_stale_item,
        heartbeat_extends_and_reports_lost,
        cancel_pending,
        cancel_running_requested_and_delivered_by_heartbeat,
        cancel_finished_is_illegal,
        cancel_missing_is_not_found,
        requeue_from_each_dead_letter_state,
        requeue_illegal_states,
        reap_after_lease_expiry,
        retention_trim,
        leadership_exclusive_renew_release_takeover,
        counts_by_state,
        list_pagination_visits_each_once,
        list_refuses_foreign_cursor,
        wait_for_work_wakes_on_submit,
        wait_for_work_wakes_at_due_time,
        wait_for_work_returns_by_max_wait,
        no_loss_no_double_claim_concurrent,
        debounce_key_released_when_cancelled,
        submit_many_answers_each_task,
        out_of_range_options_refused,
        extreme_valid_options_read_back,
        finish_out_of_range_refused_alone,
        delete_removes_any_state,
        random_options_never_corrupt,
        transitions_follow_the_table,
    }
    executor_core::tier_conformance_tests!(fresh_partitioned, cleanup);
}
