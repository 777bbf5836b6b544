//! Where the generated code reaches the runtime when the attribute has no
//! `crate = path`.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::Span;
use syn::{Ident, Path, parse_quote};

/// The packages that re-export `__private`, the one users add first.
const PACKAGES: [&str; 2] = ["reliable-executor", "reliable-executor-core"];

/// The facade if the crate being compiled depends on it, else the core
/// crate, each under the name the crate's `Cargo.toml` gives it (a renamed
/// dependency included); `::reliable_executor` when neither is found, so
/// the compiler's error names the crate to add.
pub(crate) fn runtime() -> Path {
    for package in PACKAGES {
        let name = match crate_name(package) {
            Ok(FoundCrate::Name(name)) => name,
            // The package's own tests and examples reach it by its name.
            Ok(FoundCrate::Itself) => package.replace('-', "_"),
            Err(_) => continue,
        };
        let ident = Ident::new(&name, Span::call_site());
        return parse_quote!(::#ident);
    }
    parse_quote!(::reliable_executor)
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// This crate's tests depend on the facade (and on the core crate
    /// renamed): the facade wins.
    #[test]
    fn the_facade_is_found_first() {
        let path = super::runtime();
        assert_eq!(quote!(#path).to_string(), ":: reliable_executor");
    }
}
