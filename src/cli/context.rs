//! Which hub, with which token: `--hub`, `--context`, `MAC_HUB_URL`, or the
//! current context of `$XDG_CONFIG_HOME/macfleet/config.toml` (like
//! kubeconfig). The token comes from `MAC_HUB_TOKEN` or the context's
//! `token_file`, never from the command line.
//!
//! `macfleet context list|current|use|add|remove` edit that file with
//! toml_edit, so comments and layout the user wrote stay.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use color_eyre::eyre::{Context as _, Result, eyre};
use serde::Deserialize;

use super::{Exit, Global, exit};
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
    /// An extra CA certificate (PEM) for the hub's HTTPS.
    pub ca_cert: Option<PathBuf>,
}

/// Where to connect, resolved.
#[derive(Debug, Clone)]
pub struct Target {
    pub hub: String,
    pub token: Option<Token>,
    pub read_only: bool,
    /// What to call it on screen: the context name or the URL.
    pub label: String,
    /// The context's CA certificate (`--ca-cert` overrides it).
    pub ca_cert: Option<PathBuf>,
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

/// A token file must be its owner's alone, as ssh insists for a key.
fn refuse_if_open(p: &Path) -> Result<()> {
    if let Some(mode) = crate::hub::auth::open_to_others(p)
        .wrap_err_with(|| format!("cannot read the token file {}", p.display()))?
    {
        return Err(eyre!(Exit::new(
            exit::NOT_ALLOWED,
            format!(
                "the token file {} has mode {mode:04o}: group or others can read it, so it is not used; make it private with: chmod 600 {}",
                p.display(),
                p.display()
            )
        )));
    }
    Ok(())
}

fn read_token_file(p: &Path) -> Result<Token> {
    let p = expand_home(p);
    refuse_if_open(&p)?;
    let text = std::fs::read_to_string(&p)
        .wrap_err_with(|| format!("cannot read the token file {}", p.display()))?;
    let t = text.trim();
    if t.is_empty() {
        return Err(eyre!("the token file {} is empty", p.display()));
    }
    Ok(Token::new(t))
}

fn shown_config_path() -> String {
    config_path()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "$XDG_CONFIG_HOME/macfleet/config.toml".into())
}

/// The contexts file, or an empty one when there is none.
pub fn load() -> Result<ContextsFile> {
    match config_path() {
        Some(p) if p.exists() => {
            let text = std::fs::read_to_string(&p)
                .wrap_err_with(|| format!("cannot read {}", p.display()))?;
            toml::from_str::<ContextsFile>(&text).map_err(|e| eyre!("{}: {e}", p.display()))
        }
        _ => Ok(ContextsFile::default()),
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Resolve the hub and token. `None` when nothing names a hub at all.
///
/// The hub: `--hub`, then `--context`, then `MAC_HUB_URL`, then the
/// current context. The token: `MAC_HUB_TOKEN`, then (for a hub that came
/// from a context) the context's `token_file`. A context's token is never
/// sent to a hub named some other way.
pub fn resolve(hub_flag: Option<&str>, context_flag: Option<&str>) -> Result<Option<Target>> {
    let env_token = env_nonempty("MAC_HUB_TOKEN").map(Token::new);
    let direct = |hub: String| Target {
        label: hub.clone(),
        hub,
        token: env_token.clone(),
        read_only: false,
        ca_cert: None,
    };
    if let Some(hub) = hub_flag {
        return Ok(Some(direct(hub.to_string())));
    }
    let file = match (context_flag, env_nonempty("MAC_HUB_URL")) {
        (None, Some(hub)) => return Ok(Some(direct(hub))),
        _ => load()?,
    };
    let Some(name) = context_flag.map(str::to_string).or(file.current.clone()) else {
        return Ok(None);
    };
    let Some(c) = file.contexts.get(&name).cloned() else {
        return Err(eyre!(Exit::new(
            exit::USAGE,
            format!(
                "no context named {name} in {} (see: macfleet context list)",
                shown_config_path()
            )
        )));
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
        ca_cert: c.ca_cert.map(|p| expand_home(&p)),
    }))
}

