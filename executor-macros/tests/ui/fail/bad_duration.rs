use reliable_executor::prelude::*;

#[reliable_task(name = "process_order", retry_interval = "2 parsecs")]
async fn process_order() {}

fn main() {}
