//! TLS to Redis (`rediss://`, `rediss-cluster://`) and MariaDB (`ssl-mode`)
//! against private servers on free loopback ports, with a CA, server and
//! client certificates this test makes (rcgen) in a temp dir. The right CA
//! connects and runs tasks; a wrong CA, a certificate for another host and a
//! TLS file on a plain URL are refused with errors that say what to fix.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use executor_chaos::{
    process::TempDir,
    server::{Backend, PrivateServer, ServerTls},
};
use executor_core::{Error, Executor, Handler, TaskBuilder, TaskOptions, storage::Storage};
use executor_mysql::MySqlStorage;
use executor_redis::RedisStorage;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

use crate::common::{self, TestResult};

/// A CA and files signed by it, written to a temp dir.
struct Pki {
    dir: TempDir,
}

impl Pki {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The server's files: `server.pem` for 127.0.0.1, its key, and the CA
    /// that checks client certificates.
    fn server(&self) -> ServerTls {
        ServerTls { cert: self.path("server.pem"), key: self.path("server.key"), ca: self.path("ca.pem") }
    }
}

/// Makes `ca.pem` (the CA), `server.pem`/`server.key` (127.0.0.1 and
/// `localhost`), `client.pem`/`client.key`, `other-ca.pem` (a CA that signed
/// none of them) and `elsewhere.pem`/`elsewhere.key` (signed by the CA for
/// `db.example.net` only).
fn make_pki() -> Result<Pki, Box<dyn std::error::Error + Send + Sync>> {
    let dir = TempDir::new("tls-pki")?;
    let ca = new_ca("reliable-executor test CA")?;
    let other = new_ca("some other CA")?;
    std::fs::write(dir.path().join("ca.pem"), ca.pem())?;
    std::fs::write(dir.path().join("other-ca.pem"), other.pem())?;
    let leaves: [(&str, Vec<String>, ExtendedKeyUsagePurpose); 3] = [
        ("server", vec!["127.0.0.1".into(), "localhost".into()], ExtendedKeyUsagePurpose::ServerAuth),
        ("client", vec!["reliable-executor-client".into()], ExtendedKeyUsagePurpose::ClientAuth),
        ("elsewhere", vec!["db.example.net".into()], ExtendedKeyUsagePurpose::ServerAuth),
    ];
    for (name, names, usage) in leaves {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &ca)?;
        std::fs::write(dir.path().join(format!("{name}.pem")), cert.pem())?;
        std::fs::write(dir.path().join(format!("{name}.key")), key.serialize_pem())?;
    }
    Ok(Pki { dir })
}

fn new_ca(name: &str) -> Result<CertifiedIssuer<'static, KeyPair>, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    CertifiedIssuer::self_signed(params, KeyPair::generate()?)
}

/// Submits `n` tasks on `storage` and waits until an executor ran them all.
async fn runs_tasks<S: Storage + Clone>(storage: S, n: usize) -> TestResult {
    let ran = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&ran);
    let handler = Handler::new("tls_task", move |_i: usize, _ctx| {
        let count = Arc::clone(&count);
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            Ok::<(), executor_core::TaskError>(())
        }
    });
    let executor = Executor::builder(storage)
        .namespace(common::unique_ns("tls"))
        .concurrency(4)
        .handler(handler)
        .build()
        .await?;
    for i in 0..n {
        TaskBuilder::new("tls_task", i, TaskOptions::new()).submit(&executor).await?;
    }
    let running = executor.start();
    let all = common::wait_for(Duration::from_secs(30), || (ran.load(Ordering::SeqCst) >= n).then_some(()));
    running.shutdown().await?;
    assert!(all.is_some(), "only {} of {n} tasks ran over TLS", ran.load(Ordering::SeqCst));
    Ok(())
}

