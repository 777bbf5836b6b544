use executor_core::prelude::*;

#[reliable_task(name = "process order")]
async fn process_order() {}

fn main() {}
