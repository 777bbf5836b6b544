//! Concurrent first start: N processes connect at the same instant to an
//! empty MariaDB database, so their embedded migrations race. Each must
//! connect, and the schema they leave must equal a database migrated alone.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use executor_mysql::MySqlStorage;

use crate::{
    ledger::now_ms,
    process::Owned,
    server::{AnyError, mysql_cli},
};

/// `chaos migrate`: one process of a concurrent first start.
#[derive(Clone, Debug, clap::Args)]
pub struct MigrateArgs {
    /// Database URL (an empty database).
    #[arg(long)]
    pub url: String,
    /// Wall-clock ms to wait for before connecting, so the processes start together.
    #[arg(long)]
    pub at_ms: Option<u64>,
}

/// Connects once (running the migrations) at `at_ms`; prints `ok`.
///
/// # Errors
/// The connection or a migration failed.
pub fn migrate(args: MigrateArgs) -> Result<(), AnyError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        if let Some(at) = args.at_ms {
            tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_ms()))).await;
        }
        let storage = MySqlStorage::options().max_connections(2).connect(&args.url).await?;
        drop(storage);
        println!("ok");
        Ok(())
    })
}

/// What one round found.
#[derive(Debug, Default)]
pub struct Round {
    /// Processes started.
    pub processes: usize,
    /// Of those, the ones that connected.
    pub ok: usize,
    /// What the others said (exit status and stderr).
    pub errors: Vec<String>,
    /// Schema differences from the reference database (empty: complete).
    pub schema_diff: Vec<String>,
}

impl Round {
    /// Every process connected and the schema is complete.
    pub fn passed(&self) -> bool {
        self.ok == self.processes && self.errors.is_empty() && self.schema_diff.is_empty()
    }
}

/// What a database's schema is: tables, columns, indexes and the migrations recorded.
fn schema(port: u16, db: &str) -> Result<Vec<String>, AnyError> {
    let queries = [
        format!(
            "SELECT table_name, column_name, column_type, is_nullable, IFNULL(generation_expression, '') \
             FROM information_schema.columns WHERE table_schema = '{db}' ORDER BY 1, 2"
        ),
        format!(
            "SELECT table_name, index_name, seq_in_index, column_name, non_unique \
             FROM information_schema.statistics WHERE table_schema = '{db}' ORDER BY 1, 2, 3"
        ),
        format!(
            "SELECT version, description, success, HEX(checksum) FROM `{db}`.`{}` ORDER BY 1",
            executor_mysql::MIGRATIONS_TABLE
        ),
    ];
    let mut out = Vec::new();
    for q in &queries {
        out.extend(mysql_cli(port, q)?.lines().map(str::to_owned));
    }
    Ok(out)
}

/// One round on the private MariaDB at `port`: creates the empty database
/// `db`, starts `n` `chaos migrate` processes (`exe`) that connect at the
/// same instant, waits for them (60 s at most), compares the schema with
/// `reference` (a database the run already migrated), then drops `db`.
///
/// # Errors
/// The server did not answer the setup statements.
pub fn round(exe: &Path, port: u16, db: &str, reference: &str, n: usize) -> Result<Round, AnyError> {
    mysql_cli(port, &format!("DROP DATABASE IF EXISTS `{db}`; CREATE DATABASE `{db}`"))?;
    let url = format!("mysql://root@127.0.0.1:{port}/{db}");
    // Far enough ahead for every process to be up and waiting.
    let at = (now_ms() + 300 + 30 * n as u64).to_string();
    let mut children = Vec::new();
    let mut r = Round { processes: n, ..Round::default() };
    for i in 0..n {
        let child = Command::new(exe)
            .args(["migrate", "--url", &url, "--at-ms", &at])
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        children.push((i, Owned::new(child, format!("migrate-{i}"))));
    }
    let end = Instant::now() + Duration::from_secs(60);
    for (i, mut c) in children {
        if !c.wait_exit(end.saturating_duration_since(Instant::now())) {
            r.errors.push(format!("process {i}: still running after 60 s"));
            continue;
        }
        match c.output() {
            Some((status, stdout, _)) if status.success() && stdout.trim() == "ok" => r.ok += 1,
            Some((status, _, stderr)) => {
                r.errors.push(format!("process {i}: {status}: {}", stderr.trim()));
            }
            None => r.errors.push(format!("process {i}: no exit status")),
        }
    }
    let want = schema(port, reference)?;
    match schema(port, db) {
        Ok(got) => {
            r.schema_diff.extend(want.iter().filter(|l| !got.contains(l)).map(|l| format!("missing: {l}")));
            r.schema_diff.extend(got.iter().filter(|l| !want.contains(l)).map(|l| format!("extra: {l}")));
        }
        Err(e) => r.schema_diff.push(format!("schema unreadable: {e}")),
    }
    mysql_cli(port, &format!("DROP DATABASE IF EXISTS `{db}`"))?;
    Ok(r)
}
