//! The filter language every list shares, as k9s users expect it:
//!
//! - plain words match what the row shows (`stale`, `opencode #0`,
//!   `rate_limited`, a host), case-insensitively; consecutive words are one
//!   phrase;
//! - `field:value` matches one field by prefix (`state:lost`, `cause:auth`,
//!   `agent:pi`), `field:value$` the whole field (`worker:mac-1$` is not
//!   mac-12); the fields are the view's own (see each list's `FIELDS`),
//!   and a word whose `field:` the view lacks is plain text;
//! - `!` before a word or a `field:value` negates it;
//! - all terms must hold.

/// One term of a filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The field, lower-cased; `None` for plain text.
    pub field: Option<&'static str>,
    /// Lower-cased text to find (plain) or to start the field with.
    pub needle: String,
    pub negate: bool,
    /// The term as typed, for messages.
    pub text: String,
}

/// A parsed filter. The empty query matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub terms: Vec<Term>,
}

/// A row a query can be asked about.
pub trait Searchable {
    /// Does what the row shows contain `needle` (lower-cased)?
    fn shows(&self, needle: &str) -> bool;
    /// Does `field` (one of the view's fields) start with `value`
    /// (lower-cased)? A field with several values matches if any does.
    fn field_starts(&self, field: &str, value: &str) -> bool;
}

/// `hay` starts with `needle` (lower-cased), ignoring ASCII case; a
/// `needle` ending in `$` must be all of `hay` (`worker:mac-1$` is mac-1,
/// not mac-12).
pub fn starts_ci(hay: &str, needle: &str) -> bool {
    match needle.strip_suffix('$') {
        Some(whole) => hay.eq_ignore_ascii_case(whole),
        None => {
            hay.len() >= needle.len()
                && hay.as_bytes()[..needle.len()].eq_ignore_ascii_case(needle.as_bytes())
        }
    }
}

