//! A redis-server of a test's own, on a free loopback port in a temp dir,
//! for the tests that stop, restart or reconfigure a server.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use executor_core::testing;

/// A redis-server child process, killed on drop (its dir removed).
pub struct Server {
    pub port: u16,
    dir: PathBuf,
    args: Vec<String>,
    child: Option<Child>,
}

impl Server {
    /// Starts one with no snapshots and `args` (more configuration).
    pub fn start(port: u16, dir: PathBuf, args: &[&str]) -> Self {
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("temp dir {}: {e}", dir.display()));
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        let mut server = Self { port, dir, args, child: None };
        server.spawn();
        server
    }

    /// Starts one on a free port in a temp dir named after `name` and the
    /// process, and waits until it answers.
    pub async fn started(name: &str, args: &[&str]) -> Self {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("executor-redis-{name}-{}-{port}", std::process::id()));
        let server = Self::start(port, dir, args);
        server.wait_until_up().await;
        server
    }

    /// Starts the process (again).
    pub fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(&self.args)
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server ({e}); install it with `apt-get install redis-server`")
            });
        self.child = Some(child);
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub async fn wait_until_up(&self) {
        let addr = format!("127.0.0.1:{}", self.port);
        testing::wait_until(Duration::from_secs(10), || {
            let addr = addr.clone();
            async move { tokio::net::TcpStream::connect(addr).await.is_ok() }
        })
        .await;
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}
