//! Placeholder until the runtime lands.
fn main() {}
