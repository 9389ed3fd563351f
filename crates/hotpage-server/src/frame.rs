//! Framing of frontend messages. pgwire's decoders read from the whole read buffer and
//! index it without bounds checks, so a malformed message could make them read into the
//! next message or panic. Here each message is cut to exactly its declared length first,
//! its length is held to the limit before its body is read, and its layout is checked;
//! only then does pgwire decode it, from that frame alone.

use bytes::BytesMut;
use pgwire::api::{ClientInfo, DefaultClient, PgWireConnectionState};
use pgwire::error::PgWireError;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::PgWireMessageServerCodec;
use tokio_util::codec::{Decoder, Encoder};

/// The longest startup-phase message (startup packet, SSL or cancel request), as
/// PostgreSQL's MAX_STARTUP_PACKET_LENGTH.
pub const STARTUP_BYTES_MAX: usize = 10_000;

/// Why a frame could not be read: each ends the connection.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The declared length is over the limit; the body was not read.
    #[error("a message of {len} bytes is longer than the limit of {limit} bytes")]
    TooLarge { len: usize, limit: usize },
    /// Bytes that are not a valid message.
    #[error("invalid frontend message: {0}")]
    Malformed(String),
}

impl From<PgWireError> for FrameError {
    fn from(error: PgWireError) -> FrameError {
        FrameError::Malformed(error.to_string())
    }
}

/// pgwire's codec behind exact framing and a size limit.
pub struct FrameCodec {
    inner: PgWireMessageServerCodec<()>,
    max_message_bytes: usize,
}

impl FrameCodec {
    pub fn new(inner: PgWireMessageServerCodec<()>, max_message_bytes: usize) -> FrameCodec {
        FrameCodec {
            inner,
            max_message_bytes,
        }
    }

    /// The connection's state as pgwire keeps it (protocol version, metadata, keys).
    pub fn client(&self) -> &DefaultClient<()> {
        &self.inner.client_info
    }

    pub fn client_mut(&mut self) -> &mut DefaultClient<()> {
        &mut self.inner.client_info
    }
}

impl Decoder for FrameCodec {
    type Item = PgWireFrontendMessage;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, FrameError> {
        // Before startup, messages have no type byte.
        let typed = !matches!(
            self.inner.client_info.state(),
            PgWireConnectionState::AwaitingSslRequest | PgWireConnectionState::AwaitingStartup
        );
        let (offset, limit) = if typed {
            (1, self.max_message_bytes)
        } else {
            (0, STARTUP_BYTES_MAX)
        };
        let Some(header) = src.get(offset..offset + 4) else {
            return Ok(None);
        };
        let declared = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let len = usize::try_from(declared)
            .ok()
            .filter(|len| *len >= 4)
            .ok_or_else(|| FrameError::Malformed(format!("invalid message length {declared}")))?;
        if len > limit {
            return Err(FrameError::TooLarge { len, limit });
        }
        let total = offset + len;
        if src.len() < total {
            src.reserve(total - src.len());
            return Ok(None);
        }
        let mut frame = src.split_to(total);
        let mut invalid = None;
        if typed {
            check_layout(frame[0], &frame[5..]).map_err(FrameError::Malformed)?;
            invalid = invalid_text(frame[0], &frame[5..]);
        } else if len < 8 {
            return Err(FrameError::Malformed(format!(
                "invalid startup packet length {len}"
            )));
        }
        let message = decode_frame(&mut self.inner, &mut frame)?;
        Ok(match (message, invalid) {
            (message, None) => message,
            (Some(message), Some(bytes)) => Some(mark_invalid_text(message, &bytes)),
            (None, Some(_)) => None,
        })
    }
}

/// Starts the text of a Query or Parse whose SQL was not valid UTF-8: pgwire decodes
/// strings lossily (each bad byte becomes U+FFFD), which would store changed text without
/// a word. A decoded C string never holds NUL, so no client's SQL starts with this; the
/// session answers such a message with 22021, as PostgreSQL does. After the marker: the
/// offending bytes, as PostgreSQL names them (`0xff`, `0xc0 0xaf`).
pub const INVALID_UTF8_MARK: char = '\0';

/// The offending bytes of the first invalid UTF-8 in a Query's or Parse's strings.
fn invalid_text(tag: u8, body: &[u8]) -> Option<String> {
    if !matches!(tag, b'Q' | b'P') {
        return None;
    }
    // The C strings: Query's one, Parse's statement name and query (checked by the
    // layout check: each ends with NUL).
    let strings = body
        .split(|b| *b == 0)
        .take(if tag == b'Q' { 1 } else { 2 });
    strings.into_iter().find_map(|bytes| {
        let error = std::str::from_utf8(bytes).err()?;
        let start = error.valid_up_to();
        let len = error.error_len().unwrap_or(bytes.len() - start).max(1);
        let named: Vec<String> = bytes[start..start + len]
            .iter()
            .map(|b| format!("{b:#04x}"))
            .collect();
        Some(named.join(" "))
    })
}

