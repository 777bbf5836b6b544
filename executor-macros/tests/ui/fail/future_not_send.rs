use std::rc::Rc;

use reliable_executor::prelude::*;

async fn step() {}

#[reliable_task(name = "count")]
async fn count() {
    // An `Rc` held across an await: the worker pool moves futures between threads.
    let shared = Rc::new(1);
    step().await;
    let _ = shared;
}

fn main() {}
