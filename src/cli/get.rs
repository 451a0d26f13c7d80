//! `macfleet get workers|failovers|agents|history [-o table|json]`: one
//! snapshot. JSON is the API's own shape; tables fit the terminal width by
//! dropping the least important columns first. Hub text is scrubbed and
//! made terminal-safe (`crate::textsafe`), in tables and in JSON alike.

use std::io::{IsTerminal, Write};

use chrono::{DateTime, Utc};
use color_eyre::eyre::Result;

use super::{GetArgs, GetWhat, Global, Output, connect, get_more};
use crate::textsafe::{for_terminal, json_for_terminal};
use crate::wire::{Failover, WorkerState};

/// A column: header, priority (0 is kept longest), cells.
struct Column {
    header: &'static str,
    priority: u8,
    cells: Vec<String>,
}

fn width() -> usize {
    if std::io::stdout().is_terminal() {
        crossterm::terminal::size().map_or(100, |(w, _)| w as usize)
    } else {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(160)
    }
}

/// Render columns into lines no wider than `max`.
pub fn render_table(columns: Vec<(&'static str, u8, Vec<String>)>, max: usize) -> String {
    let mut cols: Vec<Column> = columns
        .into_iter()
        .map(|(header, priority, cells)| Column {
            header,
            priority,
            // Every cell holds hub text: scrubbed, controls and bidi escaped.
            cells: cells
                .into_iter()
                .map(|c| {
                    let safe = match for_terminal(&c) {
                        std::borrow::Cow::Owned(o) => Some(o),
                        std::borrow::Cow::Borrowed(_) => None,
                    };
                    safe.unwrap_or(c)
                })
                .collect(),
        })
        .collect();
    let widths = |cols: &[Column]| -> Vec<usize> {
        cols.iter()
            .map(|c| {
                c.cells
                    .iter()
                    .map(|s| s.chars().count())
                    .chain([c.header.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    };
    // Drop the least important (highest number), rightmost first, until the
    // rest fit whole: the TUI's column fitting, without cutting.
    let fits: Vec<crate::text::Fit> = widths(&cols)
        .into_iter()
        .zip(&cols)
        .map(|(w, c)| crate::text::Fit {
            min: w,
            want: w,
            drop: c.priority.saturating_add(1),
        })
        .collect();
    let kept = crate::text::fit_columns(&fits, max, 2);
    let mut kept = kept.iter();
    cols.retain(|_| kept.next().is_some_and(|w| w.is_some()));
    let w = widths(&cols);
    let rows = cols.first().map_or(0, |c| c.cells.len());
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            l.push_str(c);
            if i + 1 < cells.len() {
                l.push_str(&" ".repeat(w[i].saturating_sub(c.chars().count())));
            }
        }
        let l: String = l.chars().take(max).collect();
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(cols.iter().map(|c| c.header).collect(), &mut out);
    for r in 0..rows {
        line(cols.iter().map(|c| c.cells[r].as_str()).collect(), &mut out);
    }
    out
}

/// `3m`, `12s`, `2h`, `4d`.
pub fn age(now: DateTime<Utc>, then: DateTime<Utc>) -> String {
    crate::text::age_at(now, then)
}

fn failover_brief(f: &Failover, now: DateTime<Utc>) -> String {
    format!(
        "{} → {} {}{} {}",
        f.from,
        f.to.as_deref().unwrap_or("NO ROUTE"),
        f.cause.kind,
        f.cause.status.map(|s| format!(" {s}")).unwrap_or_default(),
        age(now, f.at)
    )
}

pub async fn run(global: &Global, args: GetArgs) -> Result<()> {
    get_more::check(&args)?;
    let (client, _) = connect(global)?;
    let mut out = std::io::stdout().lock();
    let max = if args.output == Output::Wide {
        usize::MAX
    } else {
        width()
    };
    if let Some(r) = get_more::run(&client, &args, &mut out).await {
        return r;
    }
    match args.what {
        GetWhat::Workers => {
            let page = client.workers(None).await?;
            if args.output == Output::Json {
                let json = serde_json::to_string_pretty(&page)?;
                writeln!(out, "{}", json_for_terminal(&json))?;
                return Ok(());
            }
            if args.output == Output::Jsonl {
                return get_more::write_jsonl(&mut out, &page.workers);
            }
            let mut ws = page.workers;
            ws.sort_by_key(|w| {
                (
                    w.active_agent.is_some(),
                    std::cmp::Reverse(w.state),
                    w.worker.clone(),
                )
            });
            let now = page.now;
            let rank = |w: &crate::wire::WorkerView| match &w.active_agent {
                Some(a) => {
                    let r = w.agents.iter().position(|x| x == a);
                    format!("{a}{}", r.map(|r| format!(" #{r}")).unwrap_or_default())
                }
                None => "NO ROUTE".into(),
            };
            let table = render_table(
                vec![
                    ("WORKER", 0, ws.iter().map(|w| w.worker.clone()).collect()),
                    (
                        "STATE",
                        0,
                        ws.iter().map(|w| w.state.as_str().into()).collect(),
                    ),
                    ("ACTIVE", 0, ws.iter().map(rank).collect()),
                    (
                        "AGE",
                        1,
                        ws.iter().map(|w| age(now, w.received_at)).collect(),
                    ),
                    (
                        "SYNC",
                        2,
                        ws.iter()
                            .map(|w| if w.in_sync { "yes" } else { "no" }.into())
                            .collect(),
                    ),
                    ("HOST", 3, ws.iter().map(|w| w.host.clone()).collect()),
                    (
                        "LAST FAILOVER",
                        4,
                        ws.iter()
                            .map(|w| {
                                w.last_failover
                                    .as_ref()
                                    .map(|f| failover_brief(f, now))
                                    .unwrap_or_else(|| "-".into())
                            })
                            .collect(),
                    ),
                ],
                max,
            );
            out.write_all(table.as_bytes())?;
            let count = |s| ws.iter().filter(|w| w.state == s).count();
            writeln!(
                out,
                "{} workers: {} healthy, {} stale, {} lost, {} with no route; revision {}",
                ws.len(),
                count(WorkerState::Healthy),
                count(WorkerState::Stale),
                count(WorkerState::Lost),
                ws.iter().filter(|w| w.active_agent.is_none()).count(),
                for_terminal(&page.config_revision)
            )?;
        }
        GetWhat::Worker => {}
        GetWhat::Failovers => {
            let filter = get_more::Filter::from_args(&args);
            let page = get_more::newest_failovers(&client, &filter, args.limit).await?;
            if args.output == Output::Json {
                let json = serde_json::to_string_pretty(&page)?;
                writeln!(out, "{}", json_for_terminal(&json))?;
                return Ok(());
            }
            if args.output == Output::Jsonl {
                return get_more::write_jsonl(&mut out, &page.events);
            }
            let now = Utc::now();
            let ev = &page.events;
            let table = render_table(
                vec![
                    ("SEQ", 3, ev.iter().map(|e| e.seq.to_string()).collect()),
                    (
                        "AGE",
                        0,
                        ev.iter().map(|e| age(now, e.failover.at)).collect(),
                    ),
                    ("WORKER", 0, ev.iter().map(|e| e.worker.clone()).collect()),
                    (
                        "FROM → TO",
                        0,
                        ev.iter()
                            .map(|e| {
                                format!(
                                    "{} → {}",
                                    e.failover.from,
                                    e.failover.to.as_deref().unwrap_or("NO ROUTE")
                                )
                            })
                            .collect(),
                    ),
                    (
                        "CAUSE",
                        0,
                        ev.iter()
                            .map(|e| e.failover.cause.kind.to_string())
                            .collect(),
                    ),
                    (
                        "STATUS",
                        1,
                        ev.iter()
                            .map(|e| {
                                e.failover
                                    .cause
                                    .status
                                    .map_or("-".into(), |s| s.to_string())
                            })
                            .collect(),
                    ),
                    (
                        "SOURCE",
                        2,
                        ev.iter()
                            .map(|e| e.failover.cause.source.as_str().into())
                            .collect(),
                    ),
                    ("HOST", 4, ev.iter().map(|e| e.host.clone()).collect()),
                    (
                        "DETAIL",
                        5,
                        ev.iter()
                            .map(|e| e.failover.cause.detail.as_deref().unwrap_or("-").into())
                            .collect(),
                    ),
                ],
                max,
            );
            out.write_all(table.as_bytes())?;
        }
        GetWhat::Agents => {
            let doc = client.config().await?;
            let located = crate::agents_doc::locate(&doc.text)?;
            if args.output == Output::Json {
                let json = serde_json::to_string_pretty(
                    &serde_json::json!({"revision": doc.revision, "agents": located.agents}),
                )?;
                writeln!(out, "{}", json_for_terminal(&json))?;
                return Ok(());
            }
            if args.output == Output::Jsonl {
                let rows: Vec<_> = located
                    .agents
                    .iter()
                    .enumerate()
                    .map(|(rank, agent)| {
                        serde_json::json!({"rank": rank, "agent": agent, "revision": doc.revision})
                    })
                    .collect();
                return get_more::write_jsonl(&mut out, &rows);
            }
            for (i, a) in located.agents.iter().enumerate() {
                writeln!(out, "{i}  {}", for_terminal(a))?;
            }
            writeln!(out, "revision {}", for_terminal(&doc.revision))?;
        }
        GetWhat::History => {
            let h = client.history().await?;
            if args.output == Output::Json {
                let json = serde_json::to_string_pretty(&h)?;
                writeln!(out, "{}", json_for_terminal(&json))?;
                return Ok(());
            }
            if args.output == Output::Jsonl {
                return get_more::write_jsonl(&mut out, &h.revisions);
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
                        "BEFORE → AFTER",
                        0,
                        r.iter()
                            .map(|e| {
                                format!("{} → {}", e.previous_agents.join(","), e.agents.join(","))
                            })
                            .collect(),
                    ),
                ],
                max,
            );
            out.write_all(table.as_bytes())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_drops_low_priority_columns_to_fit() {
        let cols = vec![
            ("A", 0, vec!["aaaa".to_string()]),
            ("B", 2, vec!["bbbbbbbbbb".to_string()]),
            ("C", 1, vec!["cc".to_string()]),
        ];
        let wide = render_table(cols.clone(), 80);
        assert!(wide.starts_with("A     B           C\n"), "{wide}");
        let narrow = render_table(cols, 10);
        assert_eq!(narrow, "A     C\naaaa  cc\n");
    }

    #[test]
    fn ages() {
        let now = Utc::now();
        assert_eq!(age(now, now - chrono::Duration::seconds(75)), "1m");
        assert_eq!(age(now, now + chrono::Duration::seconds(5)), "0s");
    }
}
