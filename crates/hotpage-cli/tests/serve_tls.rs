//! `hotpage serve --tls-cert C --tls-key K`: psql and the Rust postgres crate (through
//! tokio-postgres-rustls) connect with sslmode=require, with SCRAM over TLS (channel
//! binding, SCRAM-SHA-256-PLUS); a server without TLS refuses sslmode=require; bad
//! certificate and key files are clear startup errors. The certificate is made here with
//! rcgen. psql must be installed (CI installs it).

mod common;
mod serve_support;

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
    let mut roots = rustls::RootCertStore::empty();
    let der = rustls::pki_types::CertificateDer::from_pem_slice(cert_pem.as_bytes())
        .expect("parse the certificate");
    roots.add(der).expect("add the root");
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tls = tokio_postgres_rustls::MakeRustlsConnect::new(config);
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
