use reliable_executor::prelude::*;

#[reliable_task(name = "process_order")]
fn process_order() {}

fn main() {}
