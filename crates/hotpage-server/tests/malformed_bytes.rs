//! Arbitrary bytes sent to a live server, before and after startup, and into a SCRAM
//! exchange: the server never panics, never hangs (once the sender has nothing more to
//! say, the connection ends within seconds), and a healthy session on the same server is
//! undisturbed throughout.

mod support;

use hotpage_server::{Authentication, PasswordFile, ServerConfig, scram_verifier};
use proptest::prelude::*;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use support::startup;
use support::wire::{query_message, read_message};

/// Panics anywhere in this process (server threads included) since it started.
static PANICS: AtomicUsize = AtomicUsize::new(0);

struct Live {
    addr: SocketAddr,
    healthy: std::sync::Mutex<postgres::Client>,
}

/// One trust server for the whole test, on a temporary database, with a small message
/// limit so that long declared lengths are exercised too.
fn live() -> &'static Live {
    static LIVE: OnceLock<Live> = OnceLock::new();
    LIVE.get_or_init(|| start(Authentication::Trust, ""))
}

/// One SCRAM server (user t, password "pw") for the whole test.
fn live_scram() -> &'static Live {
    static LIVE: OnceLock<Live> = OnceLock::new();
    LIVE.get_or_init(|| {
        let file = PasswordFile::parse(&format!("t:{}\n", scram_verifier("pw"))).expect("parse");
        start(Authentication::Scram(Arc::new(file)), " password=pw")
    })
}

fn count_panics() {
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::Relaxed);
            previous(info);
        }));
    });
}

fn start(authentication: Authentication, password: &str) -> Live {
    count_panics();
    let addr = support::start(ServerConfig {
        max_message_bytes: 4096,
        max_statement_bytes: 4096,
        startup_timeout: Duration::from_secs(2),
        authentication,
        ..ServerConfig::default()
    })
    .addr;
    let conninfo = format!(
        "host=127.0.0.1 port={} user=t dbname=d{password}",
        addr.port()
    );
    let mut healthy = postgres::Client::connect(&conninfo, postgres::NoTls).expect("connect");
    healthy
        .batch_execute(
            "CREATE TABLE h (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v integer)",
        )
        .expect("create");
    Live {
        addr,
        healthy: std::sync::Mutex::new(healthy),
    }
}

/// Sends `bytes` (after a startup packet if `after_startup`), closes the sending side, and
/// reads until the server closes. Returns how long the server took to close.
fn send_and_drain(addr: SocketAddr, after_startup: bool, bytes: &[u8]) -> Duration {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    if after_startup {
        stream.write_all(&startup()).expect("startup");
    }
    // The server may close first (a FATAL): a failed write is an answer too.
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(Shutdown::Write);
    let sent = Instant::now();
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return sent.elapsed(),
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                panic!("the server kept the connection open 20 s after its input ended")
            }
            // A reset is a close.
            Err(_) => return sent.elapsed(),
        }
    }
}

/// Bytes biased toward what a frontend sends: message tags, lengths near the edges.
fn frontend_bytes() -> impl Strategy<Value = Vec<u8>> {
    let tag = prop::sample::select(b"QPBDCESHXdcfpz\0".to_vec()).prop_map(|t| vec![t]);
    let length = prop_oneof![
        Just(vec![0, 0, 0, 4]),
        Just(vec![0, 0, 0, 8]),
        Just(vec![0xff, 0xff, 0xff, 0xff]),
        Just(vec![0x7f, 0xff, 0xff, 0xff]),
        Just(vec![0, 0, 0x10, 0]),
        any::<[u8; 4]>().prop_map(|b| b.to_vec()),
    ];
    let chunk = prop_oneof![
        tag,
        length,
        proptest::collection::vec(any::<u8>(), 0..24),
        Just(b"SELECT 1\0".to_vec()),
        Just(vec![0]),
    ];
    proptest::collection::vec(chunk, 0..12).prop_map(|chunks| chunks.concat())
}