/// The named context's hub and its own token (its `token_file`; never
/// `MAC_HUB_TOKEN`, which belongs to the hub the session started on), for
/// the TUI's `:ctx`.
pub fn context_target(name: &str) -> Result<Target> {
    let file = load()?;
    let Some(c) = file.contexts.get(name).cloned() else {
        return Err(eyre!(
            "no context named {name} in {} (see: macfleet context list)",
            shown_config_path()
        ));
    };
    let token = match &c.token_file {
        Some(f) => Some(read_token_file(f)?),
        None => None,
    };
    Ok(Target {
        hub: c.hub,
        token,
        read_only: c.read_only,
        label: name.to_string(),
        ca_cert: c.ca_cert.map(|p| expand_home(&p)),
    })
}

pub const NO_HUB_HELP: &str = "no hub configured. Try one of:
  macfleet demo                      an embedded hub with a simulated fleet
  macfleet --hub URL                 with MAC_HUB_TOKEN set in the environment
  macfleet context add NAME --hub URL --token-file FILE
                                     then: macfleet context use NAME";

#[derive(Debug, Args)]
pub struct ContextArgs {
    #[command(subcommand)]
    pub command: ContextCommand,
}

#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// The contexts; the current one is marked with `*`.
    List,
    /// The current context's name.
    Current,
    /// Make NAME the current context.
    Use {
        /// The context's name.
        name: String,
    },
    /// Add a context: the hub from --hub, and with --read-only and --ca-cert
    /// as given. The token stays in its file; only the path is kept.
    Add {
        /// The context's name (1 to 64 of A-Z a-z 0-9 . _ -).
        name: String,
        /// A file holding the token (mode 0600).
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
    },
    /// Remove a context (and unset it if it is the current one).
    Remove {
        /// The context's name.
        name: String,
    },
}

pub fn run(global: &Global, args: ContextArgs) -> Result<i32> {
    let path = config_path().ok_or_else(|| {
        Exit::new(
            exit::USAGE,
            "cannot tell where the config lives: set XDG_CONFIG_HOME or HOME",
        )
    })?;
    let mut out = std::io::stdout().lock();
    match args.command {
        ContextCommand::List => {
            let file = load()?;
            let cur = file.current.as_deref();
            let rows: Vec<(&String, &ContextEntry)> = file.contexts.iter().collect();
            let cell = |f: fn(&ContextEntry) -> String| rows.iter().map(|(_, c)| f(c)).collect();
            let table = super::get::render_table(
                vec![
                    (
                        "CURRENT",
                        0,
                        rows.iter()
                            .map(|(n, _)| if Some(n.as_str()) == cur { "*" } else { "" }.into())
                            .collect(),
                    ),
                    ("NAME", 0, rows.iter().map(|(n, _)| n.to_string()).collect()),
                    ("HUB", 0, cell(|c| c.hub.clone())),
                    (
                        "READ-ONLY",
                        1,
                        cell(|c| if c.read_only { "yes" } else { "no" }.into()),
                    ),
                    (
                        "TOKEN FILE",
                        2,
                        cell(|c| path_cell(c.token_file.as_deref())),
                    ),
                    ("CA CERT", 3, cell(|c| path_cell(c.ca_cert.as_deref()))),
                ],
                usize::MAX,
            );
            out.write_all(table.as_bytes())?;
        }
        ContextCommand::Current => match load()?.current {
            Some(c) => writeln!(out, "{c}")?,
            None => {
                return Err(eyre!(Exit::new(
                    exit::ERROR,
                    "no current context (choose one with: macfleet context use NAME)"
                )));
            }
        },
        ContextCommand::Use { name } => {
            let file = load()?;
            if !file.contexts.contains_key(&name) {
                return Err(eyre!(Exit::new(
                    exit::USAGE,
                    format!(
                        "no context named {} in {} (see: macfleet context list)",
                        crate::scrub::scrub(&name),
                        path.display()
                    )
                )));
            }
            edit(&path, |doc| {
                set_keeping_decor(doc, "current", &name);
                Ok(())
            })?;
            eprintln!("current context: {name}");
        }
        ContextCommand::Add { name, token_file } => {
            add(&path, global, &name, token_file)?;
            eprintln!(
                "added context {name} to {} (make it current with: macfleet context use {name})",
                path.display()
            );
        }
        ContextCommand::Remove { name } => {
            let file = load()?;
            if !file.contexts.contains_key(&name) {
                return Err(eyre!(Exit::new(
                    exit::USAGE,
                    format!("no context named {}", crate::scrub::scrub(&name))
                )));
            }
            edit(&path, |doc| {
                if let Some(t) = doc
                    .get_mut("contexts")
                    .and_then(toml_edit::Item::as_table_like_mut)
                {
                    t.remove(&name);
                }
                if file.current.as_deref() == Some(name.as_str()) {
                    doc.remove("current");
                }
                Ok(())
            })?;
            eprintln!("removed context {name}");
        }
    }
    out.flush()?;
    Ok(exit::OK)
}

