//! Private store servers on free loopback ports in temp dirs, so the harness
//! can stop and restart them without touching the shared 6379/3306.

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::process::{Owned, Signal, TempDir, find_program, free_port};

/// Which store a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// `executor-redis`.
    Redis,
    /// `executor-mysql` (MariaDB).
    Mysql,
    /// `executor_core::TieredStorage`: Redis hot, MariaDB cold.
    Tiered,
}

impl Backend {
    /// The servers a run of this backend needs: one, or Redis and MariaDB
    /// for a tiered store (hot first).
    pub fn servers(self) -> &'static [Backend] {
        match self {
            Backend::Redis => &[Backend::Redis],
            Backend::Mysql => &[Backend::Mysql],
            Backend::Tiered => &[Backend::Redis, Backend::Mysql],
        }
    }
}

/// The kind of server process: a tiered backend is two of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Redis,
    Mariadb,
}

/// A redis-server or mariadbd the harness started and may restart.
#[derive(Debug)]
pub struct PrivateServer {
    kind: Kind,
    port: u16,
    dir: TempDir,
    process: Option<Owned>,
    started: bool,
    restarts: u32,
}

/// A boxed error with a message.
pub type AnyError = Box<dyn std::error::Error + Send + Sync>;

impl PrivateServer {
    /// Starts a server of `backend` on a free port in a new temp dir: Redis
    /// with `appendonly yes` and `appendfsync always` (an acknowledged write
    /// survives `kill -9`), MariaDB with a fresh datadir and database `chaos`.
    ///
    /// # Errors
    /// The server binary is missing or it did not come up in time; `backend`
    /// is `Tiered` (two servers: start one per [`Backend::servers`]).
    pub fn start(backend: Backend) -> Result<Self, AnyError> {
        let kind = match backend {
            Backend::Redis => Kind::Redis,
            Backend::Mysql => Kind::Mariadb,
            Backend::Tiered => {
                return Err("a tiered store is two servers: start one per Backend::servers()".into());
            }
        };
        let dir = TempDir::new(match kind {
            Kind::Redis => "chaos-redis",
            Kind::Mariadb => "chaos-mariadb",
        })?;
        let port = free_port()?;
        if kind == Kind::Mariadb {
            install_mariadb(&dir)?;
        }
        let mut server = Self { kind, port, dir, process: None, started: false, restarts: 0 };
        server.up()?;
        if kind == Kind::Mariadb {
            mysql_cli(port, "CREATE DATABASE IF NOT EXISTS chaos")?;
        }
        Ok(server)
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        match self.kind {
            Kind::Redis => format!("redis://127.0.0.1:{}", self.port),
            Kind::Mariadb => format!("mysql://root@127.0.0.1:{}/chaos", self.port),
        }
    }

    /// The single-store backend this server serves (`Redis` or `Mysql`).
    pub fn backend(&self) -> Backend {
        match self.kind {
            Kind::Redis => Backend::Redis,
            Kind::Mariadb => Backend::Mysql,
        }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Times the server was restarted.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Stops the server with `signal` (`Term`: clean shutdown; `Kill`: crash).
    pub fn down(&mut self, signal: Signal) {
        if let Some(mut p) = self.process.take() {
            if signal == Signal::Kill {
                p.kill();
            } else {
                crate::process::signal(p.pid(), signal);
                if !p.wait_exit(Duration::from_secs(20)) {
                    p.kill();
                }
            }
        }
    }

    /// Starts the server again on the same port and data, waits until it answers.
    ///
    /// # Errors
    /// It did not come up within 30 s.
    pub fn up(&mut self) -> Result<(), AnyError> {
        if self.process.is_some() {
            return Ok(());
        }
        let d = self.dir.path();
        let child = match self.kind {
            Kind::Redis => {
                let bin = find_program("redis-server").ok_or(
                    "redis-server not found: install it with `apt-get install redis-server` \
                     (scripts/test.sh does)",
                )?;
                Command::new(bin)
                    .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--save", ""])
                    .args(["--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no"])
                    .arg("--dir")
                    .arg(d)
                    .arg("--logfile")
                    .arg(d.join("redis.log"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?
            }
            Kind::Mariadb => {
                let bin = find_program("mariadbd").ok_or(
                    "mariadbd not found: install it with `apt-get install mariadb-server` \
                     (scripts/test.sh does)",
                )?;
                Command::new(bin)
                    .arg("--no-defaults")
                    .arg(format!("--datadir={}", d.join("data").display()))
                    .arg(format!("--socket={}", d.join("sock").display()))
                    .arg(format!("--pid-file={}", d.join("pid").display()))
                    .arg(format!("--log-error={}", d.join("err.log").display()))
                    .arg(format!("--port={}", self.port))
                    .args([
                        "--bind-address=127.0.0.1",
                        "--skip-name-resolve",
                        "--innodb-buffer-pool-size=64M",
                    ])
                    .arg(format!("--user={}", user_name()))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?
            }
        };
        self.process = Some(Owned::new(child, format!("{:?} server", self.kind)));
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if self.answers() {
                self.restarts += u32::from(self.started);
                self.started = true;
                return Ok(());
            }
            if self.process.as_mut().is_some_and(Owned::exited) {
                return Err(format!("{:?} server exited at start; see {}", self.kind, d.display()).into());
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Err(format!("{:?} server on port {} did not answer within 30 s", self.kind, self.port).into())
    }

    /// Whether the server answers a ping.
    pub fn answers(&self) -> bool {
        match self.kind {
            Kind::Redis => redis_ping(self.port),
            Kind::Mariadb => mysql_cli(self.port, "SELECT 1").is_ok(),
        }
    }

    /// Whether the server process runs.
    pub fn is_up(&self) -> bool {
        self.process.is_some()
    }
}

fn redis_ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200))
    else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf), Ok(n) if buf[..n].starts_with(b"+PONG"))
}

fn user_name() -> String {
    std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "root".to_owned())
}

/// Runs one statement with the `mariadb` command-line client against the
/// private server's root account.
///
/// # Errors
/// The client failed.
pub fn mysql_cli(port: u16, sql: &str) -> Result<String, AnyError> {
    let bin = find_program("mariadb").or_else(|| find_program("mysql")).ok_or("mariadb client not found")?;
    let out = Command::new(bin)
        .args(["-h", "127.0.0.1", "-P", &port.to_string(), "-uroot", "-N", "-B", "-e", sql])
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned().into())
    }
}

fn install_mariadb(dir: &TempDir) -> Result<(), AnyError> {
    let bin = find_program("mariadb-install-db")
        .or_else(|| find_program("mysql_install_db"))
        .ok_or("mariadb-install-db not found: install it with `apt-get install mariadb-server`")?;
    let out = Command::new(bin)
        .arg("--no-defaults")
        .arg(format!("--datadir={}", dir.path().join("data").display()))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
        .arg(format!("--user={}", user_name()))
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("mariadb-install-db failed: {}", String::from_utf8_lossy(&out.stderr)).into())
    }
}
