//! Issue 12 item 8: every option of `MySqlOptions` is checked at connect,
//! before anything is sent, with an error naming the option and its range;
//! no value panics (`acquire_timeout(Duration::MAX)` overflowed an Instant
//! inside sqlx, a `wait_for_work` of `Duration::MAX` (an executor's
//! `max_idle_wait`) panicked the claim loop).

use std::time::Duration;

use executor_core::{Error, QueueName, storage::Storage, testing};
use proptest::prelude::*;
use reliable_executor_mysql::MySqlOptions;
use tokio::time::Instant;

use crate::support::{cleanup, pool};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Nothing listens here: an option that reached the network would fail
/// with a storage error, not `Invalid`.
const NOWHERE: &str = "mysql://root@127.0.0.1:1/none";

fn refused(opts: MySqlOptions) -> Option<&'static str> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
    match runtime.block_on(opts.connect(NOWHERE)) {
        Err(Error::Invalid { what, .. }) => Some(what),
        _ => None,
    }
}

#[test]
fn each_bad_option_is_named() {
    let d = Duration::from_millis;
    let cases: Vec<(MySqlOptions, &str)> = vec![
        (MySqlOptions::new().poll_interval(Duration::ZERO, d(100)), "poll_interval min"),
        (MySqlOptions::new().poll_interval(Duration::MAX, Duration::MAX), "poll_interval min"),
        (MySqlOptions::new().poll_interval(d(100), d(10)), "poll_interval max"),
        (MySqlOptions::new().poll_interval(d(1), Duration::MAX), "poll_interval max"),
        (MySqlOptions::new().max_connections(0), "max_connections"),
        (MySqlOptions::new().max_connections(u32::MAX), "max_connections"),
        (MySqlOptions::new().acquire_timeout(Duration::ZERO), "acquire_timeout"),
        (MySqlOptions::new().acquire_timeout(Duration::MAX), "acquire_timeout"),
    ];
    for (opts, name) in cases {
        let shown = format!("{opts:?}");
        assert_eq!(refused(opts), Some(name), "{shown}");
    }
    let e = MySqlOptions::new().acquire_timeout(Duration::ZERO).validate().err().map(|e| e.to_string());
    assert!(
        e.as_deref().is_some_and(|e| e.contains("acquire_timeout") && e.contains("1 ms to 1 hour")),
        "{e:?}"
    );
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::MAX),
        (0u64..=u64::MAX).prop_map(Duration::from_millis),
        (0u64..4_000_000).prop_map(Duration::from_millis),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any combination gets a clear answer and no panic: `validate` says
    /// Ok exactly when every value is in its documented range, and connect
    /// refuses the others before touching the network.
    #[test]
    fn any_options_get_a_clear_answer(
        min in duration(),
        max in duration(),
        conns in prop_oneof![Just(0u32), Just(u32::MAX), 0u32..=20_000],
        acquire in duration(),
    ) {
        let opts = MySqlOptions::new()
            .poll_interval(min, max)
            .max_connections(conns)
            .acquire_timeout(acquire);
        let in_range = (Duration::from_millis(1)..=Duration::from_secs(60)).contains(&min)
            && (min..=Duration::from_secs(600)).contains(&max)
            && (1..=10_000).contains(&conns)
            && (Duration::from_millis(1)..=Duration::from_secs(3600)).contains(&acquire);
        match opts.validate() {
            Ok(()) => prop_assert!(in_range),
            Err(Error::Invalid { what, .. }) => {
                prop_assert!(!in_range);
                prop_assert!(
                    ["poll_interval min", "poll_interval max", "max_connections", "acquire_timeout"]
                        .contains(&what),
                    "{}", what
                );
                prop_assert_eq!(refused(opts), Some(what));
            }
            Err(other) => prop_assert!(false, "{}", other),
        }
    }
}

/// The extremes inside the ranges work against the server, and a wait of
/// `Duration::MAX` (an executor's idle wait) returns on a submit instead of
/// panicking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extreme_valid_options_work() -> TestResult {
    let storage = MySqlOptions::new()
        .poll_interval(Duration::from_millis(1), Duration::from_secs(600))
        .max_connections(3)
        .acquire_timeout(Duration::from_secs(3600))
        .open(pool(3).await)
        .await?;
    let ns = testing::unique_namespace("my-opts");
    let waiter = {
        let (storage, ns) = (storage.clone(), ns.clone());
        tokio::spawn(async move {
            let start = Instant::now();
            storage.wait_for_work(&ns, &[QueueName::default()], Duration::MAX).await.map(|()| start.elapsed())
        })
    };
    // Submitted from this process: the in-process wake-up ends the wait.
    storage.submit(&ns, testing::new_task("wake")).await?;
    let waited = tokio::time::timeout(Duration::from_secs(10), waiter).await???;
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    cleanup(&storage, &ns).await;
    Ok(())
}

/// `max_payload` lowers the limit below the server's packet, never raises
/// it above: a set limit applies at submit; one above the packet leaves
/// the packet's limit in force; 0 is refused as an option.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_payload_lowers_the_packet_limit_only() -> TestResult {
    let ns = testing::unique_namespace("my-maxpay");
    let low = MySqlOptions::new().max_payload(1000).open(pool(3).await).await?;
    assert_eq!(low.max_payload().await?, 1000);
    let mut big = testing::new_task("big");
    big.payload = vec![b'x'; 1001];
    let err = low.submit(&ns, big).await.err();
    assert!(matches!(err, Some(Error::PayloadTooLarge { size: 1001, limit: 1000 })), "{err:?}");
    let mut fits = testing::new_task("fits");
    fits.payload = vec![b'x'; 1000];
    low.submit(&ns, fits).await?;

    let packet = MySqlOptions::new().open(pool(3).await).await?.max_payload().await?;
    let high = MySqlOptions::new().max_payload(512 << 20).open(pool(3).await).await?;
    assert_eq!(high.max_payload().await?, packet.min(512 << 20));
    let zero = MySqlOptions::new().max_payload(0).validate();
    assert!(matches!(zero, Err(Error::Invalid { what: "max_payload", .. })), "{zero:?}");
    cleanup(&low, &ns).await;
    Ok(())
}
