//! `macfleet agents show|set|move|add|remove`: scripted, format-preserving
//! edits of `MAC_CODING_AGENTS`, on a local file (`--file`) or through the
//! hub (`--hub`, `PUT` with `If-Match`). Each prints the diff it applied;
//! a diff that was not applied has `not written: <why>` above it: a dry
//! run's on stdout, a refused write's (typo, read-only, the hub's 4xx) on
//! stderr with nothing on stdout. `show` prints only the list on stdout.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use color_eyre::eyre::{Result, eyre};

use super::{Exit, Global, connect, exit, rollout};
use crate::agents_doc::{self, Op};
use crate::client::{ClientError, WriteError, Writer};
use crate::plan;
use crate::rollout::{Bake, CohortSpec, Promote, RolloutQuery};
use crate::textsafe::{for_terminal, for_terminal_lines};
use crate::wire::{KNOWN_AGENTS, PlanAnswer};

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub command: AgentsCommand,
    /// Edit a local TOML document in place instead of the hub's.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// With the hub: the revision this edit is meant for (exit 3 if the hub
    /// is elsewhere).
    #[arg(long, value_name = "R")]
    pub if_revision: Option<String>,
    /// Print the diff (and, with the hub, the projection of what the new
    /// order does to the fleet), write nothing; exit 0 with no change, 1
    /// with one.
    #[arg(long)]
    pub dry_run: bool,
    /// With the hub: write an agent name that no worker has reported and
    /// that is not a known agent.
    #[arg(long)]
    pub force: bool,
    /// With the hub: write the edit to a cohort of the live workers first
    /// (a share, 10%, or a count, 4), a staged rollout that a guard halts
    /// by itself when the cohort does clearly worse than the rest.
    #[arg(long, value_name = "10%|N", value_parser = rollout::parse_cohort)]
    pub cohort: Option<CohortSpec>,
    /// With --cohort: how long the cohort bakes before the candidate is
    /// promoted (10s to 24h; default 10m).
    #[arg(long, value_name = "DURATION", value_parser = rollout::parse_bake)]
    pub bake: Option<Bake>,
    /// With --cohort: at the end of a quiet bake promote by itself (auto,
    /// the default) or wait for `agents rollout promote` (manual).
    #[arg(long, value_name = "auto|manual", value_parser = rollout::parse_promote)]
    pub promote: Option<Promote>,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// The list in rank order.
    Show,
    /// Replace the list: `set opencode,claude,pi`.
    Set {
        /// The whole list, comma-separated, rank 0 first; agents left out
        /// are removed (with their comments).
        #[arg(value_name = "AGENTS")]
        agents: String,
    },
    /// Move an agent to a rank (0 is first).
    Move {
        /// The agent to move, as it stands in the list (`claude`).
        #[arg(value_name = "NAME")]
        name: String,
        /// Its new rank: 0 is tried first; the others shift to make room.
        #[arg(value_name = "INDEX")]
        index: usize,
    },
    /// Add an agent (at the end, or at INDEX).
    Add {
        /// The agent to add; one that stands commented out in the list
        /// (`# "cursor"`) is brought back rather than written twice.
        #[arg(value_name = "NAME")]
        name: String,
        /// Its rank (0 is first); at the end when left out.
        #[arg(value_name = "INDEX")]
        index: Option<usize>,
    },
    /// Remove an agent.
    Remove {
        /// The agent to remove; its own comment goes with it.
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// The staged rollout: `status` (the default; exit 0 baking or
    /// promoted, 1 aborted, 7 halted), `promote` or `abort` (owner).
    Rollout {
        /// What to do with the rollout: `status` (the default),
        /// `promote` or `abort`.
        #[arg(value_enum, default_value_t = rollout::Action::Status)]
        action: rollout::Action,
    },
    /// A failover drill: where every healthy worker would land, and how
    /// many would have no route, with these rungs down across the fleet.
    /// Writes nothing.
    Drill {
        /// The rungs to mark down, as they stand in the list.
        #[arg(value_name = "NAME", required = true, num_args = 1..)]
        names: Vec<String>,
    },
}

