//! What went wrong in a TLS handshake with a store, told by the type of
//! rustls' error, and the error a storage driver returns for it.
//!
//! The problems, their words and the way to find rustls' error inside a
//! driver's error are the same for every store; only the setting that fixes
//! each problem is the driver's, so a driver gives that when it builds a
//! [`TlsFailure`]. `TlsProblem::of` and `find_rustls_error` need the
//! `tls` feature (rustls' error types only, no crypto provider); the rest
//! is here without it, so a driver built without TLS can still say that a
//! URL asks for it.

use std::borrow::Cow;

use crate::{BoxError, Error};

/// What went wrong in a TLS handshake. Each is a setting of the client or
/// of the server, so a retry meets the same refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsProblem {
    /// The server's certificate has expired.
    Expired,
    /// The server's certificate is not valid yet.
    NotYetValid,
    /// The server's certificate is signed by a CA the client does not trust.
    UnknownIssuer,
    /// The server's certificate does not list the host name connected to.
    WrongHost,
    /// The server's certificate has a bad signature.
    BadSignature,
    /// The server's certificate is refused for another reason, or the
    /// server presented none.
    OtherCertificate,
    /// The server refused the client's certificate.
    ClientCertRefused,
    /// The server requires a client certificate and none was presented.
    ClientCertMissing,
    /// The server and the client share no TLS version or cipher suite.
    NoCommonProtocol,
    /// What came back is no TLS record: something that speaks plain text
    /// answers on this port.
    NotTls,
    /// A plain-text connection to a server that speaks only TLS.
    TlsOnly,
    /// TLS did not start and no rustls error says why: the server offers
    /// no TLS, or a TLS file the client was given is not usable.
    NotStarted,
    /// TLS was asked for, but the driver was built without TLS.
    NotBuilt,
}

impl TlsProblem {
    /// The problem `e` reports; `None` for an error that says nothing about
    /// the certificates or the protocol (an I/O error wrapped by rustls).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn of(e: &rustls::Error) -> Option<Self> {
        use rustls::{AlertDescription as Alert, CertificateError as Cert, Error as Tls};
        Some(match e {
            Tls::InvalidCertificate(Cert::Expired | Cert::ExpiredContext { .. }) => Self::Expired,
            Tls::InvalidCertificate(Cert::NotValidYet | Cert::NotValidYetContext { .. }) => Self::NotYetValid,
            Tls::InvalidCertificate(Cert::UnknownIssuer) => Self::UnknownIssuer,
            Tls::InvalidCertificate(Cert::NotValidForName | Cert::NotValidForNameContext { .. }) => {
                Self::WrongHost
            }
            Tls::InvalidCertificate(Cert::BadSignature) => Self::BadSignature,
            Tls::InvalidCertificate(_) | Tls::NoCertificatesPresented => Self::OtherCertificate,
            Tls::AlertReceived(
                Alert::BadCertificate
                | Alert::UnsupportedCertificate
                | Alert::CertificateRevoked
                | Alert::CertificateExpired
                | Alert::CertificateUnknown
                | Alert::UnknownCA,
            ) => Self::ClientCertRefused,
            Tls::AlertReceived(Alert::CertificateRequired | Alert::NoCertificate) => Self::ClientCertMissing,
            Tls::AlertReceived(
                Alert::HandshakeFailure | Alert::ProtocolVersion | Alert::InsufficientSecurity,
            )
            | Tls::PeerIncompatible(_) => Self::NoCommonProtocol,
            // Plain text read as TLS records: a content type or length no
            // TLS peer sends.
            Tls::InvalidMessage(_) | Tls::InappropriateMessage { .. } | Tls::PeerSentOversizedRecord => {
                Self::NotTls
            }
            _ => return None,
        })
    }

    /// What is wrong, in words.
    pub fn words(self) -> &'static str {
        match self {
            Self::Expired => "the server's certificate has expired",
            Self::NotYetValid => "the server's certificate is not valid yet",
            Self::UnknownIssuer => {
                "the server's certificate is signed by a CA this client does not trust (unknown issuer)"
            }
            Self::WrongHost => "the server's certificate is not for this host name",
            Self::BadSignature => "the server's certificate has a bad signature",
            Self::OtherCertificate => "the server's certificate is not acceptable",
            Self::ClientCertRefused => "the server refused this client's certificate",
            Self::ClientCertMissing => "the server requires a client certificate and none was presented",
            Self::NoCommonProtocol => "the server and this client share no TLS version or cipher suite",
            Self::NotTls => "the server does not speak TLS on this port",
            Self::TlsOnly => "the server speaks only TLS: it refuses plain-text connections",
            Self::NotStarted => {
                "TLS did not start: the server offers no TLS, or a TLS file this client was given is not \
                 usable"
            }
            Self::NotBuilt => "TLS is asked for, but the driver was built without its `tls` feature",
        }
    }
}

