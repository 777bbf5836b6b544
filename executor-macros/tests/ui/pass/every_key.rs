//! Every key of the attribute, each retry policy, and `crate = path`.
use std::time::Duration;

use reliable_executor::{RetryPolicy, reliable_task};

#[reliable_task(
    name = "fixed",
    retry_limit = 5,
    retry_interval = "500ms",
    max_duration = "1h",
    timeout = "10s",
    queue = "emails.v2:eu",
    priority = 9,
    crate = ::reliable_executor
)]
async fn fixed() {}

#[reliable_task(name = "exponential", exponential(base = "1s", factor = 2.0, cap = "1m", jitter = 0.2))]
async fn exponential() {}

#[reliable_task(name = "levels", levels = ["10s", "1m", "10m", "1h"])]
async fn levels() {}

mod renamed {
    use ::reliable_executor as exec;

    #[exec::reliable_task(name = "renamed", crate = exec)]
    pub(crate) async fn renamed() {}
}

fn main() -> Result<(), reliable_executor::Error> {
    let o = fixed::options();
    assert_eq!(o.retry_limit, 5);
    assert_eq!(o.retry, RetryPolicy::fixed(Duration::from_millis(500)));
    assert_eq!(o.max_duration, Some(Duration::from_secs(3600)));
    assert_eq!(o.timeout, Some(Duration::from_secs(10)));
    assert_eq!((o.queue.as_str(), o.priority), ("emails.v2:eu", 9));
    assert_eq!((exponential::options().queue.as_str(), exponential::options().priority), ("default", 0));
    let task = fixed::with().priority(3).queue("other").into_new_task()?;
    assert_eq!((task.queue.as_str(), task.priority), ("other", 3));
    assert_eq!(fixed::with().into_new_task()?.queue.as_str(), "emails.v2:eu");
    assert!(fixed::with().queue("bad queue").into_new_task().is_err());
    assert!(fixed::with().priority(10).into_new_task().is_err());
    let exp = RetryPolicy::exponential(Duration::from_secs(1), 2.0, Duration::from_secs(60))?.with_jitter(0.2)?;
    assert_eq!(exponential::options().retry, exp);
    let secs = [10, 60, 600, 3600].map(Duration::from_secs);
    assert_eq!(levels::options().retry, RetryPolicy::levels(secs)?);
    assert_eq!(renamed::renamed::NAME, "renamed");
    Ok(())
}
