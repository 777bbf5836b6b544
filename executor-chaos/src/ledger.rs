//! The append-only ledger: one JSON line per event, each written with a
//! single `write()` on an `O_APPEND` file, so a `kill -9` loses nothing that
//! was already written and lines of one file never interleave.

use std::{
    fs::{File, OpenOptions},
    io::{BufRead, BufReader, Write},
    path::Path,
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch on this machine's wall clock. Every
/// process of a run shares the machine, so their ledgers share the clock.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(0))
        .unwrap_or(0)
}

/// One thing that happened, as a ledger line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Event {
    /// A worker process started.
    Up {
        /// Its process id.
        pid: u32,
        /// Its executor's worker id.
        worker: String,
        /// When.
        t: u64,
    },
    /// The store handed this worker a task (a claim call returned it).
    Claim {
        /// Task id.
        task: String,
        /// Fence of the claim.
        fence: u64,
        /// Attempt number.
        attempt: u32,
        /// Claiming process.
        pid: u32,
        /// When the reply arrived.
        t: u64,
    },
    /// A claim call failed.
    ClaimErr {
        /// Process.
        pid: u32,
        /// When.
        t: u64,
        /// The error.
        error: String,
    },
    /// The handler started an attempt.
    Start {
        /// Task id.
        task: String,
        /// Fence of the attempt.
        fence: u64,
        /// Attempt number.
        attempt: u32,
        /// Process.
        pid: u32,
        /// When.
        t: u64,
    },
    /// The handler is about to return an error asking for a retry after
    /// `delay_ms` (`chaos run --retry-percent`); its `End` follows.
    Retry {
        /// Task id.
        task: String,
        /// Fence of the attempt.
        fence: u64,
        /// The delay asked for, ms.
        delay_ms: u64,
        /// Process.
        pid: u32,
        /// When.
        t: u64,
    },
    /// The handler returned.
    End {
        /// Task id.
        task: String,
        /// Fence of the attempt.
        fence: u64,
        /// Process.
        pid: u32,
        /// When.
        t: u64,
    },
    /// The handler's future was dropped before it returned (lease lost,
    /// shutdown past its grace).
    Abort {
        /// Task id.
        task: String,
        /// Fence of the attempt.
        fence: u64,
        /// Process.
        pid: u32,
        /// When.
        t: u64,
    },
    /// A finish write came back.
    Finish {
        /// Task id.
        task: String,
        /// Fence it was written with.
        fence: u64,
        /// Process.
        pid: u32,
        /// When the reply arrived.
        t: u64,
        /// The state asked for.
        target: String,
        /// `ok:<STATE>`, `stale`, or `err:<message>`.
        result: String,
    },
    /// A heartbeat reported leases lost.
    Lost {
        /// Task ids.
        tasks: Vec<String>,
        /// Process.
        pid: u32,
        /// When.
        t: u64,
    },
    /// A heartbeat call failed.
    HeartbeatErr {
        /// Process.
        pid: u32,
        /// When.
        t: u64,
    },
    /// The controller injected a fault or changed the worker set.
    Fault {
        /// `kill`, `stop`, `cont`, `spawn`, `store_down`, `store_up`, `drop`, `term`.
        kind: String,
        /// The process it targeted, if any.
        pid: Option<u32>,
        /// When.
        t: u64,
        /// Free text (how many connections, which signal).
        note: String,
    },
}

/// An append-only ledger file shared by the tasks of one process.
#[derive(Clone, Debug)]
pub struct Ledger {
    file: Arc<Mutex<File>>,
}

impl Ledger {
    /// Opens (creating) `path` for appending.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self { file: Arc::new(Mutex::new(file)) })
    }

    /// Appends one event as one line with one `write()`. Errors are printed,
    /// not returned: a full disk must not change what the worker does.
    pub fn record(&self, event: &Event) {
        let mut line = match serde_json::to_vec(event) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("ledger: cannot encode {event:?}: {e}");
                return;
            }
        };
        line.push(b'\n');
        let file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // One write() call: with O_APPEND the line lands whole at the end.
        match (&*file).write(&line) {
            Ok(n) if n == line.len() => {}
            Ok(n) => eprintln!("ledger: short write {n} of {}", line.len()),
            Err(e) => eprintln!("ledger: write failed: {e}"),
        }
    }
}

/// Reads every complete line of every `*.log` file in `dir`. A torn last
/// line (a process killed mid-write cannot produce one with a single
/// write, but a full disk could) is counted, not fatal.
///
/// # Errors
/// The directory cannot be read.
pub fn read_dir(dir: &Path) -> std::io::Result<(Vec<Event>, usize)> {
    let mut events = Vec::new();
    let mut bad = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        for line in BufReader::new(File::open(&path)?).lines() {
            match serde_json::from_str::<Event>(&line?) {
                Ok(e) => events.push(e),
                Err(_) => bad += 1,
            }
        }
    }
    Ok((events, bad))
}

/// The worker id in the `Up` line of the ledger at `path` (a worker's first
/// line, written once its executor is built); `None` before it is written.
pub fn up_worker(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    // A worker writes `Up` before it claims anything: it is the first line.
    let line = BufReader::new(file).lines().next()?.ok()?;
    match serde_json::from_str::<Event>(&line).ok()? {
        Event::Up { worker, .. } => Some(worker),
        _ => None,
    }
}
