//! What `#[reliable_task]` generates, on `proc_macro2` so it is unit-testable.
//!
//! For `async fn process_order(p: Order)` with `name = "process_order"`:
//! - the function itself, unchanged (callable directly in unit tests);
//! - `enum process_order {}` carrying the typed helpers `NAME`, `options()`,
//!   `with(p)` and `submit(&client, p)`. It is a type, not a module, so the
//!   helpers resolve every type exactly where the function does, also when
//!   the handler is defined inside a function body (a nested module could
//!   not see block-local types) or names them through `self::`/`super::`;
//! - the link-time registration (`inventory::submit!`) with a function that
//!   decodes the payload and starts the handler.
//!
//! Generated code names only `<crate>::__private::..` (by default the
//! facade or the core crate, as the user's `Cargo.toml` names it:
//! `krate.rs`), `::core` and `::std`, so users never depend on `inventory`
//! or `serde_json` themselves.

use proc_macro2::{Delimiter, Group, Literal, Span, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::{ItemFn, Path, Type, spanned::Spanned};

use crate::{
    diagnostics::Errors,
    parse::{Retry, TaskAttr},
    signature::{Param, Signature},
};

/// The macro: the user's function plus everything above, or the function
/// plus every error found.
pub(crate) fn reliable_task(attr: TokenStream, item: TokenStream, runtime: fn() -> Path) -> TokenStream {
    let mut errors = Errors::default();
    let args = TaskAttr::parse(attr, &mut errors);
    let f: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let at = item.clone().into_iter().next().map_or_else(Span::call_site, |t| t.span());
            errors.push(syn::Error::new(
                at,
                "#[reliable_task] goes on an `async fn`, e.g. `async fn process_order(p: Order)`",
            ));
            let errors = errors.to_compile_errors();
            return quote!(#errors #item);
        }
    };
    let sig = Signature::check(&f, &mut errors);
    match (&args.name, errors.is_empty()) {
        (Some(name), true) => generate(&f, name, &args, &sig, runtime),
        // The user's function is still emitted so IDEs and other code keep
        // resolving it while the attribute is fixed.
        _ => {
            let errors = errors.to_compile_errors();
            quote!(#errors #item)
        }
    }
}

fn generate(f: &ItemFn, name: &str, args: &TaskAttr, sig: &Signature, runtime: fn() -> Path) -> TokenStream {
    let krate: Path = args.krate.clone().unwrap_or_else(runtime);
    let p = quote!(#krate::__private);
    let vis = &f.vis;
    let ident = &f.sig.ident;
    let options = options(args, &p);
    let docs = Docs::new(name, &ident.to_string());
    let (enum_doc, name_doc, options_doc, with_doc, submit_doc) =
        (&docs.enum_doc, &docs.name, &docs.options, &docs.with, &docs.submit);
    let many_with_doc = &docs.many_with;
    let every_doc = &docs.every;
    let schedule = attribute_schedule(args, sig, &p);

    let (helpers, decode) = match &sig.payload {
        Some(ty) => payload_helpers(ident, vis, ty, &krate, &docs),
        None => (
            quote! {
                #[doc = #with_doc]
                #vis fn with() -> #p::TaskBuilder<()> {
                    #p::TaskBuilder::new(Self::NAME, (), Self::options())
                }
                #[doc = #submit_doc]
                #vis async fn submit(client: &impl #p::Submit) -> ::core::result::Result<#p::Submitted, #p::Error> {
                    Self::with().submit(client).await
                }
                #[doc = #many_with_doc]
                #vis async fn submit_many_with(
                    client: &impl #p::Submit,
                    builders: impl ::core::iter::IntoIterator<Item = #p::TaskBuilder<()>>,
                ) -> ::std::vec::Vec<::core::result::Result<#p::Submitted, #p::Error>> {
                    #p::submit_built(client, builders.into_iter().map(#p::TaskBuilder::into_new_task)).await
                }
                #[doc = #every_doc]
                #vis fn every(cron: impl ::core::convert::Into<::std::string::String>) -> #p::ScheduleBuilder<()> {
                    #p::ScheduleBuilder::new(Self::NAME, cron).payload(())
                }
            },
            // Any JSON value is accepted (submit sends `null`), garbage is not.
            quote!(let _: #p::serde::de::IgnoredAny = #p::decode(__bytes)?;),
        ),
    };
    // Each `Data<T>` is taken from the context before the context itself
    // is moved into the call; the user's parameter order is kept.
    let mut extract = Vec::new();
    let mut needs = Vec::new();
    let call_args: Vec<TokenStream> = sig
        .params
        .iter()
        .enumerate()
        .map(|(i, param)| match param {
            Param::Payload => quote!(__payload),
            Param::Context => quote!(__ctx),
            Param::Data(ty) => {
                let var = format_ident!("__data_{i}");
                let take = respan(quote!(__ctx.__data::<#ty>()), ty.span());
                extract.push(quote!(let #var: #p::Data<#ty> = #take?;));
                needs.push(respan(quote!(#p::DataNeed::of::<#ty>()), ty.span()));
                quote!(#var)
            }
        })
        .collect();
    let invoke = format_ident!("__reliable_task_invoke");
    let line = respan(quote!(::core::line!()), ident.span());
    // A handler whose future is not `Send` is reported on its name, a return
    // type that is not `()` / `Result<(), E: Display>` on that type.
    let into_result = match &f.sig.output {
        syn::ReturnType::Type(_, ty) => {
            respan(quote!(#p::IntoTaskResult::into_task_result(__attempt.await)), ty.span())
        }
        syn::ReturnType::Default => quote!(#p::IntoTaskResult::into_task_result(__attempt.await)),
    };
    let start = spanned_group(
        ident.span(),
        quote!(::core::result::Result::Ok),
        Delimiter::Parenthesis,
        spanned_group(
            ident.span(),
            quote!(::std::boxed::Box::pin),
            Delimiter::Parenthesis,
            spanned_group(ident.span(), quote!(async move), Delimiter::Brace, into_result),
        ),
    );

    quote! {
        #f

        #[doc = #enum_doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug)]
        #vis enum #ident {}

        #[allow(dead_code)]
        impl #ident {
            #[doc = #name_doc]
            #vis const NAME: &'static str = #name;

            #[doc = #options_doc]
            #vis fn options() -> #p::TaskOptions {
                #options
            }

            #helpers
        }

        const _: () = {
            #[allow(unused_variables)]
            fn #invoke(
                __ctx: #p::TaskContext,
                __bytes: &[u8],
            ) -> ::core::result::Result<
                #p::BoxFuture<::core::result::Result<(), #p::TaskError>>,
                ::std::string::String,
            > {
                #decode
                #(#extract)*
                let __attempt = #ident(#(#call_args),*);
                #start
            }

            const __NEEDS: &[#p::DataNeed] = &[#(#needs),*];

            #p::inventory::submit! {
                #p::TaskRegistration::new(
                    #ident::NAME,
                    ::core::concat!(
                        ::core::module_path!(), "::", ::core::stringify!(#ident),
                        " at ", ::core::file!(), ":", #line
                    ),
                    #ident::options,
                    #invoke,
                )
                .with_data(__NEEDS)
                #schedule
            }
        };
    }
}

/// `.with_schedule(..)` for `cron = ".."`: the expression and zone (checked
/// in parse.rs) and the default payload. A payload type must be `Default`
/// for the executor to submit it alone; a type that is not gets the error
/// on itself, naming the requirement.
fn attribute_schedule(args: &TaskAttr, sig: &Signature, p: &TokenStream) -> TokenStream {
    let Some(cron) = &args.cron else { return TokenStream::new() };
    let zone = args.timezone.clone().unwrap_or_else(|| "UTC".to_owned());
    let payload = match &sig.payload {
        Some(ty) => {
            let check = format_ident!("__cron_payload_must_implement_default");
            let call = respan(quote!(#check::<#ty>()), ty.span());
            quote! {{
                fn #check<__P: ::core::default::Default + #p::serde::Serialize>(
                ) -> ::core::result::Result<::std::string::String, ::std::string::String> {
                    #p::serde_json::to_string(&__P::default()).map_err(|e| ::std::string::ToString::to_string(&e))
                }
                fn __cron_payload() -> ::core::result::Result<::std::string::String, ::std::string::String> {
                    #call
                }
                __cron_payload
            }}
        }
        None => quote! {{
            fn __cron_payload() -> ::core::result::Result<::std::string::String, ::std::string::String> {
                ::core::result::Result::Ok(::std::string::String::from("null"))
            }
            __cron_payload
        }},
    };
    quote!(.with_schedule(#p::AttributeSchedule::new(#cron, #zone, #payload)))
}

/// `head(body)` (or `head { body }`) with `head` and the delimiters spanned
/// at `span`, `body` keeping its own spans.
fn spanned_group(span: Span, head: TokenStream, delimiter: Delimiter, body: TokenStream) -> TokenStream {
    let mut group = Group::new(delimiter, body);
    group.set_span(span);
    let mut tokens = respan(head, span);
    tokens.extend([TokenTree::Group(group)]);
    tokens
}

/// `tokens` with every span set to `span`, so errors in them point there.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                TokenTree::Group(group)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// `TaskOptions::new()` with each key the attribute set.
fn options(args: &TaskAttr, p: &TokenStream) -> TokenStream {
    let ms = |ms: u64| {
        let ms = Literal::u64_suffixed(ms);
        quote!(::core::time::Duration::from_millis(#ms))
    };
    let mut options = quote!(#p::TaskOptions::new());
    if let Some(n) = args.retry_limit {
        let n = Literal::u32_suffixed(n);
        options = quote!(#options.retry_limit(#n));
    }
    if let Some(retry) = &args.retry {
        // Checked at compile time (parse.rs), so the variants are built
        // directly instead of through the fallible constructors.
        let policy = match retry {
            Retry::Fixed(interval) => {
                let interval = ms(*interval);
                quote!(#p::RetryPolicy::Fixed { interval: #interval })
            }
            Retry::Exponential { base, factor, cap, jitter } => {
                let (base, cap) = (ms(*base), ms(*cap));
                let (factor, jitter) = (Literal::f64_suffixed(*factor), Literal::f64_suffixed(*jitter));
                quote!(#p::RetryPolicy::Exponential { base: #base, factor: #factor, cap: #cap, jitter: #jitter })
            }
            Retry::Levels(levels) => {
                let levels = levels.iter().map(|l| ms(*l));
                quote!(#p::RetryPolicy::Levels { levels: ::std::vec::Vec::from([#(#levels),*]) })
            }
        };
        options = quote!(#options.retry(#policy));
    }
    if let Some(d) = args.max_duration {
        let d = ms(d);
        options = quote!(#options.max_duration(#d));
    }
    if let Some(d) = args.timeout {
        let d = ms(d);
        options = quote!(#options.timeout(#d));
    }
    if let Some(q) = &args.queue {
        // Checked above with the same rule, so the default is never taken.
        options = quote!(#options.queue(#p::QueueName::new(#q).unwrap_or_default()));
    }
    if let Some(n) = args.priority {
        options = quote!(#options.priority(#n));
    }
    options
}

/// `with`, `submit` and the payload decoding of a handler with a payload.
///
/// Every use of the payload type goes through one generic function whose
/// bounds are what a payload needs, called with the span of the user's type.
/// A type without them gets one error per missing trait (rustc merges the
/// identical diagnostics of the three call sites), on the type, naming the
/// requirement, instead of a cascade of errors inside generated code.
fn payload_helpers(
    ident: &syn::Ident,
    vis: &syn::Visibility,
    ty: &Type,
    krate: &Path,
    docs: &Docs,
) -> (TokenStream, TokenStream) {
    let p = quote!(#krate::__private);
    let (with_doc, submit_doc) = (&docs.with, &docs.submit);
    let (many_doc, many_with_doc) = (&docs.many, &docs.many_with);
    let every_doc = &docs.every;
    let check = format_ident!("__payload_must_be_serialize_deserialize_send_static");
    let typed = respan(quote!(Self::#check::<#ty>()), ty.span());
    let typed_outside = respan(quote!(#ident::#check::<#ty>()), ty.span());
    let helpers = quote! {
        #[doc(hidden)]
        #[allow(clippy::type_complexity)]
        fn #check<__P>() -> (
            fn(__P) -> #p::TaskBuilder<__P>,
            fn(#p::TaskBuilder<__P>) -> ::core::result::Result<#p::NewTask, #p::Error>,
            fn(&[u8]) -> ::core::result::Result<__P, ::std::string::String>,
            fn(::std::string::String) -> #p::ScheduleBuilder<__P>,
        )
        where
            __P: #p::serde::Serialize + #p::serde::de::DeserializeOwned + ::core::marker::Send + 'static,
        {
            (
                |payload| #p::TaskBuilder::new(Self::NAME, payload, Self::options()),
                #p::TaskBuilder::into_new_task,
                #p::decode::<__P>,
                |cron| #p::ScheduleBuilder::new(Self::NAME, cron),
            )
        }

        #[doc = #with_doc]
        #vis fn with(payload: #ty) -> #p::TaskBuilder<#ty> {
            (#typed.0)(payload)
        }

        #[doc = #submit_doc]
        #vis async fn submit(
            client: &impl #p::Submit,
            payload: #ty,
        ) -> ::core::result::Result<#p::Submitted, #p::Error> {
            let task = (#typed.1)(Self::with(payload))?;
            #p::Submit::submit_new(client, task).await
        }

        #[doc = #many_doc]
        #vis async fn submit_many(
            client: &impl #p::Submit,
            payloads: impl ::core::iter::IntoIterator<Item = #ty>,
        ) -> ::std::vec::Vec<::core::result::Result<#p::Submitted, #p::Error>> {
            #p::submit_built(client, payloads.into_iter().map(|__payload| (#typed.1)(Self::with(__payload)))).await
        }

        #[doc = #many_with_doc]
        #vis async fn submit_many_with(
            client: &impl #p::Submit,
            builders: impl ::core::iter::IntoIterator<Item = #p::TaskBuilder<#ty>>,
        ) -> ::std::vec::Vec<::core::result::Result<#p::Submitted, #p::Error>> {
            #p::submit_built(client, builders.into_iter().map(#typed.1)).await
        }

        #[doc = #every_doc]
        #vis fn every(cron: impl ::core::convert::Into<::std::string::String>) -> #p::ScheduleBuilder<#ty> {
            (#typed.3)(cron.into())
        }
    };
    (helpers, quote!(let __payload: #ty = (#typed_outside.2)(__bytes)?;))
}

/// Rustdoc of the generated items, so crates with `missing_docs` stay clean.
struct Docs {
    enum_doc: String,
    name: String,
    options: String,
    with: String,
    submit: String,
    many: String,
    many_with: String,
    every: String,
}

impl Docs {
    fn new(name: &str, ident: &str) -> Self {
        Self {
            enum_doc: format!(
                "Typed submit helpers of the task `{name}`, handled by [`fn {ident}`]({ident}()) \
                 (generated by `#[reliable_task]`)."
            ),
            name: format!("The task name, `{name}`: the key of this handler in the store."),
            options: "The defaults set in the attribute; each submit may override them.".to_owned(),
            with: "A submit with per-task overrides: `.id(..)`, `.delay(..)`, `.run_at(..)`, \
                   `.retry_limit(..)`, `.retry(..)`, `.max_duration(..)`, `.timeout(..)`, \
                   `.idempotent()`, `.debounce(..)`, then `.submit(&client)`."
                .to_owned(),
            submit: "Submits with the defaults; answers the task's id and that it was created.\n\n# Errors\n\
                     Validation errors, a duplicate id, store failures."
                .to_owned(),
            many: "Submits one task per payload with the defaults, in store batches: one answer per \
                   task, in order (created, existing, debounced, or its own error)."
                .to_owned(),
            many_with: "Submits many tasks built with `with(..)` (ids, delays, options per task), in \
                        store batches: one answer per task, in order."
                .to_owned(),
            every: "A cron schedule of this task (5 fields, or 6 with seconds first), in UTC unless \
                    `.timezone(..)`: give it to `executor.schedules().put(..)`; a task with a payload \
                    needs `.payload(..)`."
                .to_owned(),
        }
    }
}

#[cfg(test)]
mod tests;
