//! Why a first connection failed, when TLS is to blame. fred keeps only the
//! text of the error that ended its handshake, so the handshake is run once
//! more here, on the same settings, where rustls' typed error is kept.

use std::{
    io::{ErrorKind as IoKind, Read, Write},
    net::{TcpStream, ToSocketAddrs},
    sync::Arc,
    time::Duration,
};

use executor_core::{Error, tls::TlsProblem};
use fred::{error::ErrorKind, types::config::Server};
use rustls::{ClientConfig, ClientConnection, RootCertStore, pki_types::ServerName};

use crate::error::{storage, tls_refused};

/// Longest wait for each step (connect, write, read) of a probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The error of a first connection. With TLS (`config`), a handshake the
/// server refuses ([`TlsProblem`]) or a server that answers in plain text
/// becomes a non-retryable error that says what is wrong and which setting
/// fixes it ([`tls_refused`]). Without TLS, a server that answers a TLS handshake
/// means the URL should have been `rediss://`. Anything else (Redis is
/// down, or the handshake succeeds this time) is fred's error, as
/// [`storage`] says.
pub(super) async fn connect_error(
    e: fred::error::Error,
    config: Option<Arc<ClientConfig>>,
    servers: &[Server],
) -> Error {
    // These come after the handshake, or instead of it.
    let after_handshake = matches!(
        e.kind(),
        ErrorKind::Auth
            | ErrorKind::Config
            | ErrorKind::Url
            | ErrorKind::InvalidArgument
            | ErrorKind::InvalidCommand
    );
    if after_handshake {
        return storage(e);
    }
    let tls = config.is_some();
    let Some(config) = config.or_else(trust_nothing) else { return storage(e) };
    for server in servers {
        let host = server.host.to_string();
        let name = server.tls_server_name.as_deref().unwrap_or(&host).to_owned();
        let (port, config) = (server.port, Arc::clone(&config));
        let outcome = tokio::task::spawn_blocking(move || probe(config, &host, port, name, tls)).await;
        let problem = match outcome.ok().flatten() {
            Some(Probe::Refused(refused)) if tls => TlsProblem::of(&refused).map(|p| (p, refused.into())),
            Some(Probe::AnswersPlain) if tls => Some((TlsProblem::NotTls, e.clone().into())),
            // An empty set of trusted CAs refuses every certificate: the
            // server spoke TLS.
            Some(Probe::Refused(rustls::Error::InvalidCertificate(_)) | Probe::Completed) if !tls => {
                Some((TlsProblem::TlsOnly, e.clone().into()))
            }
            _ => None,
        };
        if let Some((problem, source)) = problem {
            return tls_refused(problem, &format!("{}:{}", server.host, server.port), source);
        }
    }
    storage(e)
}

/// What a server did with a probe's handshake.
#[derive(Debug)]
enum Probe {
    /// The handshake completed and a reply came.
    Completed,
    /// rustls ended it with this error.
    Refused(rustls::Error),
    /// No TLS answer came, and a plain-text `PING` got a RESP reply.
    AnswersPlain,
}

/// Runs a TLS handshake with `host`:`port` on `config` and sends a `PING`:
/// a server that refuses the client's certificate says so after the
/// client's last handshake message (TLS 1.3), so the reply is read too.
/// With `tls` (the URL asked for it), a server that does not answer is
/// asked a plain-text `PING` too. `None` when there was nothing to judge
/// (no connection, the connection closed, no answer).
fn probe(config: Arc<ClientConfig>, host: &str, port: u16, name: String, tls: bool) -> Option<Probe> {
    let name = ServerName::try_from(name).ok()?;
    let mut conn = match ClientConnection::new(config, name) {
        Ok(conn) => conn,
        Err(e) => return Some(Probe::Refused(e)),
    };
    let mut tcp = connect(host, port)?;
    let mut stream = rustls::Stream::new(&mut conn, &mut tcp);
    let mut reply = [0; 64];
    match stream.write_all(b"PING\r\n").and_then(|()| stream.read(&mut reply)) {
        Ok(_) => Some(Probe::Completed),
        // A plain Redis reads a TLS hello as the start of an inline command
        // and waits for the rest.
        Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {
            (tls && answers_plain(host, port)).then_some(Probe::AnswersPlain)
        }
        Err(e) => executor_core::tls::find_rustls_error(&e).cloned().map(Probe::Refused),
    }
}

/// Whether `host`:`port` answers a plain-text `PING` with a RESP reply
/// (`+PONG`, or an error such as `-NOAUTH`): its first byte is the reply's
/// type.
fn answers_plain(host: &str, port: u16) -> bool {
    let Some(mut tcp) = connect(host, port) else { return false };
    let mut first = [0; 1];
    tcp.write_all(b"PING\r\n").is_ok()
        && tcp.read_exact(&mut first).is_ok()
        && matches!(first[0], b'+' | b'-')
}

fn connect(host: &str, port: u16) -> Option<TcpStream> {
    let addr = (host, port).to_socket_addrs().ok()?.next()?;
    let tcp = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).ok()?;
    tcp.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    tcp.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
    Some(tcp)
}

/// A client that trusts no CA, to learn whether a server speaks TLS.
fn trust_nothing() -> Option<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth();
    Some(Arc::new(config))
}
