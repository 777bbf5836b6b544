use reliable_executor::prelude::*;

#[derive(Serialize, Deserialize)]
struct OrderParam {
    order_id: u64,
}

#[reliable_task(name = "process_order")]
async fn process_order(_param: OrderParam) {}

#[allow(dead_code)]
async fn producer(client: &impl Submit) -> Result<Submitted, reliable_executor::Error> {
    // A number where an `OrderParam` belongs: refused by the compiler.
    process_order::submit(client, 7u64).await
}

fn main() {}
