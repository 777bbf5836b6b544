//! The integration tests of executor-admin in one binary (one link instead
//! of one per file). `support` holds the shared executor, whose handlers
//! (`echo`, `sync_crm`, `import_feed`) most files run.
//!
//! No `#[reliable_task]` lives here: each executor gets its handlers by hand.
//! `metrics_scrape` installs the process-global Prometheus recorder; its
//! handlers have names of their own (`metrics.*`), so what the other tests
//! run beside it never shows in the series it checks. `dashboard_browser`
//! needs Chromium and chromedriver (`scripts/test.d/chromium.sh`).

mod support;

mod api;
mod attempts;
mod dashboard_browser;
mod documented_statuses;
mod fuzz;
mod history;
mod metrics_scrape;
mod openapi;
mod queues;
mod read_only;
mod schedules;
mod task_pages;
mod unreadable;
