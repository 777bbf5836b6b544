use executor_core::prelude::*;

#[reliable_task(name = "nightly", cron = "0 0 2 * * *", timezone = "Europe/Berlinn")]
async fn nightly() {}

fn main() {}
