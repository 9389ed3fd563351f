//! `hotpage serve --tls-cert C --tls-key K`: psql and the Rust postgres crate (through
//! tokio-postgres-rustls) connect with sslmode=require, with SCRAM over TLS (channel
//! binding, SCRAM-SHA-256-PLUS); a server without TLS refuses sslmode=require; bad
//! certificate and key files are clear startup errors. The certificate is made here with
//! rcgen. psql must be installed (CI installs it).

mod common;
mod serve_support;
#[path = "../../hotpage-server/tests/support/wire.rs"]
mod wire;

use common::{assert_one_line_error, hotpage, s};
use rustls::pki_types::pem::PemObject;
use serve_support::{Serve, require_program};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

/// A self-signed certificate for 127.0.0.1 and localhost: (cert.pem, key.pem, cert PEM).
fn certificate(dir: &Path) -> (PathBuf, PathBuf, String) {
    use std::os::unix::fs::PermissionsExt;
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("rcgen");
    let cert_pem = made.cert.pem();
    let cert = dir.join("server.crt");
    let key = dir.join("server.key");
    std::fs::write(&cert, &cert_pem).expect("write cert");
    std::fs::write(&key, made.signing_key.serialize_pem()).expect("write key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    (cert, key, cert_pem)
}

/// A password file with alice's verifier (password "s3cret"), mode 600.
fn password_file(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["serve", "--hash-password", "alice"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run --hash-password");
    writeln!(child.stdin.take().expect("stdin"), "s3cret").expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    let path = dir.join("passwords");
    std::fs::write(&path, &out.stdout).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// A rustls client configuration that trusts the server's self-signed certificate.
fn client_config(cert_pem: &str) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    let der = rustls::pki_types::CertificateDer::from_pem_slice(cert_pem.as_bytes())
        .expect("parse the certificate");
    roots.add(der).expect("add the root");
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

fn psql(port: u16, conn_extra: &str, sql: &str) -> Output {
    Command::new(require_program("psql"))
        .args(["-X", "-w", "-At", "-c", sql])
        .arg(format!(
            "host=127.0.0.1 port={port} user=alice dbname=hotpage connect_timeout=30 {conn_extra}"
        ))
        .env("PGPASSWORD", "s3cret")
        .output()
        .expect("run psql")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn psql_connects_over_tls_with_scram_and_channel_binding() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key, _) = certificate(dir.path());
    let file = password_file(dir.path());
    let serve = Serve::start(
        &dir.path().join("db"),
        &[
            "--tls-cert",
            s(&cert),
            "--tls-key",
            s(&key),
            "--password-file",
            s(&file),
        ],
    );
    // \conninfo names the TLS protocol when the connection is encrypted.
    let out = stdout(&psql(serve.port, "sslmode=require", "\\conninfo"));
    assert!(out.contains("SSL connection (protocol: TLSv1.3"), "{out}");
    // The certificate verified against itself as the root, and channel binding required:
    // SCRAM-SHA-256-PLUS bound to this certificate.
    let root = format!(
        "sslmode=verify-full sslrootcert={} channel_binding=require",
        s(&cert)
    );
    let out = stdout(&psql(serve.port, &root, "SELECT 6 * 7"));
    assert_eq!(out.trim(), "42");
    // A wrong password over TLS: 28P01 as in clear.
    let out = Command::new(require_program("psql"))
        .args(["-X", "-w", "-c", "SELECT 1"])
        .arg(format!(
            "host=127.0.0.1 port={} user=alice dbname=hotpage sslmode=require",
            serve.port
        ))
        .env("PGPASSWORD", "wrong")
        .output()
        .expect("psql");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("password authentication failed for user \"alice\""),
        "{stderr}"
    );
    // A client that does not ask for TLS is still served in clear.
    let out = stdout(&psql(serve.port, "sslmode=disable", "SELECT 1"));
    assert_eq!(out.trim(), "1");
}

/// SCRAM-SHA-256-PLUS from tokio-postgres too: it binds to the certificate's hash as
/// tokio-postgres-rustls computes it.
#[test]
fn the_postgres_crate_connects_with_rustls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key, cert_pem) = certificate(dir.path());
    let file = password_file(dir.path());
    let serve = Serve::start(
        &dir.path().join("db"),
        &[
            "--tls-cert",
            s(&cert),
            "--tls-key",
            s(&key),
            "--password-file",
            s(&file),
        ],
    );
    let tls = tokio_postgres_rustls::MakeRustlsConnect::new(client_config(&cert_pem));
    let conninfo = format!(
        "host=127.0.0.1 port={} user=alice password=s3cret dbname=hotpage sslmode=require channel_binding=require connect_timeout=30",
        serve.port
    );
    let mut client = postgres::Client::connect(&conninfo, tls).expect("connect over TLS");
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY, v text)")
        .expect("create");
    let row = client
        .query_one(
            "INSERT INTO t VALUES ($1, $2) RETURNING v",
            &[&1i64, &"over tls"],
        )
        .expect("insert");
    assert_eq!(row.get::<_, String>(0), "over tls");
}

