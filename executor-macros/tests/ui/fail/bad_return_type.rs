use reliable_executor::prelude::*;

#[reliable_task(name = "count")]
async fn count() -> u32 {
    1
}

fn main() {}
