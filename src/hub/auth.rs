//! Tokens and roles. The tokens file holds only SHA-256 hashes; a presented
//! token is hashed and compared in constant time against every entry.

use std::path::Path;

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
        let file: TokensFile = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
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
            entries.push(Entry {
                principal: Principal {
                    name: line.name,
                    role,
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
        let presented = hash_token(token);
        let mut found = None;
        for e in &self.entries {
            if bool::from(e.hash.ct_eq(&presented)) && found.is_none() {
                found = Some(&e.principal);
            }
        }
        found
    }
}

/// One `[[tokens]]` entry of a tokens file: the name, the role and the
/// hash of `token` (never the token itself).
pub fn token_entry(name: &str, role: Role, token: &str) -> String {
    format!(
        "[[tokens]]\nname = \"{name}\"\nrole = \"{role}\"\nsha256 = \"{}\"\n",
        hex::encode(hash_token(token))
    )
}

/// Append a new token line to a tokens file (created if missing), keeping
/// every byte already there. Returns the token, to be printed once.
pub fn append_token(path: &Path, name: &str, role: Role) -> Result<String, TokensError> {
    let shown = path.display().to_string();
    let io = |source| TokensError::Io {
        path: shown.clone(),
        source,
    };
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
    {
        return Err(TokensError::Invalid {
            path: shown,
            message: "--name must be 1 to 64 of [A-Za-z0-9._@-]".into(),
        });
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
    let token = generate_token();
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&token_entry(name, role, &token));
    crate::hub::store::write_atomic(path, text.as_bytes()).map_err(io)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn generated_tokens_are_distinct_and_shaped() {
        let a = generate_token();
        let b = generate_token();
        assert_ne!(a, b);
        assert!(a.starts_with("mft_") && a.len() == 47, "{}", a.len());
    }
}
