//! Reading a hub's answers within the contract's bounds (`docs/hub-api.md`),
//! so a hub that misbehaves (an endless body, an endless element, more
//! elements than the contract allows) cannot exhaust a client.
//!
//! A body is read chunk by chunk and never held past its bound. A page
//! (`/v1/workers`, `/v1/failovers`, `/v1/recoveries`, `/v1/config/history`) is parsed as a
//! stream: [`Splitter`] cuts its array into elements as their bytes arrive,
//! each element is decoded and checked against the contract's bounds at
//! once, and the body stops at the first element out of bounds or past the
//! count the contract allows. The client asks for no compression and decodes
//! none, so the bytes bounded are the bytes decoded.

use std::collections::HashSet;

use crate::wire::{
    Failover, FailoverRecord, HistoryEntry, MAX_AGENTS, MAX_DETAIL_CHARS, MAX_FAILOVER_ID,
    MAX_HOST, MAX_WORKER_ID, RecoveryRecord, WorkerView,
};

/// An error body (`{"error": {...}}`, a short message).
pub const MAX_ERROR_BODY: usize = 64 * 1024;
/// `GET /v1/config`: the document, at most what a `PUT` may store.
pub const MAX_CONFIG: usize = 1024 * 1024;
/// Small answers: `whoami`, a heartbeat's projection, a `PUT`'s answer.
pub const MAX_SMALL: usize = 64 * 1024;
/// One element of a page: a worker view (what one 64 KiB heartbeat can
/// carry), a failover record or a history entry.
pub const MAX_ELEMENT: usize = 64 * 1024;
/// A page's fields beside its array (`now`, `cursor`, …).
pub const MAX_PAGE_REST: usize = 64 * 1024;
/// `GET /v1/failovers`' `limit` is 1 to 1000 (100 when not given).
pub const MAX_FAILOVERS_PAGE: usize = 1000;
/// `GET /metrics`: gauges per agent, rung and pool, far under this.
pub const MAX_METRICS: usize = 4 * 1024 * 1024;
/// The reference hub keeps the last 1,000 revisions.
pub const MAX_HISTORY: usize = 1000;
/// History's `rollouts`: the steps of the last 20 rollouts, a handful
/// each (started, waiting, an end).
pub const MAX_ROLLOUT_STEPS: usize = 1000;
/// One SSE line (a field or a comment).
pub const MAX_SSE_LINE: usize = 256 * 1024;
/// One SSE event's data: the hub buffers at most 256 KiB per subscriber.
pub const MAX_SSE_EVENT: usize = 256 * 1024;
/// Revisions the hub hands out, and a worker's.
const MAX_REVISION: usize = 64;
/// A `/v1/workers` cursor (`c<epoch>-<seq>`).
const MAX_CURSOR: usize = 256;
/// An agent name (`^[a-z][a-z0-9_-]{0,31}$`).
const MAX_AGENT: usize = 32;
/// A token's name, shown as History's `by`.
const MAX_BY: usize = 64;

