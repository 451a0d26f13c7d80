//! `macfleet get workers|worker|failovers|agents|history [-o table|wide|json|jsonl]
//! [--watch]`. JSON is the API's own shape; tables fit the terminal width by
//! dropping the least important columns first. Hub text is scrubbed and
//! made terminal-safe (`crate::textsafe`), in tables and in JSON alike.
//!
//! One file a job: `table` renders columns, `out` writes JSON, `failovers`
//! filters and lists the log, `worker` is `get worker ID`, `watch` follows
//! the event stream. The workers, agents and history snapshots are here.

pub mod failovers;
pub mod out;
pub mod recoveries;
pub mod table;
pub mod watch;
pub mod worker;
pub mod workers;

use std::io::Write;

use color_eyre::eyre::{Result, eyre};

use super::{Exit, GetArgs, GetWhat, Global, Output, connect, exit};
use crate::client::{Client, PagePart};
use crate::textsafe::for_terminal;
use crate::wire::CauseKind;
use out::{write_json, write_jsonl};
pub use table::render_table;
use table::width;
use workers::WorkersTable;

/// `30s`, `10m`, `2h`, `7d` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<chrono::Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: i64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration: write 30s, 10m, 2h or 7d"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{s:?}: the unit is s, m, h or d")),
    };
    n.checked_mul(secs)
        .filter(|s| *s <= 3650 * 86_400)
        .map(chrono::Duration::seconds)
        .ok_or_else(|| format!("{s:?} is longer than ten years"))
}

/// Refuse flags that do not go with what is asked (exit 2), before any
/// hub is asked anything.
pub fn check(args: &GetArgs) -> Result<()> {
    let filtered = args.worker.is_some()
        || args.agent.is_some()
        || args.kind.is_some()
        || args.since.is_some();
    let usage = |m: &str| Err(eyre!(Exit::new(exit::USAGE, m.to_string())));
    if args.what == GetWhat::Recoveries && args.kind.is_some() {
        return usage("--kind filters `get failovers` only: a recovery has no cause");
    }
    if !matches!(args.what, GetWhat::Failovers | GetWhat::Recoveries) && filtered {
        return usage(
            "--worker, --agent, --kind and --since filter `get failovers` (and, but --kind, `get recoveries`) only",
        );
    }
    if args.what != GetWhat::Worker && args.id.is_some() {
        return usage("an ID goes with `get worker ID` only");
    }
    if args.watch
        && !matches!(
            args.what,
            GetWhat::Workers | GetWhat::Failovers | GetWhat::Recoveries
        )
    {
        return usage("--watch follows `get workers`, `get failovers` or `get recoveries`");
    }
    Ok(())
}

/// `--kind`: a cause kind; a near miss (`ratelimited`) is told the kind it
/// was likely meant to be, and every message lists the kinds.
pub fn parse_kind(s: &str) -> Result<CauseKind, String> {
    if let Ok(k) = s.parse() {
        return Ok(k);
    }
    let names = CauseKind::ALL.map(CauseKind::as_str).join(", ");
    let squash = |x: &str| -> String {
        x.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let near = CauseKind::ALL
        .into_iter()
        .map(|k| (distance(&squash(k.as_str()), &squash(s)), k))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= 2)
        .map(|(_, k)| k);
    let shown = for_terminal(s);
    Err(match near {
        Some(k) => {
            format!("{shown:?} is not a cause kind: did you mean {k}? The kinds are {names}")
        }
        None => format!("{shown:?} is not a cause kind; the kinds are {names}"),
    })
}

/// Levenshtein distance, for short names.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

