//! The integration tests of executor-macros in one binary (one link instead
//! of one per file).
//!
//! Every `#[reliable_task]` in any of these files registers in every
//! executor built here (`inventory` collects them binary-wide), so:
//! - task names are unique across the files (`data_test.*`, `macros_test.*`);
//! - `data.rs`'s handlers take `Data<Ledger>` and `Data<Config>`, so every
//!   executor built in this binary gives them ([`data::with_their_data`]),
//!   or `build()` refuses to start with `MissingData`;
//! - nothing here may reference `linked_handlers` (`cross_crate_unreferenced`
//!   checks that the linker drops it). `tests/cross_crate_referenced.rs` is
//!   a binary of its own for that reason, and because it expects exactly
//!   that crate's two handlers in the registry.

mod cross_crate_unreferenced;
mod data;
mod handlers;
mod ui;
