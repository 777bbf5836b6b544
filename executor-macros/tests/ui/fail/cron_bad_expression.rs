use reliable_executor::prelude::*;

#[reliable_task(name = "nightly", cron = "0 0 25 * * *")]
async fn nightly() {}

fn main() {}
