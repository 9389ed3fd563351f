//! TLS through rustls (ring): a certificate chain and its private key, in PEM files, become
//! the acceptor that pgwire's `negotiate_tls` uses when a client sends SSLRequest.

use crate::error::ServerError;
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::rustls;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// The server's TLS setup: the acceptor, and the certificate's PEM (SCRAM's channel
/// binding hashes the certificate).
#[derive(Clone)]
pub struct TlsConfig {
    acceptor: TlsAcceptor,
    cert_pem: Arc<Vec<u8>>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsConfig")
    }
}

impl TlsConfig {
    /// Reads a PEM certificate chain (the server's certificate first) and its PEM private
    /// key (PKCS#8, PKCS#1 or SEC1). The key file must be readable by its owner only, as
    /// PostgreSQL requires of `ssl_key_file`.
    pub fn load(cert: &Path, key: &Path) -> Result<TlsConfig, ServerError> {
        let cert_pem = std::fs::read(cert).map_err(|e| {
            ServerError::Tls(format!(
                "cannot read the certificate {}: {e}",
                cert.display()
            ))
        })?;
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                ServerError::Tls(format!("{} is not a PEM certificate: {e}", cert.display()))
            })?;
        if chain.is_empty() {
            return Err(ServerError::Tls(format!(
                "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                cert.display()
            )));
        }
        crate::auth::check_private(key).map_err(|reason| {
            ServerError::Tls(format!("the private key {}: {reason}", key.display()))
        })?;
        let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
            ServerError::Tls(format!(
                "cannot read a PEM private key from {}: {e}",
                key.display()
            ))
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ServerError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key_der)
            .map_err(|e| {
                ServerError::Tls(format!(
                    "the certificate {} and the key {} do not make a TLS identity: {e}",
                    cert.display(),
                    key.display()
                ))
            })?;
        // PostgreSQL 17's direct TLS (sslnegotiation=direct) requires this ALPN name.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(TlsConfig {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            cert_pem: Arc::new(cert_pem),
        })
    }

    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }

    pub(crate) fn cert_pem(&self) -> &[u8] {
        &self.cert_pem
    }
}
