use reliable_executor::prelude::*;

#[reliable_task(name = "process_order", retry_interval = "2s", exponential(base = "1s", cap = "1m"))]
async fn process_order() {}

fn main() {}
