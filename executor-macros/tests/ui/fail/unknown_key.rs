use reliable_executor::prelude::*;

#[reliable_task(name = "process_order", retries = 3)]
async fn process_order() {}

fn main() {}