pub async fn run(global: &Global, args: GetArgs) -> Result<()> {
    check(&args)?;
    let (client, _) = connect(global)?;
    let mut out = std::io::stdout().lock();
    let max = if args.output == Output::Wide {
        usize::MAX
    } else {
        width()
    };
    match (args.what, args.watch) {
        (GetWhat::Worker, _) => {
            let id = args.id.as_deref().unwrap_or_default();
            return worker::worker(&client, id, args.output, &mut out).await;
        }
        (GetWhat::Workers, true) => {
            return watch::watch_workers(&client, args.output, &mut out).await;
        }
        (GetWhat::Failovers, true) => {
            let filter = failovers::Filter::from_args(&args);
            return watch::watch_failovers(&client, &filter, args.limit, args.output, &mut out)
                .await;
        }
        (GetWhat::Recoveries, true) => {
            let filter = recoveries::Filter::from_args(&args);
            return recoveries::watch(&client, &filter, args.limit, args.output, &mut out).await;
        }
        _ => {}
    }
    match args.what {
        GetWhat::Workers => workers(&client, args.output, max, &mut out).await?,
        GetWhat::Worker => {}
        GetWhat::Failovers => failovers::snapshot(&client, &args, max, &mut out).await?,
        GetWhat::Recoveries => recoveries::snapshot(&client, &args, max, &mut out).await?,
        GetWhat::Agents => agents(&client, args.output, &mut out).await?,
        GetWhat::History => history(&client, args.output, max, &mut out).await?,
    }
    Ok(())
}

/// `get workers`, once: the table sorted (no route first, then the
/// least healthy) and its summary on stderr, or the page streamed as JSON.
async fn workers(client: &Client, output: Output, max: usize, out: &mut impl Write) -> Result<()> {
    if matches!(output, Output::Json | Output::Jsonl) {
        // Streamed: each worker out before the next is read.
        let mut reader = client.workers_stream(None).await?;
        let mut buf = std::io::BufWriter::with_capacity(64 * 1024, out);
        let r = if output == Output::Json {
            out::stream_workers_json(&mut buf, &mut reader).await
        } else {
            out::stream_workers_jsonl(&mut buf, &mut reader).await
        };
        // What was written goes out, error or not (on an error, a
        // JSON document without its end).
        let flushed = buf.flush();
        r?;
        return Ok(flushed?);
    }
    // The table sorts and fits its columns: it holds each worker's cells
    // (`workers::WorkersTable`), read as the page streams in.
    let mut reader = client.workers_stream(None).await?;
    let mut table = WorkersTable::new(max);
    let page = loop {
        match reader.next().await? {
            PagePart::Head(head) => table.hub_revision(&head.config_revision),
            PagePart::Item(w) => table.add(&w),
            PagePart::End(page) => break page,
        }
    };
    drop(reader);
    let mut buf = std::io::BufWriter::with_capacity(64 * 1024, &mut *out);
    table.write(page.now, &mut buf)?;
    buf.flush()?;
    drop(buf);
    // The summary is for people: stderr, so stdout holds only the
    // header and the rows (`| sort`, `| wc -l`).
    let c = &table.counts;
    eprintln!(
        "{}{} workers: {} healthy, {} stale, {} lost, {} with no route, {} one failure from no route; revision {}, {} out of sync",
        word_of(client, table.figures).await,
        table.len(),
        c.healthy,
        c.stale,
        c.lost,
        c.no_route,
        c.one_failure,
        for_terminal(&page.config_revision),
        c.out_of_sync
    );
    Ok(())
}

/// `get agents`: the list in force, one agent a line (its revision on
/// stderr), or as JSON.
async fn agents(client: &Client, output: Output, out: &mut impl Write) -> Result<()> {
    let (agents, revision) = agents_in_force(client).await?;
    if output == Output::Json {
        return write_json(
            out,
            &serde_json::json!({"revision": revision, "agents": agents}),
        );
    }
    if output == Output::Jsonl {
        let rows: Vec<_> = agents
            .iter()
            .enumerate()
            .map(|(rank, agent)| {
                serde_json::json!({"rank": rank, "agent": agent, "revision": revision})
            })
            .collect();
        return write_jsonl(out, &rows);
    }
    // Only the list on stdout (`| wc -l`, `| awk '{print $2}'`);
    // the revision, for people, on stderr, as `get workers`' summary.
    for (i, a) in agents.iter().enumerate() {
        writeln!(out, "{i}  {}", for_terminal(a))?;
    }
    out.flush()?;
    eprintln!("revision {}", for_terminal(&revision));
    Ok(())
}

