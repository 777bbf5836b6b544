//! Private store servers on free loopback ports in temp dirs, so the harness
//! can stop and restart them without touching the shared 6379/3306/5432.

use std::{
    io::{Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::{
    postgres,
    process::{Owned, Signal, TempDir, find_program, free_port},
};

/// Which store a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// `executor-redis`.
    Redis,
    /// `executor-mysql` (MariaDB).
    Mysql,
    /// `executor-postgres` (PostgreSQL).
    Postgres,
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
            Backend::Postgres => &[Backend::Postgres],
            Backend::Tiered => &[Backend::Redis, Backend::Mysql],
        }
    }

    /// Whether the `claim-stop` fault applies to this store
    /// ([`crate::controller::Fault::ClaimStop`]): a worker stopped while a
    /// reply of its claim is pending, on a SQL store. MariaDB's claim is a
    /// transaction, left open with its rows locked; PostgreSQL's is one
    /// statement the server commits while the worker is stopped (and, on a
    /// queue with limits, a short transaction). A Redis claim is one script
    /// call, and the Redis runs keep to the classic faults.
    pub fn pauses_inside_claims(self) -> bool {
        matches!(self, Backend::Mysql | Backend::Postgres)
    }
}

/// The kind of server process: a tiered backend is two of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Redis,
    Mariadb,
    Postgres,
}

/// A redis-server, mariadbd or postgres the harness started and may restart.
#[derive(Debug)]
pub struct PrivateServer {
    kind: Kind,
    port: u16,
    dir: TempDir,
    process: Option<Owned>,
    started: bool,
    restarts: u32,
    tls: Option<ServerTls>,
    cluster: bool,
    /// Times [`PrivateServer::set_tls_cert`] gave PostgreSQL new files,
    /// which names them.
    tls_changes: u32,
}

/// The files a private server speaks TLS with: its certificate chain and
/// key, and the CA it checks client certificates against (a client may
/// also present none).
#[derive(Clone, Debug)]
pub struct ServerTls {
    /// The server's certificate (PEM).
    pub cert: PathBuf,
    /// The server's private key (PEM).
    pub key: PathBuf,
    /// The CA for client certificates (PEM).
    pub ca: PathBuf,
}

/// A boxed error with a message.
pub type AnyError = Box<dyn std::error::Error + Send + Sync>;

impl PrivateServer {
    /// Starts a server of `backend` on a free port in a new temp dir: Redis
    /// with `appendonly yes` and `appendfsync always` (an acknowledged write
    /// survives `kill -9`), MariaDB with a fresh datadir and database `chaos`,
    /// PostgreSQL with a fresh cluster (`initdb`, trust on loopback, `fsync`
    /// on, run as the `postgres` OS user when the harness is root) and
    /// database `chaos`.
    ///
    /// # Errors
    /// The server binary is missing or it did not come up in time; `backend`
    /// is `Tiered` (two servers: start one per [`Backend::servers`]).
    pub fn start(backend: Backend) -> Result<Self, AnyError> {
        Self::start_with(backend, None, false)
    }

