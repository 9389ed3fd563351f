//! Raw protocol messages for tests that drive a socket by hand (a client that stops
//! reading, pipelined or malformed bytes). Only `std`: `hotpage-cli`'s TLS tests include
//! this file by path.

#![allow(dead_code)] // each test file uses its own part

use std::io::Read;

/// A simple-protocol Query message.
/// Takes bytes, so that a test can send SQL that is not UTF-8.
pub fn query_message(sql: impl AsRef<[u8]>) -> Vec<u8> {
    let sql = sql.as_ref();
    let mut message = vec![b'Q'];
    message.extend_from_slice(&(sql.len() as i32 + 5).to_be_bytes());
    message.extend_from_slice(sql);
    message.push(0);
    message
}

/// Reads one whole backend message: its tag and its body.
pub fn read_message(stream: &mut impl Read) -> (u8, Vec<u8>) {
    let mut header = [0u8; 5];
    stream.read_exact(&mut header).expect("a message header");
    let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    let mut body = vec![0u8; usize::try_from(len - 4).expect("length")];
    stream.read_exact(&mut body).expect("a message body");
    (header[0], body)
}

/// Reads messages through the startup's ReadyForQuery; returns the session's pid, from
/// BackendKeyData.
pub fn read_startup(stream: &mut impl Read) -> i32 {
    let mut pid = None;
    loop {
        match read_message(stream) {
            (b'K', body) => pid = Some(i32::from_be_bytes([body[0], body[1], body[2], body[3]])),
            (b'Z', _) => return pid.expect("BackendKeyData"),
            _ => {}
        }
    }
}
