//! One window to the receiver, over OTLP/gRPC (tonic, opentelemetry-proto's
//! generated client) or OTLP/HTTP (a protobuf POST through hyper), plain
//! or TLS (rustls, ring): whichever, connected to the addresses resolved at
//! start, and what the receiver answers parsed here, in the confined
//! process.

use std::future::Future;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use flate2::write::GzEncoder;
use flate2::Compression;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Uri;
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_client::ProfilesServiceClient;
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use prost::Message;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tonic::codec::CompressionEncoding;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};
use tonic::transport::{Channel, Endpoint};

use super::{Dropped, ExportSettings, Headers, Protocol, HTTP_PROFILES_PATH, SEND_TIMEOUT};

#[derive(Debug, Error)]
pub enum TransportError {
    #[error("--otlp-endpoint {0}: {1}")]
    Endpoint(String, String),
    #[error("reading the TLS roots {0}: {1}")]
    Roots(String, String),
    #[error("cannot connect: {0}")]
    Connect(io::Error),
    #[error("no answer in time: {0}")]
    Timeout(String),
    #[error("the receiver answered {0}")]
    Answered(String),
    #[error("the receiver rejected {0} profiles: {1}")]
    Rejected(i64, String),
}

impl TransportError {
    /// How a failed try is counted.
    pub fn reason(&self) -> Dropped {
        match self {
            TransportError::Connect(_) => Dropped::Unreachable,
            TransportError::Timeout(_) => Dropped::Timeout,
            _ => Dropped::Rejected,
        }
    }
}

/// A receiver's answer or a connection's failure, as gRPC words it.
fn status_error(status: tonic::Status) -> TransportError {
    use tonic::Code;
    match status.code() {
        Code::Unavailable => TransportError::Connect(io::Error::other(status.to_string())),
        Code::DeadlineExceeded | Code::Cancelled => TransportError::Timeout(status.to_string()),
        _ => TransportError::Answered(status.to_string()),
    }
}

/// The way to the receiver.
pub enum Transport {
    Grpc(ProfilesServiceClient<Channel>),
    Http { uri: Uri, connector: Connector },
}

impl Transport {
    /// The transport `settings` ask for; a gRPC channel is made (inside a
    /// runtime) but not connected.
    pub fn new(settings: &ExportSettings) -> Result<Transport, TransportError> {
        let bad = |why: &str| TransportError::Endpoint(settings.endpoint.clone(), why.to_owned());
        let uri: Uri = settings.endpoint.parse().map_err(|_| bad("not a URL"))?;
        let host = uri.host().ok_or_else(|| bad("no host"))?.to_owned();
        let tls = match uri.scheme_str() {
            Some("https") => Some(tls(settings, &host)?),
            Some("http") => None,
            _ => return Err(bad("not http:// or https://")),
        };
        let connector = Connector {
            addresses: settings.addresses.clone().into(),
            tls,
        };
        Ok(match settings.protocol {
            Protocol::Grpc => {
                // The connector makes the TLS session itself (tonic's own
                // refuses an https URI without its TLS feature).
                let plain = format!("http://{}", uri.authority().map_or("", |a| a.as_str()));
                let channel = Endpoint::from_shared(plain)
                    .map_err(|e| bad(&e.to_string()))?
                    .connect_timeout(SEND_TIMEOUT)
                    .timeout(SEND_TIMEOUT)
                    .connect_with_connector_lazy(connector);
                Transport::Grpc(
                    ProfilesServiceClient::new(channel).send_compressed(CompressionEncoding::Gzip),
                )
            }
            Protocol::HttpProtobuf => {
                let uri = match uri.path() {
                    "" | "/" => format!(
                        "{}://{}{HTTP_PROFILES_PATH}",
                        uri.scheme_str().unwrap_or("http"),
                        uri.authority().map_or("", |a| a.as_str())
                    )
                    .parse()
                    .map_err(|_| bad("not a URL"))?,
                    _ => uri,
                };
                Transport::Http { uri, connector }
            }
        })
    }

