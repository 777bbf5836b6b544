//! An idle claimer's wait, on every dialect: until a wake-up (a change in
//! this process, or a notification the dialect listens for), the earliest
//! due time of the queues it serves, or the next poll.

use std::{future::Future, time::Duration};

use executor_core::Result;
use tokio::{sync::Notify, time::Instant};

/// Resolves when work may be due, never later than `max_wait`: at once on
/// `wake`; when the earliest due time arrives that `next_due` reads (in
/// milliseconds from now, `None` when nothing of the claimer's queues
/// waits); otherwise after the poll interval, from `poll.0` doubling up to
/// `poll.1`, so work another process makes due without a notification
/// starts within `poll.1`.
///
/// # Errors
/// What `next_due` answers.
pub async fn until_due<F, Fut>(
    wake: &Notify,
    poll: (Duration, Duration),
    max_wait: Duration,
    mut next_due: F,
) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<i64>>>,
{
    // `max_wait` may be anything up to Duration::MAX (an executor's
    // `max_idle_wait`): an Instant that far out does not exist.
    let end = Instant::now().checked_add(max_wait);
    let mut interval = poll.0;
    loop {
        // Registered before the read, so a wake-up between the read and
        // the sleep still ends the wait.
        let notified = wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let until_due = match next_due().await? {
            Some(ms) if ms <= 0 => return Ok(()),
            Some(ms) => Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
            None => None,
        };
        let left = end.map_or(Duration::MAX, |end| end.saturating_duration_since(Instant::now()));
        if left.is_zero() {
            return Ok(());
        }
        let nap = until_due.map_or(interval, |d| d.min(interval)).min(left);
        let due_within_nap = until_due.is_some_and(|d| d <= nap);
        tokio::select! {
            () = &mut notified => return Ok(()),
            () = tokio::time::sleep(nap) => {}
        }
        if due_within_nap || end.is_some_and(|end| Instant::now() >= end) {
            return Ok(());
        }
        interval = interval.saturating_mul(2).min(poll.1);
    }
}
