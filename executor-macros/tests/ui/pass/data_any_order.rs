use reliable_executor::prelude::*;

#[derive(Clone)]
struct Pool;

#[derive(Clone)]
struct Config;

#[reliable_task(name = "charge")]
async fn charge(_order: u64, _ctx: TaskContext, _db: Data<Pool>, _cfg: reliable_executor::Data<Config>) {}

#[reliable_task(name = "sweep")]
async fn sweep(_db: Data<Pool>) {}

fn main() {}
