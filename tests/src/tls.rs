//! HTTPS for the test server: a throw-away CA and a server certificate for 127.0.0.1 and
//! localhost, generated at start-up.
//!
//! kubectl (client-go's clientcmd) only sends a kubeconfig user's credentials over TLS, so
//! bearer-token users — and with them RBAC and `kubectl auth can-i` — need HTTPS.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A generated CA and the server configuration signed by it.
#[derive(Debug, Clone)]
pub struct Tls {
    /// The CA certificate, PEM, for `certificate-authority-data`.
    pub ca_pem: String,
    /// The CA certificate, DER, for `kube::Config::root_cert`.
    pub ca_der: Vec<u8>,
    pub server_config: Arc<rustls::ServerConfig>,
}

/// Generates a CA and a server certificate valid for 127.0.0.1 and localhost.
pub fn generate() -> Result<Tls, String> {
    let err = |e: rcgen::Error| e.to_string();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "placekit test CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    let ca =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().map_err(err)?).map_err(err)?;

    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "placekit-testserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let key = KeyPair::generate().map_err(err)?;
    let cert = params.signed_by(&key, &ca).map_err(err)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone(), CertificateDer::from(ca.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(|e| e.to_string())?;
    server_config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        ca_pem: ca.pem(),
        ca_der: ca.der().to_vec(),
        server_config: Arc::new(server_config),
    })
}