/// `get history`: the revisions, newest first, as a table or JSON.
async fn history(client: &Client, output: Output, max: usize, out: &mut impl Write) -> Result<()> {
    let h = client.history().await?;
    if output == Output::Json {
        return write_json(out, &h);
    }
    if output == Output::Jsonl {
        return write_jsonl(out, &h.revisions);
    }
    let r = &h.revisions;
    let table = render_table(
        vec![
            (
                "REVISION",
                0,
                r.iter().map(|e| e.revision.clone()).collect(),
            ),
            (
                "AT",
                1,
                r.iter().map(|e| crate::wire::fmt_time(e.at)).collect(),
            ),
            ("BY", 0, r.iter().map(|e| e.by.clone()).collect()),
            (
                "CLIENT",
                2,
                r.iter()
                    .map(|e| e.client.clone().unwrap_or_else(|| "-".into()))
                    .collect(),
            ),
            (
                "BEFORE → AFTER",
                0,
                r.iter()
                    .map(|e| format!("{} → {}", e.previous_agents.join(","), e.agents.join(",")))
                    .collect(),
            ),
        ],
        max,
    );
    out.write_all(table.as_bytes())?;
    Ok(())
}

/// The list workers are told and its revision: the hub's document's, or,
/// while the hub's file does not validate, the one its health says workers
/// keep (the last accepted list or the built-in order), with a warning on
/// stderr naming the file's error; never the broken file's own list.
async fn agents_in_force(client: &crate::client::Client) -> Result<(Vec<String>, String)> {
    let doc = client.config().await?;
    let Some(invalid) = &doc.invalid else {
        return Ok((crate::agents_doc::locate(&doc.text)?.agents, doc.revision));
    };
    let c = client.health_report().await?.config.ok_or_else(|| {
        eyre!(
            "the hub's file does not validate and its health does not say which list workers keep"
        )
    })?;
    let at = invalid
        .place()
        .map(|p| format!(" ({p})"))
        .unwrap_or_default();
    eprintln!(
        "warning: the hub's file does not validate{at}: {}; workers keep this list (revision {})",
        for_terminal(&invalid.message),
        for_terminal(&c.projected_revision)
    );
    Ok((c.agents, c.projected_revision))
}

/// The status word over a page's workers' figures `f` and the hub's list (`crate::verdict`, the same
/// function the TUI and `/v1/health` use), with ` · ` after it; empty when
/// there is nothing to judge. Whether the list is the built-in order or
/// does not validate comes from `/v1/health` (no token): when that cannot
/// be read, the word is judged from the workers alone.
async fn word_of(client: &crate::client::Client, mut f: crate::verdict::Figures) -> String {
    if let Ok(h) = client.health_report().await {
        f.built_in = h.built_in_order;
        // The words only the hub can know, as it says them (a config it
        // cannot read or replace is CONFIG INVALID as well as one that
        // does not validate).
        let says = |v: crate::verdict::Verdict| h.word.as_deref() == Some(&v.to_string());
        f.config_invalid = h.config.as_ref().is_some_and(|c| c.invalid.is_some())
            || says(crate::verdict::Verdict::ConfigInvalid);
        f.database_unavailable =
            h.database.unavailable || says(crate::verdict::Verdict::DatabaseUnavailable);
    }
    crate::verdict::verdict(crate::verdict::Reach::Up, &f)
        .map(|v| format!("{v} · "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_miss_kind_is_told_the_right_one() {
        assert_eq!(parse_kind("rate_limited"), Ok(CauseKind::RateLimited));
        let e = parse_kind("ratelimited").expect_err("not a kind");
        assert!(e.contains("did you mean rate_limited?"), "{e}");
        assert!(
            e.contains(
                "missing_binary, no_token, preflight_failed, auth, rate_limited, upstream_status"
            ),
            "{e}"
        );
        let e = parse_kind("Rate-Limit").expect_err("not a kind");
        assert!(e.contains("did you mean rate_limited?"), "{e}");
        let e = parse_kind("bananas").expect_err("not a kind");
        assert!(
            !e.contains("did you mean") && e.contains("the kinds are"),
            "{e}"
        );
    }
}
