use executor_core::prelude::*;

#[reliable_task(name = "process_order")]
fn process_order() {}

fn main() {}
