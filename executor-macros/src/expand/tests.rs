use quote::quote;
use syn::visit::Visit;

use super::*;

/// The macro as a crate that depends on the core crate by its folder's
/// name sees it.
fn reliable_task(attr: TokenStream, item: TokenStream) -> TokenStream {
    super::reliable_task(attr, item, || syn::parse_quote!(::executor_core))
}

fn expand(attr: TokenStream, item: TokenStream) -> String {
    reliable_task(attr, item).to_string()
}

/// Every absolute path in the output, as text.
fn absolute_paths(out: &TokenStream) -> Vec<String> {
    struct Paths(Vec<String>);
    impl<'ast> Visit<'ast> for Paths {
        fn visit_path(&mut self, p: &'ast syn::Path) {
            if p.leading_colon.is_some() {
                let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
                self.0.push(segs.join("::"));
            }
            syn::visit::visit_path(self, p);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            self.visit_path(&m.path);
            // `inventory::submit!`'s body is an expression.
            if let Ok(e) = m.parse_body::<syn::Expr>() {
                self.visit_expr(&e);
            }
        }
    }
    let file: syn::File = match syn::parse2(out.clone()) {
        Ok(f) => f,
        Err(e) => panic!("generated code does not parse: {e}\n{out}"),
    };
    let mut paths = Paths(Vec::new());
    paths.visit_file(&file);
    paths.0
}

#[test]
fn generated_code_names_only_private_core_and_std() {
    let out = reliable_task(
        quote!(name = "a", exponential(base = "1s"), timeout = "1s"),
        quote!(
            async fn a(p: Order, ctx: TaskContext) -> Result<(), TaskError> {
                Ok(())
            }
        ),
    );
    let paths = absolute_paths(&out);
    assert!(paths.iter().any(|p| p.starts_with("executor_core::__private::inventory")), "{paths:?}");
    for p in &paths {
        let allowed =
            p.starts_with("executor_core::__private::") || p.starts_with("core::") || p.starts_with("std::");
        assert!(allowed, "generated code names `::{p}`");
    }
}

#[test]
fn crate_override_replaces_every_path() {
    let out = reliable_task(
        quote!(name = "a", crate = ::renamed),
        quote!(
            async fn a() {}
        ),
    );
    let paths = absolute_paths(&out);
    assert!(!paths.iter().any(|p| p.starts_with("executor_core")), "{paths:?}");
    assert!(paths.iter().any(|p| p.starts_with("renamed::__private::TaskRegistration")), "{paths:?}");
}

#[test]
fn options_carry_each_key_in_milliseconds() {
    let out = expand(
        quote!(name = "a", retry_limit = 7, levels = ["10s", "1m"], max_duration = "1h", timeout = "500ms"),
        quote!(
            async fn a() {}
        ),
    );
    for piece in [
        ". retry_limit (7u32)",
        "RetryPolicy :: Levels { levels : :: std :: vec :: Vec :: from ([:: core :: time :: Duration :: from_millis (10000u64) , :: core :: time :: Duration :: from_millis (60000u64)]) }",
        ". max_duration (:: core :: time :: Duration :: from_millis (3600000u64))",
        ". timeout (:: core :: time :: Duration :: from_millis (500u64))",
    ] {
        assert!(out.contains(piece), "missing `{piece}` in\n{out}");
    }
    let out = expand(
        quote!(name = "a", exponential(base = "1s", factor = 3, jitter = 0.25)),
        quote!(
            async fn a() {}
        ),
    );
    assert!(out.contains("factor : 3f64"), "{out}");
    assert!(out.contains("jitter : 0.25f64"), "{out}");
}

#[test]
fn the_handler_is_called_with_the_parameters_it_declares() {
    let shapes = [
        (
            quote!(
                async fn a() {}
            ),
            "a ()",
        ),
        (
            quote!(
                async fn a(p: u32) {}
            ),
            "a (__payload)",
        ),
        (
            quote!(
                async fn a(ctx: TaskContext) {}
            ),
            "a (__ctx)",
        ),
        (
            quote!(
                async fn a(p: u32, ctx: TaskContext) {}
            ),
            "a (__payload , __ctx)",
        ),
        (
            quote!(
                async fn a(p: u32, db: Data<Pool>, ctx: TaskContext) {}
            ),
            "a (__payload , __data_1 , __ctx)",
        ),
    ];
    for (item, call) in shapes {
        let out = expand(quote!(name = "a"), item.clone());
        assert!(out.contains(&format!("let __attempt = {call}")), "{item}: {out}");
    }
    let out = expand(
        quote!(name = "a"),
        quote!(
            async fn a() {}
        ),
    );
    assert!(out.contains("fn with () -> :: executor_core :: __private :: TaskBuilder < () >"), "{out}");
    assert!(out.contains("IgnoredAny"), "a handler without payload accepts any JSON: {out}");
}

#[test]
fn helpers_take_the_handlers_visibility() {
    let out = expand(
        quote!(name = "a"),
        quote!(
            pub(crate) async fn a(p: u32) {}
        ),
    );
    assert!(out.contains("pub (crate) enum a { }"), "{out}");
    assert!(out.contains("pub (crate) fn with (payload : u32)"), "{out}");
    assert!(out.contains("pub (crate) async fn submit"), "{out}");
}

#[test]
fn errors_still_emit_the_function_unchanged() {
    let item = quote!(
        fn a(p: u32, q: u32) -> u8 {
            1
        }
    );
    let out = expand(quote!(nme = "a"), item.clone());
    assert!(out.contains(&item.to_string()), "{out}");
    assert!(!out.contains("inventory"), "no registration for a bad handler: {out}");
    // Unknown key, missing name, not async, two payloads: all at once.
    assert_eq!(out.matches("compile_error").count(), 4, "{out}");
}

#[test]
fn not_a_function_is_an_error_and_the_item_is_kept() {
    let out = expand(
        quote!(name = "a"),
        quote!(
            struct A;
        ),
    );
    assert!(out.contains("goes on an `async fn`"), "{out}");
    assert!(out.contains("struct A ;"), "{out}");
}