/// `hay` contains `needle` (lower-cased), ignoring ASCII case.
pub fn contains_ci(hay: &str, needle: &str) -> bool {
    needle.is_empty()
        || hay
            .as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

impl Query {
    /// Parse `text` for a view whose fields are `fields` (lower-case names).
    pub fn parse(text: &str, fields: &[&'static str]) -> Query {
        let mut terms: Vec<Term> = Vec::new();
        // Plain words gather into one phrase until a field term or a `!`.
        let mut phrase: Option<Term> = None;
        for word in text.split_whitespace() {
            let (negate, rest) = match word.strip_prefix('!') {
                Some(r) => (true, r),
                None => (false, word),
            };
            let field = rest.split_once(':').and_then(|(f, v)| {
                let f = f.to_ascii_lowercase();
                fields.iter().find(|k| **k == f).map(|k| (*k, v))
            });
            if let Some((field, value)) = field {
                terms.extend(phrase.take());
                terms.push(Term {
                    field: Some(field),
                    needle: value.to_lowercase(),
                    negate,
                    text: word.to_string(),
                });
                continue;
            }
            match &mut phrase {
                Some(p) if !negate => {
                    p.needle.push(' ');
                    p.needle.push_str(&rest.to_lowercase());
                    p.text.push(' ');
                    p.text.push_str(word);
                }
                _ => {
                    terms.extend(phrase.take());
                    phrase = Some(Term {
                        field: None,
                        needle: rest.to_lowercase(),
                        negate,
                        text: word.to_string(),
                    });
                }
            }
        }
        terms.extend(phrase);
        // A bare `!` (still being typed) asks for nothing yet.
        terms.retain(|t| !t.needle.is_empty() || t.field.is_some());
        Query { terms }
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn matches(&self, row: &impl Searchable) -> bool {
        self.terms.iter().all(|t| {
            let hit = match t.field {
                None => row.shows(&t.needle),
                Some(f) => row.field_starts(f, &t.needle),
            };
            hit != t.negate
        })
    }

    /// Every row `self` matches is matched by `old` too, so the rows can be
    /// narrowed in place instead of searched again.
    pub fn narrows(&self, old: &Query) -> bool {
        old.terms.iter().all(|o| {
            !o.negate
                && self.terms.iter().any(|n| {
                    !n.negate
                        && n.field == o.field
                        && match o.field {
                            None => n.needle.contains(&o.needle),
                            Some(_) => n.needle.starts_with(&o.needle),
                        }
                })
        })
    }

    /// The first `n` terms only.
    fn prefix(&self, n: usize) -> Query {
        Query {
            terms: self.terms[..n].to_vec(),
        }
    }

    /// When nothing matches: the term that emptied the result, reading the
    /// terms left to right (`any` says whether a query matches any row).
    pub fn culprit(&self, any: impl Fn(&Query) -> bool) -> Option<&Term> {
        (1..=self.terms.len())
            .find(|n| !any(&self.prefix(*n)))
            .map(|n| &self.terms[n - 1])
    }

    /// What to say when nothing matches, e.g.
    /// `no worker matches /state:lost cause:auth (cause:auth emptied it)`.
    pub fn empty_text(&self, what: &str, filter: &str, any: impl Fn(&Query) -> bool) -> String {
        match self.culprit(any) {
            Some(t) if self.terms.len() > 1 => {
                format!("no {what} matches /{filter} ({} emptied it)", t.text)
            }
            _ => format!("no {what} matches /{filter}"),
        }
    }
}

/// A worker row as both the hub (`/v1/workers?q=`, a window's `urgency`
/// order) and the TUI's Workers view see it, borrowed from whatever holds
/// it, so the two answer every filter and order alike.
#[derive(Debug, Clone, Copy)]
pub struct WorkerRow<'a> {
    pub worker: &'a str,
    pub host: &'a str,
    pub state: crate::wire::WorkerState,
    pub active_agent: Option<&'a str>,
    /// The active agent's rank in the worker's own list (`None`: no route,
    /// or an active agent not in its list).
    pub rank: Option<usize>,
    pub config_revision: Option<&'a str>,
    pub last_failover: Option<FailoverRow<'a>>,
}

/// A worker's last failover as its row shows it; `detail` scrubbed.
#[derive(Debug, Clone, Copy)]
pub struct FailoverRow<'a> {
    pub from: &'a str,
    pub to: Option<&'a str>,
    pub kind: &'a str,
    pub detail: Option<&'a str>,
}

/// Fields a Workers filter can name (`state:lost`, `agent:pi`, ...).
pub const WORKER_FIELDS: &[&str] = &["worker", "host", "state", "agent", "rank", "cause", "rev"];

/// `rank` of `active` in `agents` (the worker's own list).
pub fn rank_in<'a, S: AsRef<str> + ?Sized + 'a>(
    agents: impl IntoIterator<Item = &'a S>,
    active: Option<&str>,
) -> Option<usize> {
    let active = active?;
    agents.into_iter().position(|a| a.as_ref() == active)
}

impl WorkerRow<'_> {
    /// What the row shows, lower-cased, into `out` (cleared first): worker,
    /// host, `opencode #0` (or `no route`), the last failover's agents,
    /// kind and detail, each apart (a phrase never spans two).
    pub fn haystack_into(&self, out: &mut String) {
        out.clear();
        out.push_str(self.worker);
        out.push('\u{1f}');
        out.push_str(self.host);
        out.push('\u{1f}');
        if let Some(a) = self.active_agent {
            out.push_str(a);
            match self.rank {
                Some(r) => {
                    use std::fmt::Write;
                    let _ = write!(out, " #{r}");
                }
                None => out.push_str(" #?"),
            }
        } else {
            out.push_str("no route");
        }
        if let Some(f) = &self.last_failover {
            out.push('\u{1f}');
            out.push_str(f.from);
            out.push('\u{1f}');
            if let Some(to) = f.to {
                out.push_str(to);
            }
            out.push('\u{1f}');
            out.push_str(f.kind);
            if let Some(d) = f.detail {
                out.push('\u{1f}');
                out.push_str(d);
            }
        }
        out.make_ascii_lowercase();
    }

    /// Whether plain text `needle` (lower-cased) is in what the row shows,
    /// given its [`WorkerRow::haystack_into`].
    pub fn shows_in(&self, hay: &str, needle: &str) -> bool {
        hay.contains(needle) || self.state.as_str().contains(needle)
    }

    /// [`Searchable::field_starts`] for a worker row.
    pub fn field_starts(&self, field: &str, value: &str) -> bool {
        match field {
            "worker" => starts_ci(self.worker, value),
            "host" => starts_ci(self.host, value),
            "state" => starts_ci(self.state.as_str(), value),
            "agent" => starts_ci(self.active_agent.unwrap_or("no route"), value),
            "rank" => self.rank.is_some_and(|r| starts_ci(&r.to_string(), value)),
            "cause" => self
                .last_failover
                .as_ref()
                .is_some_and(|f| starts_ci(f.kind, value)),
            "rev" => self.config_revision.is_some_and(|r| starts_ci(r, value)),
            _ => false,
        }
    }

    /// No route and still alive: the worker fails closed right now.
    pub fn no_route(&self) -> bool {
        self.active_agent.is_none() && self.state != crate::wire::WorkerState::Lost
    }

    /// The `urgency` order's first word: 0 no route (and not lost), 1
    /// lost, 2 stale, 3 healthy.
    pub fn urgency(&self) -> u8 {
        urgency(self.active_agent.is_some(), self.state)
    }
}

