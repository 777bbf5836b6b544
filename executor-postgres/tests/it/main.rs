//! The integration tests of executor-postgres in one binary, against
//! `POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`).
//! `support` holds the shared helpers.

mod support;

mod attempt_log;
mod bad_input;
mod cold_tier;
mod conformance;
mod connection_loss;
mod first_start;
mod history;
mod outcome;
mod stopped_holder;
mod transactions;
