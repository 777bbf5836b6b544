use reliable_executor::prelude::*;

#[derive(Clone)]
struct Pool;

#[reliable_task(name = "charge")]
async fn charge(_order: u64, _db: Pool) {}

fn main() {}
