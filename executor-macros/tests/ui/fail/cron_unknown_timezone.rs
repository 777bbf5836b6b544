use reliable_executor::prelude::*;

#[reliable_task(name = "nightly", cron = "0 0 2 * * *", timezone = "Europe/Berlinn")]
async fn nightly() {}

fn main() {}
