//! One payload parameter, returning `Result<(), TaskError>`.
use reliable_executor::prelude::*;

#[derive(Serialize, Deserialize)]
struct OrderParam {
    order_id: u64,
}

#[reliable_task(name = "process_order", retry_limit = 3, retry_interval = "2s", max_duration = "60s")]
async fn process_order(param: OrderParam) -> Result<(), TaskError> {
    let _ = param.order_id;
    Ok(())
}

fn main() -> Result<(), reliable_executor::Error> {
    let task = process_order::with(OrderParam { order_id: 7 }).into_new_task()?;
    assert_eq!(task.payload, br#"{"order_id":7}"#);
    Ok(())
}
