//! A `TaskContext` alone, named by its full path.
#[executor_core::reliable_task(name = "tick")]
async fn tick(ctx: executor_core::TaskContext) -> () {
    let _ = ctx.attempt();
}

fn main() {
    let _ = tick::with();
}