    /// Sends one export with `headers`; succeeds when the receiver took
    /// every profile.
    pub async fn export(
        &self,
        request: ExportProfilesServiceRequest,
        headers: &Headers,
    ) -> Result<(), TransportError> {
        let answer = match self {
            Transport::Grpc(client) => {
                let mut request = tonic::Request::new(request);
                for (name, value) in headers.iter() {
                    // Headers::parse took only what these take.
                    if let (Ok(name), Ok(value)) = (
                        AsciiMetadataKey::from_bytes(name.as_bytes()),
                        AsciiMetadataValue::try_from(value),
                    ) {
                        request.metadata_mut().append(name, value);
                    }
                }
                client
                    .clone()
                    .export(request)
                    .await
                    .map_err(status_error)?
                    .into_inner()
            }
            Transport::Http { uri, connector } => post(uri, connector, &request, headers).await?,
        };
        match answer.partial_success {
            Some(partial) if partial.rejected_profiles > 0 => Err(TransportError::Rejected(
                partial.rejected_profiles,
                partial.error_message,
            )),
            _ => Ok(()),
        }
    }
}

/// The rustls client of an https endpoint: the CAs of `--otlp-ca-file`, or
/// the system's.
fn tls(
    settings: &ExportSettings,
    host: &str,
) -> Result<(tokio_rustls::TlsConnector, ServerName<'static>), TransportError> {
    let mut roots = rustls::RootCertStore::empty();
    match &settings.ca_file {
        Some(path) => {
            for cert in read_roots(path)? {
                roots.add(cert).map_err(|e| {
                    TransportError::Roots(path.display().to_string(), e.to_string())
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    if roots.is_empty() {
        return Err(TransportError::Roots(
            "of the system".to_owned(),
            "no certificate".to_owned(),
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TransportError::Roots(String::new(), e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = match settings.protocol {
        Protocol::Grpc => vec![b"h2".to_vec()],
        Protocol::HttpProtobuf => vec![b"http/1.1".to_vec()],
    };
    let name = ServerName::try_from(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
    )
    .map_err(|e| TransportError::Endpoint(settings.endpoint.clone(), e.to_string()))?;
    Ok((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
}

/// The certificates of a PEM file of CAs: at least one.
pub fn read_roots(path: &Path) -> Result<Vec<CertificateDer<'static>>, TransportError> {
    let bad = |why: String| TransportError::Roots(path.display().to_string(), why);
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no certificate".to_owned()));
    }
    Ok(certs)
}

/// A connection, plain or TLS.
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// Connects to the first of the resolved addresses that answers, and
/// makes the TLS session of an https endpoint.
#[derive(Clone)]
pub struct Connector {
    addresses: Arc<[SocketAddr]>,
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
}

impl Connector {
    async fn connect(self) -> io::Result<TokioIo<Box<dyn Stream>>> {
        let mut failed = io::Error::other("no address");
        for address in self.addresses.iter() {
            match TcpStream::connect(address).await {
                Ok(tcp) => {
                    tcp.set_nodelay(true)?;
                    let stream: Box<dyn Stream> = match &self.tls {
                        Some((tls, name)) => Box::new(tls.connect(name.clone(), tcp).await?),
                        None => Box::new(tcp),
                    };
                    return Ok(TokioIo::new(stream));
                }
                Err(e) => failed = e,
            }
        }
        Err(failed)
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<Box<dyn Stream>>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        Box::pin(self.clone().connect())
    }
}

/// An OTLP/HTTP export: the request gzip-compressed, one connection per
/// window (a window a minute keeps no connection worth holding).
async fn post(
    uri: &Uri,
    connector: &Connector,
    request: &ExportProfilesServiceRequest,
    headers: &Headers,
) -> Result<ExportProfilesServiceResponse, TransportError> {
    let mut gzip = GzEncoder::new(Vec::new(), Compression::default());
    gzip.write_all(&request.encode_to_vec())
        .map_err(TransportError::Connect)?;
    let body = gzip.finish().map_err(TransportError::Connect)?;
    let io = connector
        .clone()
        .connect()
        .await
        .map_err(TransportError::Connect)?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| TransportError::Connect(io::Error::other(e)))?;
    tokio::spawn(connection);
    let authority = uri.authority().map_or("", |a| a.as_str()).to_owned();
    let post = headers
        .iter()
        .fold(hyper::Request::post(uri.path()), |post, (name, value)| {
            post.header(name, value)
        })
        .header(hyper::header::HOST, authority)
        .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
        .header(hyper::header::CONTENT_ENCODING, "gzip")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| TransportError::Answered(e.to_string()))?;
    let response = sender
        .send_request(post)
        .await
        .map_err(|e| TransportError::Connect(io::Error::other(e)))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| TransportError::Connect(io::Error::other(e)))?
        .to_bytes();
    if !status.is_success() {
        return Err(TransportError::Answered(status.to_string()));
    }
    ExportProfilesServiceResponse::decode(body).map_err(|e| {
        TransportError::Answered(format!("{status} with a body that is no answer: {e}"))
    })
}
