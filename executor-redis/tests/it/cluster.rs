//! The conformance suite against a real Redis Cluster (`REDIS_CLUSTER_URL`,
//! e.g. `redis-cluster://127.0.0.1:17001?node=127.0.0.1:17002`; `scripts/test.sh`
//! starts a local 3-primary cluster and sets it): once with one partition per
//! namespace, once with namespaces split into 4 partitions spread over slots
//! (the wake marker then lives in another slot and is set by a separate
//! command).

use executor_core::Namespace;
use reliable_executor_redis::RedisStorage;

use crate::common;

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
    use super::fresh;
    use crate::common::cleanup;

    executor_core::testing::storage_conformance_tests!(fresh, cleanup);
    executor_core::testing::tier_conformance_tests!(fresh, cleanup);
    executor_core::testing::schedule_conformance_tests!(fresh, cleanup);
    executor_core::testing::history_conformance_tests!(fresh, cleanup);
    executor_core::testing::attempt_log_conformance_tests!(fresh, cleanup);
    executor_core::testing::run_now_conformance_tests!(fresh, cleanup);
    executor_core::testing::queue_conformance_tests!(fresh, cleanup);
    executor_core::testing::queue_limit_conformance_tests!(fresh, cleanup);
}

mod four_partitions {
    use super::fresh_partitioned;
    use crate::common::cleanup;

    // The checks left out hold per partition only; see tests/it/partitioned.rs.
    executor_core::testing::storage_conformance_tests!(
        fresh_partitioned,
        cleanup,
        except(claim_orders_by_due_and_respects_limit, fresh_id_claimed_in_submit_order, retention_by_count,)
    );
    executor_core::testing::tier_conformance_tests!(fresh_partitioned, cleanup);
    executor_core::testing::schedule_conformance_tests!(fresh_partitioned, cleanup);
    executor_core::testing::history_conformance_tests!(fresh_partitioned, cleanup);
    executor_core::testing::attempt_log_conformance_tests!(fresh_partitioned, cleanup);
    executor_core::testing::run_now_conformance_tests!(fresh_partitioned, cleanup);
    // Less `queue_priority_order`, as in tests/it/partitioned.rs.
    executor_core::testing::queue_conformance_tests!(
        fresh_partitioned,
        cleanup,
        except(queue_priority_order)
    );

    /// No queue limits over several partitions of a cluster: one script
    /// cannot reach partition 0's slot from another partition's. Refused
    /// with the way out, and nothing is written.
    #[tokio::test]
    async fn queue_limits_are_refused() -> crate::common::corrupt::TestResult {
        use executor_core::{Error, QueueName, queue::QueueLimits, storage::QueueControl};
        let (storage, ns) = fresh_partitioned().await;
        let limits = QueueLimits::new().concurrency(3);
        let refused = storage.set_queue_limits(&ns, &QueueName::new("mail")?, &limits).await;
        match refused {
            Err(Error::Unsupported { ref reason, .. }) if reason.contains("one partition") => {}
            other => panic!("expected Unsupported naming one partition, got {other:?}"),
        }
        assert!(storage.queues(&ns).await?.is_empty(), "nothing was written");
        cleanup(&storage, &ns).await;
        Ok(())
    }
}
