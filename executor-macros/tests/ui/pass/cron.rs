use reliable_executor::prelude::*;
use reliable_executor::schedule::{IntoSchedule, Overlap};

#[derive(Default, Serialize, Deserialize)]
struct Report {
    day: u32,
}

#[reliable_task(name = "nightly", cron = "0 0 2 * * *", timezone = "Europe/Berlin")]
async fn nightly(report: Report) {
    let _ = report.day;
}

#[reliable_task(name = "refresh", cron = "*/5 * * * *")]
async fn refresh() {}

fn main() -> Result<(), reliable_executor::Error> {
    let s = nightly::every("0 30 1 * * *").name("nightly_eu").payload(Report { day: 3 }).into_schedule()?;
    assert_eq!(s.payload, r#"{"day":3}"#);
    let s = refresh::every("*/10 * * * *").overlap(Overlap::Skip).into_schedule()?;
    assert_eq!((s.name.as_str(), s.payload.as_str()), ("refresh", "null"));
    Ok(())
}
