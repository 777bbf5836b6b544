//! The storage conformance suite of executor-core against a real Redis
//! (`REDIS_URL`, default `redis://127.0.0.1:6379`), each check in its own
//! namespace.

use crate::common::{cleanup, fresh};

executor_core::storage_conformance_tests!(fresh, cleanup);
executor_core::schedule_conformance_tests!(fresh, cleanup);
executor_core::history_conformance_tests!(fresh, cleanup);
executor_core::attempt_log_conformance_tests!(fresh, cleanup);
executor_core::run_now_conformance_tests!(fresh, cleanup);
executor_core::queue_conformance_tests!(fresh, cleanup);
executor_core::queue_limit_conformance_tests!(fresh, cleanup);

/// The tier methods, for use as the hot tier of `TieredStorage`.
mod tier {
    use crate::common::{cleanup, fresh};

    executor_core::tier_conformance_tests!(fresh, cleanup);
}
