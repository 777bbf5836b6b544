use reliable_executor::prelude::*;

#[reliable_task(name = "transfer")]
async fn transfer(_from: u64, _to: u64) {}

fn main() {}
