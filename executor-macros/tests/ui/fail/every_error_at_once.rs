use reliable_executor::prelude::*;

#[reliable_task(name = "", retries = 3, timeout = "soon", retry_interval = "1s", levels = ["1m"])]
fn process_order<T>(_a: T, _b: u64) {}

fn main() {}
