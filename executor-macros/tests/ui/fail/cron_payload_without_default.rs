use reliable_executor::prelude::*;

#[derive(Serialize, Deserialize)]
struct Report {
    day: u32,
}

#[reliable_task(name = "nightly", cron = "0 0 2 * * *")]
async fn nightly(report: Report) {
    let _ = report.day;
}

fn main() {}