fn assert_refused(result: executor_core::Result<impl Sized>, says: &[&str]) {
    match result {
        Ok(_) => panic!("connected, but should have been refused"),
        Err(e) => {
            let text = e.to_string();
            println!("refused as expected: {text}");
            assert!(
                !matches!(e, Error::Storage { retryable: true, .. }),
                "a refused certificate is not retryable: {e:?}"
            );
            for word in says {
                assert!(text.contains(word), "the error should mention `{word}`: {text}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_over_tls() -> TestResult {
    let _one = common::one_at_a_time_async().await;
    let pki = make_pki()?;
    let server = PrivateServer::start_tls(Backend::Redis, pki.server(), false)?;
    let url = server.url();
    assert!(url.starts_with("rediss://"), "{url}");

    // The CA that signed the server's certificate: tasks run.
    let storage = RedisStorage::builder(&url).tls_ca_file(pki.path("ca.pem")).connect().await?;
    runs_tasks(storage, 50).await?;

    // A client certificate, checked by the server against its CA.
    let storage = RedisStorage::builder(&url)
        .tls_ca_file(pki.path("ca.pem"))
        .tls_client_cert(pki.path("client.pem"), pki.path("client.key"))
        .connect()
        .await?;
    storage.counts(&executor_core::Namespace::new("tls-client-cert")?).await?;

    // Another CA: refused, saying what to check.
    let wrong = RedisStorage::builder(&url).tls_ca_file(pki.path("other-ca.pem")).connect().await;
    assert_refused(wrong, &["certificate", "tls_ca_file"]);

    // The system's CAs do not know the test CA either.
    assert_refused(RedisStorage::connect(&url).await, &["certificate"]);

    // A TLS file on a plain URL is a mistake, caught before connecting.
    let plain = url.replacen("rediss://", "redis://", 1);
    match RedisStorage::builder(&plain).tls_ca_file(pki.path("ca.pem")).connect().await {
        Err(Error::Invalid { what, reason }) => {
            assert_eq!(what, "redis url");
            assert!(reason.contains("rediss://"), "{reason}");
        }
        other => panic!("expected Invalid for a CA file on redis://, got {other:?}"),
    }
    // A CA file that is not one.
    match RedisStorage::builder(&url).tls_ca_file(pki.path("server.key")).connect().await {
        Err(Error::Invalid { what, .. }) => assert_eq!(what, "tls_ca_file"),
        other => panic!("expected Invalid for a key as CA file, got {other:?}"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_over_tls() -> TestResult {
    let _one = common::one_at_a_time_async().await;
    let pki = make_pki()?;
    let server = PrivateServer::start_tls(Backend::Redis, pki.server(), true)?;
    let url = server.url();
    assert!(url.starts_with("rediss-cluster://"), "{url}");
    let storage = RedisStorage::builder(&url).tls_ca_file(pki.path("ca.pem")).partitions(4).connect().await?;
    runs_tasks(storage, 50).await?;
    let wrong = RedisStorage::builder(&url).tls_ca_file(pki.path("other-ca.pem")).connect().await;
    assert_refused(wrong, &["certificate"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_ssl_modes() -> TestResult {
    let _one = common::one_at_a_time_async().await;
    let pki = make_pki()?;
    let server = PrivateServer::start_tls(Backend::Mysql, pki.server(), false)?;
    let base = server.url();
    let ca = pki.path("ca.pem");
    let with = |query: String| format!("{base}?{query}");
    let ca_param = |path: &Path| format!("ssl-ca={}", path.display());

    // Every mode that encrypts does: the session has a cipher.
    for mode in ["REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"] {
        let url = with(format!("ssl-mode={mode}&{}", ca_param(&ca)));
        let storage = MySqlStorage::connect(&url).await?;
        let cipher: (String, String) =
            sqlx::query_as("SHOW SESSION STATUS LIKE 'Ssl_cipher'").fetch_one(storage.pool()).await?;
        assert!(!cipher.1.is_empty(), "ssl-mode={mode} left the session unencrypted");
        if mode == "VERIFY_IDENTITY" {
            runs_tasks(storage, 50).await?;
        }
    }

    // VERIFY_CA with a CA that signed nothing here: refused.
    let url = with(format!("ssl-mode=VERIFY_CA&{}", ca_param(&pki.path("other-ca.pem"))));
    assert_refused(MySqlStorage::connect(&url).await, &["certificate", "ssl-ca"]);

    // VERIFY_IDENTITY against a certificate for another host: refused, while
    // VERIFY_CA (no host check) accepts the same server.
    let other_server = PrivateServer::start_tls(
        Backend::Mysql,
        ServerTls { cert: pki.path("elsewhere.pem"), key: pki.path("elsewhere.key"), ca: ca.clone() },
        false,
    )?;
    let other_base = other_server.url();
    let url = format!("{other_base}?ssl-mode=VERIFY_IDENTITY&{}", ca_param(&ca));
    assert_refused(MySqlStorage::connect(&url).await, &["certificate"]);
    let url = format!("{other_base}?ssl-mode=VERIFY_CA&{}", ca_param(&ca));
    MySqlStorage::connect(&url).await?;
    Ok(())
}
