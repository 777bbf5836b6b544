//! A payload then a `TaskContext`, a destructuring pattern, and a
//! `Result<(), E>` with a plain displayable error.
use reliable_executor::prelude::*;

#[derive(Serialize, Deserialize)]
struct Resize {
    width: u32,
}

#[reliable_task(name = "resize", timeout = "10s")]
async fn resize(Resize { width }: Resize, ctx: TaskContext) -> Result<(), String> {
    if ctx.is_cancelled() || width == 0 {
        return Err(format!("cannot resize {} to 0", ctx.id()));
    }
    Ok(())
}

fn main() {
    let _ = resize::with(Resize { width: 3 });
}
