use super::*;

/// What PostgreSQL 15 stored in pg_authid.rolpassword for `CREATE ROLE alice LOGIN
/// PASSWORD 'correct horse'` (password_encryption = scram-sha-256).
const POSTGRES_VERIFIER: &str = "SCRAM-SHA-256$4096:LyjYJFaBVS+zjsAtwGPpSA==$9GGIyYx1rO663wNYqh3WoILwUhPGzhMoc0JLfI9zPPc=:1y1PLwseUesk/odUwXlOkeDA2/et4DHi8ZKVdZotyDE=";

#[test]
fn a_verifier_is_the_one_postgresql_makes_from_the_same_salt() {
    let salt = BASE64.decode("LyjYJFaBVS+zjsAtwGPpSA==").unwrap();
    assert_eq!(
        verifier_text("correct horse", &salt, 4096),
        POSTGRES_VERIFIER
    );
    assert_ne!(
        verifier_text("correct horsE", &salt, 4096),
        POSTGRES_VERIFIER
    );
}

#[test]
fn scram_verifier_salts_each_password_differently_and_parses_back() {
    let a = scram_verifier("secret");
    let b = scram_verifier("secret");
    assert_ne!(a, b, "the salt is random");
    let file =
        PasswordFile::parse(&format!("# users\n\nalice:{a}\nbob:{POSTGRES_VERIFIER}\n")).unwrap();
    assert_eq!(file.len(), 2);
    let alice = &file.users["alice"];
    assert_eq!(alice.iterations, 4096);
    assert_eq!(alice.salt.len(), SALT_BYTES);
    assert_eq!(verifier_text("secret", &alice.salt, 4096), a);
}

#[test]
fn bad_password_files_say_which_line_and_why() {
    let cases = [
        ("", "names no user"),
        ("# only a comment\n", "names no user"),
        ("alice\n", "line 1: expected user:SCRAM-SHA-256$"),
        ("alice:hunter2\n", "line 1: expected a verifier"),
        (
            ":SCRAM-SHA-256$4096:c2FsdA==$a:b\n",
            "line 1: the user name is empty",
        ),
        (
            "\nalice:SCRAM-SHA-256$0:c2FsdA==$a:b\n",
            "line 2: the iteration count \"0\"",
        ),
        (
            "alice:SCRAM-SHA-256$4096:!!$a:b\n",
            "line 1: the salt is not base64",
        ),
        (
            "alice:SCRAM-SHA-256$4096:c2FsdA==$c2hvcnQ=:c2hvcnQ=\n",
            "must be 32 bytes",
        ),
    ];
    for (text, needle) in cases {
        let error = PasswordFile::parse(text)
            .err()
            .unwrap_or_else(|| panic!("{text:?} parsed"));
        assert!(error.contains(needle), "{text:?}: {error}");
    }
    let twice = format!("a:{POSTGRES_VERIFIER}\na:{POSTGRES_VERIFIER}\n");
    let error = PasswordFile::parse(&twice).err().unwrap();
    assert!(
        error.contains("line 2: user \"a\" appears twice"),
        "{error}"
    );
}

#[cfg(unix)]
#[test]
fn a_password_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("passwords");
    std::fs::write(&path, format!("alice:{POSTGRES_VERIFIER}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let error = PasswordFile::load(&path).err().unwrap().to_string();
    assert!(
        error.contains("group or world access (mode 644)"),
        "{error}"
    );
    assert!(error.contains("chmod 600"), "{error}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(PasswordFile::load(&path).unwrap().len(), 1);
    let missing = PasswordFile::load(&dir.path().join("nope"))
        .err()
        .unwrap()
        .to_string();
    assert!(missing.contains("nope"), "{missing}");
}
