//! The seed's `send_notify()`: no payload, no context, no return type.
use reliable_executor::prelude::*;

#[reliable_task(name = "send_notify")]
async fn send_notify() {}

fn main() -> Result<(), reliable_executor::Error> {
    let _: &str = send_notify::NAME;
    let task = send_notify::with().into_new_task()?;
    assert_eq!(task.payload, b"null");
    let _ = send_notify();
    Ok(())
}
