//! Framing: exact frames, the size limit before the body, and layouts pgwire's decoders
//! would misread (or panic on) refused first.

use super::*;
use pgwire::api::ClientInfo;
use proptest::prelude::*;

fn codec(ready: bool, max: usize) -> FrameCodec {
    let mut client = DefaultClient::new(([127, 0, 0, 1], 1).into(), false);
    client.set_state(if ready {
        PgWireConnectionState::ReadyForQuery
    } else {
        PgWireConnectionState::AwaitingStartup
    });
    FrameCodec::new(PgWireMessageServerCodec::new(client), max)
}

/// A typed message: tag, length (including itself), body.
fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

#[test]
fn messages_are_cut_at_their_declared_length() {
    let mut c = codec(true, 1 << 20);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&message(b'Q', b"SELECT 1\0"));
    buf.extend_from_slice(&message(b'S', b""));
    // Half of a third message: not decoded yet, not lost.
    buf.extend_from_slice(&message(b'Q', b"SELECT 2\0")[..6]);
    match c.decode(&mut buf).unwrap() {
        Some(PgWireFrontendMessage::Query(q)) => assert_eq!(q.query, "SELECT 1"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        c.decode(&mut buf).unwrap(),
        Some(PgWireFrontendMessage::Sync(_))
    ));
    assert!(c.decode(&mut buf).unwrap().is_none());
    buf.extend_from_slice(&message(b'Q', b"SELECT 2\0")[6..]);
    match c.decode(&mut buf).unwrap() {
        Some(PgWireFrontendMessage::Query(q)) => assert_eq!(q.query, "SELECT 2"),
        other => panic!("{other:?}"),
    }
    assert!(buf.is_empty());
}

#[test]
fn an_oversized_message_is_refused_from_its_header() {
    let mut c = codec(true, 4096);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&[b'Q', 0x10, 0, 0, 0]);
    match c.decode(&mut buf) {
        Err(FrameError::TooLarge { len, limit }) => assert_eq!((len, limit), (0x1000_0000, 4096)),
        other => panic!("{other:?}"),
    }
    // Before startup the limit is PostgreSQL's startup packet limit.
    let mut c = codec(false, 1 << 20);
    let mut buf = BytesMut::from(&(20_000i32).to_be_bytes()[..]);
    assert!(matches!(
        c.decode(&mut buf),
        Err(FrameError::TooLarge {
            limit: STARTUP_BYTES_MAX,
            ..
        })
    ));
}

#[test]
fn malformed_layouts_are_refused_before_pgwire_reads_them() {
    let refused = |tag: u8, body: &[u8]| {
        let mut c = codec(true, 1 << 20);
        let mut buf = BytesMut::from(&message(tag, body)[..]);
        match c.decode(&mut buf) {
            Err(FrameError::Malformed(why)) => why,
            other => panic!("{tag}: {other:?}"),
        }
    };
    // A Bind whose parameter claims more bytes than the message has (pgwire would panic).
    let mut bind = b"\0\0".to_vec();
    bind.extend_from_slice(&0i16.to_be_bytes());
    bind.extend_from_slice(&1i16.to_be_bytes());
    bind.extend_from_slice(&100i32.to_be_bytes());
    bind.extend_from_slice(b"abc");
    assert!(refused(b'B', &bind).contains("parameter value"));
    // A Parse cut inside its type list.
    let mut parse = b"\0SELECT $1\0".to_vec();
    parse.extend_from_slice(&2i16.to_be_bytes());
    parse.extend_from_slice(&[0, 0, 0, 23]);
    assert!(refused(b'P', &parse).contains("parameter types"));
    assert!(refused(b'D', b"X\0").contains("invalid target"));
    assert!(refused(b'Q', b"SELECT 1").contains("terminating zero"));
    assert!(refused(b'Q', b"SELECT 1\0junk\0").contains("left over"));
    assert!(refused(b'S', b"x").contains("left over"));
    assert!(refused(b'E', b"\0\0\0").contains("row limit"));
    assert!(refused(b'z', b"").contains("message type"));
    // A negative length.
    let mut c = codec(true, 1 << 20);
    let mut buf = BytesMut::from(&[b'Q', 0xff, 0xff, 0xff, 0xff][..]);
    assert!(matches!(c.decode(&mut buf), Err(FrameError::Malformed(_))));
}

