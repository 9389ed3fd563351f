//! Password authentication: SCRAM-SHA-256 against a file of PostgreSQL-style verifiers
//! (`user:SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, what PostgreSQL keeps
//! in `pg_authid.rolpassword`). The exchange itself is pgwire's (`ScramAuth`); this module
//! supplies the verifiers, the file's rules, and PostgreSQL's answers to a failure.

use crate::client::Client;
use crate::connection::frame_error;
use crate::encode::{self, code};
use crate::error::ServerError;
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use pgwire::api::auth::mechanism::{AuthMechanismFactory, AuthState};
use pgwire::api::auth::sasl::scram::{
    SCRAM_ITERATIONS, ScramAuth, ScramSecret, gen_salted_password,
};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::api::{ClientInfo, METADATA_USER, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::{PasswordMessageFamily, SASLInitialResponse, SASLResponse};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How a connection proves who it is.
#[derive(Clone, Default)]
pub enum Authentication {
    /// Anyone, as any user (PostgreSQL's `trust`): loopback addresses only.
    #[default]
    Trust,
    /// SCRAM-SHA-256 against these users' verifiers.
    Scram(Arc<PasswordFile>),
}

impl fmt::Debug for Authentication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Authentication::Trust => f.write_str("Trust"),
            Authentication::Scram(file) => write!(f, "Scram({} users)", file.users.len()),
        }
    }
}

/// One user's SCRAM verifier: what the server needs to check a proof, never the password.
#[derive(Clone, PartialEq, Eq)]
struct Verifier {
    iterations: usize,
    salt: Vec<u8>,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

/// The users a server accepts, read from a password file.
#[derive(Default)]
pub struct PasswordFile {
    users: HashMap<String, Verifier>,
}

/// The prefix of a verifier, as PostgreSQL writes it.
const SCRAM_PREFIX: &str = "SCRAM-SHA-256$";

/// Bytes of salt in a verifier made by [`scram_verifier`] (PostgreSQL's SCRAM_DEFAULT_SALT_LEN).
const SALT_BYTES: usize = 16;

impl PasswordFile {
    /// Reads and checks `path`. Like PostgreSQL's key files, a file that its group or
    /// others may read or write is refused: it holds what a password check needs.
    pub fn load(path: &Path) -> Result<PasswordFile, ServerError> {
        let error = |reason: String| ServerError::PasswordFile {
            path: path.to_path_buf(),
            reason,
        };
        check_private(path).map_err(&error)?;
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        PasswordFile::parse(&text).map_err(error)
    }

    /// Parses a password file: one `user:verifier` per line; blank lines and lines
    /// starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<PasswordFile, String> {
        let mut users = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |reason: String| format!("line {}: {reason}", index + 1);
            let Some((user, verifier)) = line.split_once(':') else {
                return Err(at("expected user:SCRAM-SHA-256$... (make a line with hotpage serve --hash-password USER)".into()));
            };
            if user.is_empty() {
                return Err(at("the user name is empty".into()));
            }
            let verifier = parse_verifier(verifier).map_err(&at)?;
            if users.insert(user.to_string(), verifier).is_some() {
                return Err(at(format!("user \"{user}\" appears twice")));
            }
        }
        if users.is_empty() {
            return Err(
                "it names no user (make a line with hotpage serve --hash-password USER)".into(),
            );
        }
        Ok(PasswordFile { users })
    }

    /// How many users the file names.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// True if it names no user (never, for a file that loaded).
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

/// Refuses a file that its group or others may access (PostgreSQL's rule for its key files).
#[cfg(unix)]
pub(crate) fn check_private(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| e.to_string())?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "it has group or world access (mode {:o}): it must be readable by its owner only (chmod 600)",
            mode & 0o777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
pub(crate) fn check_private(_path: &Path) -> Result<(), String> {
    Ok(())
}

/// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64 throughout.
fn parse_verifier(text: &str) -> Result<Verifier, String> {
    let bad = || {
        "expected a verifier SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (make one with hotpage serve --hash-password USER); plain passwords are not accepted".to_string()
    };
    let rest = text.strip_prefix(SCRAM_PREFIX).ok_or_else(bad)?;
    let (params, keys) = rest.split_once('$').ok_or_else(bad)?;
    let (iterations, salt) = params.split_once(':').ok_or_else(bad)?;
    let (stored_key, server_key) = keys.split_once(':').ok_or_else(bad)?;
    let iterations: u32 =
        iterations.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
            format!("the iteration count {iterations:?} is not a positive number")
        })?;
    let decode = |what: &str, value: &str| {
        BASE64
            .decode(value)
            .map_err(|e| format!("the {what} is not base64: {e}"))
    };
    let verifier = Verifier {
        iterations: iterations as usize,
        salt: decode("salt", salt)?,
        stored_key: decode("StoredKey", stored_key)?,
        server_key: decode("ServerKey", server_key)?,
    };
    if verifier.salt.is_empty() {
        return Err("the salt is empty".into());
    }
    // SHA-256 output: pgwire compares a proof of this length.
    if verifier.stored_key.len() != 32 || verifier.server_key.len() != 32 {
        return Err("StoredKey and ServerKey must be 32 bytes each (SHA-256)".into());
    }
    Ok(verifier)
}

/// A SCRAM-SHA-256 verifier for `password`, with a random salt and PostgreSQL's default
/// 4096 iterations: the text after `user:` in a password file.
pub fn scram_verifier(password: &str) -> String {
    let salt: [u8; SALT_BYTES] = rand::random();
    verifier_text(password, &salt, SCRAM_ITERATIONS)
}

fn verifier_text(password: &str, salt: &[u8], iterations: usize) -> String {
    let salted = gen_salted_password(password, salt, iterations);
    let ScramSecret::Verifier {
        stored_key,
        server_key,
        ..
    } = ScramSecret::verifier_from_salted_password(salt.to_vec(), salted, iterations)
    else {
        unreachable!("verifier_from_salted_password returns a Verifier");
    };
    format!(
        "{SCRAM_PREFIX}{iterations}:{}${}:{}",
        BASE64.encode(salt),
        BASE64.encode(stored_key),
        BASE64.encode(server_key)
    )
}

/// The users as pgwire's SCRAM exchange asks for them.
struct UserStore {
    file: Arc<PasswordFile>,
    /// Makes an unknown user's mock salt: random per server, so it reveals nothing, and
    /// fixed for the server's life, so two attempts cannot tell a user from a non-user.
    mock_nonce: [u8; 16],
}

impl fmt::Debug for UserStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UserStore({} users)", self.file.users.len())
    }
}

#[async_trait]
impl AuthSource for UserStore {
    async fn get_password(&self, _login: &LoginInfo) -> PgWireResult<Password> {
        // Only the SCRAM exchange asks, through get_scram_secret; no plain password exists.
        Err(PgWireError::InvalidSASLState)
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        if let Some(v) = self.file.users.get(user) {
            return Ok((
                ScramSecret::Verifier {
                    salt: v.salt.clone(),
                    iterations: v.iterations,
                    stored_key: v.stored_key.clone(),
                    server_key: v.server_key.clone(),
                },
                None,
            ));
        }
        // PostgreSQL's mock authentication: an unknown user goes through the whole
        // exchange, with a salt that looks real, and fails at the proof exactly as a wrong
        // password does, so a client cannot learn which users exist.
        let mut salt = gen_salted_password(user, &self.mock_nonce, 1);
        salt.truncate(SALT_BYTES);
        let stored_key: [u8; 32] = rand::random();
        let server_key: [u8; 32] = rand::random();
        Ok((
            ScramSecret::Verifier {
                salt,
                iterations: SCRAM_ITERATIONS,
                stored_key: stored_key.to_vec(),
                server_key: server_key.to_vec(),
            },
            None,
        ))
    }
}

/// pgwire's SCRAM mechanism over a password file; with TLS, also SCRAM-SHA-256-PLUS
/// (channel binding to the server's certificate).
pub fn scram_auth(
    file: &Arc<PasswordFile>,
    cert_pem: Option<&[u8]>,
) -> Result<ScramAuth, ServerError> {
    let store = UserStore {
        file: Arc::clone(file),
        mock_nonce: rand::random(),
    };
    let mut auth = ScramAuth::new(Arc::new(store));
    if let Some(pem) = cert_pem {
        auth.configure_certificate(pem).map_err(|e| {
            ServerError::Tls(format!(
                "cannot use the certificate for SCRAM channel binding: {e}"
            ))
        })?;
    }
    Ok(auth)
}

/// How an authentication exchange ended.
pub enum Outcome {
    /// The client proved its password; AuthenticationOk and the rest of startup follow.
    Authenticated,
    /// Refused: send this FATAL and close.
    Refused(PgWireBackendMessage),
    /// The client went away or fell silent.
    Gone,
}

