use reliable_executor::prelude::*;

#[reliable_task(name = "nightly", timezone = "Europe/Berlin")]
async fn nightly() {}

fn main() {}
