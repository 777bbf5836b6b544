//! `#[reliable_task]`: registers an async fn as a task handler and generates
//! its typed submit helper. Use it through `executor_core::reliable_task`.

use proc_macro::TokenStream;

/// Registers an async fn as a task handler (placeholder until the macro lands).
#[proc_macro_attribute]
pub fn reliable_task(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