#[test]
fn sslmode_require_against_a_server_without_tls_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let out = psql(serve.port, "sslmode=require", "SELECT 1");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("server does not support SSL, but SSL was required"),
        "{stderr}"
    );
}

#[test]
fn bad_certificate_and_key_files_are_startup_errors() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let (cert, key, _) = certificate(dir.path());
    let other = tempfile::tempdir().expect("temp dir");
    let (_, other_key, _) = certificate(other.path());
    let missing = dir.path().join("missing.pem");
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello\n").expect("write");
    std::fs::set_permissions(&not_pem, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let open_key = dir.path().join("open.key");
    std::fs::copy(&key, &open_key).expect("copy");
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let cases: [(&[&str], &str); 6] = [
        (&["--tls-cert", s(&cert)], "--tls-key"),
        (
            &["--tls-cert", s(&missing), "--tls-key", s(&key)],
            "cannot read the certificate",
        ),
        (
            &["--tls-cert", s(&not_pem), "--tls-key", s(&key)],
            "holds no PEM certificate",
        ),
        (
            &["--tls-cert", s(&cert), "--tls-key", s(&not_pem)],
            "cannot read a PEM private key",
        ),
        (
            &["--tls-cert", s(&cert), "--tls-key", s(&open_key)],
            "group or world access",
        ),
        (
            &["--tls-cert", s(&cert), "--tls-key", s(&other_key)],
            "do not make a TLS identity",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["serve", "--db", s(&db)];
        args.extend_from_slice(extra);
        assert_one_line_error(&hotpage(&args), 2, needle);
        assert!(!db.exists(), "{extra:?} left a database behind");
    }
}

/// A TLS client that starts a session (trust), asks for `sql`, and then reads nothing:
/// its session's pid, and the connection (kept open by the caller).
fn tls_client_that_stops_reading(
    port: u16,
    cert_pem: &str,
    sql: &str,
) -> (
    i32,
    rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>,
) {
    use std::io::Read;
    let config = client_config(cert_pem);
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    // SSLRequest: length 8, code 80877103; the server answers 'S'.
    tcp.write_all(&[0, 0, 0, 8, 4, 210, 22, 47])
        .expect("SSLRequest");
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).expect("the answer");
    assert_eq!(&answer, b"S");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let tls = rustls::ClientConnection::new(Arc::new(config), name).expect("tls");
    let mut stream = rustls::StreamOwned::new(tls, tcp);
    let mut body = 196_608i32.to_be_bytes().to_vec();
    body.extend_from_slice(b"user\0tester\0database\0hotpage\0\0");
    let mut startup = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    startup.extend_from_slice(&body);
    stream.write_all(&startup).expect("startup");
    let pid = wire::read_startup(&mut stream);
    stream
        .write_all(&wire::query_message(sql))
        .expect("the query");
    stream.flush().expect("flush");
    (pid, stream)
}

/// Waits (at most 30 s) until `pg_stat_activity` shows `pid` running a statement (`live`)
/// or not at all.
fn wait_for_session(client: &mut postgres::Client, pid: i32, live: bool) -> bool {
    let sql = if live {
        "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active'"
    } else {
        "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"
    };
    for _ in 0..1500 {
        let n: i64 = client
            .query_one(sql, &[&pid])
            .expect("pg_stat_activity")
            .get(0);
        if (n == 1) == live {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// A TLS session whose client stops reading a large result neither outlives
/// `pg_terminate_backend` nor holds up the server's shutdown (`stop.rs`): its write is
/// given up a second after either.
#[test]
fn a_tls_session_whose_client_does_not_read_is_ended_by_terminate_and_by_a_shutdown() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key, cert_pem) = certificate(dir.path());
    let serve = Serve::start(
        &dir.path().join("db"),
        &["--tls-cert", s(&cert), "--tls-key", s(&key)],
    );
    let mut admin = serve.client();
    // 32,000 rows of 1,500 bytes: 48 MB, far more than the sockets' buffers.
    admin
        .batch_execute(
            "CREATE TABLE big (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
             INSERT INTO big (v) SELECT repeat('x', 1500) FROM generate_series(1, 32000);",
        )
        .expect("the large table");
    let (pid, _first) = tls_client_that_stops_reading(serve.port, &cert_pem, "SELECT * FROM big");
    assert!(wait_for_session(&mut admin, pid, true), "never ran");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let signalled: bool = admin
        .query_one("SELECT pg_terminate_backend($1)", &[&pid])
        .expect("terminate")
        .get(0);
    assert!(signalled);
    assert!(
        wait_for_session(&mut admin, pid, false),
        "a TLS session blocked writing to its client outlives pg_terminate_backend"
    );
    let (pid, _second) = tls_client_that_stops_reading(serve.port, &cert_pem, "SELECT * FROM big");
    assert!(wait_for_session(&mut admin, pid, true), "never ran");
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(admin);
    let started = std::time::Instant::now();
    let (status, stderr) = serve.terminate();
    assert!(status.success(), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the shutdown took {:?}",
        started.elapsed()
    );
    assert!(stderr.contains("closed cleanly"), "{stderr}");
}
