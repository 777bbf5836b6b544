use reliable_executor::prelude::*;

// Four levels with three retries: the 1 h level would never be reached.
#[reliable_task(name = "deliver_webhook", retry_limit = 3, levels = ["10s", "1m", "10m", "1h"])]
async fn deliver_webhook() {}

fn main() {}
