use reliable_executor::prelude::*;

struct Order {
    id: u64,
}

#[reliable_task(name = "process_order")]
async fn process_order(order: Order) {
    let _ = order.id;
}

fn main() {}
