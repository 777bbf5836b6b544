//! A `TaskContext` alone, named by its full path.
#[reliable_executor::reliable_task(name = "tick")]
async fn tick(ctx: reliable_executor::TaskContext) -> () {
    let _ = ctx.attempt();
}

fn main() {
    let _ = tick::with();
}
