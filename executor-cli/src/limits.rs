//! `rex queues limit`: reading a queue's fleet-wide limits from the
//! command line, and writing them short for the LIMITS column.

use std::time::Duration;

use executor_core::{
    queue::{QueueLimits, RateLimit},
    retry::parse_duration,
};
use serde_json::{Value, json};

use crate::{
    args::LimitArgs,
    error::{CliError, CliResult},
};

/// The limits `args` ask for (none at all for `--clear`), checked by
/// core's rules before anything is asked of the store.
pub(crate) fn parse(args: &LimitArgs) -> CliResult<QueueLimits> {
    let given = args.concurrency.is_some() || args.rate.is_some() || args.burst.is_some();
    if args.clear {
        if given {
            return Err(CliError::usage("--clear removes both limits; give it alone"));
        }
        return Ok(QueueLimits::new());
    }
    if !given {
        return Err(CliError::usage("give --concurrency N, --rate N/PERIOD (and --burst N), or --clear"));
    }
    let mut limits = QueueLimits::new();
    if let Some(text) = &args.concurrency {
        let n = whole("--concurrency", text)?;
        limits = limits.concurrency(n);
        limits.validate().map_err(|e| CliError::usage(format!("--concurrency: {e}")))?;
    }
    match (&args.rate, &args.burst) {
        (Some(text), burst) => {
            let mut rate = rate(text)?;
            if let Some(b) = burst {
                let b = whole("--burst", b)?;
                rate = rate.burst(b).map_err(|e| CliError::usage(format!("--burst: {e}")))?;
            }
            limits = limits.rate(rate);
        }
        (None, Some(_)) => return Err(CliError::usage("--burst is the bucket of a --rate; give --rate too")),
        (None, None) => {}
    }
    Ok(limits)
}

fn whole(flag: &str, text: &str) -> CliResult<u32> {
    text.trim().parse().map_err(|_| CliError::usage(format!("{flag}: `{text}` is not a whole number")))
}

/// `N/PERIOD`: `50/s`, `600/1m`, `10/500ms`; a period without a number
/// is one of its unit.
fn rate(text: &str) -> CliResult<RateLimit> {
    let bad = |why: String| CliError::usage(format!("--rate: {why}"));
    let (starts, period) = text.split_once('/').ok_or_else(|| {
        bad(format!("`{text}` is not N/PERIOD; write starts per period, e.g. 50/s, 600/1m, 10/500ms"))
    })?;
    let starts: u32 =
        starts.trim().parse().map_err(|_| bad(format!("`{starts}` in `{text}` is not a whole number")))?;
    let period = period.trim();
    let period = if period.starts_with(|c: char| c.is_ascii_digit()) {
        parse_duration(period)
    } else {
        parse_duration(&format!("1{period}"))
    }
    .map_err(|_| bad(format!("`{period}` in `{text}` is not a period; write s, 1m, 500ms, 1h, 1d")))?;
    RateLimit::new(starts, period).map_err(|e| bad(e.to_string()))
}

/// A period short: `1s`, `1m`, `500ms`, `2h`, `1d`.
fn period(per: Duration) -> String {
    let ms = per.as_millis();
    match ms {
        ms if ms > 0 && ms % 86_400_000 == 0 => format!("{}d", ms / 86_400_000),
        ms if ms > 0 && ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms > 0 && ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms > 0 && ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => format!("{ms}ms"),
    }
}

/// The LIMITS cell: `c=4 r=50/1s`, `r=600/1m b=10` (the burst when it is
/// not the rate's N), `-` for none.
pub(crate) fn cell(limits: &QueueLimits) -> String {
    let mut parts = Vec::new();
    if let Some(n) = limits.concurrency {
        parts.push(format!("c={n}"));
    }
    if let Some(r) = &limits.rate {
        parts.push(format!("r={}/{}", r.starts, period(r.per)));
        if r.burst != r.starts {
            parts.push(format!("b={}", r.burst));
        }
    }
    if parts.is_empty() { "-".to_owned() } else { parts.join(" ") }
}

/// The limits as `--json` and the admin API show them.
pub(crate) fn to_json(limits: &QueueLimits) -> Value {
    json!({
        "concurrency": limits.concurrency,
        "rate": limits.rate.map(|r| json!({
            "starts": r.starts,
            "per_ms": u64::try_from(r.per.as_millis()).unwrap_or(u64::MAX),
            "burst": r.burst,
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(concurrency: Option<&str>, rate: Option<&str>, burst: Option<&str>, clear: bool) -> LimitArgs {
        LimitArgs {
            name: "emails".to_owned(),
            concurrency: concurrency.map(str::to_owned),
            rate: rate.map(str::to_owned),
            burst: burst.map(str::to_owned),
            clear,
        }
    }

    #[test]
    fn reads_limits() -> Result<(), Box<dyn std::error::Error>> {
        let got = parse(&args(Some("4"), Some("50/s"), None, false)).map_err(|e| e.message)?;
        assert_eq!(got, QueueLimits::new().concurrency(4).rate(RateLimit::per_second(50)?));
        assert_eq!(cell(&got), "c=4 r=50/1s");
        let got = parse(&args(None, Some("600/1m"), Some("10"), false)).map_err(|e| e.message)?;
        assert_eq!(got.rate, Some(RateLimit::new(600, Duration::from_secs(60))?.burst(10)?));
        assert_eq!(cell(&got), "r=600/1m b=10");
        let got = parse(&args(None, Some("10/500ms"), None, false)).map_err(|e| e.message)?;
        assert_eq!(cell(&got), "r=10/500ms");
        assert_eq!(cell(&parse(&args(None, Some("5/2h"), None, false)).map_err(|e| e.message)?), "r=5/2h");
        let cleared = parse(&args(None, None, None, true)).map_err(|e| e.message)?;
        assert!(cleared.is_none());
        assert_eq!(cell(&cleared), "-");
        assert_eq!(to_json(&cleared), json!({"concurrency": null, "rate": null}));
        Ok(())
    }

    #[test]
    fn bad_input_is_a_usage_error_naming_the_flag() {
        let cases = [
            (args(Some("0"), None, None, false), "--concurrency: invalid concurrency limit"),
            (args(Some("-1"), None, None, false), "--concurrency: `-1` is not a whole number"),
            (args(Some("four"), None, None, false), "--concurrency: `four`"),
            (args(None, Some("50"), None, false), "--rate: `50` is not N/PERIOD"),
            (args(None, Some("0/s"), None, false), "--rate: invalid rate starts"),
            (args(None, Some("x/s"), None, false), "--rate: `x` in `x/s`"),
            (args(None, Some("5/fortnight"), None, false), "--rate: `fortnight`"),
            (args(None, Some("5/0s"), None, false), "--rate: invalid rate interval"),
            (args(None, Some("5/2d"), None, false), "--rate: invalid rate interval"),
            (args(None, Some("5/s"), Some("0"), false), "--burst: invalid rate burst"),
            (args(None, None, Some("5"), false), "--burst is the bucket of a --rate"),
            (args(Some("4"), None, None, true), "--clear removes both limits"),
            (args(None, None, None, false), "give --concurrency N"),
        ];
        for (a, start) in cases {
            match parse(&a) {
                Ok(l) => panic!("{a:?} was accepted: {l:?}"),
                Err(e) => {
                    assert_eq!(e.code, CliError::USAGE, "{a:?}");
                    assert!(e.message.starts_with(start), "{a:?}: {}", e.message);
                    assert!(!e.message.contains('\n'), "{}", e.message);
                }
            }
        }
    }
}
