//! Every accepted return type: nothing, `()`, `Result<(), E>` for any
//! displayable `E` (std errors, boxed errors, strings, `TaskError`).
use reliable_executor::prelude::*;

#[reliable_task(name = "returns_nothing")]
async fn returns_nothing(_n: u32) {}

#[reliable_task(name = "returns_unit")]
async fn returns_unit(_n: u32) -> () {}

#[reliable_task(name = "returns_std_error")]
async fn returns_std_error(s: String) -> Result<(), std::num::ParseIntError> {
    s.parse::<u32>().map(drop)
}

#[reliable_task(name = "returns_boxed_error")]
async fn returns_boxed_error(_s: String) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    Ok(())
}

#[reliable_task(name = "returns_task_error")]
async fn returns_task_error(_s: Vec<String>) -> std::result::Result<(), TaskError> {
    Err(TaskError::abort("never"))
}

fn main() {
    let _ = (returns_nothing::NAME, returns_unit::NAME, returns_std_error::NAME);
    let _ = (returns_boxed_error::NAME, returns_task_error::NAME);
}
