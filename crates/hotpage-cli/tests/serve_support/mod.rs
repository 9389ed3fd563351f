//! A real `hotpage serve` process on a free port, for the tests that reach it as clients
//! do (the postgres crate, psql, pgbench).

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running server; killed (SIGKILL) when dropped if still running.
pub struct Serve {
    child: Child,
    pub port: u16,
    pub db: PathBuf,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Serve {
    /// Starts `hotpage serve --db DB --listen 127.0.0.1:0 EXTRA...` and waits for its
    /// "listening on" line.
    pub fn start(db: &Path, extra: &[&str]) -> Serve {
        Serve::start_on(db, "127.0.0.1:0", extra)
    }

    /// Starts `hotpage serve --db DB --listen LISTEN EXTRA...` (LISTEN's port 0: a free
    /// port) and waits for its "listening on" line.
    pub fn start_on(db: &Path, listen: &str, extra: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hotpage"))
            .args(["serve", "--db"])
            .arg(db)
            .args(["--listen", listen])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start hotpage serve");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = mpsc::channel();
        let kept = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = listening_port(&line) {
                    let _ = port_tx.send(port);
                }
                kept.lock().unwrap().push(line);
            }
        });
        let port = match port_rx.recv_timeout(Duration::from_secs(120)) {
            Ok(port) => port,
            Err(_) => {
                let _ = child.kill();
                panic!("hotpage serve did not start: {:?}", lines.lock().unwrap());
            }
        };
        Serve {
            child,
            port,
            db: db.to_path_buf(),
            stderr: lines,
        }
    }

    /// A libpq-style connection string.
    pub fn conninfo(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=tester dbname=hotpage connect_timeout=30",
            self.port
        )
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.conninfo(), postgres::NoTls).expect("connect")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then the exit status and everything it wrote to stderr.
    pub fn terminate(mut self) -> (ExitStatus, String) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
        self.wait()
    }

    /// Waits for the process to exit (at most 120 s).
    pub fn wait(&mut self) -> (ExitStatus, String) {
        for _ in 0..1200 {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Let the reader thread take the last lines.
                std::thread::sleep(Duration::from_millis(100));
                return (status, self.stderr_text());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!("hotpage serve did not exit: {}", self.stderr_text());
    }

    /// SIGKILL: the server dies at once, as in a crash.
    pub fn kill9(mut self) {
        self.child.kill().expect("kill -9");
        let _ = self.child.wait();
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn listening_port(line: &str) -> Option<u16> {
    let rest = line.split("listening on ").nth(1)?;
    let addr = rest.split_whitespace().next()?;
    addr.rsplit(':').next()?.parse().ok()
}

/// An external program the test needs: its path, or a failure that says how to get it
/// (CI installs it; a missing one must not pass silently).
pub fn require_program(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "{name} is not installed: apt-get install -y postgresql-client postgresql (.ci/run does)"
        )
    })
}

/// `hotpage check --db DB`: its exit status and output.
pub fn check(db: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["check", "--db"])
        .arg(db)
        .output()
        .expect("run hotpage check")
}

/// A bare protocol client, for what drivers hide: FATAL messages that arrive unasked, and
/// messages no driver would send.
pub struct RawClient {
    stream: std::net::TcpStream,
}

impl RawClient {
    /// Connects and completes startup (trust): reads up to the first ReadyForQuery.
    pub fn connect(port: u16) -> RawClient {
        let stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let mut client = RawClient { stream };
        let mut body = Vec::new();
        body.extend_from_slice(&196_608i32.to_be_bytes());
        for (k, v) in [("user", "tester"), ("database", "hotpage")] {
            body.extend_from_slice(k.as_bytes());
            body.push(0);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut startup = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        startup.extend_from_slice(&body);
        client.write(&startup);
        loop {
            match client.read() {
                Some((b'Z', _)) => return client,
                Some((b'E', body)) => panic!("startup failed: {}", String::from_utf8_lossy(&body)),
                Some(_) => {}
                None => panic!("closed during startup"),
            }
        }
    }

    pub fn write(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stream.write_all(bytes).expect("write");
    }

    /// A typed message.
    pub fn send(&mut self, tag: u8, body: &[u8]) {
        let mut message = vec![tag];
        message.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        message.extend_from_slice(body);
        self.write(&message);
    }

    /// The next message (tag, body), or None at end of stream or on a read error.
    pub fn read(&mut self) -> Option<(u8, Vec<u8>)> {
        use std::io::Read;
        let mut header = [0u8; 5];
        self.stream.read_exact(&mut header).ok()?;
        let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
        let mut body = vec![0u8; usize::try_from(len).ok()?.checked_sub(4)?];
        self.stream.read_exact(&mut body).ok()?;
        Some((header[0], body))
    }

    /// Reads messages until an ErrorResponse: its severity and SQLSTATE and message.
    pub fn read_error(&mut self) -> (String, String, String) {
        loop {
            match self.read() {
                Some((b'E', body)) => return error_fields(&body),
                Some(_) => {}
                None => panic!("the stream ended before an ErrorResponse"),
            }
        }
    }

    /// True if the server closed the connection (end of stream).
    pub fn is_closed(&mut self) -> bool {
        self.read().is_none()
    }
}

/// Severity (S), SQLSTATE (C) and message (M) of an ErrorResponse body.
pub fn error_fields(body: &[u8]) -> (String, String, String) {
    let mut fields = std::collections::HashMap::new();
    for field in body.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        fields.insert(field[0], String::from_utf8_lossy(&field[1..]).to_string());
    }
    let get = |c: u8| fields.get(&c).cloned().unwrap_or_default();
    (get(b'S'), get(b'C'), get(b'M'))
}

/// The body of a Query message.
pub fn query_body(sql: &str) -> Vec<u8> {
    let mut body = sql.as_bytes().to_vec();
    body.push(0);
    body
}
