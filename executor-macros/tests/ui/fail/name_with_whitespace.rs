use reliable_executor::prelude::*;

#[reliable_task(name = "process order")]
async fn process_order() {}

fn main() {}