/// A connection refused for a [`TlsProblem`]: says what is wrong and which
/// setting fixes it, with the error that told as its source. It converts
/// into an [`Error::Storage`] that is not retryable: the same settings meet
/// the same refusal.
#[derive(Debug, thiserror::Error)]
#[error("TLS with {server} failed: {} ({source}): {fix}", .problem.words())]
pub struct TlsFailure {
    server: Cow<'static, str>,
    problem: TlsProblem,
    fix: &'static str,
    #[source]
    source: BoxError,
}

impl TlsFailure {
    /// `problem`, met with `server` (as the message names it: `MySQL`,
    /// `Redis at 10.0.0.5:6380`); `fix` names the driver's setting that
    /// fixes it, and `source` is the error that told (the driver's, or
    /// rustls').
    pub fn new(
        server: impl Into<Cow<'static, str>>,
        problem: TlsProblem,
        fix: &'static str,
        source: impl Into<BoxError>,
    ) -> Self {
        Self { server: server.into(), problem, fix, source: source.into() }
    }

    /// What went wrong.
    pub fn problem(&self) -> TlsProblem {
        self.problem
    }

    /// The setting that fixes it.
    pub fn fix(&self) -> &'static str {
        self.fix
    }
}

impl From<TlsFailure> for Error {
    fn from(failure: TlsFailure) -> Self {
        Error::storage(failure, false)
    }
}

/// The first rustls error in `e` or its `source()` chain. An `io::Error`'s
/// `source()` skips the error it wraps (its `Display` already shows it), so
/// that one is looked at through `get_ref()`. Only the type counts: an error
/// that merely says "certificate" is none.
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub fn find_rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(tls) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .and_then(|inner| find_rustls_error(inner))
        {
            return Some(tls);
        }
        next = e.source();
    }
    None
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use std::io;

    use rustls::{AlertDescription, CertificateError, pki_types::UnixTime};

    use super::*;

    /// An error whose source is an `io::Error`, as a driver's layer between
    /// its own error and rustls'.
    #[derive(Debug, thiserror::Error)]
    #[error("wrapped")]
    struct Wrapped(#[source] io::Error);

    fn found(e: &(dyn std::error::Error + 'static)) -> Option<TlsProblem> {
        find_rustls_error(e).and_then(TlsProblem::of)
    }

    #[test]
    fn problems_are_told_by_type_at_any_depth() {
        let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(2_000_000_000));
        let expired = rustls::Error::InvalidCertificate(CertificateError::ExpiredContext {
            time,
            not_after: UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_000_000_000)),
        });
        assert_eq!(TlsProblem::of(&expired), Some(TlsProblem::Expired));

        // Inside an io::Error, seen only through get_ref.
        let handshake = io::Error::new(io::ErrorKind::InvalidData, expired);
        assert_eq!(found(&handshake), Some(TlsProblem::Expired));
        let alert = rustls::Error::AlertReceived(AlertDescription::CertificateRequired);
        assert_eq!(found(&Wrapped(io::Error::other(alert))), Some(TlsProblem::ClientCertMissing));

        // Words are no signal: an I/O error that only says "certificate".
        let words = io::Error::new(io::ErrorKind::InvalidData, "invalid peer certificate: Expired");
        assert!(find_rustls_error(&words).is_none());
        // A rustls error about no certificate or protocol names no problem.
        assert_eq!(TlsProblem::of(&rustls::Error::HandshakeNotComplete), None);
    }

    #[test]
    fn a_failure_says_what_and_how_to_fix_and_is_not_retryable() {
        let source = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let failure = TlsFailure::new("a store", TlsProblem::UnknownIssuer, "trust its CA", source);
        assert!(std::error::Error::source(&failure).is_some_and(|s| s.is::<rustls::Error>()));
        let e = Error::from(failure);
        assert!(!e.is_retryable());
        let text = e.to_string();
        assert!(text.contains("TLS with a store failed") && text.contains("unknown issuer"), "{text}");
        assert!(text.ends_with(": trust its CA"), "{text}");
    }
}
