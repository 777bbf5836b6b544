use quote::quote;

use super::*;

fn parse(tokens: TokenStream) -> (TaskAttr, Vec<String>) {
    let mut errors = Errors::default();
    let attr = TaskAttr::parse(tokens, &mut errors);
    (attr, errors.messages())
}

fn errors_of(tokens: TokenStream) -> Vec<String> {
    parse(tokens).1
}

#[test]
fn every_key_is_read() {
    let (attr, errors) = parse(quote!(
        name = "process_order",
        retry_limit = 5,
        retry_interval = "2s",
        max_duration = "1m",
        timeout = "500ms",
        crate = ::my_core
    ));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(attr.name.as_deref(), Some("process_order"));
    assert_eq!(attr.retry_limit, Some(5));
    assert_eq!(attr.retry, Some(Retry::Fixed(2_000)));
    assert_eq!(attr.max_duration, Some(60_000));
    assert_eq!(attr.timeout, Some(500));
    let krate = attr.krate.as_ref().map(|p| quote!(#p).to_string());
    assert_eq!(krate.as_deref(), Some(":: my_core"));
}

#[test]
fn backoffs() {
    let (attr, errors) =
        parse(quote!(name = "a", exponential(base = "1s", factor = 3, cap = "1m", jitter = 0.5)));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(attr.retry, Some(Retry::Exponential { base: 1_000, factor: 3.0, cap: 60_000, jitter: 0.5 }));

    let (attr, errors) = parse(quote!(name = "a", exponential(base = "100ms")));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(attr.retry, Some(Retry::Exponential { base: 100, factor: 2.0, cap: 3_600_000, jitter: 0.0 }));

    let (attr, errors) = parse(quote!(name = "a", levels = ["10s", "1m", "10m", "1h"]));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(attr.retry, Some(Retry::Levels(vec![10_000, 60_000, 600_000, 3_600_000])));
    // With levels alone, the limit follows their count: every level is reached.
    assert_eq!(attr.retry_limit, Some(4));
}

#[test]
fn a_retry_limit_below_the_levels_is_an_error_and_above_is_kept() {
    let errors = errors_of(quote!(name = "a", retry_limit = 3, levels = ["10s", "1m", "10m", "1h"]));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("never reaches the last 1 of the 4 levels"), "{errors:?}");
    // A larger limit repeats the last level, as documented.
    let (attr, errors) = parse(quote!(levels = ["10s", "1m"], name = "a", retry_limit = 5));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(attr.retry_limit, Some(5));
}

#[test]
fn crate_may_be_a_string() {
    let (attr, errors) = parse(quote!(name = "a", crate = "renamed::inner"));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(attr.krate.is_some());
}

#[test]
fn name_is_required_and_checked() {
    let cases = [
        (quote!(), "missing `name`"),
        (quote!(retry_limit = 3), "missing `name`"),
        (quote!(name = ""), "`name` is empty"),
        (quote!(name = "process order"), "may not contain whitespace"),
        (quote!(name = process_order), "`name` takes a string"),
        (quote!(name), "`name` needs a value"),
    ];
    for (tokens, expected) in cases {
        let errors = errors_of(tokens.clone());
        assert_eq!(errors.len(), 1, "{tokens}: {errors:?}");
        assert!(errors[0].contains(expected), "{tokens}: {errors:?}");
    }
    let long = "x".repeat(192);
    assert!(errors_of(quote!(name = #long))[0].contains("the limit is 191"));
    // The suggested fix is a valid name.
    assert!(errors_of(quote!(name = "process order"))[0].contains("\"process_order\""));
}

#[test]
fn unknown_keys_list_the_valid_ones_and_suggest_the_closest() {
    let errors = errors_of(quote!(name = "a", retries = 3));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("unknown key `retries`"), "{errors:?}");
    assert!(errors[0].contains(VALID_KEYS), "{errors:?}");
    assert!(errors_of(quote!(name = "a", retry_limt = 3))[0].contains("did you mean `retry_limit`?"));
    assert!(errors_of(quote!(name = "a", timout = "1s"))[0].contains("did you mean `timeout`?"));
    assert!(!errors_of(quote!(name = "a", zzz = 1))[0].contains("did you mean"));
}

#[test]
fn bad_values_are_refused_with_the_fix() {
    let cases = [
        (quote!(retry_limit = "3"), "expected a whole number"),
        (quote!(retry_limit = 10001), "at most 10000"),
        (quote!(retry_limit = -1), "expected a whole number"),
        (quote!(retry_interval = 2), "takes a duration as a string"),
        (quote!(retry_interval = "2 parsecs"), "is not a duration"),
        (quote!(max_duration = "0s"), "must be longer than zero"),
        (quote!(timeout = "0ms"), "must be longer than zero"),
        (quote!(levels = []), "at least one delay"),
        (quote!(levels = "10s"), "takes a list of durations"),
        (quote!(levels = ["10s", "soon"]), "`soon` is not a duration"),
        (quote!(exponential = "1s"), "write the exponential backoff as"),
        (quote!(exponential(factor = 2.0)), "needs a `base`"),
        (quote!(exponential(base = "1s", factor = 0.5)), "must be at least 1.0"),
        (quote!(exponential(base = "1s", jitter = 2.0)), "between 0.0 and 1.0"),
        (quote!(exponential(base = "1m", cap = "1s")), "`cap` is shorter than `base`"),
        (quote!(exponential(base = "2h")), "default cap of 1h"),
        (quote!(exponential(base = "1s", step = 2)), "unknown key `step` in exponential"),
        (quote!(exponential(base = "1s", factor = "2")), "`factor` takes a number"),
        (quote!(crate = 5), "`crate` takes a path"),
    ];
    for (tokens, expected) in cases {
        let errors = errors_of(quote!(name = "a", #tokens));
        assert_eq!(errors.len(), 1, "{tokens}: {errors:?}");
        assert!(errors[0].contains(expected), "{tokens}: {errors:?}");
    }
}

#[test]
fn one_retry_policy_only() {
    for tokens in [
        quote!(retry_interval = "1s", exponential(base = "1s")),
        quote!(levels = ["1s"], retry_interval = "1s"),
        quote!(exponential(base = "1s"), levels = ["1s"]),
    ] {
        let errors = errors_of(quote!(name = "a", #tokens));
        assert_eq!(errors.len(), 1, "{tokens}: {errors:?}");
        assert!(errors[0].contains("a task has one retry policy"), "{tokens}: {errors:?}");
    }
}

#[test]
fn duplicate_keys_are_refused() {
    let errors = errors_of(quote!(name = "a", timeout = "1s", timeout = "2s"));
    assert_eq!(errors, vec!["`timeout` is given twice; keep one".to_owned()]);
}

#[test]
fn all_errors_are_reported_together() {
    let errors =
        errors_of(quote!(name = "", retries = 3, retry_interval = "soon", timeout = "0s", levels = ["1s"]));
    // The retry policy conflict is reported even though the first one's value was bad.
    assert_eq!(errors.len(), 5, "{errors:?}");
}

#[test]
fn a_syntax_error_stops_without_a_spurious_missing_name() {
    let errors = errors_of(quote!(retry_limit 3, name = "a"));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(!errors[0].contains("missing `name`"), "{errors:?}");
}

#[test]
fn edit_distance_is_levenshtein() {
    assert_eq!(edit_distance("timout", "timeout"), 1);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
}

mod fuzz {
    //! Random attribute and signature text through the whole macro: it must
    //! always answer (code or errors), never panic. `PROPTEST_CASES=100000`
    //! runs more.

    use proc_macro2::TokenStream;
    use proptest::{prelude::*, test_runner::Config};

    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("name".to_owned()),
            Just("retry_limit".to_owned()),
            Just("retry_interval".to_owned()),
            Just("exponential".to_owned()),
            Just("levels".to_owned()),
            Just("max_duration".to_owned()),
            Just("timeout".to_owned()),
            Just("crate".to_owned()),
            Just("base".to_owned()),
            Just("factor".to_owned()),
            Just("cap".to_owned()),
            Just("jitter".to_owned()),
            Just("=".to_owned()),
            Just(",".to_owned()),
            Just("(".to_owned()),
            Just(")".to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just("::".to_owned()),
            "\"[0-9a-z ]{0,8}\"",
            "-?[0-9]{1,25}(\\.[0-9]{1,3})?",
            "[a-z_]{1,8}",
        ]
    }

    fn signature() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("async fn h() {}".to_owned()),
            Just("async fn h(p: u64) -> Result<(), String> { Ok(()) }".to_owned()),
            Just("async fn h(p: u64, ctx: TaskContext) {}".to_owned()),
            Just("fn h() {}".to_owned()),
            Just("async fn h<T>(p: T) {}".to_owned()),
            Just("async fn h(&self) {}".to_owned()),
            Just("async fn h(a: u8, b: u8) {}".to_owned()),
            "async fn h\\([a-z]{1,3}: [A-Za-z&<>]{1,12}\\) \\{\\}",
        ]
    }

    proptest! {
        #![proptest_config(Config { cases: 512, ..Config::default() })]

        #[test]
        fn any_attribute_text_expands_without_panicking(
            parts in proptest::collection::vec(fragment(), 0..16),
            item in signature(),
        ) {
            let attr_text = parts.join(" ");
            let (Ok(attr), Ok(item)) = (attr_text.parse::<TokenStream>(), item.parse::<TokenStream>()) else {
                return Ok(()); // not even tokens: rustc would refuse it first
            };
            let out = crate::expand::reliable_task(attr, item, || syn::parse_quote!(::executor_core));
            prop_assert!(!out.is_empty(), "no output for `{}`", attr_text);
        }
    }
}
