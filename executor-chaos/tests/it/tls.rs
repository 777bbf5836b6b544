//! TLS to Redis (`rediss://`, `rediss-cluster://`), MariaDB (`ssl-mode`)
//! and PostgreSQL (`sslmode`) against private servers on free loopback
//! ports, with a CA, server and client certificates this test makes (rcgen)
//! in a temp dir. The right CA connects and runs tasks. Each store refuses,
//! with a non-retryable `Error::Storage` that says what is wrong and names
//! the setting that fixes it: a server certificate of an unknown issuer, an
//! expired one, one not valid yet, one for another host, a client
//! certificate the server refuses, and TLS to a server that speaks none.
//! One TLS server per store serves every case: it is given each server
//! certificate in turn while it runs.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use executor_chaos::{
    process::{Signal, TempDir},
    server::{Backend, PrivateServer, ServerTls},
};
use executor_core::{Error, Executor, Handler, TaskBuilder, TaskOptions, storage::Storage};
use executor_mysql::MySqlStorage;
use executor_postgres::PostgresStorage;
use executor_redis::RedisStorage;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, date_time_ymd,
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

/// Makes `ca.pem` (the CA), `other-ca.pem` (a CA that signed only
/// `intruder`), and a `.pem` and `.key` for each of: `server` (127.0.0.1
/// and `localhost`), `expired` (the same names, valid only in 2000),
/// `future` (the same names, valid from 2999), `elsewhere` (for
/// `db.example.net` only), `client` (a client certificate), and `intruder`
/// (a client certificate signed by the other CA).
fn make_pki() -> Result<Pki, Box<dyn std::error::Error + Send + Sync>> {
    let dir = TempDir::new("tls-pki")?;
    let ca = new_ca("reliable-executor test CA")?;
    let other = new_ca("some other CA")?;
    std::fs::write(dir.path().join("ca.pem"), ca.pem())?;
    std::fs::write(dir.path().join("other-ca.pem"), other.pem())?;
    let here = || vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    let (server, client) = (ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth);
    let valid = None;
    let leaves = [
        ("server", here(), server.clone(), valid, &ca),
        ("expired", here(), server.clone(), Some((2000, 2001)), &ca),
        ("future", here(), server.clone(), Some((2999, 3000)), &ca),
        ("elsewhere", vec!["db.example.net".into()], server, valid, &ca),
        ("client", vec!["reliable-executor-client".into()], client.clone(), valid, &ca),
        ("intruder", vec!["reliable-executor-client".into()], client, valid, &other),
    ];
    for (name, names, usage, years, issuer) in leaves {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![usage];
        if let Some((from, to)) = years {
            params.not_before = date_time_ymd(from, 1, 1);
            params.not_after = date_time_ymd(to, 1, 1);
        }
        let cert = params.signed_by(&key, issuer)?;
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
async fn runs_tasks<S: executor_core::storage::ExecutorStorage + Clone>(storage: S, n: usize) -> TestResult {
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

/// Asserts that a connect was refused with a non-retryable
/// `Error::Storage` whose text holds each of `says` (what is wrong, in
/// words, and the setting that fixes it).
#[track_caller]
fn assert_refused(result: executor_core::Result<impl Sized>, says: &[&str]) {
    match result {
        Ok(_) => panic!("connected, but should have been refused (expected: {says:?})"),
        Err(e @ Error::Storage { retryable: false, .. }) => {
            let text = e.to_string();
            println!("refused as expected: {text}");
            assert!(!e.is_retryable());
            for word in says {
                assert!(text.contains(word), "the error should mention `{word}`: {text}");
            }
        }
        Err(e) => panic!("expected a non-retryable Error::Storage saying {says:?}, got {e:?}"),
    }
}

/// The refusals of a TLS Redis (standalone or a one-node cluster), whose
/// certificate this changes and puts back; `plain` is a Redis without TLS.
async fn redis_refusals(server: &mut PrivateServer, plain: &PrivateServer, pki: &Pki) -> TestResult {
    let url = server.url();
    let builder = || RedisStorage::builder(&url).partitions(4);
    let ca = pki.path("ca.pem");

    let wrong_ca = builder().tls_ca_file(pki.path("other-ca.pem")).connect().await;
    assert_refused(wrong_ca, &["TLS with Redis", "unknown issuer", "RedisStorageBuilder::tls_ca_file"]);
    // The system's CAs do not know the test CA either.
    let system = builder().connect().await;
    assert_refused(system, &["unknown issuer", "RedisStorageBuilder::tls_ca_file"]);

    let intruder = builder()
        .tls_ca_file(&ca)
        .tls_client_cert(pki.path("intruder.pem"), pki.path("intruder.key"))
        .connect()
        .await;
    assert_refused(intruder, &["refused this client's certificate", "RedisStorageBuilder::tls_client_cert"]);

    for (cert, says) in [
        ("expired", ["has expired", "tls-cert-file"]),
        ("future", ["not valid yet", "tls-cert-file"]),
        ("elsewhere", ["not for this host name", "tls-cert-file"]),
    ] {
        server.set_tls_cert(&pki.path(&format!("{cert}.pem")), &pki.path(&format!("{cert}.key")))?;
        assert_refused(builder().tls_ca_file(&ca).connect().await, &says);
    }
    // The same client connects once the server's certificate is good again.
    server.set_tls_cert(&pki.path("server.pem"), &pki.path("server.key"))?;
    builder().tls_ca_file(&ca).connect().await?;

    // TLS to a port that speaks plain text, and plain text to one that
    // speaks only TLS.
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    let to_plain = format!("{scheme}://127.0.0.1:{}", plain.port());
    let not_tls = RedisStorage::builder(&to_plain).partitions(4).tls_ca_file(&ca).connect().await;
    assert_refused(not_tls, &["does not speak TLS", "tls-port"]);
    let plain_to_tls = url.replacen("rediss", "redis", 1);
    let tls_only = RedisStorage::builder(&plain_to_tls).partitions(4).connect().await;
    assert_refused(tls_only, &["speaks only TLS", "rediss://"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_over_tls() -> TestResult {
    let _one = common::one_at_a_time_async().await;
    let pki = make_pki()?;
    let mut server = PrivateServer::start_tls(Backend::Redis, pki.server(), false)?;
    let plain = PrivateServer::start(Backend::Redis)?;
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

    redis_refusals(&mut server, &plain, &pki).await?;

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

    // A TLS server that is down is no certificate problem: retryable.
    server.down(Signal::Kill);
    match RedisStorage::builder(&url).tls_ca_file(pki.path("ca.pem")).connect().await {
        Err(e) => assert!(e.is_retryable(), "a server that is down may come back: {e:?}"),
        Ok(_) => panic!("connected to a stopped server"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_over_tls() -> TestResult {
    let _one = common::one_at_a_time_async().await;
    let pki = make_pki()?;
    let mut server = PrivateServer::start_tls(Backend::Redis, pki.server(), true)?;
    let plain = PrivateServer::start(Backend::Redis)?;
    let url = server.url();
    assert!(url.starts_with("rediss-cluster://"), "{url}");
    let storage = RedisStorage::builder(&url).tls_ca_file(pki.path("ca.pem")).partitions(4).connect().await?;
    runs_tasks(storage, 50).await?;
    redis_refusals(&mut server, &plain, &pki).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_ssl_modes() -> TestResult {
    let _one = common::one_at_a_time_async().await;
    let pki = make_pki()?;
    // The server without TLS starts meanwhile.
    let plain = std::thread::spawn(|| PrivateServer::start(Backend::Mysql));
    let mut server = PrivateServer::start_tls(Backend::Mysql, pki.server(), false)?;
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

    // A client certificate the server's CA signed is accepted.
    let client =
        format!("ssl-cert={}&ssl-key={}", pki.path("client.pem").display(), pki.path("client.key").display());
    MySqlStorage::connect(&with(format!("ssl-mode=VERIFY_IDENTITY&{}&{client}", ca_param(&ca)))).await?;

    // A CA that signed nothing here.
    let url = with(format!("ssl-mode=VERIFY_CA&{}", ca_param(&pki.path("other-ca.pem"))));
    assert_refused(MySqlStorage::connect(&url).await, &["TLS with MySQL", "unknown issuer", "ssl-ca=<file>"]);

    // A client certificate another CA signed.
    let intruder = format!(
        "ssl-cert={}&ssl-key={}",
        pki.path("intruder.pem").display(),
        pki.path("intruder.key").display()
    );
    let url = with(format!("ssl-mode=VERIFY_IDENTITY&{}&{intruder}", ca_param(&ca)));
    assert_refused(MySqlStorage::connect(&url).await, &["refused this client's certificate", "ssl-cert="]);

    // The server's certificate expired, not valid yet, for another host
    // (which VERIFY_CA, without the host check, accepts).
    let verify = |mode: &str| with(format!("ssl-mode={mode}&{}", ca_param(&ca)));
    for (cert, says) in [("expired", ["has expired", "ssl_cert"]), ("future", ["not valid yet", "ssl_cert"])]
    {
        server.set_tls_cert(&pki.path(&format!("{cert}.pem")), &pki.path(&format!("{cert}.key")))?;
        assert_refused(MySqlStorage::connect(&verify("VERIFY_CA")).await, &says);
    }
    server.set_tls_cert(&pki.path("elsewhere.pem"), &pki.path("elsewhere.key"))?;
    let wrong_host = MySqlStorage::connect(&verify("VERIFY_IDENTITY")).await;
    assert_refused(wrong_host, &["not for this host name", "ssl-mode=VERIFY_CA"]);
    MySqlStorage::connect(&verify("VERIFY_CA")).await?;
    server.set_tls_cert(&pki.path("server.pem"), &pki.path("server.key"))?;
    MySqlStorage::connect(&verify("VERIFY_IDENTITY")).await?;

    // TLS asked of a server that offers none.
    let plain = plain.join().map_err(|_| "starting the plain MariaDB panicked")??;
    let url = format!("{}?ssl-mode=REQUIRED", plain.url());
    assert_refused(MySqlStorage::connect(&url).await, &["offers no TLS", "ssl-mode="]);

    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_ssl_modes() -> TestResult {
    let _one = common::one_at_a_time_async().await;
    let pki = make_pki()?;
    let mut server = PrivateServer::start_tls(Backend::Postgres, pki.server(), false)?;
    let base = server.url();
    let ca = pki.path("ca.pem");
    let with = |query: String| format!("{base}?{query}");
    let root = |path: &Path| format!("sslrootcert={}", path.display());
    let verify = |mode: &str| with(format!("sslmode={mode}&{}", root(&ca)));

    // Every mode that encrypts does; verify-full runs tasks.
    for mode in ["require", "verify-ca", "verify-full"] {
        let storage = PostgresStorage::connect(&verify(mode)).await?;
        let ssl: bool = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(storage.pool())
            .await?;
        assert!(ssl, "sslmode={mode} left the session unencrypted");
        if mode == "verify-full" {
            runs_tasks(storage, 50).await?;
        }
    }
    let client =
        format!("sslcert={}&sslkey={}", pki.path("client.pem").display(), pki.path("client.key").display());
    PostgresStorage::connect(&format!("{}&{client}", verify("verify-full"))).await?;

    let url = with(format!("sslmode=verify-ca&{}", root(&pki.path("other-ca.pem"))));
    assert_refused(
        PostgresStorage::connect(&url).await,
        &["TLS with PostgreSQL", "unknown issuer", "sslrootcert=<file>"],
    );

    let intruder = format!(
        "sslcert={}&sslkey={}",
        pki.path("intruder.pem").display(),
        pki.path("intruder.key").display()
    );
    let url = format!("{}&{intruder}", verify("verify-full"));
    assert_refused(PostgresStorage::connect(&url).await, &["refused this client's certificate", "sslcert="]);

    for (cert, says) in
        [("expired", ["has expired", "ssl_cert_file"]), ("future", ["not valid yet", "ssl_cert_file"])]
    {
        server.set_tls_cert(&pki.path(&format!("{cert}.pem")), &pki.path(&format!("{cert}.key")))?;
        assert_refused(PostgresStorage::connect(&verify("verify-ca")).await, &says);
    }
    server.set_tls_cert(&pki.path("elsewhere.pem"), &pki.path("elsewhere.key"))?;
    let wrong_host = PostgresStorage::connect(&verify("verify-full")).await;
    assert_refused(wrong_host, &["not for this host name", "sslmode=verify-ca"]);
    PostgresStorage::connect(&verify("verify-ca")).await?;
    server.set_tls_cert(&pki.path("server.pem"), &pki.path("server.key"))?;
    PostgresStorage::connect(&verify("verify-full")).await?;

    // TLS asked of a server that offers none.
    server.set_tls_offered(false)?;
    assert_refused(PostgresStorage::connect(&verify("require")).await, &["offers no TLS", "sslmode="]);
    server.set_tls_offered(true)?;
    PostgresStorage::connect(&verify("verify-full")).await?;
    Ok(())
}
