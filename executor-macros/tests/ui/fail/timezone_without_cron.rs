use executor_core::prelude::*;

#[reliable_task(name = "nightly", timezone = "Europe/Berlin")]
async fn nightly() {}

fn main() {}
