//! JSON errors with stable codes: what clients match on, never a panic text.

use axum::{
    Json,
    extract::rejection::{JsonRejection, PathRejection, QueryRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use executor_core::Error;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The body of every error answer.
///
/// | status | `code` | when |
/// |---|---|---|
/// | 400 | `malformed_json` | the body is not JSON |
/// | 403 | `read_only` | a change (any method but `GET` and `HEAD`) asked of a read-only admin ([`crate::Admin::read_only`]) |
/// | 404 | `not_found` | no task has this id (or it was trimmed), or no schedule this name |
/// | 404 | `no_route` | no admin route has this path |
/// | 409 | `illegal_transition` | e.g. requeue of a task that is not dead-lettered |
/// | 409 | `duplicate_id` | a plain submit of an id that exists |
/// | 413 | `payload_too_large` | body over the body limit, or payload over the client's limit |
/// | 415 | `unsupported_media_type` | a JSON body without `Content-Type: application/json` |
/// | 422 | `invalid_body` | JSON of the wrong shape |
/// | 422 | `invalid` | a bad id, queue name, state, page size, cursor or option |
/// | 422 | `unknown_task` | no handler has this task name |
/// | 422 | `bad_payload` | the payload does not encode |
/// | 500 | `corrupt_record` | the store holds a record that does not parse: inspect it in the store or delete it |
/// | 500 | `internal` | anything else (the message says what) |
/// | 501 | `unsupported` | the store lacks the ability, e.g. a store that keeps no cron schedules, has no queue controls or no queue limits |
/// | 503 | `store_unavailable` | the store failed or timed out; retry later |
/// | 503 | `shutting_down` | the executor is stopping |
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// Stable, machine-readable code (see the table).
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
}

/// An error answer: a status and an [`ErrorBody`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// The body.
    pub body: ErrorBody,
}

impl ApiError {
    /// An error with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self { status, body: ErrorBody { code: code.to_owned(), message: message.into() } }
    }

    /// 422 `invalid`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let message = match &e {
            Error::Corrupt { id, .. } => format!(
                "{e}; the record can only be inspected in the store or deleted \
                 (`DELETE /api/tasks/{}` under the admin mount)",
                id.as_str()
            ),
            _ => e.to_string(),
        };
        let (status, code) = match &e {
            Error::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Error::IllegalTransition { .. } => (StatusCode::CONFLICT, "illegal_transition"),
            Error::DuplicateId(_) => (StatusCode::CONFLICT, "duplicate_id"),
            Error::StaleFence { .. } => (StatusCode::CONFLICT, "stale_fence"),
            Error::Invalid { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            Error::UnknownTask(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unknown_task"),
            Error::Encode(_) => (StatusCode::UNPROCESSABLE_ENTITY, "bad_payload"),
            Error::PayloadTooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            // A submit whose answer was lost: the message names the id to
            // submit again under.
            Error::Storage { .. } | Error::Timeout(_) | Error::OutcomeUnknown { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable")
            }
            Error::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, "shutting_down"),
            Error::Corrupt { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "corrupt_record"),
            Error::Unsupported { .. } => (StatusCode::NOT_IMPLEMENTED, "unsupported"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        if status.is_server_error() {
            tracing::warn!(error = %e, code, "admin API request failed");
        }
        Self::new(status, code, message)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let code = match r.status() {
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::UNPROCESSABLE_ENTITY => "invalid_body",
            StatusCode::BAD_REQUEST => "malformed_json",
            _ => "invalid_body",
        };
        Self::new(r.status(), code, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::invalid(r.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        Self::invalid(r.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}
