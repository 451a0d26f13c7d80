//! TLS for a hub that listens beyond loopback: `--tls-cert` and `--tls-key`
//! (PEM). Handshakes run in each connection's own task, under the head
//! timeout (see `serve`), so a slow or hostile client never holds up
//! `accept`.

use std::path::Path;
use std::sync::Arc;

use color_eyre::eyre::{Context, Result, eyre};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A server TLS config from PEM files.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| eyre!("cannot read the certificate {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| eyre!("bad certificate PEM in {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(eyre!("no certificate in {}", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| eyre!("cannot read the private key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .wrap_err("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .wrap_err("the certificate and key do not make a TLS identity")?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
