//! Processes and directories the harness owns, cleaned up on drop: a child
//! is killed and reaped, a temp dir removed. Signals go through `kill(1)`,
//! so the crate needs no `unsafe` and no signal crate.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command},
    time::{Duration, Instant},
};

/// A signal the harness sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// `SIGKILL`: no cleanup at all.
    Kill,
    /// `SIGTERM`: graceful shutdown.
    Term,
    /// `SIGINT`: PostgreSQL's fast shutdown (its `SIGTERM` waits for every
    /// client to disconnect).
    Int,
    /// `SIGSTOP`: frozen, holds its leases without renewing them.
    Stop,
    /// `SIGCONT`: resumes a stopped process.
    Cont,
    /// `SIGUSR1`: a chaos worker pauses inside its next claim.
    Usr1,
}

impl Signal {
    fn flag(self) -> &'static str {
        match self {
            Self::Kill => "-KILL",
            Self::Term => "-TERM",
            Self::Int => "-INT",
            Self::Stop => "-STOP",
            Self::Cont => "-CONT",
            Self::Usr1 => "-USR1",
        }
    }
}

/// Sends `signal` to `pid` with `kill(1)`; returns whether it was delivered.
pub fn signal(pid: u32, signal: Signal) -> bool {
    Command::new("kill")
        .arg(signal.flag())
        .arg(pid.to_string())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A child process killed (`SIGCONT` then `SIGKILL`) and reaped on drop.
#[derive(Debug)]
pub struct Owned {
    child: Child,
    /// A name for messages.
    pub name: String,
}

impl Owned {
    /// Takes ownership of a spawned child.
    pub fn new(child: Child, name: impl Into<String>) -> Self {
        Self { child, name: name.into() }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends `SIGTERM`, waits up to `grace`, then `SIGKILL`s. Returns whether
    /// it stopped within the grace.
    pub fn stop(&mut self, grace: Duration) -> bool {
        if self.exited() {
            return true;
        }
        signal(self.pid(), Signal::Cont);
        signal(self.pid(), Signal::Term);
        if self.wait_exit(grace) {
            return true;
        }
        self.kill();
        false
    }

    /// Polls until the process exits, at most `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if self.exited() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.exited()
    }

    /// After it exited: its status and what it wrote to its piped stdout
    /// and stderr (empty for streams that were not piped).
    pub fn output(&mut self) -> Option<(std::process::ExitStatus, String, String)> {
        use std::io::Read;
        let status = self.child.try_wait().ok().flatten()?;
        let read = |r: Option<&mut dyn Read>| {
            let mut s = String::new();
            if let Some(r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        };
        let out = read(self.child.stdout.as_mut().map(|s| s as &mut dyn Read));
        let err = read(self.child.stderr.as_mut().map(|s| s as &mut dyn Read));
        Some((status, out, err))
    }

    /// `SIGKILL` and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if !self.exited() {
            signal(self.pid(), Signal::Cont);
            self.kill();
        }
    }
}

/// A temp directory removed on drop (unless [`TempDir::keep`] was called).
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    /// Creates `<tmp>/<prefix>-<pid>-<random>`.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn new(prefix: &str) -> std::io::Result<Self> {
        let path = std::env::temp_dir().join(format!(
            "{prefix}-{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&path)?;
        Ok(Self { path, keep: false })
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the directory in place (to inspect ledgers after a violation).
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// A loopback port nothing listens on right now.
///
/// # Errors
/// No port could be bound.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Finds a program on `PATH`, then in the sbin directories Debian puts
/// servers in.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