impl AgentsCommand {
    fn op(&self) -> Option<Op> {
        match self {
            AgentsCommand::Show | AgentsCommand::Drill { .. } | AgentsCommand::Rollout { .. } => {
                None
            }
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

/// The list on stdout, one `RANK  NAME` a line and nothing else (`| wc -l`,
/// `| awk`); the revision, for people, on stderr, as `get workers`' summary.
fn show(text: &str, revision: Option<&str>) -> Result<()> {
    let located = agents_doc::locate(text)?;
    let mut out = std::io::stdout().lock();
    for (i, a) in located.agents.iter().enumerate() {
        writeln!(out, "{i}  {}", for_terminal(a))?;
    }
    out.flush()?;
    if let Some(r) = revision {
        eprintln!("revision {}", for_terminal(r));
    }
    for a in agents_doc::unknown_agents(&located.agents) {
        let warning = agents_doc::unknown_agent_warning(&a);
        eprintln!("warning: {}", for_terminal(&warning));
    }
    Ok(())
}

/// An edit that changes the list: the new document and its diff.
struct Change {
    edited: agents_doc::Edited,
    diff: String,
}

/// Apply and print the warnings; `None` when nothing changes.
fn edit(text: &str, op: &Op, label: &str) -> Result<Option<Change>> {
    let edited = match agents_doc::apply(text, op) {
        Ok(e) => e,
        Err(e) => {
            // No document to diff: the edit itself does not hold (a name
            // twice, an unknown position, a list that does not read).
            refused(&format!("{label}: {e}"), "")?;
            return Err(eyre!(Exit::said(exit::VALIDATION)));
        }
    };
    for w in &edited.warnings {
        eprintln!("warning: {}", for_terminal(w));
    }
    if !edited.changed() {
        let list = edited.after.join(",");
        eprintln!("no change: the list is already {}", for_terminal(&list));
        return Ok(None);
    }
    if matches!(op, Op::Set(_)) {
        let dropped: Vec<&str> = edited
            .before
            .iter()
            .filter(|a| !edited.after.contains(a))
            .map(String::as_str)
            .collect();
        if !dropped.is_empty() {
            eprintln!("warning: set removes {}", dropped.join(", "));
        }
    }
    let diff = agents_doc::unified_diff(
        text,
        &edited.text,
        &format!("a/{label}"),
        &format!("b/{label}"),
    );
    Ok(Some(Change {
        edited,
        diff: for_terminal_lines(&diff).into_owned(),
    }))
}

/// A dry run's diff, on stdout (it is what was asked for), said not
/// written above it so that it is never taken for a change made.
fn not_written(why: &str, diff: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "not written: {why}")?;
    out.write_all(diff.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// A refused write (a typo, read-only, a viewer's token, the hub's 4xx or
/// any failed `PUT`): its reason and the diff on stderr, nothing on
/// stdout, so that a script reading stdout never takes it for a change.
fn refused(why: &str, diff: &str) -> Result<()> {
    let mut err = std::io::stderr().lock();
    writeln!(err, "not written: {why}")?;
    err.write_all(diff.as_bytes())?;
    err.flush()?;
    Ok(())
}

fn run_file(path: &Path, args: &AgentsArgs) -> Result<i32> {
    let bytes = std::fs::read(path).map_err(|e| eyre!("cannot read {}: {e}", path.display()))?;
    let text = agents_doc::decode(&bytes).map_err(|e| eyre!(located(path, e)))?;
    let Some(op) = args.command.op() else {
        show(text, None).map_err(|e| with_path(path, e))?;
        return Ok(exit::OK);
    };
    let label = path.display().to_string();
    let Some(change) = edit(text, &op, &label).map_err(|e| with_path(path, e))? else {
        return Ok(exit::OK);
    };
    if args.dry_run {
        not_written(&format!("dry run of {}", path.display()), &change.diff)?;
        return Ok(DRY_RUN_CHANGED);
    }
    crate::hub::store::write_atomic(path, change.edited.text.as_bytes())
        .map_err(|e| eyre!("cannot write {}: {e}", path.display()))?;
    print!("{}", change.diff);
    Ok(exit::OK)
}

/// `--dry-run` with a change exits 1, as `kubectl diff` does.
const DRY_RUN_CHANGED: i32 = 1;

fn located(path: &Path, e: agents_doc::DocError) -> Exit {
    Exit::new(exit::VALIDATION, format!("{}: {e}", path.display()))
}

fn with_path(path: &Path, e: color_eyre::Report) -> color_eyre::Report {
    match e.downcast::<agents_doc::DocError>() {
        Ok(d) => eyre!(located(path, d)),
        Err(e) => e,
    }
}

/// The projection as text: one row per rung, then how many change rung,
/// then its warnings.
fn projection_text(p: &PlanAnswer) -> String {
    let mut out = projection_text_as(p, "where they would stand under the new order", &[]);
    out.push_str(&format!(
        "{} of {} healthy workers change rung\n",
        p.change_rung, p.healthy
    ));
    out
}

/// [`projection_text`] under `title`, the rungs in `down` marked so.
fn projection_text_as(p: &PlanAnswer, title: &str, down: &[String]) -> String {
    let width = p
        .rungs
        .iter()
        .map(|r| r.agent.len())
        .chain([8])
        .max()
        .unwrap_or(8);
    let rank = |r: Option<usize>| r.map_or_else(|| "-".to_string(), |r| r.to_string());
    let mut out = format!(
        "projection over {} healthy workers: {title}\n{:>4}  {:>3}  {:<width$}  {:>5}  {:>5}  {:>5}\n",
        p.healthy, "rank", "was", "agent", "can", "today", "new"
    );
    for r in &p.rungs {
        let mut line = format!(
            "{:>4}  {:>3}  {:<width$}  {:>5}  {:>5}  {:>5}",
            rank(r.rank),
            rank(r.old_rank),
            r.agent,
            r.can,
            r.before,
            r.after
        );
        if down.contains(&r.agent) {
            line.push_str("  down");
        } else if r.rank.is_none() {
            line.push_str("  removed");
        } else if r.unreported > 0 {
            line.push_str(&format!("  ({} not reported)", r.unreported));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&format!(
        "{:>4}  {:>3}  {:<width$}  {:>5}  {:>5}  {:>5}\n",
        "", "", "no route", "", p.no_route.before, p.no_route.after
    ));
    for w in &p.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// A dry run's projection: the hub's plan over its whole fleet (`POST
/// /v1/plan`, the same the TUI's plan line says, at any size); from the
/// workers read here only when the hub has no plan endpoint (404).
async fn dry_run_projection(
    client: &crate::client::Client,
    after: &[String],
    before: &[String],
    revision: &str,
) -> Result<String> {
    match client.plan(after).await {
        Ok(p) => {
            let mut out = format!(
                "the hub's plan over its {} workers against revision {} ({})\n",
                p.workers,
                p.config_revision,
                p.current_agents.join(",")
            );
            out.push_str(&projection_text(&p));
            Ok(out)
        }
        Err(ClientError::Hub { status: 404, .. }) => {
            eprintln!("the hub has no POST /v1/plan: projecting over the workers it lists");
            let workers = client.workers(None).await?.workers;
            let n = workers.len();
            let p = plan::project(&workers, before, after).answer(revision, before, after, n);
            Ok(projection_text(&p))
        }
        Err(e) => Err(eyre!(e)),
    }
}

async fn run_hub(global: &Global, args: &AgentsArgs) -> Result<i32> {
    let (client, target) = connect(global)?;
    let doc = super::hub_document(&client).await?;
    let Some(op) = args.command.op() else {
        show(&doc.text, Some(&doc.revision))?;
        if let Some(v) = rollout::baking(&client).await {
            eprintln!("{}", for_terminal(&rollout::baking_line(&v)));
        }
        return Ok(exit::OK);
    };
    if let Some(want) = &args.if_revision {
        if want != &doc.revision {
            return stale_revision(want, &doc, &op);
        }
    }
    let Some(change) = edit(&doc.text, &op, "hub.toml")? else {
        return Ok(exit::OK);
    };
    if args.dry_run {
        return dry_run(&client, args, &change, &doc.revision).await;
    }
    refuse_typos(&client, args, &change).await?;
    let writer = writer_for(global, &target, client.clone(), &change).await?;
    if let Some(cohort) = args.cohort {
        let q = RolloutQuery {
            cohort,
            bake: args.bake.unwrap_or_default(),
            promote: args.promote.unwrap_or_default(),
        };
        return start_rollout(&writer, &client, q, &change, &doc.revision).await;
    }
    let accepted = put(&writer, &client, &change, &doc.revision).await?;
    print!("{}", change.diff);
    eprintln!(
        "revision {} → {}: {}",
        for_terminal(&doc.revision),
        for_terminal(&accepted.revision),
        for_terminal(&accepted.agents.join(","))
    );
    Ok(exit::OK)
}

/// `--if-revision OLD` while the hub is on another revision: not written
/// (exit 3), with the diff the edit would make on the hub's document now
/// (none when it changes nothing there or does not apply), on stderr.
fn stale_revision(want: &str, doc: &crate::client::ConfigDoc, op: &Op) -> Result<i32> {
    let diff = agents_doc::apply(&doc.text, op)
        .ok()
        .filter(|e| e.changed())
        .map(|e| {
            let d = agents_doc::unified_diff(&doc.text, &e.text, "a/hub.toml", "b/hub.toml");
            for_terminal_lines(&d).into_owned()
        })
        .unwrap_or_default();
    let why = format!(
        "the edit is meant for revision {}, and the hub is on {} (someone wrote since): look again (`macfleet agents show`), then edit with --if-revision {}",
        for_terminal(want),
        for_terminal(&doc.revision),
        for_terminal(&doc.revision)
    );
    refused(&why, &diff)?;
    Err(eyre!(Exit::said(exit::CONFLICT)))
}

/// `--dry-run` through the hub: the diff and the projection on stdout,
/// said not written; a rollout asked for (`--cohort`) and one baking are
/// said too.
async fn dry_run(
    client: &crate::client::Client,
    args: &AgentsArgs,
    change: &Change,
    revision: &str,
) -> Result<i32> {
    let (before, after) = (&change.edited.before, &change.edited.after);
    let projection = dry_run_projection(client, after, before, revision).await?;
    let rollout = match args.cohort {
        Some(c) => format!(
            " (as a rollout to {} first, a {} bake, promote {})",
            rollout::cohort_words(&c.to_string(), None),
            args.bake.unwrap_or_default(),
            args.promote.unwrap_or_default()
        ),
        None => String::new(),
    };
    not_written(
        &format!("dry run against revision {revision}{rollout}"),
        &change.diff,
    )?;
    print!("{}", for_terminal_lines(&projection));
    if let Some(v) = rollout::baking(client).await {
        println!("{}", for_terminal(&rollout::baking_line(&v)));
    }
    Ok(DRY_RUN_CHANGED)
}

/// An added name no worker reported and no known agent has is refused
/// (exit 4) unless `--force`.
async fn refuse_typos(
    client: &crate::client::Client,
    args: &AgentsArgs,
    change: &Change,
) -> Result<()> {
    let (before, after) = (&change.edited.before, &change.edited.after);
    let added: Vec<String> = after
        .iter()
        .filter(|a| !before.contains(a) && !KNOWN_AGENTS.contains(&a.as_str()))
        .cloned()
        .collect();
    if added.is_empty() || args.force {
        return Ok(());
    }
    let workers = client.workers(None).await?.workers;
    let typos = plan::unreported(&added, &workers);
    if typos.is_empty() {
        return Ok(());
    }
    let why = format!(
        "{} {} not a known agent and no worker has reported {}; check the spelling, or pass --force to write it anyway",
        typos
            .iter()
            .map(|t| format!("{t:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        if typos.len() == 1 { "is" } else { "are" },
        if typos.len() == 1 { "it" } else { "them" },
    );
    refused(&why, &change.diff)?;
    Err(eyre!(Exit::said(exit::VALIDATION)))
}

/// The one write path, for an owner's token in a session that may
/// write; refused (said with the diff) otherwise.
async fn writer_for(
    global: &Global,
    target: &super::context::Target,
    client: crate::client::Client,
    change: &Change,
) -> Result<Writer> {
    if global.read_only || target.read_only {
        let why = "read-only: this session does not write (drop --read-only, or use a context that is not read_only)";
        refused(why, &change.diff)?;
        return Err(eyre!(Exit::said(exit::NOT_ALLOWED)));
    }
    let who = client.whoami().await?;
    match Writer::new(client, &who) {
        Some(w) => Ok(w),
        None => {
            let why = format!(
                "not allowed: the token of {:?} has the {} role; only an owner writes the list",
                who.name, who.role
            );
            refused(&why, &change.diff)?;
            Err(eyre!(Exit::said(exit::NOT_ALLOWED)))
        }
    }
}

/// `PUT /v1/config` with `If-Match` (a lost answer checked by sending it
/// again); a refusal is said once, with the diff, in words.
async fn put(
    writer: &Writer,
    client: &crate::client::Client,
    change: &Change,
    revision: &str,
) -> Result<crate::wire::ConfigAccepted> {
    let written = writer
        .put_config_checked(&change.edited.text, revision, |why| {
            eprintln!(
                "may not have been written: the answer was lost ({}); checking",
                for_terminal(why)
            );
        })
        .await;
    match written {
        Ok(w) => {
            if w.lost.is_some() {
                eprintln!(
                    "checked: your write {} is on the hub",
                    for_terminal(&w.accepted.revision)
                );
            }
            Ok(w.accepted)
        }
        Err(WriteError::Refused(e)) => {
            refused(&rollout::in_words(client, &e).await, &change.diff)?;
            Err(eyre!(Exit::said(e.exit_code())))
        }
        // Neither "written" nor "not written": the diff goes with the
        // sentence on stderr, exit 5.
        Err(e @ WriteError::Unknown { .. }) => {
            let why = crate::scrub::scrub(&e.to_string()).into_owned();
            let mut err = std::io::stderr().lock();
            writeln!(err, "may have been written (not checked): the edit it sent")?;
            err.write_all(change.diff.as_bytes())?;
            Err(eyre!(Exit::new(e.exit_code(), why)))
        }
    }
}

/// `POST /v1/rollouts`: the edit to a cohort first. The diff on stdout
/// (the candidate the cohort is told), the rollout on stderr; a refusal
/// said once, with the diff.
async fn start_rollout(
    writer: &Writer,
    client: &crate::client::Client,
    q: RolloutQuery,
    change: &Change,
    revision: &str,
) -> Result<i32> {
    let was_lost = std::cell::Cell::new(false);
    let started = writer
        .start_rollout_checked(&change.edited.text, revision, &q, |why| {
            was_lost.set(true);
            eprintln!(
                "may not have been started: the answer was lost ({}); checking",
                for_terminal(why)
            );
        })
        .await;
    let v = match started {
        Ok((v, lost)) => {
            if lost.is_some() {
                eprintln!("checked: rollout {} is {}", for_terminal(&v.id), v.state);
            }
            v
        }
        Err(WriteError::Refused(e)) => {
            if was_lost.get() {
                eprintln!("checked: the rollout was not started");
            }
            refused(&rollout::in_words(client, &e).await, &change.diff)?;
            return Err(eyre!(Exit::said(e.exit_code())));
        }
        // Neither started nor not: the diff with the sentence, exit 5.
        Err(e @ WriteError::Unknown { .. }) => {
            let why = crate::scrub::scrub(&e.to_string()).into_owned();
            let mut err = std::io::stderr().lock();
            writeln!(err, "may have been started (not checked): the edit it sent")?;
            err.write_all(change.diff.as_bytes())?;
            return Err(eyre!(Exit::new(e.exit_code(), why)));
        }
    };
    print!("{}", change.diff);
    eprintln!(
        "rollout {} started: {} to {}, a {} bake, then promote {}; the file stays on revision {} until it is promoted (macfleet agents rollout status)",
        for_terminal(&v.id),
        for_terminal(&v.agents.join(",")),
        for_terminal(&rollout::cohort_words(&v.cohort, Some(v.cohort_workers))),
        q.bake,
        q.promote,
        for_terminal(&v.base_revision)
    );
    Ok(exit::OK)
}

/// `agents drill NAME…`: the list the hub projects, with those rungs down
/// for every worker, projected over the fleet as it stands. Nothing is
/// written, on the hub or anywhere.
async fn run_drill(global: &Global, names: &[String]) -> Result<i32> {
    let usage = |m: String| Err(eyre!(Exit::new(exit::USAGE, m)));
    if let Some(bad) = names.iter().find(|n| !crate::wire::is_agent_name(n)) {
        return usage(format!(
            "{:?} is not an agent name (a-z first, then a-z 0-9 _ -, at most 32)",
            for_terminal(bad)
        ));
    }
    let (client, _) = connect(global)?;
    let doc = super::hub_document(&client).await?;
    let today = agents_doc::locate(&doc.text)?.agents;
    if let Some(missing) = names.iter().find(|n| !today.contains(n)) {
        return usage(format!(
            "{missing} is not in the list ({}): no worker stands on it to be drilled",
            today.join(", ")
        ));
    }
    let workers = client.workers(None).await?.workers;
    let n = workers.len();
    let p = plan::drill(&workers, &today, names).answer(&doc.revision, &today, &today, n);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "drill: {} down across the fleet (nothing is written), revision {}",
        names.join(", "),
        for_terminal(&doc.revision)
    )?;
    out.write_all(
        for_terminal_lines(&projection_text_as(
            &p,
            "where they would land with those rungs down",
            names,
        ))
        .as_bytes(),
    )?;
    writeln!(
        out,
        "{} of {} healthy workers would have no route ({} today)",
        p.no_route.after, p.healthy, p.no_route.before
    )?;
    Ok(exit::OK)
}

/// Run an `agents` command; the exit code (1 for a `--dry-run` that would
/// change the list).
pub async fn run(global: &Global, args: AgentsArgs) -> Result<i32> {
    if let AgentsCommand::Drill { names } = &args.command {
        return run_drill(global, names).await;
    }
    if let AgentsCommand::Rollout { action } = args.command {
        return rollout::run(global, action).await;
    }
    match &args.file {
        Some(path) => run_file(path, &args),
        None => run_hub(global, &args).await,
    }
}
