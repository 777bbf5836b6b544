//! A TCP proxy in front of a test server, for the tests of a store call
//! whose answer is lost (a submit's `Error::OutcomeUnknown`): it forwards both ways until [`Proxy::cut_after`] arms it
//! with a marker (a task id, a payload). The request that carries the
//! marker is forwarded, its answer is withheld until the server has sent
//! it (so the server ran the request), and then the connection is cut
//! both ways: the client sees its connection close after its request was
//! sent. [`Proxy::refuse`] cuts every connection and turns new ones away,
//! so nothing reaches the server.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    task::AbortHandle,
};

/// The proxy; it stops (and cuts its connections) on drop.
#[derive(Debug)]
pub struct Proxy {
    /// The loopback port it listens on.
    pub port: u16,
    shared: Arc<Shared>,
    accept: AbortHandle,
}

#[derive(Debug, Default)]
struct Shared {
    /// The marker of the request whose answer is lost; one cut each.
    marker: Mutex<Option<Vec<u8>>>,
    refuse: AtomicBool,
    cuts: AtomicUsize,
    conns: Mutex<Vec<AbortHandle>>,
}

impl Proxy {
    /// A proxy on a free loopback port in front of `upstream` (`host:port`).
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub async fn start(upstream: &str) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared::default());
        let upstream = upstream.to_owned();
        let accept = {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    if shared.refuse.load(Ordering::SeqCst) {
                        drop(client);
                        continue;
                    }
                    let conn = tokio::spawn(pipe(client, upstream.clone(), Arc::clone(&shared)));
                    if let Ok(mut conns) = shared.conns.lock() {
                        conns.push(conn.abort_handle());
                    }
                }
            })
            .abort_handle()
        };
        Ok(Self { port, shared, accept })
    }

    /// Cuts the connection whose next request carries `marker`, after the
    /// server answered it and before the answer reaches the client.
    pub fn cut_after(&self, marker: &[u8]) {
        if let Ok(mut m) = self.shared.marker.lock() {
            *m = Some(marker.to_vec());
        }
    }

    /// How many connections were cut after a marked request.
    pub fn cuts(&self) -> usize {
        self.shared.cuts.load(Ordering::SeqCst)
    }

    /// Cuts every connection and closes each new one at once, so no request
    /// reaches the server any more.
    pub fn refuse(&self) {
        self.shared.refuse.store(true, Ordering::SeqCst);
        if let Ok(mut conns) = self.shared.conns.lock() {
            for conn in conns.drain(..) {
                conn.abort();
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.refuse();
    }
}

/// `url` with its host and port replaced by the proxy's, for a URL of the
/// form `scheme://[user@]host:port[/path][?query]`.
pub fn via(url: &str, port: u16) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let user = authority.rsplit_once('@').map(|(u, _)| format!("{u}@")).unwrap_or_default();
    format!("{scheme}://{user}127.0.0.1:{port}{tail}")
}

/// The `host:port` of `url` (of the form [`via`] takes).
pub fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_owned()
}

/// Forwards one connection both ways until either side closes, or until
/// the client sends the marked request.
async fn pipe(client: TcpStream, upstream: String, shared: Arc<Shared>) {
    let Ok(server) = TcpStream::connect(&upstream).await else { return };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let (mut up, mut down) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    // The end of the last request bytes, for a marker split across reads.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        tokio::select! {
            n = from_client.read(&mut up) => {
                let n = match n { Ok(0) | Err(_) => return, Ok(n) => n };
                if to_server.write_all(&up[..n]).await.is_err() {
                    return;
                }
                if marked(&shared, &mut tail, &up[..n]) {
                    // The server answers once it ran the request; the answer
                    // is read and dropped, then both sides close.
                    let _ = tokio::time::timeout(Duration::from_secs(5), from_server.read(&mut down)).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    shared.cuts.fetch_add(1, Ordering::SeqCst);
                    return;
                }
            }
            n = from_server.read(&mut down) => {
                let n = match n { Ok(0) | Err(_) => return, Ok(n) => n };
                if to_client.write_all(&down[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Whether `chunk` (after `tail`) holds the armed marker; disarms it when
/// it does.
fn marked(shared: &Shared, tail: &mut Vec<u8>, chunk: &[u8]) -> bool {
    let Ok(mut marker) = shared.marker.lock() else { return false };
    let Some(m) = marker.as_ref() else {
        tail.clear();
        return false;
    };
    tail.extend_from_slice(chunk);
    let found = tail.windows(m.len()).any(|w| w == m.as_slice());
    let keep = m.len().saturating_sub(1).min(tail.len());
    tail.drain(..tail.len() - keep);
    if found {
        *marker = None;
    }
    found
}
