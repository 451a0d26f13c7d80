//! Tokens and roles. The tokens file holds only SHA-256 hashes; a presented
//! token is hashed and compared in constant time against every entry.
//! [`TokenTable`] is the live table: SIGHUP rereads the file, so a token is
//! revoked or rotated without a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::RngCore;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::wire::Role;

/// One principal the hub knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub role: Role,
    /// The pool a worker token reports for: the file's `pool`, by default
    /// the token's name. A worker id belongs to the pool that first
    /// reported it.
    pub pool: Arc<str>,
}

#[derive(Debug, Clone)]
struct Entry {
    principal: Principal,
    hash: [u8; 32],
}

/// The hub's token table.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct TokensFile {
    #[serde(default)]
    tokens: Vec<TokenLine>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenLine {
    name: String,
    role: String,
    sha256: String,
    #[serde(default)]
    pool: Option<String>,
}

/// Errors reading a tokens file. Never holds a token.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// Whether a token's name is an e-mail address (`jo.smith@acme.io`): an
/// account identifier, which nothing the hub publishes may hold, and a
/// token's name stands in History's `by` and in `whoami`.
pub fn email_shaped(name: &str) -> bool {
    let Some((local, domain)) = name.rsplit_once('@') else {
        return false;
    };
    let Some((host, tld)) = domain.rsplit_once('.') else {
        return false;
    };
    !local.is_empty()
        && !host.is_empty()
        && tld.len() >= 2
        && tld.chars().all(|c| c.is_ascii_alphabetic())
}

/// What an e-mail-shaped token name is shown as: `redacted-email-` and 8
/// hex digits of its hash.
fn redacted_name(name: &str) -> String {
    format!(
        "redacted-email-{}",
        hex::encode(&Sha256::digest(name.as_bytes())[..4])
    )
}

/// SHA-256 of a token.
pub fn hash_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// A fresh random token: `mft_` and 43 base64url characters (256 bits).
pub fn generate_token() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!(
        "mft_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

impl Tokens {
    pub fn parse(text: &str, path: &str) -> Result<Tokens, TokensError> {
        let invalid = |message: String| TokensError::Invalid {
            path: path.to_string(),
            message,
        };
        let file: TokensFile = toml::from_str(text).map_err(|e| invalid(toml_error(text, &e)))?;
        let mut entries = Vec::with_capacity(file.tokens.len());
        for (i, line) in file.tokens.into_iter().enumerate() {
            let role: Role = line
                .role
                .parse()
                .map_err(|e: String| invalid(format!("tokens[{i}]: {e}")))?;
            let bytes = hex::decode(line.sha256.trim())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| {
                    invalid(format!(
                        "tokens[{i}] ({}): sha256 must be 64 hex digits",
                        line.name
                    ))
                })?;
            if line.name.trim().is_empty() || line.name.len() > 64 {
                return Err(invalid(format!(
                    "tokens[{i}]: name must be 1 to 64 characters"
                )));
            }
            if line.name.chars().any(unsafe_in_name) {
                // The name is shown in history, whoami and the hub's log:
                // no terminal control, no bidi or invisible characters.
                return Err(invalid(format!(
                    "tokens[{i}]: the name holds a control, bidirectional or invisible character"
                )));
            }
            let name = if email_shaped(&line.name) {
                // An account identifier (ADR 0029): never shown. The stand-in
                // is stable across restarts and tells two such names apart.
                let shown = redacted_name(&line.name);
                tracing::warn!(
                    "tokens file {path}: tokens[{i}] is named by an e-mail address; it is shown as {shown} (rename it: macfleet hub token --name refuses e-mail addresses)"
                );
                shown
            } else {
                line.name
            };
            let pool = match line.pool {
                Some(p) if !is_pool_name(&p) || email_shaped(&p) => {
                    return Err(invalid(format!(
                        "tokens[{i}] ({name}): pool must be 1 to 64 of [A-Za-z0-9._@-], not an e-mail address"
                    )));
                }
                Some(p) => p,
                // The token's name as shown: never an e-mail address.
                None => name.clone(),
            };
            entries.push(Entry {
                principal: Principal {
                    name,
                    role,
                    pool: Arc::from(pool),
                },
                hash: bytes,
            });
        }
        Ok(Tokens { entries })
    }

    pub fn load(path: &Path) -> Result<Tokens, TokensError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TokensError::Io {
            path: shown.clone(),
            source,
        })?;
        Tokens::parse(&text, &shown)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The principal a token belongs to. Every entry is compared, in
    /// constant time, whether or not an earlier one matched.
    pub fn lookup(&self, token: &str) -> Option<&Principal> {
        self.lookup_hash(&hash_token(token))
    }

    /// [`Tokens::lookup`] by the token's SHA-256.
    pub fn lookup_hash(&self, presented: &[u8; 32]) -> Option<&Principal> {
        let mut found = None;
        for e in &self.entries {
            if bool::from(e.hash.ct_eq(presented)) && found.is_none() {
                found = Some(&e.principal);
            }
        }
        found
    }
}

