//! Issue 12, item 8: every setting of `RedisStorageBuilder` is checked at
//! connect, with an error naming the setting and its range, before any
//! connection is made; extreme values never panic.

use std::time::Duration;

use executor_core::Error;
use reliable_executor_redis::{RedisStorage, RedisStorageBuilder};

/// An address nothing listens on: a setting out of range must be refused
/// before any connection is tried.
const NOWHERE: &str = "redis://127.0.0.1:1";

async fn refused(builder: RedisStorageBuilder, setting: &str, range: &str) {
    match builder.connect().await {
        Err(Error::Invalid { what, reason }) => {
            assert_eq!(what, setting, "{reason}");
            assert!(reason.contains(range), "the error gives the range `{range}`: {reason}");
        }
        other => panic!("{setting}: expected Invalid, got {other:?}"),
    }
}

#[tokio::test]
async fn settings_out_of_range_are_refused_by_name() {
    let b = || RedisStorage::builder(NOWHERE);
    refused(b().pool_size(0), "pool_size", "1 to 256").await;
    refused(b().pool_size(usize::MAX), "pool_size", "1 to 256").await;
    refused(b().partitions(0), "partitions", "1 to 1024").await;
    refused(b().partitions(u16::MAX), "partitions", "1 to 1024").await;
    refused(b().command_timeout(Duration::ZERO), "command_timeout", "1 ms to 1 hour").await;
    refused(b().command_timeout(Duration::MAX), "command_timeout", "1 ms to 1 hour").await;
    refused(b().key_prefix(""), "key prefix", "1 to 64").await;
    refused(b().key_prefix("a}b"), "key prefix", "1 to 64").await;
    refused(b().key_prefix("x".repeat(65)), "key prefix", "1 to 64").await;
    refused(RedisStorage::builder("not a url"), "redis url", "").await;
}

#[test]
fn the_extremes_inside_the_ranges_pass() -> Result<(), Error> {
    RedisStorage::builder(NOWHERE)
        .pool_size(RedisStorageBuilder::MAX_POOL_SIZE)
        .partitions(RedisStorageBuilder::MAX_PARTITIONS)
        .command_timeout(RedisStorageBuilder::MAX_COMMAND_TIMEOUT)
        .key_prefix("a".repeat(64))
        .validate()?;
    RedisStorage::builder(NOWHERE).command_timeout(Duration::from_millis(1)).validate()
}