#[test]
fn a_well_formed_bind_decodes() {
    let mut bind = b"portal\0stmt\0".to_vec();
    bind.extend_from_slice(&1i16.to_be_bytes());
    bind.extend_from_slice(&1i16.to_be_bytes());
    bind.extend_from_slice(&2i16.to_be_bytes());
    bind.extend_from_slice(&(-1i32).to_be_bytes());
    bind.extend_from_slice(&4i32.to_be_bytes());
    bind.extend_from_slice(&7i32.to_be_bytes());
    bind.extend_from_slice(&0i16.to_be_bytes());
    let mut c = codec(true, 1 << 20);
    let mut buf = BytesMut::from(&message(b'B', &bind)[..]);
    match c.decode(&mut buf).unwrap() {
        Some(PgWireFrontendMessage::Bind(b)) => {
            assert_eq!(b.portal_name.as_deref(), Some("portal"));
            assert_eq!(b.statement_name.as_deref(), Some("stmt"));
            assert_eq!(b.parameters.len(), 2);
            assert!(b.parameters[0].is_none());
            assert_eq!(b.parameters[1].as_deref(), Some(&7i32.to_be_bytes()[..]));
        }
        other => panic!("{other:?}"),
    }
}

proptest! {
    /// Any bytes, in either phase, give messages, a wait for more, or an error: never a
    /// panic, and never a read past what was given.
    #[test]
    fn arbitrary_bytes_never_panic(
        ready in any::<bool>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut c = codec(ready, 4096);
        let mut buf = BytesMut::from(&bytes[..]);
        for _ in 0..64 {
            match c.decode(&mut buf) {
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// Typed messages with a valid tag and length but arbitrary bodies.
    #[test]
    fn arbitrary_bodies_never_panic(
        tag in prop::sample::select(b"QPBDCESHXdcfp".to_vec()),
        body in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut c = codec(true, 4096);
        let mut buf = BytesMut::from(&message(tag, &body)[..]);
        let _ = c.decode(&mut buf);
    }
}

#[test]
fn sql_that_is_not_utf8_is_marked_for_22021_and_valid_text_is_not() {
    let mut c = codec(true, 1 << 20);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&message(b'Q', b"INSERT INTO t VALUES ('ab\xffcd')\0"));
    buf.extend_from_slice(&message(b'Q', b"SELECT '\xc0\xaf'\0"));
    // A real U+FFFD (EF BF BD) is valid UTF-8, and stays.
    buf.extend_from_slice(&message(b'Q', "SELECT '\u{FFFD}'\0".as_bytes()));
    buf.extend_from_slice(&message(b'P', b"s1\0SELECT '\xed\xa0\x80'\0\0\0"));
    let mut texts = Vec::new();
    while let Some(decoded) = c.decode(&mut buf).unwrap() {
        texts.push(match decoded {
            PgWireFrontendMessage::Query(q) => q.query,
            PgWireFrontendMessage::Parse(p) => p.query,
            other => panic!("{other:?}"),
        });
    }
    let errors: Vec<Option<String>> = texts
        .iter()
        .map(|t| invalid_text_error(t).map(|e| format!("{} {}", e.sqlstate, e.message)))
        .collect();
    assert_eq!(
        errors,
        [
            Some("22021 invalid byte sequence for encoding \"UTF8\": 0xff".to_string()),
            Some("22021 invalid byte sequence for encoding \"UTF8\": 0xc0".to_string()),
            None,
            Some("22021 invalid byte sequence for encoding \"UTF8\": 0xed".to_string()),
        ]
    );
    assert_eq!(texts[2], "SELECT '\u{FFFD}'");
}