/// A TOML error of the tokens file as message, line and column only: the
/// parser's own text quotes the offending line, which may be a token pasted
/// in (`sha256 = mft_…`), and the values and keys it names are left out too
/// (`unknown field `…``, `invalid type: string "…"`).
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    use std::sync::LazyLock;
    static QUOTED: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r#"`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*""#).ok());
    let message: String = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    // Only the names the file format defines may be quoted back.
    let message = match QUOTED.as_ref() {
        Some(re) => re
            .replace_all(&message, |c: &regex::Captures<'_>| {
                let q = &c[0];
                let inner = &q[1..q.len() - 1];
                if ["tokens", "name", "role", "sha256", "pool"].contains(&inner) {
                    q.to_string()
                } else {
                    "…".to_string()
                }
            })
            .into_owned(),
        None => "not a valid tokens file".into(),
    };
    let message = crate::scrub::scrub(&message).into_owned();
    match e.span() {
        Some(span) => {
            let (line, column) = crate::agents_doc::line_col(text, span.start);
            format!("{message} (line {line}, column {column})")
        }
        None => message,
    }
}

/// Characters a token name may not hold: C0/C1 controls, and the
/// bidirectional and invisible ones that can make a screen lie.
fn unsafe_in_name(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{E0000}'..='\u{E007F}')
}