/// `n` bytes as people read a bound.
pub fn size(n: usize) -> String {
    if n >= 1024 * 1024 && n % (1024 * 1024) == 0 {
        format!("{} MiB", n / (1024 * 1024))
    } else if n >= 1024 && n % 1024 == 0 {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// Why a page was cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// A bound of the contract was broken; the text says which.
    Bound(String),
    /// Not JSON of the page's shape.
    Malformed(String),
}

/// What [`Splitter::feed_parts`] hands on.
pub enum Part<'a> {
    /// The array has just opened: the object's fields that came before it,
    /// as an object of its own (the array empty, the object closed), so a
    /// reader can start writing before the elements arrive.
    Opened(&'a [u8]),
    /// One complete element of the array.
    Element(&'a [u8]),
}

/// Cuts a JSON object's array under `key` into its elements as the bytes
/// arrive; everything else of the object is kept (bounded) so it can be
/// decoded with an empty array in the array's place.
pub struct Splitter {
    key: &'static [u8],
    noun: &'static str,
    depth: u32,
    in_str: bool,
    esc: bool,
    expect_key: bool,
    reading_key: bool,
    key_buf: Vec<u8>,
    key_is_target: bool,
    value_of_target: bool,
    in_array: bool,
    /// The array has been met (a second one is refused).
    opened: bool,
    elem: Vec<u8>,
    elements: usize,
    rest: Vec<u8>,
    done: bool,
    trailing: usize,
}

impl Splitter {
    /// `noun` names one element in errors (`worker entry`).
    pub fn new(key: &'static str, noun: &'static str) -> Splitter {
        Splitter {
            key: key.as_bytes(),
            noun,
            depth: 0,
            in_str: false,
            esc: false,
            expect_key: false,
            reading_key: false,
            key_buf: Vec::new(),
            key_is_target: false,
            value_of_target: false,
            in_array: false,
            opened: false,
            elem: Vec::new(),
            elements: 0,
            rest: Vec::new(),
            done: false,
            trailing: 0,
        }
    }

    /// The object without its array's elements, once the body has ended.
    pub fn finish(self) -> Result<Vec<u8>, Cut> {
        if !self.done {
            return Err(Cut::Malformed(
                "the answer ended before its JSON did".into(),
            ));
        }
        Ok(self.rest)
    }

    /// Feed the next bytes; `each` gets every complete element.
    #[cfg(test)]
    pub fn feed(
        &mut self,
        chunk: &[u8],
        each: &mut dyn FnMut(&[u8]) -> Result<(), Cut>,
    ) -> Result<(), Cut> {
        self.feed_parts(chunk, &mut |p| match p {
            Part::Opened(_) => Ok(()),
            Part::Element(e) => each(e),
        })
    }

    /// Feed the next bytes; `each` gets [`Part::Opened`] when the array
    /// opens, then every complete element.
    pub fn feed_parts(
        &mut self,
        chunk: &[u8],
        each: &mut dyn FnMut(Part<'_>) -> Result<(), Cut>,
    ) -> Result<(), Cut> {
        for &b in chunk {
            if self.done {
                if !b.is_ascii_whitespace() {
                    return Err(Cut::Malformed("bytes after the JSON value".into()));
                }
                self.trailing += 1;
                if self.trailing > 1024 {
                    return Err(Cut::Bound("whitespace after the JSON value".into()));
                }
                continue;
            }
            if self.in_array {
                self.element_byte(b, each)?;
                continue;
            }
            self.rest_byte(b)?;
            if self.in_array {
                // The fields before the array, the object closed after it.
                let mut head = Vec::with_capacity(self.rest.len() + 3);
                head.extend_from_slice(&self.rest);
                head.extend_from_slice(b"[]}");
                each(Part::Opened(&head))?;
            }
        }
        Ok(())
    }

    fn element_byte(
        &mut self,
        b: u8,
        each: &mut dyn FnMut(Part<'_>) -> Result<(), Cut>,
    ) -> Result<(), Cut> {
        if self.in_str {
            self.elem.push(b);
            if self.esc {
                self.esc = false;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.in_str = false;
            }
        } else {
            match b {
                b'"' => {
                    self.in_str = true;
                    self.elem.push(b);
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    self.elem.push(b);
                }
                b'}' | b']' if self.depth == 2 => {
                    if b != b']' {
                        return Err(Cut::Malformed("an array closed by '}'".into()));
                    }
                    self.emit(false, each)?;
                    self.in_array = false;
                    self.depth = 1;
                    self.rest.extend_from_slice(b"[]");
                    return Ok(());
                }
                b'}' | b']' => {
                    self.depth -= 1;
                    self.elem.push(b);
                }
                b',' if self.depth == 2 => return self.emit(true, each),
                _ => self.elem.push(b),
            }
        }
        if self.elem.len() > MAX_ELEMENT {
            return Err(Cut::Bound(format!(
                "{} {} is over {}",
                self.noun,
                self.elements,
                size(MAX_ELEMENT)
            )));
        }
        Ok(())
    }

    fn emit(
        &mut self,
        comma: bool,
        each: &mut dyn FnMut(Part<'_>) -> Result<(), Cut>,
    ) -> Result<(), Cut> {
        let blank = self.elem.iter().all(u8::is_ascii_whitespace);
        if blank && !comma && self.elements == 0 {
            self.elem.clear();
            return Ok(());
        }
        if blank {
            return Err(Cut::Malformed(format!(
                "element {} is empty",
                self.elements
            )));
        }
        self.elements += 1;
        let r = each(Part::Element(&self.elem));
        self.elem.clear();
        r
    }

    fn rest_byte(&mut self, b: u8) -> Result<(), Cut> {
        self.rest.push(b);
        if self.in_str {
            if self.esc {
                self.esc = false;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.in_str = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.key_is_target = self.key_buf == self.key;
                }
                return self.rest_bound();
            }
            if self.reading_key && self.key_buf.len() <= self.key.len() {
                self.key_buf.push(b);
            }
            return self.rest_bound();
        }
        let top = self.depth == 1;
        match b {
            b'[' if top && self.value_of_target => {
                if self.opened {
                    return Err(Cut::Malformed(format!(
                        "its {} list comes twice",
                        String::from_utf8_lossy(self.key)
                    )));
                }
                self.opened = true;
                self.rest.pop();
                self.in_array = true;
                self.depth = 2;
                self.value_of_target = false;
                self.key_is_target = false;
                return Ok(());
            }
            _ if b.is_ascii_whitespace() => {}
            b':' if top => self.value_of_target = self.key_is_target,
            b',' if top => {
                self.expect_key = true;
                self.key_is_target = false;
                self.value_of_target = false;
            }
            b'"' => {
                self.in_str = true;
                if top && self.expect_key {
                    self.reading_key = true;
                    self.key_buf.clear();
                    self.expect_key = false;
                }
                self.value_of_target = false;
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.expect_key = self.depth == 1;
                self.value_of_target = false;
            }
            b'}' | b']' => {
                if self.depth == 0 {
                    return Err(Cut::Malformed(
                        "a bracket closed that was never opened".into(),
                    ));
                }
                self.depth -= 1;
                self.done = self.depth == 0;
            }
            _ => self.value_of_target = false,
        }
        self.rest_bound()
    }

    fn rest_bound(&self) -> Result<(), Cut> {
        if self.rest.len() > MAX_PAGE_REST {
            Err(Cut::Bound(format!(
                "the fields beside its list are over {}",
                size(MAX_PAGE_REST)
            )))
        } else {
            Ok(())
        }
    }
}

fn at_most(what: &str, s: &str, max: usize) -> Result<(), String> {
    if s.len() > max {
        Err(format!("{what} is over {max} bytes"))
    } else {
        Ok(())
    }
}

fn one_to(what: &str, s: &str, max: usize) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("{what} is empty"));
    }
    at_most(what, s, max)
}

fn agents(what: &str, list: &[String]) -> Result<(), String> {
    if list.len() > MAX_AGENTS {
        return Err(format!("{what} holds over {MAX_AGENTS} agents"));
    }
    list.iter()
        .try_for_each(|a| one_to(&format!("an agent name in {what}"), a, MAX_AGENT))
}

/// A failover's fields within the contract's bounds.
pub fn check_failover(f: &Failover) -> Result<(), String> {
    one_to("a failover id", &f.id, MAX_FAILOVER_ID)?;
    one_to("a failover's from", &f.from, MAX_AGENT)?;
    if let Some(to) = &f.to {
        one_to("a failover's to", to, MAX_AGENT)?;
    }
    if let Some(d) = &f.cause.detail {
        if d.chars().count() > MAX_DETAIL_CHARS {
            return Err(format!("a detail is over {MAX_DETAIL_CHARS} characters"));
        }
    }
    Ok(())
}

/// A worker's view within the contract's bounds: its id, host, list and
/// capabilities, and its last failover.
pub fn check_worker(w: &WorkerView) -> Result<(), String> {
    one_to("a worker id", &w.worker, MAX_WORKER_ID)?;
    one_to("a host", &w.host, MAX_HOST)?;
    if let Some(r) = &w.config_revision {
        one_to("a worker's config_revision", r, MAX_REVISION)?;
    }
    agents("a worker's agents", &w.agents)?;
    if let Some(a) = &w.active_agent {
        one_to("an active_agent", a, MAX_AGENT)?;
    }
    if w.capabilities.len() > MAX_AGENTS {
        return Err(format!("capabilities hold over {MAX_AGENTS} agents"));
    }
    for k in w.capabilities.keys() {
        one_to("a capability's agent name", k, MAX_AGENT)?;
    }
    if let Some(f) = &w.last_failover {
        check_failover(f)?;
    }
    if let Some(t) = w.in_turn() {
        one_to("a turn's agent", &t.agent, MAX_AGENT)?;
    }
    if let Some(Some(a)) = &w.next_turn_agent {
        one_to("a next_turn_agent", a, MAX_AGENT)?;
    }
    Ok(())
}

/// A failover record within the contract's bounds.
pub fn check_record(r: &FailoverRecord) -> Result<(), String> {
    one_to("a failover's worker id", &r.worker, MAX_WORKER_ID)?;
    one_to("a failover's host", &r.host, MAX_HOST)?;
    check_failover(&r.failover)
}

/// A recovery record within the contract's bounds.
pub fn check_recovery(r: &RecoveryRecord) -> Result<(), String> {
    one_to("a recovery's worker id", &r.worker, MAX_WORKER_ID)?;
    one_to("a recovery's host", &r.host, MAX_HOST)?;
    if let Some(from) = &r.from {
        one_to("a recovery's from", from, MAX_AGENT)?;
    }
    one_to("a recovery's to", &r.to, MAX_AGENT)
}

/// The most bytes of a problem event's `kind`, `path` and `message`
/// (a path is at most the system's 4 KiB; a sentence names a few).
const MAX_PROBLEM_KIND: usize = 64;
const MAX_PROBLEM_PATH: usize = 4096;
const MAX_PROBLEM_MESSAGE: usize = 16 * 1024;

/// A problem event within bounds: it is shown on the status line.
pub fn check_problem(p: &crate::wire::ProblemEvent) -> Result<(), String> {
    one_to("a problem's kind", &p.kind, MAX_PROBLEM_KIND)?;
    at_most("a problem's path", &p.path, MAX_PROBLEM_PATH)?;
    one_to("a problem's message", &p.message, MAX_PROBLEM_MESSAGE)
}

/// A history entry within the contract's bounds.
pub fn check_entry(e: &HistoryEntry) -> Result<(), String> {
    one_to("a revision", &e.revision, MAX_REVISION)?;
    one_to("a history entry's by", &e.by, MAX_BY)?;
    if let Some(c) = &e.client {
        one_to("a history entry's client", c, MAX_BY)?;
    }
    agents("a history entry's agents", &e.agents)?;
    agents("a history entry's previous_agents", &e.previous_agents)
}

/// The page's own revision and cursor.
pub fn check_page_fields(revision: &str, cursor: &str) -> Result<(), String> {
    one_to("the page's config_revision", revision, MAX_REVISION)?;
    at_most("the cursor", cursor, MAX_CURSOR)
}

/// A revision from an ETag.
pub fn check_revision(r: &str) -> Result<(), String> {
    one_to("the ETag's revision", r, MAX_REVISION)
}

/// Workers seen on one page: each once, at most `max`. It keeps a 128-bit
/// fingerprint of each id (two SipHash keys drawn at random for this page),
/// not the id: 16 bytes a worker whatever its id's length, so a page read
/// as a stream stays small at any fleet size. Two ids share a fingerprint
/// with a chance of about n²/2¹²⁹ (nil at any fleet this client takes), and
/// a hub cannot aim for it: it never learns the keys.
pub struct Seen {
    ids: HashSet<u128>,
    keys: Fingerprints,
    max: usize,
}

/// 128-bit fingerprints of strings under two SipHash keys drawn at random
/// (for one page, one watch): equal strings have equal fingerprints, and
/// two different ones share one with a chance of about 2⁻¹²⁸ that no hub
/// can aim for, as it never learns the keys.
#[derive(Default)]
pub struct Fingerprints(
    std::collections::hash_map::RandomState,
    std::collections::hash_map::RandomState,
);

impl Fingerprints {
    pub fn of(&self, s: &str) -> u128 {
        use std::hash::BuildHasher;
        let a = self.0.hash_one(s);
        let b = self.1.hash_one(s);
        (u128::from(a) << 64) | u128::from(b)
    }
}

impl Seen {
    pub fn new(max: usize) -> Seen {
        Seen {
            ids: HashSet::new(),
            keys: Fingerprints::default(),
            max,
        }
    }

    fn fingerprint(&self, id: &str) -> u128 {
        self.keys.of(id)
    }

    pub fn admit(&mut self, id: &str) -> Result<(), String> {
        if self.ids.len() >= self.max {
            return Err(format!(
                "it lists more than {} workers (the fleet's cap, --max-workers)",
                self.max
            ));
        }
        if !self.ids.insert(self.fingerprint(id)) {
            return Err("it lists a worker twice".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(key: &'static str, chunks: &[&[u8]]) -> Result<(Vec<String>, String), Cut> {
        let mut s = Splitter::new(key, "element");
        let mut got = Vec::new();
        for c in chunks {
            s.feed(c, &mut |e| {
                got.push(String::from_utf8_lossy(e).trim().to_string());
                Ok(())
            })?;
        }
        let rest = String::from_utf8_lossy(&s.finish()?).into_owned();
        Ok((got, rest))
    }

    #[test]
    fn elements_come_out_whole_whatever_the_chunks() {
        let body =
            br#"{"now": "x", "workers": [{"a": "],\"{"}, {"b": [1, 2]}, 3], "cursor": "c[1,"}"#;
        let whole = split("workers", &[body]).expect("whole");
        assert_eq!(whole.0, [r#"{"a": "],\"{"}"#, r#"{"b": [1, 2]}"#, "3"]);
        assert_eq!(whole.1, r#"{"now": "x", "workers": [], "cursor": "c[1,"}"#);
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(split("workers", &bytes).expect("byte by byte"), whole);
        let v: serde_json::Value = serde_json::from_str(&whole.1).expect("rest is JSON");
        assert_eq!(v["workers"], serde_json::json!([]));
    }

    #[test]
    fn the_fields_before_the_list_come_first_and_a_second_list_is_refused() {
        let body = br#"{"now": "x", "cursor": "c[", "workers": [1, {"a": "["}], "delta": true}"#;
        for size in [1, 5, body.len()] {
            let mut s = Splitter::new("workers", "element");
            let mut parts = Vec::new();
            for c in body.chunks(size) {
                s.feed_parts(c, &mut |p| {
                    parts.push(match p {
                        Part::Opened(h) => format!("head {}", String::from_utf8_lossy(h)),
                        Part::Element(e) => String::from_utf8_lossy(e).trim().to_string(),
                    });
                    Ok(())
                })
                .expect("feeds");
            }
            assert_eq!(
                parts,
                [
                    r#"head {"now": "x", "cursor": "c[", "workers": []}"#,
                    "1",
                    r#"{"a": "["}"#
                ],
                "in pieces of {size}"
            );
            assert_eq!(
                String::from_utf8_lossy(&s.finish().expect("whole")),
                r#"{"now": "x", "cursor": "c[", "workers": [], "delta": true}"#
            );
        }
        assert!(matches!(
            split("workers", &[br#"{"workers": [1], "workers": [2]}"#]),
            Err(Cut::Malformed(m)) if m.contains("comes twice")
        ));
    }

    #[test]
    fn an_empty_list_and_other_keys_alone() {
        let (got, rest) =
            split("events", &[br#"{"workers":[1],"events":[],"next":1}"#]).expect("ok");
        assert!(got.is_empty());
        assert_eq!(rest, r#"{"workers":[1],"events":[],"next":1}"#);
    }

    #[test]
    fn endless_elements_rest_and_junk_stop_at_their_bound() {
        let mut s = Splitter::new("workers", "element");
        let mut each = |_: &[u8]| Ok(());
        s.feed(br#"{"workers": [{"host": ""#, &mut each)
            .expect("start");
        let chunk = vec![b'a'; 8192];
        let mut fed = 0;
        let err = loop {
            if let Err(e) = s.feed(&chunk, &mut each) {
                break e;
            }
            fed += chunk.len();
            assert!(fed <= MAX_ELEMENT + chunk.len(), "no bound");
        };
        assert!(
            matches!(err, Cut::Bound(ref m) if m.contains("element 0 is over 64 KiB")),
            "{err:?}"
        );
        let mut s = Splitter::new("workers", "element");
        s.feed(br#"{"cursor": ""#, &mut each).expect("start");
        assert!(matches!(
            s.feed(&vec![b'a'; MAX_PAGE_REST + 1], &mut each),
            Err(Cut::Bound(_))
        ));
        let mut s = Splitter::new("workers", "element");
        s.feed(b"{}", &mut each).expect("object");
        assert!(matches!(s.feed(b" x", &mut each), Err(Cut::Malformed(_))));
        assert!(matches!(
            split("workers", &[b"{\"workers\": [1,]}"]),
            Err(Cut::Malformed(_))
        ));
        assert!(matches!(
            split("workers", &[b"{\"workers\": [1"]),
            Err(Cut::Malformed(_))
        ));
    }

    fn worker() -> WorkerView {
        serde_json::from_value(serde_json::json!({
            "worker": "w-1", "host": "gpu-node-1", "received_at": "2026-11-29T15:04:05Z",
            "sent_at": "2026-11-29T15:04:05Z", "state": "healthy", "config_revision": "r1",
            "in_sync": true, "agents": ["opencode"], "active_agent": "opencode",
            "capabilities": {}, "last_failover": {"id": "f-1", "at": "2026-11-29T15:04:00Z",
              "from": "opencode", "to": null,
              "cause": {"kind": "auth", "status": 401, "source": "worker", "detail": "x"}}
        }))
        .expect("a worker")
    }

    #[test]
    fn workers_and_failovers_are_held_to_the_contract() {
        assert_eq!(check_worker(&worker()), Ok(()));
        let mut w = worker();
        w.worker = "w".repeat(129);
        assert_eq!(
            check_worker(&w),
            Err("a worker id is over 128 bytes".into())
        );
        let mut w = worker();
        w.host = String::new();
        assert_eq!(check_worker(&w), Err("a host is empty".into()));
        let mut w = worker();
        w.agents = vec!["a".into(); 65];
        assert_eq!(
            check_worker(&w),
            Err("a worker's agents holds over 64 agents".into())
        );
        let mut w = worker();
        w.agents = vec!["a".repeat(33)];
        assert!(check_worker(&w).is_err());
        let mut w = worker();
        if let Some(f) = w.last_failover.as_mut() {
            f.cause.detail = Some("é".repeat(201));
        }
        assert_eq!(
            check_worker(&w),
            Err("a detail is over 200 characters".into())
        );
        // 200 characters of two bytes each are within the bound.
        if let Some(f) = w.last_failover.as_mut() {
            f.cause.detail = Some("é".repeat(200));
        }
        assert_eq!(check_worker(&w), Ok(()));
        let mut seen = Seen::new(2);
        assert_eq!(seen.admit("a"), Ok(()));
        assert_eq!(seen.admit("a"), Err("it lists a worker twice".into()));
        assert_eq!(seen.admit("b"), Ok(()));
        assert!(
            seen.admit("c")
                .is_err_and(|e| e.contains("more than 2 workers"))
        );
    }

    #[test]
    fn recoveries_are_held_to_the_contract() {
        let ok = RecoveryRecord {
            seq: 1,
            worker: "w-1".into(),
            host: "h".into(),
            at: chrono::Utc::now(),
            from: None,
            to: "claude".into(),
            held_off_s: 0,
        };
        assert_eq!(check_recovery(&ok), Ok(()));
        let mut r = ok.clone();
        r.worker = "w".repeat(129);
        assert_eq!(
            check_recovery(&r),
            Err("a recovery's worker id is over 128 bytes".into())
        );
        let mut r = ok.clone();
        r.host = String::new();
        assert_eq!(check_recovery(&r), Err("a recovery's host is empty".into()));
        let mut r = ok.clone();
        r.from = Some("a".repeat(33));
        assert_eq!(
            check_recovery(&r),
            Err("a recovery's from is over 32 bytes".into())
        );
        let mut r = ok;
        r.to = String::new();
        assert_eq!(check_recovery(&r), Err("a recovery's to is empty".into()));
    }
}
