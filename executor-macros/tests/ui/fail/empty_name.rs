use reliable_executor::prelude::*;

#[reliable_task(name = "")]
async fn send_notify() {}

fn main() {}
