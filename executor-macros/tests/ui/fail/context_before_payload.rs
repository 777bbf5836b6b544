use reliable_executor::prelude::*;

#[reliable_task(name = "process_order")]
async fn process_order(_ctx: TaskContext, _order_id: u64) {}

fn main() {}
