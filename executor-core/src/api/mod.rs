//! The user's API over the driver contract: the [`Client`](crate::Client)
//! that submits and queries (resending a submit whose answer was lost), the
//! typed builders, what a handler takes and returns (context, extractors),
//! the handler registry, listeners, the handle on cron schedules, and the
//! in-process coalescer of debounced submits.

pub mod client;
pub mod coalesce;
pub(crate) mod context;
pub(crate) mod data;
pub(crate) mod listener;
pub(crate) mod registry;
pub mod resend;
pub(crate) mod schedules;
