//! Compile-time behaviour of `#[reliable_task]`: every accepted signature
//! compiles (`ui/pass`), every mistake is a compile error on the offending
//! token with the fix in its message (`ui/fail`, with checked-in `.stderr`).
//!
//! Regenerate the `.stderr` files after a deliberate change with
//! `TRYBUILD=overwrite cargo test -p reliable-executor-macros --test it -- --exact ui::ui`,
//! then read them.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
