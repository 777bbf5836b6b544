//! The private PostgreSQL server's pieces: its binaries, `initdb`, the
//! postmaster's command line, `psql`, and the postmaster's children.
//!
//! PostgreSQL refuses to run as root. When the harness is root (as in CI's
//! containers), `initdb` and `postgres` run as the `postgres` OS user
//! through `setpriv`, which `exec`s the server in place, so the harness's
//! child *is* the postmaster and `kill -9` of the child is a crash of the
//! server (`runuser` would stay in between as the parent). Otherwise they
//! run as the harness's own user.

use std::{
    fs::OpenOptions,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::{
    process::{Signal, find_program, signal},
    server::AnyError,
};

/// The OS user the server runs as when the harness is root.
const SERVER_USER: &str = "postgres";

/// The superuser `initdb` creates and every client logs in as (trust auth).
pub const SUPERUSER: &str = "postgres";

/// The database the run's store lives in.
pub const DATABASE: &str = "chaos";

/// The directory holding `initdb`, `postgres` and `psql`: the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian and Ubuntu keep the server
/// binaries off `PATH`), else the directory of an `initdb` on `PATH`.
///
/// # Errors
/// No PostgreSQL server binaries were found; the message says what to install.
pub fn bin_dir() -> Result<PathBuf, AnyError> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.split('.').next()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    find_program("initdb")
        .and_then(|initdb| initdb.canonicalize().ok())
        .and_then(|initdb| initdb.parent().map(Path::to_path_buf))
        .filter(|bin| bin.join("postgres").is_file())
        .ok_or_else(|| {
            "PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb, no initdb on \
             PATH): install them with `apt-get install postgresql` (scripts/test.sh does)"
                .into()
        })
}

/// A program of [`bin_dir`].
fn program(name: &str) -> Result<PathBuf, AnyError> {
    let path = bin_dir()?.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("{} not found: install it with `apt-get install postgresql`", path.display()).into())
    }
}

/// Whether this process runs as root (its `/proc/self` belongs to its
/// effective user).
fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A command running `program` as the server's user: through `setpriv` as
/// [`SERVER_USER`] when the harness is root, directly otherwise.
fn as_server_user(program: &Path) -> Result<Command, AnyError> {
    if !is_root() {
        return Ok(Command::new(program));
    }
    let known = Command::new("id")
        .arg(SERVER_USER)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !known {
        return Err(format!(
            "PostgreSQL refuses to run as root and there is no `{SERVER_USER}` OS user to run it as: \
             install the server with `apt-get install postgresql` (it creates the user), or create it \
             with `useradd --system {SERVER_USER}`"
        )
        .into());
    }
    let setpriv = find_program("setpriv").ok_or(
        "setpriv not found (needed to run PostgreSQL as a non-root user): `apt-get install util-linux`",
    )?;
    let mut command = Command::new(setpriv);
    command
        .arg(format!("--reuid={SERVER_USER}"))
        .arg(format!("--regid={SERVER_USER}"))
        .args(["--init-groups", "--"])
        .arg(program);
    Ok(command)
}

/// Creates a new cluster in `dir/data`: superuser [`SUPERUSER`], trust
/// authentication (loopback only: the server listens on nothing else),
/// UTF-8, C locale. When the harness is root, `dir` is given to the server's
/// user first.
///
/// # Errors
/// The binaries or the user are missing, or `initdb` failed.
pub fn initdb(dir: &Path) -> Result<(), AnyError> {
    if is_root() {
        let out = Command::new("chown").arg(format!("{SERVER_USER}:")).arg(dir).output()?;
        if !out.status.success() {
            return Err(format!(
                "chown {SERVER_USER}: {} failed: {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )
            .into());
        }
    }
    let out = as_server_user(&program("initdb")?)?
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C"])
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "initdb failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into())
    }
}

/// Starts the postmaster on the cluster of `dir/data`, listening on
/// 127.0.0.1:`port` and on a unix socket in `dir`, `fsync` on (a commit is
/// on disk before it is acknowledged, so it survives `kill -9`); its log is
/// appended to `dir/postgres.log`.
///
/// # Errors
/// The binaries or the user are missing, or the process could not start.
pub fn postmaster(dir: &Path, port: u16) -> Result<Child, AnyError> {
    let log = OpenOptions::new().create(true).append(true).open(dir.join("postgres.log"))?;
    let child = as_server_user(&program("postgres")?)?
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", dir.display()))
        .args(["-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "max_connections=200"])
        .args(["-c", "shared_buffers=32MB"])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    Ok(child)
}

/// Runs `sql` with `psql` against database `db` of the server on `port`
/// (over TCP, as [`SUPERUSER`]); returns what it printed (unaligned, tuples only).
///
/// # Errors
/// `psql` is missing, could not connect, or the statement failed.
pub fn psql(port: u16, db: &str, sql: &str) -> Result<String, AnyError> {
    let out = Command::new(program("psql")?)
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", SUPERUSER, "-d", db])
        .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "2")
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned().into())
    }
}

/// The last `lines` lines of the server's log in `dir`, for error messages.
pub fn log_tail(dir: &Path, lines: usize) -> String {
    let log = std::fs::read_to_string(dir.join("postgres.log")).unwrap_or_default();
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The live child processes of `pid` (the postmaster's backends and
/// auxiliary processes), from `/proc`.
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| stat(*p).is_some_and(|s| s.ppid == pid && s.state != 'Z'))
        .collect()
}

/// Waits up to `timeout` for `pids` (a killed postmaster's children: they
/// notice its death and exit within milliseconds) to be gone, then
/// `SIGKILL`s any left that is still a `postgres` process. A new postmaster
/// refuses the data directory while one of them still holds the old shared
/// memory.
pub fn wait_gone(pids: &[u32], timeout: Duration) {
    let alive = |p: &u32| stat(*p).is_some_and(|s| s.state != 'Z' && s.comm == "postgres");
    let end = Instant::now() + timeout;
    while pids.iter().any(alive) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    for p in pids.iter().filter(|p| alive(p)) {
        signal(*p, Signal::Kill);
    }
}

/// The fields of `/proc/<pid>/stat` this module reads.
struct Stat {
    comm: String,
    state: char,
    ppid: u32,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some(Stat { comm, state, ppid })
}
