//! `chaos run ...` (controller) and `chaos worker ...` (a worker process).

use clap::{Parser, Subcommand};
use executor_chaos::{controller, first_start, worker};

/// Multi-process chaos harness for the reliable executor.
#[derive(Debug, Parser)]
#[command(name = "chaos")]
struct Cli {
    #[command(subcommand)]
    role: Role,
}

#[derive(Debug, Subcommand)]
enum Role {
    /// Start workers, inject faults, check the invariants, print a summary.
    Run(controller::RunArgs),
    /// One worker process (started by `run`).
    Worker(worker::WorkerArgs),
    /// Connect once to a MariaDB database, running its migrations (one
    /// process of a concurrent first start).
    Migrate(first_start::MigrateArgs),
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,fred=error,sqlx=error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match Cli::parse().role {
        Role::Run(args) => controller::run(args),
        Role::Worker(args) => worker::run(args).map(|()| true),
        Role::Migrate(args) => first_start::migrate(args).map(|()| true),
    };
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("chaos: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
