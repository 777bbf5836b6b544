use reliable_executor::prelude::*;

#[reliable_task(name = "greet")]
async fn greet(_name: &str) {}

fn main() {}