/// Order-preserving map of a time to `u64` at full precision: the time
/// words of every worker order (the TUI's sort keys, the hub's windows and
/// its summary's urgent workers), so all of them order alike.
pub fn time_key(t: chrono::DateTime<chrono::Utc>) -> u64 {
    let n = t
        .timestamp_nanos_opt()
        .unwrap_or_else(|| t.timestamp().saturating_mul(1_000_000_000));
    (n as u64) ^ (1 << 63)
}

/// The `urgency` order's second word: the newest last failover first
/// (`at`, its time), a worker without one last.
pub fn failover_key(at: Option<chrono::DateTime<chrono::Utc>>) -> u64 {
    at.map_or(u64::MAX, |t| !time_key(t))
}

/// The `urgency` order's first word for a worker in `state` with or
/// without a route: 0 no route (and not lost), 1 lost, 2 stale, 3 healthy.
pub fn urgency(has_route: bool, state: crate::wire::WorkerState) -> u8 {
    use crate::wire::WorkerState;
    match state {
        WorkerState::Lost => 1,
        _ if !has_route => 0,
        WorkerState::Stale => 2,
        WorkerState::Healthy => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row {
        shown: &'static str,
        state: &'static str,
        agent: &'static str,
    }

    impl Searchable for Row {
        fn shows(&self, needle: &str) -> bool {
            contains_ci(self.shown, needle) || contains_ci(self.state, needle)
        }
        fn field_starts(&self, field: &str, value: &str) -> bool {
            match field {
                "state" => starts_ci(self.state, value),
                "agent" => starts_ci(self.agent, value),
                _ => false,
            }
        }
    }

    const FIELDS: &[&str] = &["state", "agent"];

    fn rows() -> [Row; 3] {
        [
            Row {
                shown: "w-1 node-a opencode #0",
                state: "healthy",
                agent: "opencode",
            },
            Row {
                shown: "w-2 node-b pi #1",
                state: "stale",
                agent: "pi",
            },
            Row {
                shown: "w-3 node-a NO ROUTE",
                state: "lost",
                agent: "",
            },
        ]
    }

    fn hits(q: &str) -> Vec<usize> {
        let q = Query::parse(q, FIELDS);
        rows()
            .iter()
            .enumerate()
            .filter(|(_, r)| q.matches(*r))
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn words_fields_and_negation() {
        assert_eq!(hits(""), vec![0, 1, 2]);
        assert_eq!(hits("STALE"), vec![1]);
        assert_eq!(hits("opencode #0"), vec![0]);
        assert_eq!(hits("pi #0"), Vec::<usize>::new());
        assert_eq!(hits("state:lost"), vec![2]);
        assert_eq!(hits("agent:pi"), vec![1]);
        assert_eq!(hits("!state:healthy"), vec![1, 2]);
        assert_eq!(hits("node-a !lost"), vec![0]);
        assert_eq!(hits("node-a !state:l"), vec![0]);
        // A field the view lacks is plain text.
        assert_eq!(hits("cause:auth"), Vec::<usize>::new());
        // A bare `!` while typing asks nothing yet.
        assert_eq!(hits("!"), vec![0, 1, 2]);
    }

    #[test]
    fn a_field_value_ending_in_dollar_is_the_whole_field() {
        assert!(starts_ci("mac-1", "mac-1$"));
        assert!(starts_ci("MAC-1", "mac-1$"));
        assert!(!starts_ci("mac-12", "mac-1$"));
        assert!(starts_ci("mac-12", "mac-1"));
        assert_eq!(hits("agent:pi$"), vec![1]);
        assert_eq!(hits("agent:p$"), Vec::<usize>::new());
        assert_eq!(hits("!agent:p$"), vec![0, 1, 2]);
        let q = |s| Query::parse(s, FIELDS);
        assert!(q("agent:pi$").narrows(&q("agent:pi")));
        assert!(!q("!agent:pi$").narrows(&q("!agent:pi")));
    }

    #[test]
    fn narrowing_is_recognised_only_where_it_holds() {
        let q = |s| Query::parse(s, FIELDS);
        assert!(q("node-a").narrows(&q("node")));
        assert!(q("state:lo").narrows(&q("state:l")));
        assert!(q("node agent:p").narrows(&q("node")));
        assert!(!q("!ab").narrows(&q("!a")));
        assert!(!q("agent:pi").narrows(&q("agent")));
        assert!(q("x").narrows(&q("")));
    }

    #[test]
    fn the_term_that_emptied_the_result_is_named() {
        let q = Query::parse("node-a state:stale", FIELDS);
        let any = |q: &Query| rows().iter().any(|r| q.matches(r));
        assert_eq!(q.culprit(any).map(|t| t.text.as_str()), Some("state:stale"));
        assert_eq!(
            q.empty_text("worker", "node-a state:stale", any),
            "no worker matches /node-a state:stale (state:stale emptied it)"
        );
    }
}