/// Bytes biased toward a SASL exchange: password-message tags, SCRAM's mechanism names
/// and attribute fragments.
fn sasl_bytes() -> impl Strategy<Value = Vec<u8>> {
    let length = prop_oneof![
        Just(vec![0, 0, 0, 4]),
        Just(vec![0, 0, 0, 20]),
        Just(vec![0xff, 0xff, 0xff, 0xff]),
        any::<[u8; 4]>().prop_map(|b| b.to_vec()),
    ];
    let chunk = prop_oneof![
        Just(b"p".to_vec()),
        length,
        Just(b"SCRAM-SHA-256\0".to_vec()),
        Just(b"SCRAM-SHA-256-PLUS\0".to_vec()),
        Just(b"n,,n=,r=".to_vec()),
        Just(b"p=tls-server-end-point,,n=t,r=x".to_vec()),
        Just(b"c=biws,r=".to_vec()),
        Just(b",p=".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..24),
    ];
    proptest::collection::vec(chunk, 0..12).prop_map(|chunks| chunks.concat())
}

fn healthy_insert(live: &Live) -> Result<(), TestCaseError> {
    let mut healthy = live.healthy.lock().unwrap();
    let row = healthy
        .query_one("INSERT INTO h (v) VALUES (1) RETURNING id", &[])
        .expect("the healthy session still works");
    prop_assert!(row.get::<_, i64>(0) > 0);
    prop_assert_eq!(PANICS.load(Ordering::Relaxed), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn arbitrary_bytes_in_a_scram_exchange_never_panic_hang_or_disturb(
        bytes in sasl_bytes(),
    ) {
        let live = live_scram();
        let took = send_and_drain(live.addr, true, &bytes);
        prop_assert!(took < Duration::from_secs(10), "closed after {took:?}");
        healthy_insert(live)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic_hang_or_disturb(
        after_startup in any::<bool>(),
        bytes in frontend_bytes(),
    ) {
        let live = live();
        let took = send_and_drain(live.addr, after_startup, &bytes);
        prop_assert!(took < Duration::from_secs(10), "closed after {took:?}");
        healthy_insert(live)?;
    }
}

/// Reads whole backend messages until ReadyForQuery; returns their tags and bodies.
fn until_ready(stream: &mut TcpStream) -> Vec<(u8, Vec<u8>)> {
    let mut messages = Vec::new();
    loop {
        let (tag, body) = read_message(stream);
        messages.push((tag, body));
        if tag == b'Z' {
            return messages;
        }
    }
}

/// SQL whose bytes are not UTF-8 is 22021, as in PostgreSQL, and nothing is stored: the
/// bad bytes were taken as U+FFFD and the row stored changed, without a word. The
/// connection goes on.
#[test]
fn sql_that_is_not_utf8_is_22021_and_stores_nothing() {
    let live = live();
    live.healthy
        .lock()
        .unwrap()
        .batch_execute("CREATE TABLE not_utf8 (id bigint PRIMARY KEY, t text)")
        .expect("create");
    let mut stream = TcpStream::connect(live.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream.write_all(&startup()).expect("startup");
    until_ready(&mut stream);
    stream
        .write_all(&query_message(
            b"INSERT INTO not_utf8 VALUES (1, 'ab\xffcd')",
        ))
        .expect("send");
    let answer = until_ready(&mut stream);
    let error = answer
        .iter()
        .find(|(tag, _)| *tag == b'E')
        .map(|(_, body)| String::from_utf8_lossy(body).into_owned())
        .expect("an ErrorResponse");
    assert!(error.contains("22021"), "{error}");
    assert!(error.contains("0xff"), "{error}");
    stream
        .write_all(&query_message(
            "INSERT INTO not_utf8 VALUES (2, 'caf\u{e9} \u{FFFD}')".as_bytes(),
        ))
        .expect("send");
    let answer = until_ready(&mut stream);
    assert!(answer.iter().all(|(tag, _)| *tag != b'E'), "{answer:?}");
    let rows = live
        .healthy
        .lock()
        .unwrap()
        .query("SELECT id, t FROM not_utf8", &[])
        .expect("select");
    let rows: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(rows, [(2, "caf\u{e9} \u{FFFD}".to_string())]);
}