/// Runs the SCRAM exchange on a connection whose startup message is read: SASL mechanisms
/// out, the client's first message in, server-first out, client-final in, server-final
/// out. `timeout` bounds each wait for the client.
pub async fn scram_exchange(
    client: &mut Client,
    auth: &ScramAuth,
    timeout: Duration,
) -> std::io::Result<Outcome> {
    let user = client
        .metadata()
        .get(METADATA_USER)
        .cloned()
        .unwrap_or_default();
    // Typed messages from here on (the codec reads untyped ones before startup).
    client.set_state(PgWireConnectionState::AuthenticationInProgress);
    let mut mechanism = auth.create();
    let mut state = match mechanism.begin(&*client).await {
        Ok(state) => state,
        Err(error) => return Ok(Outcome::Refused(refusal(&user, &error))),
    };
    let mut first = true;
    loop {
        let request = match state {
            AuthState::InProgress(request) => request,
            AuthState::Ok { final_message, .. } => {
                if let Some(message) = final_message {
                    client
                        .feed(PgWireBackendMessage::Authentication(message))
                        .await?;
                }
                return Ok(Outcome::Authenticated);
            }
            AuthState::Failed(error) => return Ok(Outcome::Refused(refusal(&user, &error))),
        };
        client
            .send(PgWireBackendMessage::Authentication(request))
            .await?;
        let body = match tokio::time::timeout(timeout, client.next()).await {
            Ok(Some(Ok(PgWireFrontendMessage::PasswordMessageFamily(
                PasswordMessageFamily::Raw(body),
            )))) => body,
            Ok(Some(Ok(_))) => {
                let fatal = encode::fatal(
                    code::PROTOCOL_VIOLATION,
                    "expected SASL response, got another message",
                );
                return Ok(Outcome::Refused(fatal));
            }
            Ok(Some(Err(error))) => return Ok(Outcome::Refused(frame_error(&error))),
            Ok(None) | Err(_) => return Ok(Outcome::Gone),
        };
        let message = if first {
            match sasl_initial_response(&body) {
                Ok(message) => message,
                Err(fatal) => return Ok(Outcome::Refused(fatal)),
            }
        } else {
            PasswordMessageFamily::SASLResponse(SASLResponse::new(body.freeze()))
        };
        first = false;
        state = match mechanism.next(&*client, message).await {
            Ok(state) => state,
            Err(error) => return Ok(Outcome::Refused(refusal(&user, &error))),
        };
    }
}

/// A SASLInitialResponse body, its layout checked here: pgwire's decoder reads past a
/// short one (a panic).
fn sasl_initial_response(body: &[u8]) -> Result<PasswordMessageFamily, PgWireBackendMessage> {
    let malformed = || {
        encode::fatal(
            code::PROTOCOL_VIOLATION,
            "malformed SASLInitialResponse message",
        )
    };
    let end = body.iter().position(|b| *b == 0).ok_or_else(malformed)?;
    let mechanism = std::str::from_utf8(&body[..end]).map_err(|_| malformed())?;
    let rest = &body[end + 1..];
    let (len, data) = rest.split_at_checked(4).ok_or_else(malformed)?;
    let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
    let data = match usize::try_from(len) {
        Ok(len) if len == data.len() => Some(Bytes::copy_from_slice(data)),
        _ if len == -1 && data.is_empty() => None,
        _ => return Err(malformed()),
    };
    Ok(PasswordMessageFamily::SASLInitialResponse(
        SASLInitialResponse::new(mechanism.to_string(), data),
    ))
}

/// PostgreSQL's answer to a failed exchange. A wrong password and an unknown user get the
/// same one (28P01), with the user of the startup message (libpq leaves SCRAM's own user
/// name empty).
fn refusal(user: &str, error: &PgWireError) -> PgWireBackendMessage {
    match error {
        PgWireError::InvalidPassword(_) => encode::fatal(
            code::INVALID_PASSWORD,
            format!("password authentication failed for user \"{user}\""),
        ),
        PgWireError::UnsupportedSASLAuthMethod(_) => encode::fatal(
            code::PROTOCOL_VIOLATION,
            "client selected an invalid SASL authentication mechanism",
        ),
        PgWireError::InvalidScramMessage(_) => encode::fatal(
            code::PROTOCOL_VIOLATION,
            format!("malformed SCRAM message: {error}"),
        ),
        other => encode::fatal(
            code::INVALID_AUTHORIZATION,
            format!("authentication failed for user \"{user}\": {other}"),
        ),
    }
}

#[cfg(test)]
mod tests;
