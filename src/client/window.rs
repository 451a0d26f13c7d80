//! `GET /v1/workers` windows and `GET /v1/summary` (docs/hub-api.md,
//! *Windows* and `GET /v1/summary`): what a client that shows part of a
//! large fleet asks for instead of the whole fleet. Both are read through
//! the same bounds as every other answer.

use super::{Client, ClientError, PagePart, bounded, decode_error};
use crate::wire::{
    MAX_SUMMARY_URGENT, MAX_WINDOW, MAX_WINDOW_QUERY, Summary, WindowQuery, WorkersPage,
};

/// Most bytes a summary may take: its counts, at most 256 agents and 16
/// revisions, and 20 worker views of at most 64 KiB each.
pub const MAX_SUMMARY: usize = 64 * 1024 + (MAX_SUMMARY_URGENT + 1) * bounded::MAX_ELEMENT;

impl WindowQuery {
    /// The query string of this window, checked against the contract's
    /// bounds first (a limit of 1–10,000, a filter of at most 512 bytes,
    /// never `page` with `offset`).
    pub fn params(&self) -> Result<Vec<(&'static str, String)>, String> {
        if !(1..=MAX_WINDOW).contains(&self.limit) {
            return Err(format!(
                "a window's limit is 1–{MAX_WINDOW}, not {}",
                self.limit
            ));
        }
        if self.q.len() > MAX_WINDOW_QUERY {
            return Err(format!(
                "a window's filter is at most {MAX_WINDOW_QUERY} bytes"
            ));
        }
        let terms = crate::query::Query::parse(&self.q, crate::query::WORKER_FIELDS)
            .terms
            .len();
        if terms > crate::hub::window::MAX_QUERY_TERMS {
            return Err(format!(
                "a window's filter takes at most {} terms (a field term, a !term, or a run of plain words each count as one); this one has {terms}: the hub answers 400 query_too_costly",
                crate::hub::window::MAX_QUERY_TERMS
            ));
        }
        if self.page.is_some() && self.offset.is_some() {
            return Err("a window takes page or offset, not both".into());
        }
        let mut out = vec![
            ("sort", self.sort.as_str().to_string()),
            ("limit", self.limit.to_string()),
        ];
        if !self.q.is_empty() {
            out.push(("q", self.q.clone()));
        }
        if let Some(o) = self.offset {
            out.push(("offset", o.to_string()));
        }
        if let Some(p) = &self.page {
            out.push(("page", p.clone()));
        }
        Ok(out)
    }
}

impl Client {
    /// `GET /v1/workers` as a window: at most `q.limit` workers of the
    /// hub's sorted, filtered list, with `total`, `offset` and `next_page`.
    /// An answer without `total` (a hub that does not know windows and
    /// answered the whole fleet) is an error, never taken as a window.
    pub async fn window(&self, q: &WindowQuery) -> Result<WorkersPage, ClientError> {
        let what = "GET /v1/workers (window)";
        let query = q
            .params()
            .map_err(|e| ClientError::Decode(format!("{what}: {e}")))?;
        let resp = self.get("v1/workers", &query).await?;
        let mut reader = self.workers_reader(resp);
        let mut items = Vec::new();
        loop {
            match reader.next().await? {
                PagePart::Head(_) => {}
                PagePart::Item(w) => {
                    if items.len() >= q.limit as usize {
                        return Err(self.out_of_bounds(
                            what,
                            format!("more than the {} workers asked", q.limit),
                        ));
                    }
                    items.push(w);
                }
                PagePart::End(mut page) => {
                    if page.total.is_none() || page.offset.is_none() {
                        return Err(ClientError::Decode(format!(
                            "{what}: the hub answered without total and offset (it does not \
                             serve windows)"
                        )));
                    }
                    page.workers = items;
                    return Ok(page);
                }
            }
        }
    }

    /// `GET /v1/summary`: the fleet's counts and its most urgent workers.
    pub async fn summary(&self) -> Result<Summary, ClientError> {
        let what = "GET /v1/summary";
        let resp = self.get("v1/summary", &[]).await?;
        let bytes = self
            .read_capped(resp, MAX_SUMMARY, what, "a summary")
            .await?;
        let s: Summary = serde_json::from_slice(&bytes).map_err(|e| decode_error(what, &e))?;
        check_summary(&s).map_err(|b| self.out_of_bounds(what, b))?;
        Ok(s)
    }
}

/// A summary within the contract's bounds (also the `summary` event's).
pub(super) fn check_summary(s: &Summary) -> Result<(), String> {
    bounded::check_page_fields(&s.config_revision, &s.cursor)?;
    if s.agents.len() > crate::wire::MAX_SUMMARY_AGENTS + 1 {
        return Err(format!(
            "a summary lists over {} agents",
            crate::wire::MAX_SUMMARY_AGENTS
        ));
    }
    if s.revisions.len() > crate::wire::MAX_SUMMARY_REVISIONS + 1 {
        return Err(format!(
            "a summary lists over {} revisions",
            crate::wire::MAX_SUMMARY_REVISIONS
        ));
    }
    if s.urgent.len() > MAX_SUMMARY_URGENT {
        return Err(format!(
            "a summary carries over {MAX_SUMMARY_URGENT} urgent workers"
        ));
    }
    for a in &s.agents {
        if a.agent.len() > 64 {
            return Err("a summary's agent name over 64 bytes".into());
        }
    }
    for w in &s.urgent {
        bounded::check_worker(w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::WindowSort;

    #[test]
    fn a_window_query_is_checked_before_it_is_sent() {
        let mut q = WindowQuery {
            sort: WindowSort::Age,
            q: "state:lost".into(),
            limit: 50,
            offset: Some(100),
            page: None,
        };
        let p = q.params().expect("within bounds");
        assert!(p.contains(&("sort", "age".into())));
        assert!(p.contains(&("q", "state:lost".into())));
        assert!(p.contains(&("offset", "100".into())));
        q.page = Some("t".into());
        assert!(q.params().is_err());
        q.page = None;
        q.limit = 0;
        assert!(q.params().is_err());
        q.limit = MAX_WINDOW + 1;
        assert!(q.params().is_err());
        q.limit = 10;
        q.q = "x".repeat(MAX_WINDOW_QUERY + 1);
        assert!(q.params().is_err());
        // 16 terms are sent; 17 are refused here, saying why.
        let terms = |n: usize| {
            (0..n)
                .map(|i| format!("!w{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        q.q = terms(16);
        assert!(q.params().is_ok());
        q.q = terms(17);
        let e = q.params().expect_err("17 terms");
        assert!(
            e.contains("at most 16 terms") && e.contains("query_too_costly"),
            "{e}"
        );
    }
}
