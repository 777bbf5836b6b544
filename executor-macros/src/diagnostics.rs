//! Collects every error the macro finds, so the user sees them all in one
//! build instead of fixing them one at a time.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Errors found so far, combined into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Records `error` after the ones found before.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Records an error on the exact tokens of `at`.
    pub(crate) fn at(&mut self, at: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(at, message));
    }

    /// Whether nothing went wrong.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// One `compile_error!` per error, or nothing.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.0.as_ref().map(syn::Error::to_compile_error).unwrap_or_default()
    }

    /// The messages, for unit tests.
    #[cfg(test)]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.0.iter().flat_map(|e| e.clone().into_iter().map(|e| e.to_string())).collect()
    }
}
