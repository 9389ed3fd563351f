//! A connection as pgwire's startup and authentication handlers see it: the framed socket
//! plus pgwire's per-connection state, as `ClientInfo + Sink<PgWireBackendMessage>`. Trust
//! authentication uses pgwire's startup helpers on it; SCRAM (pgwire's mechanism, in `auth`)
//! takes the same type.

use crate::frame::{FrameCodec, FrameError};
use bytes::BytesMut;
use futures::{Sink, Stream};
use pgwire::api::{ClientInfo, PgWireConnectionState, SessionExtensions};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, ProtocolVersion};
use pgwire::tokio::server::MaybeTls;
use rustls_pki_types::CertificateDer;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio_util::codec::{Framed, FramedParts};

/// The framed socket of one connection.
pub struct Client {
    framed: Framed<MaybeTls, FrameCodec>,
}

/// A plain TCP connection taken off its runtime: the socket (blocking again), the codec
/// with pgwire's connection state, and the bytes already read past the last message.
pub struct PlainParts {
    pub stream: std::net::TcpStream,
    pub codec: FrameCodec,
    pub read_buf: BytesMut,
}

impl Client {
    pub fn new(framed: Framed<MaybeTls, FrameCodec>) -> Client {
        Client { framed }
    }

    /// The socket as a blocking std socket, if the connection is plain TCP (not TLS); the
    /// client unchanged otherwise. Call it inside the runtime (`Runtime::enter`), with
    /// nothing left to write. An error: the socket could not leave the runtime's reactor,
    /// and is closed.
    pub fn into_plain(self) -> Result<std::io::Result<PlainParts>, Box<Client>> {
        let parts = self.framed.into_parts();
        debug_assert!(parts.write_buf.is_empty(), "unwritten bytes at the switch");
        match parts.io {
            MaybeTls::Plain(tcp) => Ok(tcp.into_std().and_then(|stream| {
                stream.set_nonblocking(false)?;
                Ok(PlainParts {
                    stream,
                    codec: parts.codec,
                    read_buf: parts.read_buf,
                })
            })),
            io => {
                let mut rebuilt = FramedParts::new(io, parts.codec);
                rebuilt.read_buf = parts.read_buf;
                rebuilt.write_buf = parts.write_buf;
                Err(Box::new(Client::new(Framed::from_parts(rebuilt))))
            }
        }
    }
}

impl Stream for Client {
    type Item = Result<PgWireFrontendMessage, FrameError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.framed).poll_next(cx)
    }
}

impl Sink<PgWireBackendMessage> for Client {
    type Error = std::io::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.framed).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: PgWireBackendMessage) -> std::io::Result<()> {
        Pin::new(&mut self.framed).start_send(item)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.framed).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.framed).poll_close(cx)
    }
}

impl ClientInfo for Client {
    fn socket_addr(&self) -> SocketAddr {
        self.framed.codec().client().socket_addr()
    }

    fn is_secure(&self) -> bool {
        self.framed.codec().client().is_secure()
    }

    fn protocol_version(&self) -> ProtocolVersion {
        self.framed.codec().client().protocol_version()
    }

    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.framed
            .codec_mut()
            .client_mut()
            .set_protocol_version(version);
    }

    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.framed.codec().client().pid_and_secret_key()
    }

    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.framed
            .codec_mut()
            .client_mut()
            .set_pid_and_secret_key(pid, secret_key);
    }

    fn state(&self) -> PgWireConnectionState {
        self.framed.codec().client().state()
    }

    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.framed.codec_mut().client_mut().set_state(new_state);
    }

    fn transaction_status(&self) -> TransactionStatus {
        self.framed.codec().client().transaction_status()
    }

    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.framed
            .codec_mut()
            .client_mut()
            .set_transaction_status(new_status);
    }

    fn metadata(&self) -> &HashMap<String, String> {
        self.framed.codec().client().metadata()
    }

    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.framed.codec_mut().client_mut().metadata_mut()
    }

    fn session_extensions(&self) -> &SessionExtensions {
        self.framed.codec().client().session_extensions()
    }

    fn sni_server_name(&self) -> Option<&str> {
        self.framed.codec().client().sni_server_name()
    }

    fn client_certificates<'a>(&self) -> Option<&[CertificateDer<'a>]> {
        self.framed.codec().client().client_certificates()
    }
}
