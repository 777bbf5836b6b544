//! Per-handler defaults, set in the attribute and overridable per submit.

use std::time::Duration;

use crate::{Error, QueueName, Result, RetryPolicy};

/// Default retry limit: three retries after the first attempt.
pub const DEFAULT_RETRY_LIMIT: u32 = 3;

/// Most retries a task may ask for.
pub const MAX_RETRY_LIMIT: u32 = 10_000;

/// A handler's defaults: what `#[reliable_task(...)]` keys set.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::{RetryPolicy, TaskOptions};
///
/// let opts = TaskOptions::new()
///     .retry_limit(5)
///     .retry(RetryPolicy::fixed(Duration::from_secs(2)))
///     .max_duration(Duration::from_secs(60));
/// assert_eq!(opts.max_attempts(), 6);
/// ```
///
/// With [`RetryPolicy::Levels`] and no explicit retry limit, the limit
/// follows the number of levels (each level is used once, then the dead
/// letter); an explicit limit below it is refused by
/// [`TaskOptions::validate`], since the last levels would never be reached.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::{RetryPolicy, TaskOptions};
///
/// let levels = RetryPolicy::levels([10, 60, 600, 3_600].map(Duration::from_secs))?;
/// assert_eq!(TaskOptions::new().retry(levels.clone()).retry_limit, 4);
/// assert!(TaskOptions::new().retry_limit(3).retry(levels).validate().is_err());
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskOptions {
    /// Retries after the first attempt.
    pub retry_limit: u32,
    /// Delay before each retry.
    pub retry: RetryPolicy,
    /// Deadline counted from creation; past it the task ends `TIMEOUT`.
    pub max_duration: Option<Duration>,
    /// Limit of one attempt; an attempt past it is retried.
    pub timeout: Option<Duration>,
    /// The queue its tasks wait in.
    pub queue: QueueName,
    /// Their priority within the queue, 0..=[`crate::queue::MAX_PRIORITY`].
    pub priority: u8,
    /// `retry_limit` was set explicitly, so levels do not replace it.
    limit_set: bool,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskOptions {
    /// Three retries one second apart, no deadline, no per-attempt timeout.
    pub fn new() -> Self {
        Self {
            retry_limit: DEFAULT_RETRY_LIMIT,
            retry: RetryPolicy::default(),
            max_duration: None,
            timeout: None,
            queue: QueueName::default(),
            priority: 0,
            limit_set: false,
        }
    }

    /// Sets the retry limit.
    pub fn retry_limit(mut self, n: u32) -> Self {
        self.retry_limit = n;
        self.limit_set = true;
        self
    }

    /// Sets the retry policy. Levels set the retry limit to their count
    /// unless a limit was set explicitly.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        if let RetryPolicy::Levels { levels } = &policy
            && !self.limit_set
        {
            self.retry_limit = u32::try_from(levels.len()).unwrap_or(u32::MAX);
        }
        self.retry = policy;
        self
    }

    /// Sets `max_duration`.
    pub fn max_duration(mut self, d: Duration) -> Self {
        self.max_duration = Some(d);
        self
    }

    /// Sets the per-attempt timeout.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Sets the queue.
    pub fn queue(mut self, queue: QueueName) -> Self {
        self.queue = queue;
        self
    }

    /// Sets the priority (checked by [`TaskOptions::validate`]).
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// `retry_limit + 1`.
    pub fn max_attempts(&self) -> u32 {
        self.retry_limit.saturating_add(1)
    }

    /// Checks every option.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the option and the accepted range.
    pub fn validate(&self) -> Result<()> {
        if self.retry_limit > MAX_RETRY_LIMIT {
            return Err(Error::invalid(
                "retry_limit",
                format!("{} is above the limit of {MAX_RETRY_LIMIT}", self.retry_limit),
            ));
        }
        if let RetryPolicy::Levels { levels } = &self.retry
            && (self.retry_limit as usize) < levels.len()
        {
            return Err(Error::invalid(
                "retry_limit",
                format!(
                    "{} never reaches the last {} of the {} retry levels: set it to at least {} (the last \
                     level repeats), or leave it unset and it follows the levels",
                    self.retry_limit,
                    levels.len() - self.retry_limit as usize,
                    levels.len(),
                    levels.len()
                ),
            ));
        }
        if self.max_duration == Some(Duration::ZERO) {
            return Err(Error::invalid("max_duration", "must be longer than zero"));
        }
        if self.timeout == Some(Duration::ZERO) {
            return Err(Error::invalid("timeout", "must be longer than zero"));
        }
        crate::queue::check_priority(self.priority)?;
        if let Some(d) = self.max_duration {
            crate::time::check_duration("max_duration", d)?;
        }
        if let Some(d) = self.timeout {
            crate::time::check_duration("timeout", d)?;
        }
        self.retry.validate()
    }
}
