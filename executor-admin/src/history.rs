//! `GET /api/history`: throughput per minute, read from the
//! store's history buckets, with every minute of the window present (zeros
//! filled) so a client can draw it as is. A store that keeps no history
//! answers `501 unsupported`.

use crate::AdminStorage;
use std::collections::{BTreeMap, BTreeSet};

use axum::{
    Json,
    extract::{Query, State, rejection::QueryRejection},
};
use executor_core::{
    Error, Timestamp,
    storage::{HISTORY_MINUTE, minute_of},
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::{Admin, ApiError, ErrorBody};

/// The default window of `GET /api/history` and the dashboard chart.
pub(crate) const DEFAULT_MINUTES: u32 = 60;
/// The longest window: a day.
pub(crate) const MAX_MINUTES: u32 = 1_440;

/// Query of `GET /api/history`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct HistoryParams {
    /// The window in minutes, ending with the store's current minute: 1 to
    /// 1440 (default 60).
    #[param(minimum = 1, maximum = 1440)]
    pub(crate) minutes: Option<u32>,
    /// Only this task name (default: every name, summed).
    pub(crate) name: Option<String>,
}

/// Attempts that ended in one minute.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct HistoryPoint {
    /// The minute's start, epoch milliseconds of the store's clock.
    pub minute: u64,
    /// Attempts whose handler returned `Ok`.
    pub succeeded: u64,
    /// Attempts that ended any other way (error, panic, timeout; retried
    /// or dead-lettered).
    pub failed: u64,
}

/// The sums over a window.
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
pub struct HistoryTotals {
    /// Attempts that succeeded in the window.
    pub succeeded: u64,
    /// Attempts that failed in the window.
    pub failed: u64,
}

/// Throughput per minute over a window, as `GET /api/history` answers it.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct HistoryView {
    /// The window's length in minutes.
    pub minutes: u32,
    /// The task name the series is of; `null` for every name summed.
    pub name: Option<String>,
    /// The first minute of the window (epoch ms, store clock).
    pub from: u64,
    /// The last minute of the window, the store's current one (epoch ms).
    pub to: u64,
    /// Every task name with attempts in the window, sorted.
    pub names: Vec<String>,
    /// Sums over the window.
    pub totals: HistoryTotals,
    /// One point per minute of the window, oldest first; minutes without
    /// attempts are zeros.
    pub series: Vec<HistoryPoint>,
}

/// The window of `minutes` ending with the store's current minute, for
/// task `name` or all, zeros filled.
pub(crate) async fn window<S: AdminStorage>(
    admin: &Admin<S>,
    minutes: u32,
    name: Option<&str>,
) -> Result<HistoryView, Error> {
    let client = admin.client();
    let now = client.storage().now(client.namespace()).await?;
    let to = minute_of(now);
    let from = to.saturating_sub(HISTORY_MINUTE * (minutes.saturating_sub(1)));
    let buckets = client.history(from).await?;
    let mut names = BTreeSet::new();
    let mut by_minute: BTreeMap<Timestamp, (u64, u64)> = BTreeMap::new();
    for b in buckets.iter().filter(|b| b.minute >= from && b.minute <= to) {
        names.insert(b.name.clone());
        if name.is_none_or(|n| n == b.name) {
            let e = by_minute.entry(b.minute).or_default();
            e.0 = e.0.saturating_add(b.succeeded);
            e.1 = e.1.saturating_add(b.failed);
        }
    }
    let mut totals = HistoryTotals::default();
    let series = (0..u64::from(minutes))
        .map(|i| {
            let minute = from.saturating_add(HISTORY_MINUTE * u32::try_from(i).unwrap_or(u32::MAX));
            let (succeeded, failed) = by_minute.get(&minute).copied().unwrap_or_default();
            totals.succeeded = totals.succeeded.saturating_add(succeeded);
            totals.failed = totals.failed.saturating_add(failed);
            HistoryPoint { minute: minute.as_millis(), succeeded, failed }
        })
        .collect();
    Ok(HistoryView {
        minutes,
        name: name.map(str::to_owned),
        from: from.as_millis(),
        to: to.as_millis(),
        names: names.into_iter().collect(),
        totals,
        series,
    })
}

/// Checks a window length.
pub(crate) fn minutes(raw: Option<u32>) -> Result<u32, ApiError> {
    let m = raw.unwrap_or(DEFAULT_MINUTES);
    if (1..=MAX_MINUTES).contains(&m) {
        Ok(m)
    } else {
        Err(ApiError::invalid(format!("minutes: {m} is outside 1..={MAX_MINUTES}")))
    }
}

/// Attempts succeeded and failed per minute, from the store's history
/// (executors add to it every `history_interval`, default 5 s).
#[utoipa::path(get, path = "/api/history", tag = "cluster", params(HistoryParams),
    responses(
        (status = 200, description = "One point per minute of the window, oldest first, zeros filled, \
            with totals and the task names seen", body = HistoryView),
        (status = 422, description = "Bad `minutes` (outside 1..=1440, not a number)", body = ErrorBody),
        (status = 501, description = "`unsupported`: the store keeps no throughput history", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn get<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    query: Result<Query<HistoryParams>, QueryRejection>,
) -> Result<Json<HistoryView>, ApiError> {
    let Query(q) = query?;
    let minutes = minutes(q.minutes)?;
    Ok(Json(window(&admin, minutes, q.name.as_deref().filter(|n| !n.is_empty())).await?))
}
