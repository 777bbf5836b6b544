use reliable_executor::prelude::*;

#[derive(Clone)]
struct Pool;

#[reliable_task(name = "charge")]
async fn charge(_db: Data<Pool>, _order: u64) {}

fn main() {}