/// `message` with its SQL replaced by [`INVALID_UTF8_MARK`] and the bytes it names.
fn mark_invalid_text(message: PgWireFrontendMessage, bytes: &str) -> PgWireFrontendMessage {
    let marked = format!("{INVALID_UTF8_MARK}{bytes}");
    match message {
        PgWireFrontendMessage::Query(mut query) => {
            query.query = marked;
            PgWireFrontendMessage::Query(query)
        }
        PgWireFrontendMessage::Parse(mut parse) => {
            parse.query = marked;
            parse.name = None;
            PgWireFrontendMessage::Parse(parse)
        }
        other => other,
    }
}

/// The 22021 error for SQL marked by [`mark_invalid_text`], if `sql` is so marked.
pub fn invalid_text_error(sql: &str) -> Option<hotpage_sql::SqlError> {
    let bytes = sql.strip_prefix(INVALID_UTF8_MARK)?;
    Some(hotpage_sql::SqlError::new(
        "22021",
        format!("invalid byte sequence for encoding \"UTF8\": {bytes}"),
    ))
}

/// pgwire's decode of one whole frame, which it must consume exactly. A panic inside it
/// (a decoder indexing past the frame: the layout check should have refused such bytes)
/// becomes a malformed-message error rather than the end of the connection's task.
fn decode_frame(
    codec: &mut PgWireMessageServerCodec<()>,
    frame: &mut BytesMut,
) -> Result<Option<PgWireFrontendMessage>, FrameError> {
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| codec.decode(frame)))
        .map_err(|_| FrameError::Malformed("a message the decoder could not read".into()))?;
    match decoded? {
        Some(message) if frame.is_empty() => Ok(Some(message)),
        Some(_) => Err(FrameError::Malformed(format!(
            "{} bytes left over at the end of a message",
            frame.len()
        ))),
        None => Err(FrameError::Malformed("an incomplete message".into())),
    }
}

impl Encoder<PgWireBackendMessage> for FrameCodec {
    type Error = std::io::Error;

    fn encode(&mut self, item: PgWireBackendMessage, dst: &mut BytesMut) -> std::io::Result<()> {
        self.inner.encode(item, dst)
    }
}

/// Reads a message body field by field, never past its end.
struct Body<'a> {
    bytes: &'a [u8],
}

impl<'a> Body<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.bytes.len() < n {
            return Err(format!("the message ends inside its {what}"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn cstring(&mut self, what: &str) -> Result<(), String> {
        let end = self
            .bytes
            .iter()
            .position(|b| *b == 0)
            .ok_or_else(|| format!("the {what} has no terminating zero byte"))?;
        self.bytes = &self.bytes[end + 1..];
        Ok(())
    }

    fn i16(&mut self, what: &str) -> Result<i16, String> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self, what: &str) -> Result<i32, String> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A count that must not be negative.
    fn count(&mut self, what: &str) -> Result<usize, String> {
        let n = self.i16(what)?;
        usize::try_from(n).map_err(|_| format!("a negative {what}: {n}"))
    }

    fn end(&self, kind: &str) -> Result<(), String> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} bytes left over at the end of a {kind} message",
                self.bytes.len()
            ))
        }
    }
}

/// Checks that the body of a message of type `tag` has its type's layout, so that
/// pgwire's decoder reads only what is there.
fn check_layout(tag: u8, body: &[u8]) -> Result<(), String> {
    let mut b = Body { bytes: body };
    match tag {
        b'Q' => {
            b.cstring("query")?;
            b.end("Query")
        }
        b'P' => {
            b.cstring("statement name")?;
            b.cstring("query")?;
            let n = b.count("parameter type count")?;
            b.take(4 * n, "parameter types")?;
            b.end("Parse")
        }
        b'B' => check_bind(&mut b),
        b'D' | b'C' => {
            let target = b.take(1, "target")?[0];
            if !matches!(target, b'S' | b'P') {
                return Err(format!("invalid target {target:#04x}: S or P"));
            }
            b.cstring("name")?;
            b.end(if tag == b'D' { "Describe" } else { "Close" })
        }
        b'E' => {
            b.cstring("portal name")?;
            b.i32("row limit")?;
            b.end("Execute")
        }
        b'H' | b'S' | b'X' | b'c' => b.end("Flush, Sync, Terminate or CopyDone"),
        b'f' => {
            b.cstring("message")?;
            b.end("CopyFail")
        }
        // Passwords and SASL messages: raw bytes, read by the authentication handler.
        b'p' | b'd' => Ok(()),
        other => Err(format!("invalid frontend message type {other:#04x}")),
    }
}

fn check_bind(b: &mut Body<'_>) -> Result<(), String> {
    b.cstring("portal name")?;
    b.cstring("statement name")?;
    let formats = b.count("parameter format count")?;
    b.take(2 * formats, "parameter formats")?;
    let params = b.count("parameter count")?;
    for _ in 0..params {
        let len = b.i32("parameter length")?;
        if len >= 0 {
            b.take(len as usize, "parameter value")?;
        } else if len != -1 {
            return Err(format!("invalid parameter length {len}"));
        }
    }
    let results = b.count("result format count")?;
    b.take(2 * results, "result formats")?;
    b.end("Bind")
}

#[cfg(test)]
mod tests;
