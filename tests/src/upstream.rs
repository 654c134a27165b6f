//! The connection to the real API server the test server forwards to as a proxy: where it
//! is, its CA, and one request per fresh connection.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// Where the real server is and how to reach it.
#[derive(Clone)]
pub struct Upstream {
    host: String,
    port: u16,
    /// `None` for plain HTTP.
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Why an upstream could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("upstream URL {0:?} is not http(s)://host:port")]
    Url(String),
    #[error("upstream CA certificate: {0}")]
    Ca(String),
}

impl Upstream {
    /// `url` is the real server (`https://127.0.0.1:6443`); `ca_pem` the CA that signed its
    /// serving certificate (the kubeconfig's `certificate-authority-data`).
    pub fn new(url: &str, ca_pem: Option<&[u8]>) -> Result<Self, UpstreamError> {
        let uri: http::Uri = url.parse().map_err(|_| UpstreamError::Url(url.into()))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(UpstreamError::Url(url.into())),
        };
        let host = uri
            .host()
            .ok_or_else(|| UpstreamError::Url(url.into()))?
            .trim_matches(['[', ']'])
            .to_string();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(ca_pem.unwrap_or_default()) {
                let cert = cert.map_err(|e| UpstreamError::Ca(e.to_string()))?;
                roots
                    .add(cert)
                    .map_err(|e| UpstreamError::Ca(e.to_string()))?;
            }
            if roots.is_empty() {
                return Err(UpstreamError::Ca("no certificate given".into()));
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| UpstreamError::Ca(e.to_string()))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            let name =
                ServerName::try_from(host.clone()).map_err(|_| UpstreamError::Url(url.into()))?;
            Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
        } else {
            None
        };
        Ok(Upstream { host, port, tls })
    }

    /// Sends one request on a fresh connection and reads the whole answer.
    pub(crate) async fn send(&self, req: Request<Full<Bytes>>) -> std::io::Result<Response<Bytes>> {
        let response = self.open(req).await?;
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(std::io::Error::other)?
            .to_bytes();
        Ok(Response::from_parts(parts, body))
    }

    /// Sends one request on a fresh connection; the answer's body is read as it comes.
    pub(crate) async fn open(
        &self,
        req: Request<Full<Bytes>>,
    ) -> std::io::Result<Response<Incoming>> {
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port)).await?;
        let _ = stream.set_nodelay(true);
        let other = std::io::Error::other;
        let response = match &self.tls {
            Some((connector, name)) => {
                let stream = connector.connect(name.clone(), stream).await?;
                exchange(hyper_util::rt::TokioIo::new(stream), req).await
            }
            None => exchange(hyper_util::rt::TokioIo::new(stream), req).await,
        }
        .map_err(other)?;
        Ok(response)
    }
}

async fn exchange<T>(io: T, req: Request<Full<Bytes>>) -> Result<Response<Incoming>, hyper::Error>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    tokio::spawn(connection);
    sender.send_request(req).await
}

impl Upstream {
    pub(crate) fn authority(&self) -> HeaderValue {
        let host = if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        };
        HeaderValue::from_str(&host).expect("host:port is a valid header")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_needs_a_ca_for_https() {
        assert!(matches!(
            Upstream::new("https://127.0.0.1:6443", None),
            Err(UpstreamError::Ca(_))
        ));
        assert!(Upstream::new("http://127.0.0.1:8080", None).is_ok());
        assert!(matches!(
            Upstream::new("ftp://x", None),
            Err(UpstreamError::Url(_))
        ));
    }
}
