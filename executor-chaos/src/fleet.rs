//! The worker processes of a run, and the faults injected into them and the store.

use std::{
    fs::File,
    io::{Read, Write},
    net::TcpStream,
    path::PathBuf,
    process::{Command, Stdio},
    time::Duration,
};

use rand::seq::IndexedRandom;

use crate::{
    ledger::{Event, Ledger, now_ms},
    postgres::psql,
    process::{Owned, Signal, signal},
    server::{AnyError, Backend, PrivateServer, mysql_cli},
    worker::WorkerArgs,
};

/// The live workers, how to start more, and the controller's own ledger.
#[derive(Debug)]
pub struct Fleet {
    /// Template for new workers (`ledger` is replaced per worker).
    pub template: WorkerArgs,
    /// Where ledgers and worker logs go.
    pub dir: PathBuf,
    /// The controller's ledger (faults).
    pub ledger: Ledger,
    workers: Vec<Owned>,
    /// Each started worker's pid and ledger file (its `Up` line names its
    /// executor's worker id).
    ledgers: Vec<(u32, PathBuf)>,
    started: usize,
}

impl Fleet {
    /// An empty fleet.
    pub fn new(template: WorkerArgs, dir: PathBuf, ledger: Ledger) -> Self {
        Self { template, dir, ledger, workers: Vec::new(), ledgers: Vec::new(), started: 0 }
    }

    /// Records a fault event in the controller's ledger.
    pub fn note(&self, kind: &str, pid: Option<u32>, note: impl Into<String>) {
        self.ledger.record(&Event::Fault { kind: kind.to_owned(), pid, t: now_ms(), note: note.into() });
    }

    /// Starts one more worker process.
    ///
    /// # Errors
    /// The process could not be started.
    pub fn spawn(&mut self, extra: &[&str]) -> Result<u32, AnyError> {
        self.started += 1;
        let n = self.started;
        let t = &self.template;
        let out = File::create(self.dir.join(format!("worker-{n}.out")))?;
        let ledger = self.dir.join(format!("worker-{n}.log"));
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.arg("worker")
            .args(["--storage", backend_name(t.storage), "--url", &t.url, "--ns", &t.ns])
            .arg("--ledger")
            .arg(&ledger)
            .args(["--lease-ms", &t.lease_ms.to_string(), "--concurrency", &t.concurrency.to_string()])
            .args(["--min-ms", &t.min_ms.to_string(), "--max-ms", &t.max_ms.to_string()])
            .args(t.cold_url.iter().flat_map(|u| ["--cold-url", u.as_str()]))
            // Only when asked for: a default run starts its workers as before.
            .args(
                (t.retry_percent > 0)
                    .then(|| ["--retry-percent".to_owned(), t.retry_percent.to_string()])
                    .into_iter()
                    .flatten(),
            )
            .args(
                (t.claim_stop_ms > 0)
                    .then(|| ["--claim-stop-ms".to_owned(), t.claim_stop_ms.to_string()])
                    .into_iter()
                    .flatten(),
            )
            .args(extra)
            .env("RUST_LOG", std::env::var("CHAOS_WORKER_LOG").unwrap_or_else(|_| "warn".to_owned()))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let child = Owned::new(cmd.spawn()?, format!("worker-{n}"));
        let pid = child.pid();
        self.note("spawn", Some(pid), format!("worker-{n}"));
        self.workers.push(child);
        self.ledgers.push((pid, ledger));
        Ok(pid)
    }

    /// Live worker pids.
    pub fn pids(&mut self) -> Vec<u32> {
        self.workers.retain_mut(|w| !w.exited());
        self.workers.iter().map(Owned::pid).collect()
    }

    /// `kill -9` a random worker and start a replacement.
    ///
    /// # Errors
    /// The replacement could not be started.
    pub fn kill_one(&mut self) -> Result<(), AnyError> {
        let Some(&pid) = self.pids().choose(&mut rand::rng()) else { return Ok(()) };
        self.kill(pid, "SIGKILL")
    }

    /// `kill -9` the live worker whose executor is `worker` (the namespace's
    /// leader, as last sampled) and start a replacement; a random worker
    /// when no live one is `worker` (its term outlives it by up to a lease).
    /// Answers whether the leader was the one killed.
    ///
    /// # Errors
    /// The replacement could not be started.
    pub fn kill_leader(&mut self, worker: Option<&str>) -> Result<bool, AnyError> {
        let live = self.pids();
        let leader = worker.and_then(|w| {
            self.ledgers.iter().filter(|(pid, _)| live.contains(pid)).find_map(|(pid, path)| {
                (crate::ledger::up_worker(path).as_deref() == Some(w)).then_some(*pid)
            })
        });
        match leader {
            Some(pid) => self.kill(pid, "SIGKILL, the leader").map(|()| true),
            None => self.kill_one().map(|()| false),
        }
    }

