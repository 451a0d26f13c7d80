//! `macfleet agents show|set|move|add|remove`: scripted, format-preserving
//! edits of `MAC_CODING_AGENTS`, on a local file (`--file`) or through the
//! hub (`--hub`, `PUT` with `If-Match`). Each prints the diff it applied.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use color_eyre::eyre::{Result, eyre};

use super::{Exit, Global, connect, exit};
use crate::agents_doc::{self, Op};
use crate::client::{ClientError, Writer};
use crate::textsafe::{for_terminal, for_terminal_lines};

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub command: AgentsCommand,
    /// Edit a local TOML document in place instead of the hub's.
    #[arg(long, value_name = "PATH", global = true)]
    pub file: Option<PathBuf>,
    /// With the hub: the revision this edit is meant for (exit 3 if the hub
    /// is elsewhere).
    #[arg(long, value_name = "R", global = true)]
    pub if_revision: Option<String>,
    /// Print the diff, write nothing.
    #[arg(long, global = true)]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// The list in rank order.
    Show,
    /// Replace the list: `set opencode,claude,pi`.
    Set { agents: String },
    /// Move an agent to a rank (0 is first).
    Move { name: String, index: usize },
    /// Add an agent (at the end, or at INDEX).
    Add { name: String, index: Option<usize> },
    /// Remove an agent.
    Remove { name: String },
}

impl AgentsCommand {
    fn op(&self) -> Option<Op> {
        match self {
            AgentsCommand::Show => None,
            AgentsCommand::Set { agents } => Some(Op::Set(
                agents
                    .split(',')
                    .map(|a| a.trim().to_string())
                    .filter(|a| !a.is_empty())
                    .collect(),
            )),
            AgentsCommand::Move { name, index } => Some(Op::Move {
                name: name.clone(),
                index: *index,
            }),
            AgentsCommand::Add { name, index } => Some(Op::Add {
                name: name.clone(),
                index: *index,
            }),
            AgentsCommand::Remove { name } => Some(Op::Remove(name.clone())),
        }
    }
}

fn show(text: &str, revision: Option<&str>) -> Result<()> {
    let located = agents_doc::locate(text)?;
    let mut out = std::io::stdout().lock();
    for (i, a) in located.agents.iter().enumerate() {
        writeln!(out, "{i}  {}", for_terminal(a))?;
    }
    if let Some(r) = revision {
        writeln!(out, "revision {}", for_terminal(r))?;
    }
    for a in agents_doc::unknown_agents(&located.agents) {
        let warning = agents_doc::unknown_agent_warning(&a);
        eprintln!("warning: {}", for_terminal(&warning));
    }
    Ok(())
}

/// Apply, print the diff and warnings; `None` when nothing changes.
fn edit(text: &str, op: &Op, label: &str) -> Result<Option<String>> {
    let edited = agents_doc::apply(text, op)?;
    for w in &edited.warnings {
        eprintln!("warning: {}", for_terminal(w));
    }
    if !edited.changed() {
        let list = edited.after.join(",");
        eprintln!("no change: the list is already {}", for_terminal(&list));
        return Ok(None);
    }
    let diff = agents_doc::unified_diff(
        text,
        &edited.text,
        &format!("a/{label}"),
        &format!("b/{label}"),
    );
    print!("{}", for_terminal_lines(&diff));
    Ok(Some(edited.text))
}

fn run_file(path: &Path, args: &AgentsArgs) -> Result<()> {
    let bytes = std::fs::read(path).map_err(|e| eyre!("cannot read {}: {e}", path.display()))?;
    let text = agents_doc::decode(&bytes).map_err(|e| eyre!(located(path, e)))?;
    let Some(op) = args.command.op() else {
        return show(text, None).map_err(|e| with_path(path, e));
    };
    let label = path.display().to_string();
    let Some(new) = edit(text, &op, &label).map_err(|e| with_path(path, e))? else {
        return Ok(());
    };
    if args.dry_run {
        eprintln!("dry run: {} not written", path.display());
        return Ok(());
    }
    crate::hub::store::write_atomic(path, new.as_bytes())
        .map_err(|e| eyre!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

fn located(path: &Path, e: agents_doc::DocError) -> Exit {
    Exit::new(exit::VALIDATION, format!("{}: {e}", path.display()))
}

fn with_path(path: &Path, e: color_eyre::Report) -> color_eyre::Report {
    match e.downcast::<agents_doc::DocError>() {
        Ok(d) => eyre!(located(path, d)),
        Err(e) => e,
    }
}

async fn run_hub(global: &Global, args: &AgentsArgs) -> Result<()> {
    let (client, target) = connect(global)?;
    let doc = client.config().await?;
    let Some(op) = args.command.op() else {
        return show(&doc.text, Some(&doc.revision));
    };
    if let Some(want) = &args.if_revision {
        if want != &doc.revision {
            return Err(eyre!(ClientError::Conflict {
                current_revision: Some(doc.revision.clone()),
                message: format!("the edit is meant for revision {want}"),
            }));
        }
    }
    let Some(new) = edit(&doc.text, &op, "hub.toml")? else {
        return Ok(());
    };
    if args.dry_run {
        eprintln!(
            "dry run: nothing sent (the hub is at revision {})",
            doc.revision
        );
        return Ok(());
    }
    if global.read_only || target.read_only {
        return Err(eyre!(Exit::new(
            exit::NOT_ALLOWED,
            "read-only: this session does not write (drop --read-only, or use a context that is not read_only)"
        )));
    }
    let who = client.whoami().await?;
    let writer = Writer::new(client, &who).ok_or_else(|| {
        Exit::new(
            exit::NOT_ALLOWED,
            format!(
                "not allowed: the token of {:?} has the {} role; only an owner writes the list",
                who.name, who.role
            ),
        )
    })?;
    let accepted = writer.put_config(&new, &doc.revision).await?;
    eprintln!(
        "revision {} → {}: {}",
        for_terminal(&doc.revision),
        for_terminal(&accepted.revision),
        for_terminal(&accepted.agents.join(","))
    );
    Ok(())
}

pub async fn run(global: &Global, args: AgentsArgs) -> Result<()> {
    match &args.file {
        Some(path) => run_file(path, &args),
        None => run_hub(global, &args).await,
    }
}
