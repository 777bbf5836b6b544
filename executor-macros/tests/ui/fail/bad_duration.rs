use executor_core::prelude::*;

#[reliable_task(name = "process_order", retry_interval = "2 parsecs")]
async fn process_order() {}

fn main() {}
