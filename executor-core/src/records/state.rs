//! The task states and the legal transitions between them, written once as
//! data: every store and the runtime consult [`TaskState::can`].

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

use crate::Error;

/// Where a task is in its life.
///
/// ```text
/// CREATED --claim--> RUNNING --ok--> COMPLETED
/// PENDING --claim--> RUNNING --err, attempts left--> PENDING (due = now + backoff)
///                    RUNNING --err, none left--> FAILED        (dead letter)
///                    RUNNING --past max_duration--> TIMEOUT    (dead letter)
///                    RUNNING --no handler / bad payload--> ERROR (dead letter)
///                    RUNNING --cancel delivered, handler stopped--> CANCELLED
/// CREATED|PENDING --cancel--> CANCELLED
/// FAILED|TIMEOUT|ERROR --requeue--> PENDING
/// RUNNING --lease expired (reap)--> PENDING | FAILED | TIMEOUT
/// RUNNING --released at shutdown--> PENDING (attempt not counted)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskState {
    /// Submitted, never attempted.
    Created,
    /// Waiting for its due time after a failed attempt, a reap or a requeue.
    Pending,
    /// Claimed by a worker that holds its lease.
    Running,
    /// Finished successfully.
    Completed,
    /// Dead letter: every attempt failed.
    Failed,
    /// Dead letter: ran past `max_duration`.
    Timeout,
    /// Dead letter: no handler for its name, or its payload did not decode.
    Error,
    /// Cancelled before it ran, or stopped by a delivered cancel request.
    Cancelled,
}

/// A change of state, named as in the state diagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transition {
    /// A worker takes the task with a lease.
    Claim,
    /// The attempt succeeded.
    Complete,
    /// The attempt failed and attempts are left.
    Retry,
    /// The attempt failed and none are left.
    Fail,
    /// The task ran past its `max_duration`.
    TimeOut,
    /// No handler, or the payload did not decode.
    Error,
    /// A user cancelled it.
    Cancel,
    /// A user moved it out of the dead letter.
    Requeue,
    /// Its lease expired; the worker is presumed dead.
    Reap,
    /// A shutting-down worker gave the lease back.
    Release,
}

impl TaskState {
    /// Every state, in diagram order.
    pub const ALL: [TaskState; 8] = [
        Self::Created,
        Self::Pending,
        Self::Running,
        Self::Completed,
        Self::Failed,
        Self::Timeout,
        Self::Error,
        Self::Cancelled,
    ];

    /// The legal transitions: `(from, transition, to)`. Reap may also end in
    /// `FAILED` or `TIMEOUT`, listed as `Fail` and `TimeOut` from `RUNNING`.
    pub const TRANSITIONS: &'static [(TaskState, Transition, TaskState)] = &[
        (Self::Created, Transition::Claim, Self::Running),
        (Self::Pending, Transition::Claim, Self::Running),
        (Self::Running, Transition::Complete, Self::Completed),
        (Self::Running, Transition::Retry, Self::Pending),
        (Self::Running, Transition::Fail, Self::Failed),
        (Self::Running, Transition::TimeOut, Self::Timeout),
        (Self::Running, Transition::Error, Self::Error),
        (Self::Running, Transition::Cancel, Self::Cancelled),
        (Self::Running, Transition::Reap, Self::Pending),
        (Self::Running, Transition::Release, Self::Pending),
        (Self::Created, Transition::Cancel, Self::Cancelled),
        (Self::Pending, Transition::Cancel, Self::Cancelled),
        (Self::Failed, Transition::Requeue, Self::Pending),
        (Self::Timeout, Transition::Requeue, Self::Pending),
        (Self::Error, Transition::Requeue, Self::Pending),
    ];

    /// The state `t` leads to from `self`, if it is legal.
    pub fn can(self, t: Transition) -> Option<TaskState> {
        Self::TRANSITIONS.iter().find(|(from, tr, _)| *from == self && *tr == t).map(|(_, _, to)| *to)
    }

    /// No transition leaves this state except a requeue or retention.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Timeout | Self::Error | Self::Cancelled)
    }

    /// `FAILED`, `TIMEOUT` or `ERROR`: needs a human.
    pub fn is_dead_letter(self) -> bool {
        matches!(self, Self::Failed | Self::Timeout | Self::Error)
    }

    /// Waiting to be claimed (`CREATED` or `PENDING`).
    pub fn is_waiting(self) -> bool {
        matches!(self, Self::Created | Self::Pending)
    }

    /// The upper-case name used in stores and APIs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "CREATED",
            Self::Pending => "PENDING",
            Self::Running => "RUNNING",
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
            Self::Timeout => "TIMEOUT",
            Self::Error => "ERROR",
            Self::Cancelled => "CANCELLED",
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for TaskState {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::invalid(
                    "task state",
                    format!("`{s}` is not one of CREATED, PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, ERROR, CANCELLED"),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_TRANSITIONS: [Transition; 10] = [
        Transition::Claim,
        Transition::Complete,
        Transition::Retry,
        Transition::Fail,
        Transition::TimeOut,
        Transition::Error,
        Transition::Cancel,
        Transition::Requeue,
        Transition::Reap,
        Transition::Release,
    ];

    #[test]
    fn every_pair_matches_the_diagram() {
        use TaskState::*;
        use Transition as T;
        let expected = |from: TaskState, t: Transition| -> Option<TaskState> {
            match (from, t) {
                (Created | Pending, T::Claim) => Some(Running),
                (Running, T::Complete) => Some(Completed),
                (Running, T::Retry | T::Reap | T::Release) => Some(Pending),
                (Running, T::Fail) => Some(Failed),
                (Running, T::TimeOut) => Some(Timeout),
                (Running, T::Error) => Some(Error),
                (Created | Pending | Running, T::Cancel) => Some(Cancelled),
                (Failed | Timeout | Error, T::Requeue) => Some(Pending),
                _ => None,
            }
        };
        for from in TaskState::ALL {
            for t in ALL_TRANSITIONS {
                assert_eq!(from.can(t), expected(from, t), "{from} --{t:?}-->");
            }
        }
    }

    #[test]
    fn terminal_states_only_leave_by_requeue() {
        for from in TaskState::ALL.into_iter().filter(|s| s.is_terminal()) {
            for t in ALL_TRANSITIONS {
                if let Some(to) = from.can(t) {
                    assert_eq!(t, Transition::Requeue);
                    assert!(from.is_dead_letter());
                    assert_eq!(to, TaskState::Pending);
                }
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for s in TaskState::ALL {
            assert_eq!(s.as_str().parse::<TaskState>().ok(), Some(s));
            let json = serde_json::to_string(&s).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
        }
        assert!("RUNNIN".parse::<TaskState>().is_err());
    }
}
