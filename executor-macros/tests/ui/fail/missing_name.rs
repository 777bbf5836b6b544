use reliable_executor::prelude::*;

#[reliable_task(retry_limit = 3)]
async fn send_notify() {}

fn main() {}