/// The hub's live token table. Requests look up the current table; a
/// reload swaps in a whole new one (or keeps the old one if the file is
/// bad) and wakes whoever waits in [`TokenTable::revoked`].
pub struct TokenTable {
    current: Arc<arc_swap::ArcSwap<Tokens>>,
    file: Option<PathBuf>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl TokenTable {
    /// `file` is what [`TokenTable::reload`] rereads; `None` for a table
    /// built in memory (tests, the demo).
    pub fn new(tokens: Tokens, file: Option<PathBuf>) -> TokenTable {
        TokenTable {
            current: Arc::new(arc_swap::ArcSwap::from_pointee(tokens)),
            file,
            changed: tokio::sync::watch::Sender::new(0),
        }
    }

    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The principal a token belongs to, in the current table.
    pub fn lookup(&self, token: &str) -> Option<Principal> {
        self.current.load().lookup(token).cloned()
    }

    /// Put `tokens` in force.
    pub fn replace(&self, tokens: Tokens) {
        self.current.store(Arc::new(tokens));
        self.changed.send_modify(|g| *g += 1);
    }

    /// Reread the tokens file. A file that cannot be read or parsed leaves
    /// the table in force as it was. Returns how many tokens now hold.
    pub fn reload(&self) -> Result<usize, TokensError> {
        let Some(path) = &self.file else {
            return Ok(self.current.load().len());
        };
        let tokens = Tokens::load(path)?;
        let n = tokens.len();
        self.replace(tokens);
        Ok(n)
    }

    /// Resolves once the token whose SHA-256 is `hash` no longer belongs to
    /// a principal with one of `roles` (revoked, or its role changed):
    /// an open event stream ends with it.
    pub fn revoked(
        &self,
        hash: [u8; 32],
        roles: &'static [Role],
    ) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
        let current = self.current.clone();
        let mut changed = self.changed.subscribe();
        async move {
            loop {
                let allowed = current
                    .load()
                    .lookup_hash(&hash)
                    .is_some_and(|p| roles.contains(&p.role));
                if !allowed || changed.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The permission bits of `path` when group or others have any access to
/// it (`Some(0o644)`), `None` when only its owner has (or off Unix).
pub fn open_to_others(path: &Path) -> std::io::Result<Option<u32>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        Ok((mode & 0o077 != 0).then_some(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = std::fs::metadata(path)?;
        Ok(None)
    }
}

/// One `[[tokens]]` entry of a tokens file: the name, the role and the
/// hash of `token` (never the token itself).
pub fn token_entry(name: &str, role: Role, token: &str) -> String {
    token_entry_in_pool(name, role, None, token)
}

/// [`token_entry`] with a `pool` key (a worker token's pool, when it is not
/// the token's name).
pub fn token_entry_in_pool(name: &str, role: Role, pool: Option<&str>, token: &str) -> String {
    let pool = pool.map_or(String::new(), |p| format!("pool = \"{p}\"\n"));
    format!(
        "[[tokens]]\nname = \"{name}\"\nrole = \"{role}\"\n{pool}sha256 = \"{}\"\n",
        hex::encode(hash_token(token))
    )
}

/// A token's name as `hub token` takes it, and a pool's: 1 to 64 of
/// `[A-Za-z0-9._@-]`.
pub fn is_pool_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// Append a new token line to a tokens file (created if missing), keeping
/// every byte already there. Returns the token, to be printed once.
pub fn append_token(
    path: &Path,
    name: &str,
    role: Role,
    pool: Option<&str>,
) -> Result<String, TokensError> {
    let shown = path.display().to_string();
    let io = |source| TokensError::Io {
        path: shown.clone(),
        source,
    };
    if !is_pool_name(name) {
        return Err(TokensError::Invalid {
            path: shown,
            message: "--name must be 1 to 64 of [A-Za-z0-9._@-]".into(),
        });
    }
    if email_shaped(name) {
        return Err(TokensError::Invalid {
            path: shown,
            message: "--name must not be an e-mail address: a token's name is shown in the history and to whoami, and an account identifier is never published; name the person or machine another way (alice, ci-7)".into(),
        });
    }
    if let Some(p) = pool {
        if role != Role::Worker {
            return Err(TokensError::Invalid {
                path: shown,
                message: "--pool is for worker tokens".into(),
            });
        }
        if !is_pool_name(p) || email_shaped(p) {
            return Err(TokensError::Invalid {
                path: shown,
                message: "--pool must be 1 to 64 of [A-Za-z0-9._@-], not an e-mail address".into(),
            });
        }
    }
    let existing = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    let tokens = Tokens::parse(&existing, &shown)?;
    if tokens.entries.iter().any(|e| e.principal.name == name) {
        return Err(TokensError::Invalid {
            path: shown,
            message: format!("a token named {name:?} exists already"),
        });
    }
    // The file is created 0600 (the temporary file's mode) and a looser
    // one is tightened first, so the rename below keeps 0600.
    restrict_to_owner(path).map_err(io)?;
    let token = generate_token();
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&token_entry_in_pool(name, role, pool, &token));
    crate::hub::store::write_atomic(path, text.as_bytes()).map_err(io)?;
    Ok(token)
}

/// Warn when others can read the tokens file: it holds only hashes, but
/// it says who holds which role, and a hand-made weak token in it could be
/// guessed offline from its hash.
pub fn warn_if_open_to_others(path: &Path) {
    if let Ok(Some(mode)) = open_to_others(path) {
        tracing::warn!(
            "the tokens file {} has mode {mode:04o}: group or others can read it; make it private with: chmod 600 {}",
            path.display(),
            path.display()
        );
    }
}

/// Make an existing file readable and writable by its owner only.
fn restrict_to_owner(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::metadata(path) {
            Ok(m) if m.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            }
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token pasted into the file where it does not belong is never in
    /// the error: unquoted (not TOML), as a key, or as a wrong-typed value.
    #[test]
    fn parse_errors_say_message_line_and_column_never_a_token() {
        let tok = generate_token();
        let head = "[[tokens]]\nname = \"alice\"\nrole = \"owner\"\n";
        for (text, line) in [
            (format!("{head}sha256 = {tok}\n"), 4),
            (
                format!("{head}sha256 = \"{}\"\n\"{tok}\" = 1\n", "0".repeat(64)),
                5,
            ),
            (format!("{head}sha256 = [\"{tok}\"]\n"), 4),
        ] {
            let e = Tokens::parse(&text, "t.toml")
                .expect_err("bad file")
                .to_string();
            assert!(!e.contains(&tok), "{e}");
            assert!(!e.contains(&tok[4..12]), "{e}");
            assert!(e.contains(&format!("(line {line}, column ")), "{e}");
            assert!(!e.contains('\n') && !e.contains('|'), "no snippet: {e}");
        }
    }

    #[test]
    fn lookup_by_hash() {
        let secret = ["fake", "-token-", "for-tests"].concat();
        let text = token_entry("alice", Role::Owner, &secret);
        let t = Tokens::parse(&text, "t.toml").expect("parses");
        assert_eq!(t.lookup(&secret).map(|p| p.name.as_str()), Some("alice"));
        assert_eq!(t.lookup("other"), None);
        assert!(!text.contains(&secret));
    }

    #[test]
    fn bad_files_say_why() {
        let e = Tokens::parse(
            "[[tokens]]\nname = \"a\"\nrole = \"root\"\nsha256 = \"00\"\n",
            "t.toml",
        )
        .expect_err("bad role");
        assert!(e.to_string().contains("unknown role"), "{e}");
        let e = Tokens::parse(
            "[[tokens]]\nname = \"a\"\nrole = \"owner\"\nsha256 = \"00\"\n",
            "t.toml",
        )
        .expect_err("bad hash");
        assert!(e.to_string().contains("64 hex"), "{e}");
    }

    #[test]
    fn names_with_control_bidi_or_invisible_characters_are_refused() {
        let hash = hex::encode(hash_token("x"));
        for name in [
            "a\u{1b}]52;c;aGk=\u{7}",
            "a\u{202E}b",
            "a\u{200B}b",
            "a\rb",
            "a\u{85}b",
        ] {
            let text = format!(
                "[[tokens]]\nname = {}\nrole = \"viewer\"\nsha256 = \"{hash}\"\n",
                toml_edit::Value::from(name)
            );
            let e = Tokens::parse(&text, "t.toml").expect_err(name);
            assert!(e.to_string().contains("control, bidirectional"), "{e}");
            assert!(!e.to_string().contains('\u{1b}'));
        }
        let ok =
            format!("[[tokens]]\nname = \"ops team\"\nrole = \"viewer\"\nsha256 = \"{hash}\"\n");
        assert_eq!(
            Tokens::parse(&ok, "t.toml")
                .expect("plain names pass")
                .len(),
            1
        );
    }

    #[cfg(unix)]
    #[test]
    fn append_token_makes_and_keeps_the_file_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("tokens.toml");
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        append_token(&p, "a", Role::Owner, None).expect("first");
        assert_eq!(mode(&p), 0o600);
        assert_eq!(open_to_others(&p).expect("stat"), None);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(open_to_others(&p).expect("stat"), Some(0o644));
        append_token(&p, "b", Role::Viewer, None).expect("second");
        assert_eq!(mode(&p), 0o600);
        assert_eq!(Tokens::load(&p).expect("loads").len(), 2);
    }

    #[tokio::test]
    async fn a_reload_swaps_the_table_and_wakes_the_revoked() {
        let (a, b) = (
            ["fake", "-a-", "token"].concat(),
            ["fake", "-b-", "token"].concat(),
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("tokens.toml");
        let both = token_entry("a", Role::Viewer, &a) + &token_entry("b", Role::Viewer, &b);
        std::fs::write(&p, &both).expect("write");
        let table = TokenTable::new(Tokens::load(&p).expect("load"), Some(p.clone()));
        let mut a_gone = Box::pin(table.revoked(hash_token(&a), &[Role::Viewer]));
        let mut b_gone = Box::pin(table.revoked(hash_token(&b), &[Role::Viewer]));
        fn poll<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> bool {
            futures::FutureExt::now_or_never(f).is_some()
        }
        assert!(!poll(a_gone.as_mut()) && !poll(b_gone.as_mut()));

        std::fs::write(&p, token_entry("b", Role::Viewer, &b)).expect("rewrite");
        assert_eq!(table.reload().expect("reload"), 1);
        assert_eq!(table.lookup(&a), None);
        assert_eq!(table.lookup(&b).map(|p| p.name), Some("b".to_string()));
        tokio::time::timeout(std::time::Duration::from_secs(5), a_gone.as_mut())
            .await
            .expect("a's streams are told");
        assert!(!poll(b_gone.as_mut()));

        // A broken file keeps the table in force.
        std::fs::write(&p, "not toml [").expect("break");
        assert!(table.reload().is_err());
        assert!(table.lookup(&b).is_some());
        // A role change counts as a revocation for a stream of the old role.
        std::fs::write(&p, token_entry("b", Role::Worker, &b)).expect("rewrite");
        table.reload().expect("reload");
        tokio::time::timeout(std::time::Duration::from_secs(5), b_gone.as_mut())
            .await
            .expect("b is no viewer now");
    }

    #[test]
    fn generated_tokens_are_distinct_and_shaped() {
        let a = generate_token();
        let b = generate_token();
        assert_ne!(a, b);
        assert!(a.starts_with("mft_") && a.len() == 47, "{}", a.len());
    }
}