    /// Starts a server of `backend` that speaks TLS with `tls`, checking a
    /// client certificate against `tls.ca` when the client presents one
    /// (Redis: `tls-port` and no plain port, `tls-auth-clients optional`;
    /// MariaDB: `ssl-cert`/`ssl-key`/`ssl-ca`, plain connections still
    /// allowed; PostgreSQL: `ssl = on` with `ssl_cert_file`, `ssl_key_file`
    /// and `ssl_ca_file`, plain connections still allowed). MariaDB and
    /// PostgreSQL read copies of the files in the server's dir, so
    /// [`PrivateServer::set_tls_cert`] can replace them. With `cluster`,
    /// Redis runs in cluster mode (`tls-cluster yes`) as a one-node cluster
    /// owning every slot; [`PrivateServer::url`] is then a
    /// `rediss-cluster://` URL.
    ///
    /// # Errors
    /// As [`PrivateServer::start`]; `cluster` with MariaDB or PostgreSQL;
    /// the TLS files could not be copied; the cluster did not reach
    /// `cluster_state:ok` within 30 s.
    pub fn start_tls(backend: Backend, tls: ServerTls, cluster: bool) -> Result<Self, AnyError> {
        if cluster && backend != Backend::Redis {
            return Err("only Redis runs as a cluster".into());
        }
        let server = Self::start_with(backend, Some(tls), cluster)?;
        if cluster {
            server.redis_cli(&["cluster", "addslotsrange", "0", "16383"])?;
            let end = Instant::now() + Duration::from_secs(30);
            while !server.redis_cli(&["cluster", "info"])?.contains("cluster_state:ok") {
                if Instant::now() > end {
                    return Err("the one-node TLS cluster did not reach cluster_state:ok in 30 s".into());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(server)
    }

    fn start_with(backend: Backend, tls: Option<ServerTls>, cluster: bool) -> Result<Self, AnyError> {
        let kind = match backend {
            Backend::Redis => Kind::Redis,
            Backend::Mysql => Kind::Mariadb,
            Backend::Postgres => Kind::Postgres,
            Backend::Tiered => {
                return Err("a tiered store is two servers: start one per Backend::servers()".into());
            }
        };
        let dir = TempDir::new(match kind {
            Kind::Redis => "chaos-redis",
            Kind::Mariadb => "chaos-mariadb",
            Kind::Postgres => "chaos-postgres",
        })?;
        let port = free_port()?;
        match kind {
            Kind::Mariadb => install_mariadb(&dir)?,
            Kind::Postgres => postgres::initdb(dir.path())?,
            Kind::Redis => {}
        }
        if let Some(tls) = &tls {
            install_tls(kind, dir.path(), tls)?;
        }
        let mut server = Self {
            kind,
            port,
            dir,
            process: None,
            started: false,
            restarts: 0,
            tls,
            cluster,
            tls_changes: 0,
        };
        server.up()?;
        match kind {
            Kind::Mariadb => {
                mysql_cli(port, "CREATE DATABASE IF NOT EXISTS chaos")?;
            }
            Kind::Postgres => {
                postgres::psql(port, "postgres", &format!("CREATE DATABASE {}", postgres::DATABASE))?;
            }
            Kind::Redis => {}
        }
        Ok(server)
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        match self.kind {
            Kind::Redis => {
                let scheme = match (self.tls.is_some(), self.cluster) {
                    (false, false) => "redis",
                    (true, false) => "rediss",
                    (false, true) => "redis-cluster",
                    (true, true) => "rediss-cluster",
                };
                format!("{scheme}://127.0.0.1:{}", self.port)
            }
            Kind::Mariadb => format!("mysql://root@127.0.0.1:{}/chaos", self.port),
            Kind::Postgres => {
                format!("postgres://{}@127.0.0.1:{}/{}", postgres::SUPERUSER, self.port, postgres::DATABASE)
            }
        }
    }

    /// The single-store backend this server serves (`Redis`, `Mysql` or `Postgres`).
    pub fn backend(&self) -> Backend {
        match self.kind {
            Kind::Redis => Backend::Redis,
            Kind::Mariadb => Backend::Mysql,
            Kind::Postgres => Backend::Postgres,
        }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server process's id while it runs (for PostgreSQL, the postmaster's).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(Owned::pid)
    }

    /// Times the server was restarted.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Stops the server with `signal` (`Term`: clean shutdown; `Kill`: crash).
    ///
    /// PostgreSQL: `Term` is its fast shutdown (`SIGINT`: clients are
    /// disconnected, open transactions roll back, a checkpoint is written;
    /// its `SIGTERM` would wait for every client to leave); `Kill` is
    /// `kill -9` of the postmaster alone, as when it crashes. Its children
    /// notice and exit by themselves; this waits for them (5 s at most,
    /// then kills them), because a new postmaster refuses the data
    /// directory while one of them still holds the old shared memory.
    pub fn down(&mut self, signal: Signal) {
        if let Some(mut p) = self.process.take() {
            let children = if self.kind == Kind::Postgres { postgres::children(p.pid()) } else { Vec::new() };
            if signal == Signal::Kill {
                p.kill();
            } else {
                let signal =
                    if self.kind == Kind::Postgres && signal == Signal::Term { Signal::Int } else { signal };
                crate::process::signal(p.pid(), signal);
                if !p.wait_exit(Duration::from_secs(20)) {
                    p.kill();
                }
            }
            postgres::wait_gone(&children, Duration::from_secs(5));
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
                let mut command = Command::new(bin);
                match &self.tls {
                    None => command.args(["--port", &self.port.to_string()]),
                    Some(tls) => command
                        .args(["--port", "0", "--tls-port", &self.port.to_string()])
                        .arg("--tls-cert-file")
                        .arg(&tls.cert)
                        .arg("--tls-key-file")
                        .arg(&tls.key)
                        .arg("--tls-ca-cert-file")
                        .arg(&tls.ca)
                        .args(["--tls-auth-clients", "optional"]),
                };
                if self.cluster {
                    // The bus port is the client port + 10,000 unless set: a
                    // free port above 55,535 would make it invalid.
                    let bus = free_port()?;
                    command
                        .args(["--cluster-enabled", "yes", "--cluster-port", &bus.to_string()])
                        // A node that never met another does not know its
                        // own address and announces none.
                        .args(["--cluster-announce-ip", "127.0.0.1"])
                        .arg("--cluster-config-file")
                        .arg(d.join("nodes.conf"));
                    if self.tls.is_some() {
                        command.args(["--tls-cluster", "yes"]);
                    }
                }
                command
                    .args(["--bind", "127.0.0.1", "--save", ""])
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
                let mut command = Command::new(bin);
                // `--no-defaults` must come first.
                command.arg("--no-defaults");
                if self.tls.is_some() {
                    let [cert, key, ca] = MARIADB_TLS_FILES.map(|name| d.join(name));
                    command
                        .arg(format!("--ssl-cert={}", cert.display()))
                        .arg(format!("--ssl-key={}", key.display()))
                        .arg(format!("--ssl-ca={}", ca.display()));
                }
                command
                    .arg(format!("--datadir={}", d.join("data").display()))
                    .arg(format!("--tmpdir={}", d.join("tmp").display()))
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
            Kind::Postgres => postgres::postmaster(d, self.port)?,
        };
        self.process = Some(Owned::new(child, format!("{:?} server", self.kind)));
        let end = Instant::now() + Duration::from_secs(30);
        let mut respawns = 0;
        while Instant::now() < end {
            if self.answers() {
                self.restarts += u32::from(self.started);
                self.started = true;
                return Ok(());
            }
            if self.process.as_mut().is_some_and(Owned::exited) {
                // A postmaster that found the old one's children still
                // attached to its shared memory, or a stale lock file, exits
                // at once: try again shortly, a few times.
                if self.kind == Kind::Postgres && respawns < 10 {
                    respawns += 1;
                    std::thread::sleep(Duration::from_millis(200));
                    let child = postgres::postmaster(d, self.port)?;
                    self.process = Some(Owned::new(child, "Postgres server"));
                    continue;
                }
                let log = if self.kind == Kind::Postgres { postgres::log_tail(d, 5) } else { String::new() };
                return Err(
                    format!("{:?} server exited at start; see {}\n{log}", self.kind, d.display()).into()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Err(format!("{:?} server on port {} did not answer within 30 s", self.kind, self.port).into())
    }

    /// Whether the server answers a ping.
    pub fn answers(&self) -> bool {
        match self.kind {
            Kind::Redis if self.tls.is_some() => {
                self.redis_cli(&["ping"]).is_ok_and(|out| out.contains("PONG"))
            }
            Kind::Redis => redis_ping(self.port),
            Kind::Mariadb => mysql_cli(self.port, "SELECT 1").is_ok(),
            Kind::Postgres => postgres::psql(self.port, "postgres", "SELECT 1").is_ok(),
        }
    }

    /// Runs `redis-cli` against this Redis server (over TLS when it speaks
    /// TLS) and returns what it printed.
    ///
    /// # Errors
    /// `redis-cli` is missing or failed.
    pub fn redis_cli(&self, args: &[&str]) -> Result<String, AnyError> {
        self.redis_cli_checking(args, true)
    }

    /// [`PrivateServer::redis_cli`], checking the server's certificate
    /// against the CA of its [`ServerTls`] only when `check` is set (a
    /// certificate [`PrivateServer::set_tls_cert`] gave may be expired, or
    /// for another host).
    fn redis_cli_checking(&self, args: &[&str], check: bool) -> Result<String, AnyError> {
        let bin = find_program("redis-cli")
            .ok_or("redis-cli not found: install it with `apt-get install redis-tools`")?;
        let mut command = Command::new(bin);
        command.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        match &self.tls {
            Some(tls) if check => command.arg("--tls").arg("--cacert").arg(&tls.ca),
            Some(_) => command.args(["--tls", "--insecure"]),
            None => &mut command,
        };
        let out = command.args(args).stdin(Stdio::null()).output()?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && !stdout.starts_with("ERR") && !stdout.contains("Could not connect") {
            Ok(stdout)
        } else {
            Err(format!("redis-cli {args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr)).into())
        }
    }

    /// Whether the server process runs.
    pub fn is_up(&self) -> bool {
        self.process.is_some()
    }

    /// Makes a running TLS server present `cert` with `key` to the clients
    /// that connect from now on (Redis: `CONFIG SET tls-cert-file`;
    /// MariaDB: its copies replaced, then `FLUSH SSL`; PostgreSQL: new
    /// copies named in `ssl_cert_file`/`ssl_key_file` by `ALTER SYSTEM`,
    /// then a reload, waited for until a new session sees the new name).
    ///
    /// # Errors
    /// The server speaks no TLS; the files could not be copied; the server
    /// refused them.
    pub fn set_tls_cert(&mut self, cert: &Path, key: &Path) -> Result<(), AnyError> {
        if self.tls.is_none() {
            return Err("set_tls_cert: this server speaks no TLS (start it with start_tls)".into());
        }
        let d = self.dir.path();
        match self.kind {
            Kind::Redis => {
                let (cert, key) = (cert.display().to_string(), key.display().to_string());
                let args = ["config", "set", "tls-cert-file", &cert, "tls-key-file", &key];
                self.redis_cli_checking(&args, false)?;
            }
            Kind::Mariadb => {
                let [to_cert, to_key, _] = MARIADB_TLS_FILES.map(|name| d.join(name));
                std::fs::copy(cert, to_cert)?;
                std::fs::copy(key, to_key)?;
                mysql_cli(self.port, "FLUSH SSL")?;
            }
            Kind::Postgres => {
                self.tls_changes += 1;
                let data = d.join("data");
                let (to_cert, to_key) =
                    (format!("server-{}.crt", self.tls_changes), format!("server-{}.key", self.tls_changes));
                copy_for_postgres(cert, &data.join(&to_cert), false)?;
                copy_for_postgres(key, &data.join(&to_key), true)?;
                postgres::psql(
                    self.port,
                    "postgres",
                    &format!("ALTER SYSTEM SET ssl_cert_file = '{to_cert}'"),
                )?;
                postgres::psql(
                    self.port,
                    "postgres",
                    &format!("ALTER SYSTEM SET ssl_key_file = '{to_key}'"),
                )?;
                self.postgres_reload("ssl_cert_file", &to_cert)?;
            }
        }
        Ok(())
    }

    /// Turns TLS off (`ssl = off`: the server answers `N` to a client that
    /// asks for it) or on again, on a running private PostgreSQL started
    /// with [`PrivateServer::start_tls`]; waits until a new session sees it.
    ///
    /// # Errors
    /// Not such a PostgreSQL (Redis and MariaDB set TLS up only at start);
    /// the server refused.
    pub fn set_tls_offered(&self, on: bool) -> Result<(), AnyError> {
        if self.kind != Kind::Postgres || self.tls.is_none() {
            return Err("set_tls_offered: only a private PostgreSQL with TLS turns it off and on".into());
        }
        let value = if on { "on" } else { "off" };
        postgres::psql(self.port, "postgres", &format!("ALTER SYSTEM SET ssl = {value}"))?;
        self.postgres_reload("ssl", value)
    }

    /// `pg_reload_conf()`, then waits (10 s at most) until a new session
    /// shows `setting` as `value`: the postmaster reloads its TLS files in
    /// the same step, before it starts that session.
    fn postgres_reload(&self, setting: &str, value: &str) -> Result<(), AnyError> {
        postgres::psql(self.port, "postgres", "SELECT pg_reload_conf()")?;
        let end = Instant::now() + Duration::from_secs(10);
        while postgres::psql(self.port, "postgres", &format!("SHOW {setting}"))?.trim() != value {
            if Instant::now() > end {
                return Err(format!("PostgreSQL did not take {setting} = {value} within 10 s").into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

/// The names of MariaDB's copies of its certificate, key and client CA in
/// the server's dir.
const MARIADB_TLS_FILES: [&str; 3] = ["tls-cert.pem", "tls-key.pem", "tls-ca.pem"];

/// Copies the TLS files of a MariaDB or PostgreSQL into its dir, before it
/// starts: MariaDB reads them from [`MARIADB_TLS_FILES`]; PostgreSQL from
/// its data directory, named in `postgresql.conf` (`ssl = on`, and
/// `ssl_ca_file` for client certificates). Redis reads `tls`'s own files.
fn install_tls(kind: Kind, d: &Path, tls: &ServerTls) -> Result<(), AnyError> {
    match kind {
        Kind::Redis => {}
        Kind::Mariadb => {
            for (from, name) in [&tls.cert, &tls.key, &tls.ca].into_iter().zip(MARIADB_TLS_FILES) {
                std::fs::copy(from, d.join(name))?;
            }
        }
        Kind::Postgres => {
            let data = d.join("data");
            copy_for_postgres(&tls.cert, &data.join("server.crt"), false)?;
            copy_for_postgres(&tls.key, &data.join("server.key"), true)?;
            copy_for_postgres(&tls.ca, &data.join("root.crt"), false)?;
            let mut conf = std::fs::OpenOptions::new().append(true).open(data.join("postgresql.conf"))?;
            writeln!(
                conf,
                "\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\nssl_ca_file = 'root.crt'"
            )?;
        }
    }
    Ok(())
}

/// Copies `from` into PostgreSQL's data directory as `to`, owned by the
/// data directory's owner (the server's user when the harness is root); a
/// key readable by that owner only, as the server demands.
fn copy_for_postgres(from: &Path, to: &Path, key: bool) -> Result<(), AnyError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    std::fs::copy(from, to)?;
    let owner = std::fs::metadata(to.parent().ok_or("a file in the data directory")?)?;
    std::os::unix::fs::chown(to, Some(owner.uid()), Some(owner.gid()))?;
    let mode = if key { 0o600 } else { 0o644 };
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// A PostgreSQL server is shut down cleanly, so its children exit before
/// its temp dir is removed; the others are killed with their `Owned`.
impl Drop for PrivateServer {
    fn drop(&mut self) {
        if self.kind == Kind::Postgres {
            self.down(Signal::Term);
        }
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
    // Temporary files of its own: in the shared /tmp, a file left by a
    // killed server whose process id came round again made the bootstrap
    // fail ("Could not remove temporary table").
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp)?;
    let out = Command::new(bin)
        .arg("--no-defaults")
        .arg(format!("--datadir={}", dir.path().join("data").display()))
        .arg(format!("--tmpdir={}", tmp.display()))
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
