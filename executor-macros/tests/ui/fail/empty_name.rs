use executor_core::prelude::*;

#[reliable_task(name = "")]
async fn send_notify() {}

fn main() {}
