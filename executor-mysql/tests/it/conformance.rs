//! The storage, cron schedule and queue conformance suites of executor-core
//! against a real MySQL or MariaDB (`MYSQL_URL`, default
//! `mysql://root@127.0.0.1:3306/test`), one namespace per test, deleted
//! afterwards.

use crate::support::{cleanup, fresh};

executor_core::storage_conformance_tests!(fresh, cleanup);
executor_core::schedule_conformance_tests!(fresh, cleanup);
executor_core::history_conformance_tests!(fresh, cleanup);
executor_core::attempt_log_conformance_tests!(fresh, cleanup);
executor_core::run_now_conformance_tests!(fresh, cleanup);
executor_core::queue_conformance_tests!(fresh, cleanup);
executor_core::queue_limit_conformance_tests!(fresh, cleanup);

/// The tier methods, for use as a tier of `TieredStorage`.
mod tier {
    use crate::support::{cleanup, fresh};

    executor_core::tier_conformance_tests!(fresh, cleanup);
}
