//! Which hub, with which token: `--hub`, `MAC_HUB_URL`, or the current
//! context of `$XDG_CONFIG_HOME/macfleet/config.toml` (like kubeconfig).
//! The token comes from `MAC_HUB_TOKEN` or the context's `token_file`,
//! never from the command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use color_eyre::eyre::{Context as _, Result, eyre};
use serde::Deserialize;

use crate::client::Token;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextsFile {
    pub current: Option<String>,
    #[serde(default)]
    pub contexts: BTreeMap<String, ContextEntry>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextEntry {
    pub hub: String,
    pub token_file: Option<PathBuf>,
    #[serde(default)]
    pub read_only: bool,
}

/// Where to connect, resolved.
#[derive(Debug, Clone)]
pub struct Target {
    pub hub: String,
    pub token: Option<Token>,
    pub read_only: bool,
    /// What to call it on screen: the context name or the URL.
    pub label: String,
}

pub fn config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("macfleet").join("config.toml"))
}

fn expand_home(p: &Path) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => p.to_path_buf(),
    }
}

fn read_token_file(p: &Path) -> Result<Token> {
    let p = expand_home(p);
    let text = std::fs::read_to_string(&p)
        .wrap_err_with(|| format!("cannot read the token file {}", p.display()))?;
    let t = text.trim();
    if t.is_empty() {
        return Err(eyre!("the token file {} is empty", p.display()));
    }
    Ok(Token::new(t))
}

/// Resolve the hub and token. `None` when nothing names a hub at all.
pub fn resolve(hub_flag: Option<&str>, context_flag: Option<&str>) -> Result<Option<Target>> {
    let env_token = std::env::var("MAC_HUB_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
        .map(Token::new);
    let explicit = hub_flag
        .map(str::to_string)
        .or_else(|| std::env::var("MAC_HUB_URL").ok().filter(|u| !u.is_empty()));
    let file = match config_path() {
        Some(p) if p.exists() => {
            let text = std::fs::read_to_string(&p)
                .wrap_err_with(|| format!("cannot read {}", p.display()))?;
            toml::from_str::<ContextsFile>(&text).map_err(|e| eyre!("{}: {e}", p.display()))?
        }
        _ => ContextsFile::default(),
    };
    let ctx_name = context_flag.map(str::to_string).or(file.current.clone());
    let ctx = match &ctx_name {
        Some(n) => match file.contexts.get(n) {
            Some(c) => Some((n.clone(), c.clone())),
            None if context_flag.is_some() => {
                return Err(eyre!(
                    "no context named {n:?} in {}",
                    config_path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                ));
            }
            None => None,
        },
        None => None,
    };
    if let Some(hub) = explicit {
        return Ok(Some(Target {
            label: hub.clone(),
            hub,
            token: env_token,
            read_only: false,
        }));
    }
    let Some((name, c)) = ctx else {
        return Ok(None);
    };
    let token = match (env_token, &c.token_file) {
        (Some(t), _) => Some(t),
        (None, Some(f)) => Some(read_token_file(f)?),
        (None, None) => None,
    };
    Ok(Some(Target {
        hub: c.hub,
        token,
        read_only: c.read_only,
        label: name,
    }))
}

pub const NO_HUB_HELP: &str = "no hub configured. Try one of:
  macfleet demo                      an embedded hub with a simulated fleet
  macfleet --hub URL                 with MAC_HUB_TOKEN set in the environment
  a context in $XDG_CONFIG_HOME/macfleet/config.toml:
      current = \"prod\"
      [contexts.prod]
      hub = \"https://hub.example:7878\"
      token_file = \"~/.config/macfleet/prod.token\"
      read_only = true";
