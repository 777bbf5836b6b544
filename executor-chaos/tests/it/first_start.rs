//! Concurrent first start: 6 processes connect at the same
//! instant to a new, empty database of a private MariaDB, 3 rounds, a fresh
//! database each. Every process must connect and the schema they leave must
//! equal that of a database migrated alone (tables, columns, indexes and the
//! migrations recorded). Before the fix the migrations raced: all but one
//! process failed with "Duplicate entry ... for key 'PRIMARY'".

use std::path::Path;

use executor_chaos::{
    first_start::round,
    server::{Backend, PrivateServer},
    store::ChaosStore,
};
use executor_mysql::MySqlStorage;

#[test]
fn processes_starting_at_once_on_an_empty_database_all_connect()
-> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let _one = crate::common::one_at_a_time();
    let server = PrivateServer::start(Backend::Mysql)?;
    // The reference: the run's database, migrated by one process alone.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // Dropped inside the runtime: the pool's drop needs it.
    rt.block_on(async { MySqlStorage::connect_once(&server.url()).await.map(drop) })?;
    let exe = Path::new(env!("CARGO_BIN_EXE_chaos"));
    for n in 0..3 {
        let r = round(exe, server.port(), &format!("fresh{n}"), "chaos", 6)?;
        println!("round {n}: {} of {} connected; {:?} {:?}", r.ok, r.processes, r.errors, r.schema_diff);
        assert!(r.passed(), "round {n}: {r:?}");
    }
    Ok(())
}