    fn kill(&mut self, pid: u32, note: &str) -> Result<(), AnyError> {
        signal(pid, Signal::Kill);
        self.note("kill", Some(pid), note);
        if let Some(w) = self.workers.iter_mut().find(|w| w.pid() == pid) {
            w.wait_exit(Duration::from_secs(5));
        }
        self.spawn(&[])?;
        Ok(())
    }

    /// `SIGSTOP` a random worker for `pause` (past its lease), then `SIGCONT` it.
    pub fn pause_one(&mut self, pause: Duration) {
        let Some(&pid) = self.pids().choose(&mut rand::rng()) else { return };
        if signal(pid, Signal::Stop) {
            self.note("stop", Some(pid), format!("SIGSTOP for {pause:?}"));
            std::thread::sleep(pause);
            signal(pid, Signal::Cont);
            self.note("cont", Some(pid), "SIGCONT");
        }
    }

    /// Asks a random worker to `SIGSTOP` itself inside its next claim
    /// (`SIGUSR1`; see [`crate::recorder::ClaimStop`]); the worker writes
    /// the pause to its own ledger.
    pub fn arm_claim_stop(&mut self) {
        let Some(&pid) = self.pids().choose(&mut rand::rng()) else { return };
        if signal(pid, Signal::Usr1) {
            self.note("claim_stop_armed", Some(pid), "SIGUSR1: stop inside the next claim");
        }
    }

    /// Stops every worker: `SIGTERM`, then `SIGKILL` after `grace`.
    pub fn stop_all(&mut self, grace: Duration) {
        for w in &self.workers {
            self.ledger.record(&Event::Fault {
                kind: "term".to_owned(),
                pid: Some(w.pid()),
                t: now_ms(),
                note: "SIGTERM at the end of the run".to_owned(),
            });
            signal(w.pid(), Signal::Term);
        }
        for w in &mut self.workers {
            if !w.wait_exit(grace) {
                w.kill();
            }
        }
        self.workers.clear();
    }
}

/// The CLI name of a backend.
pub fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Redis => "redis",
        Backend::Mysql => "mysql",
        Backend::Postgres => "postgres",
        Backend::Tiered => "tiered",
    }
}

/// Restarts a private store server: clean shutdown or `kill -9`
/// (alternating), down for `outage`. The ledger notes say which server.
///
/// # Errors
/// It did not come back.
pub fn restart_store(
    fleet: &Fleet,
    server: &mut PrivateServer,
    crash: bool,
    outage: Duration,
) -> Result<(), AnyError> {
    let how = format!("{} {}", backend_name(server.backend()), if crash { "SIGKILL" } else { "SIGTERM" });
    fleet.note("store_down", None, how.clone());
    server.down(if crash { Signal::Kill } else { Signal::Term });
    std::thread::sleep(outage);
    server.up()?;
    fleet.note("store_up", None, how);
    Ok(())
}

/// Kills every client connection of a private store server but the
/// caller's: `KILL` from `information_schema.processlist` on MariaDB,
/// `pg_terminate_backend` of every backend of database `chaos` on
/// PostgreSQL (each rolls back what it was running and closes its
/// connection), `CLIENT KILL` on Redis.
///
/// # Errors
/// The store did not answer.
pub fn drop_connections(fleet: &Fleet, server: &PrivateServer) -> Result<(), AnyError> {
    let port = server.port();
    // A server's backend is Redis, Mysql or Postgres, never Tiered.
    let n = match server.backend() {
        Backend::Mysql => {
            let ids = mysql_cli(
                port,
                "SELECT id FROM information_schema.processlist WHERE db = 'chaos' AND id <> CONNECTION_ID()",
            )?;
            let ids: Vec<&str> = ids.split_whitespace().collect();
            for id in &ids {
                // A connection may close by itself meanwhile: ignore "unknown thread".
                let _ = mysql_cli(port, &format!("KILL {id}"));
            }
            ids.len()
        }
        Backend::Postgres => {
            // `psql` connects to database `postgres`: its own backend is not one of them.
            let n = psql(
                port,
                "postgres",
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE datname = 'chaos' AND pid <> pg_backend_pid()",
            )?;
            n.trim().parse().unwrap_or(0)
        }
        Backend::Redis | Backend::Tiered => {
            let mut s = TcpStream::connect(("127.0.0.1", port))?;
            s.set_read_timeout(Some(Duration::from_secs(2)))?;
            s.write_all(b"CLIENT KILL TYPE normal SKIPME yes\r\n")?;
            let mut buf = [0u8; 64];
            let n = s.read(&mut buf)?;
            String::from_utf8_lossy(&buf[..n]).trim_start_matches(':').trim().parse().unwrap_or(0)
        }
    };
    fleet.note("drop", None, format!("{} {n} connections", backend_name(server.backend())));
    Ok(())
}
