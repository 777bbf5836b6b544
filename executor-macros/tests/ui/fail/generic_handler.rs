use reliable_executor::prelude::*;

#[reliable_task(name = "process")]
async fn process<T: Serialize>(_item: T) {}

fn main() {}