/// Set a top-level string, keeping the comments around the old value
/// (`Table::insert` would drop them with the key).
fn set_keeping_decor(doc: &mut toml_edit::DocumentMut, key: &str, value: &str) {
    match doc.get_mut(key).and_then(toml_edit::Item::as_value_mut) {
        Some(v) => {
            let decor = v.decor().clone();
            *v = toml_edit::Value::from(value);
            *v.decor_mut() = decor;
        }
        None => {
            doc.insert(key, toml_edit::value(value));
        }
    }
}

fn path_cell(p: Option<&Path>) -> String {
    p.map_or_else(|| "-".into(), |p| p.display().to_string())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// An absolute path for the file (`~/…` is kept as written).
fn absolute(p: &Path) -> Result<PathBuf> {
    if p.starts_with("~") || p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    std::path::absolute(p).wrap_err_with(|| format!("cannot make {} absolute", p.display()))
}

fn add(path: &Path, global: &Global, name: &str, token_file: Option<PathBuf>) -> Result<()> {
    if !valid_name(name) {
        return Err(eyre!(Exit::new(
            exit::USAGE,
            "a context name is 1 to 64 of A-Z a-z 0-9 . _ -"
        )));
    }
    let Some(hub) = global.hub.as_deref() else {
        return Err(eyre!(Exit::new(
            exit::USAGE,
            "macfleet context add NAME needs --hub URL"
        )));
    };
    // The URL must be one the client would use (scheme, no credentials).
    crate::client::Client::new(hub, None, crate::client::ClientOptions::default())?;
    if load()?.contexts.contains_key(name) {
        return Err(eyre!(Exit::new(
            exit::USAGE,
            format!(
                "a context named {name} exists already (remove it first: macfleet context remove {name})"
            )
        )));
    }
    let token_file = token_file.as_deref().map(absolute).transpose()?;
    if let Some(f) = &token_file {
        let f = expand_home(f);
        if f.exists() {
            refuse_if_open(&f)?;
        } else {
            eprintln!(
                "note: the token file {} does not exist yet (write the token there, mode 0600)",
                f.display()
            );
        }
    }
    let ca_cert = global.ca_cert.as_deref().map(absolute).transpose()?;
    let mut table = toml_edit::Table::new();
    table.insert("hub", toml_edit::value(hub));
    if let Some(f) = &token_file {
        table.insert("token_file", toml_edit::value(path_text(f)?));
    }
    if global.read_only {
        table.insert("read_only", toml_edit::value(true));
    }
    if let Some(f) = &ca_cert {
        table.insert("ca_cert", toml_edit::value(path_text(f)?));
    }
    edit(path, |doc| {
        let contexts = doc
            .entry("contexts")
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            })
            .as_table_mut()
            .ok_or_else(|| eyre!("`contexts` in {} is not a table", path.display()))?;
        contexts.insert(name, toml_edit::Item::Table(table));
        Ok(())
    })
}

fn path_text(p: &Path) -> Result<&str> {
    p.to_str()
        .ok_or_else(|| eyre!("the path {} is not UTF-8", p.display()))
}

/// Read the config (or start an empty one), apply `f`, check the result
/// still reads as a contexts file, and replace the file atomically.
fn edit(path: &Path, f: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<()>) -> Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(eyre!("cannot read {}: {e}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| eyre!("{} is not TOML: {e}", path.display()))?;
    f(&mut doc)?;
    let new = doc.to_string();
    toml::from_str::<ContextsFile>(&new).map_err(|e| eyre!("{}: {e}", path.display()))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .wrap_err_with(|| format!("cannot make the directory {}", dir.display()))?;
    }
    crate::hub::store::write_atomic(path, new.as_bytes())
        .wrap_err_with(|| format!("cannot write {}", path.display()))
}
