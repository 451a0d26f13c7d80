//! The typed client of the hub API v1. The TUI, the scripted commands and the
//! simulator all talk to a hub through this one module.
//!
//! Reading and writing are separate types: a [`Client`] can only read (and
//! heartbeat, for workers); the single write path is a [`Writer`], which is
//! only ever built for an owner. A read-only session never holds one.

mod bounded;
pub use bounded::{Fingerprints, MAX_SSE_EVENT};
mod sse;
mod window;

pub use window::MAX_SUMMARY;

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use futures::Stream;
use reqwest::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::wire::{
    ConfigAccepted, ConfigEvent, ErrorBody, FailoverRecord, FailoversPage, Heartbeat, History,
    HistoryEntry, Projection, Role, Whoami, WorkerView, WorkersPage,
};

/// A bearer token. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    pub fn new(secret: impl Into<String>) -> Token {
        Token(secret.into().trim().to_string())
    }

    /// The secret itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token([redacted])")
    }
}

/// What went wrong talking to a hub. `Display` is one clear line and never
/// holds a token.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    #[error("the hub refused the token (401): {0}")]
    Unauthorized(String),
    /// A 401 to a request that carried no token at all.
    #[error("no token: set MAC_HUB_TOKEN or a context's token_file")]
    NoToken,
    #[error("not allowed (403): {0}")]
    Forbidden(String),
    #[error("revision conflict: {}", conflict_text(current_revision.as_deref(), message))]
    Conflict {
        current_revision: Option<String>,
        message: String,
    },
    /// 409: the hub's state forbids it now (a rollout bakes, or none
    /// does: `rollout_in_progress`, `rollout_not_baking`); exit 3, as a
    /// revision conflict.
    #[error("conflict: {message}")]
    InConflict { code: String, message: String },
    #[error("rejected: {message}{}", fmt_pos(*line, *column))]
    Validation {
        code: String,
        message: String,
        line: Option<usize>,
        column: Option<usize>,
    },
    #[error("hub unreachable: {0}")]
    Unreachable(String),
    #[error("refusing to send a token over plain HTTP to {0}: use https, or --allow-plaintext")]
    Plaintext(String),
    #[error("bad hub URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("hub answered {status}: {code}: {message}")]
    Hub {
        status: u16,
        code: String,
        message: String,
    },
    #[error("could not read the hub's answer: {0}")]
    Decode(String),
    /// The hub sent more than the contract allows; what was read of it is
    /// dropped.
    #[error("the hub at {hub} broke a bound of the API on {what}: {bound}; refused")]
    OutOfBounds {
        hub: String,
        what: String,
        bound: String,
    },
}

fn conflict_text(current: Option<&str>, message: &str) -> String {
    let at = match current {
        Some(r) => format!("the hub is at revision {r} now"),
        None => "the document on the hub has changed".to_string(),
    };
    if message.is_empty() {
        at
    } else {
        format!("{at} ({message})")
    }
}

fn fmt_pos(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        (Some(l), None) => format!(" (line {l})"),
        _ => String::new(),
    }
}

impl ClientError {
    /// The exit codes of the README (and `macfleet --help`): 3 conflict, 4 validation,
    /// 5 unreachable, 6 not allowed, 1 anything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            ClientError::Conflict { .. } | ClientError::InConflict { .. } => 3,
            ClientError::Validation { .. } => 4,
            ClientError::Unreachable(_) => 5,
            ClientError::Unauthorized(_)
            | ClientError::NoToken
            | ClientError::Forbidden(_)
            | ClientError::Plaintext(_) => 6,
            ClientError::BadUrl { .. } => 2,
            ClientError::Hub { .. } | ClientError::Decode(_) | ClientError::OutOfBounds { .. } => 1,
        }
    }
}

/// Options for [`Client::new`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub allow_plaintext: bool,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub user_agent: String,
    /// An extra CA certificate (PEM) to trust, for a hub with a private CA.
    pub ca_pem: Option<Vec<u8>>,
    /// Most workers a `/v1/workers` page may list (the fleet's cap, the
    /// hub's `--max-workers`).
    pub max_workers: usize,
    /// Ask for compressed answers (`Accept-Encoding: zstd, gzip`);
    /// `None`: only from a hub that is not on loopback.
    pub compress: Option<bool>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            allow_plaintext: false,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            user_agent: format!("macfleet/{}", env!("CARGO_PKG_VERSION")),
            ca_pem: None,
            max_workers: crate::wire::DEFAULT_MAX_WORKERS,
            compress: None,
        }
    }
}

/// `GET /v1/config`: the stored document and its revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDoc {
    pub text: String,
    pub revision: String,
    /// The document does not validate (`Macfleet-Config-Invalid`): it is
    /// the file as it stands on disk, not what workers are told, and a
    /// write replaces it only with `If-Match` naming `revision`.
    pub invalid: Option<crate::wire::ConfigInvalid>,
}

/// Filters of `GET /v1/failovers`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailoverQuery {
    pub since: Option<u64>,
    pub limit: Option<u32>,
    pub worker: Option<String>,
    pub agent: Option<String>,
    pub kind: Option<crate::wire::CauseKind>,
}

impl FailoverQuery {
    /// The query of a log page (`/v1/failovers`, `/v1/recoveries`) but
    /// `kind`, which only the failover log takes.
    fn log_query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if let Some(s) = self.since {
            query.push(("since", s.to_string()));
        }
        if let Some(l) = self.limit {
            query.push(("limit", l.to_string()));
        }
        if let Some(w) = &self.worker {
            query.push(("worker", w.clone()));
        }
        if let Some(a) = &self.agent {
            query.push(("agent", a.clone()));
        }
        query
    }
}

/// A log page's order, checked as its events arrive: at most the `limit`
/// asked (100 when not given, [`bounded::MAX_FAILOVERS_PAGE`] at most),
/// oldest first after `since`.
struct LogOrder {
    max: usize,
    after: u64,
    n: usize,
}

impl LogOrder {
    fn new(q: &FailoverQuery) -> LogOrder {
        LogOrder {
            max: q
                .limit
                .map_or(100, |l| l as usize)
                .clamp(1, bounded::MAX_FAILOVERS_PAGE),
            after: q.since.unwrap_or(0),
            n: 0,
        }
    }

    fn next(&mut self, seq: u64) -> Result<(), String> {
        self.n += 1;
        if self.n > self.max {
            return Err(format!(
                "it holds more events than the {} asked for",
                self.max
            ));
        }
        if seq <= self.after {
            return Err(format!(
                "seq {seq} does not follow {} (events come oldest first after since)",
                self.after
            ));
        }
        self.after = seq;
        Ok(())
    }
}

/// One event of `GET /v1/events`.
#[derive(Debug, Clone, PartialEq)]
pub enum HubEvent {
    Heartbeat(Box<WorkerView>),
    Failover(Box<FailoverRecord>),
    Config(ConfigEvent),
    /// The hub's sweeper moved a worker to `stale` or `lost`: its new view.
    State(Box<WorkerView>),
    /// A new revision flipped a worker's `in_sync`: its new view.
    Sync(Box<WorkerView>),
    /// A worker back on a higher rung of the same list revision.
    Recovery(Box<crate::wire::RecoveryRecord>),
    /// The fleet's summary (asked for with `types=summary`: at most once
    /// a second, when it changed).
    Summary(Box<crate::wire::Summary>),
    /// A staged rollout's step and the rollout after it.
    Rollout(Box<crate::rollout::wire::RolloutEvent>),
    /// Something on disk the owner must look at: found while the stream
    /// is open, or known when it connected (each sent once, first).
    Problem(Box<crate::wire::ProblemEvent>),
    /// The hub no longer holds the resume point: refetch everything.
    Reset,
}

/// What the self-reconnecting event stream yields.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    Connected,
    Event { id: Option<String>, event: HubEvent },
    Disconnected { error: String, retry_in: Duration },
}

/// The read side of the hub API (and heartbeats, for workers).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// A separate client without a total timeout, for the event stream.
    stream_http: reqwest::Client,
    base: reqwest::Url,
    token: Option<Token>,
    max_workers: usize,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base.as_str())
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

fn is_loopback_host(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost")
                || d.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
        None => false,
    }
}

impl Client {
    pub fn new(
        base_url: &str,
        token: Option<Token>,
        opts: ClientOptions,
    ) -> Result<Client, ClientError> {
        let bad = |reason: &str| ClientError::BadUrl {
            url: crate::scrub::scrub(base_url).into_owned(),
            reason: reason.to_string(),
        };
        let mut base = reqwest::Url::parse(base_url.trim()).map_err(|e| bad(&e.to_string()))?;
        match base.scheme() {
            "http" | "https" => {}
            _ => return Err(bad("the scheme must be http or https")),
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(bad("credentials do not go in the URL; use MAC_HUB_TOKEN"));
        }
        if base.query().is_some() {
            return Err(bad("the hub URL takes no query"));
        }
        if base.scheme() == "http"
            && token.is_some()
            && !opts.allow_plaintext
            && !is_loopback_host(&base)
        {
            return Err(ClientError::Plaintext(
                base.host_str().unwrap_or_default().to_string(),
            ));
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let ca = match &opts.ca_pem {
            Some(pem) => {
                Some(
                    reqwest::Certificate::from_pem(pem).map_err(|e| ClientError::BadUrl {
                        url: base.to_string(),
                        reason: format!("the CA certificate is not PEM: {e}"),
                    })?,
                )
            }
            None => None,
        };
        // Pages are asked compressed (zstd, gzip) from a hub across a
        // network, where bytes cost time; not over loopback, where the
        // compressing and decompressing would be all the cost.
        let compress = opts.compress.unwrap_or_else(|| !is_loopback_host(&base));
        let build = |timeout: Option<Duration>| {
            let mut b = reqwest::Client::builder()
                .connect_timeout(opts.connect_timeout)
                .user_agent(opts.user_agent.clone())
                .redirect(reqwest::redirect::Policy::none())
                .zstd(compress)
                .gzip(compress);
            if let Some(ca) = &ca {
                b = b.add_root_certificate(ca.clone());
            }
            if let Some(t) = timeout {
                b = b.timeout(t);
            } else {
                // Longer than the hub's 15 s keep-alive comment.
                b = b.read_timeout(Duration::from_secs(45));
            }
            b.build()
                .map_err(|e| ClientError::Unreachable(format!("cannot build an HTTP client: {e}")))
        };
        Ok(Client {
            http: build(Some(opts.request_timeout))?,
            stream_http: build(None)?,
            base,
            token,
            max_workers: opts.max_workers.max(1),
        })
    }

    /// The hub's base URL (no credentials ever live in it).
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }

    /// The hub as errors name it.
    fn hub(&self) -> String {
        self.base.as_str().trim_end_matches('/').to_string()
    }

    fn out_of_bounds(&self, what: &str, bound: impl Into<String>) -> ClientError {
        ClientError::OutOfBounds {
            hub: self.hub(),
            what: what.to_string(),
            bound: crate::textsafe::for_terminal(&bound.into()).into_owned(),
        }
    }

    /// The body, read as it comes and never held past `max` bytes.
    async fn read_capped(
        &self,
        mut resp: reqwest::Response,
        max: usize,
        what: &str,
        noun: &str,
    ) -> Result<Vec<u8>, ClientError> {
        let too_big = || self.out_of_bounds(what, format!("{noun} over {}", bounded::size(max)));
        if resp.content_length().is_some_and(|n| n > max as u64) {
            return Err(too_big());
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.transport(e))? {
            if body.len() + chunk.len() > max {
                return Err(too_big());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// A small JSON answer, bounded.
    async fn decode_small<T: DeserializeOwned>(
        &self,
        resp: reqwest::Response,
        what: &str,
    ) -> Result<T, ClientError> {
        let bytes = self
            .read_capped(resp, bounded::MAX_SMALL, what, "an answer")
            .await?;
        serde_json::from_slice(&bytes).map_err(|e| decode_error(what, &e))
    }

    /// A page read as a stream: each element of its `key` array is decoded
    /// and passed to `admit` as it arrives, and the body stops at the first
    /// one out of bounds. Returns the page's other fields and the elements.
    async fn read_page<'a, P: DeserializeOwned, T: DeserializeOwned>(
        &'a self,
        resp: reqwest::Response,
        what: &'static str,
        key: &'static str,
        noun: &'static str,
        admit: impl FnMut(&T) -> Result<(), String> + Send + 'a,
    ) -> Result<(P, Vec<T>), ClientError> {
        let mut reader = PageReader::new(self, resp, what, key, noun, admit);
        let mut items: Vec<T> = Vec::new();
        loop {
            match reader.next().await? {
                PagePart::Head(_) => {}
                PagePart::Item(item) => items.push(item),
                PagePart::End(page) => return Ok((page, items)),
            }
        }
    }

    fn url(&self, path: &str) -> reqwest::Url {
        // `path` is one of our own constant relative paths.
        self.base
            .join(path.trim_start_matches('/'))
            .unwrap_or_else(|_| self.base.clone())
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut rb = self.http.request(method, self.url(path));
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t.expose());
        }
        rb
    }

    async fn send(&self, rb: reqwest::RequestBuilder) -> Result<reqwest::Response, ClientError> {
        let resp = rb.send().await.map_err(|e| self.transport(e))?;
        if resp.status().is_success() || resp.status() == StatusCode::NOT_MODIFIED {
            Ok(resp)
        } else {
            Err(self.without_token(self.error_from(resp).await))
        }
    }

    /// A 401 to a request that carried no token says what to set, not
    /// what header was missing.
    fn without_token(&self, e: ClientError) -> ClientError {
        match e {
            ClientError::Unauthorized(_) if self.token.is_none() => ClientError::NoToken,
            e => e,
        }
    }

    async fn get(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<reqwest::Response, ClientError> {
        self.send(self.request(reqwest::Method::GET, path).query(query))
            .await
    }

    /// `GET /v1/health` (no token needed).
    pub async fn health(&self) -> Result<(), ClientError> {
        let resp = self
            .http
            .get(self.url("v1/health"))
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(self.error_from(resp).await)
        }
    }

    /// `GET /v1/health` with `Accept: application/json` (no token needed):
    /// whether the hub is degraded and why, as its own sentences.
    pub async fn health_report(&self) -> Result<crate::wire::Health, ClientError> {
        let resp = self
            .http
            .get(self.url("v1/health"))
            .header(header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        if !resp.status().is_success() {
            return Err(self.error_from(resp).await);
        }
        self.decode_small(resp, "GET /v1/health").await
    }

    pub async fn whoami(&self) -> Result<Whoami, ClientError> {
        let resp = self.get("v1/whoami", &[]).await?;
        self.decode_small(resp, "GET /v1/whoami").await
    }

    pub async fn config(&self) -> Result<ConfigDoc, ClientError> {
        let resp = self
            .send(self.request(reqwest::Method::GET, "v1/config"))
            .await?;
        let what = "GET /v1/config";
        let revision = etag_of(&resp)
            .ok_or_else(|| ClientError::Decode("GET /v1/config answered without an ETag".into()))?;
        bounded::check_revision(&revision).map_err(|b| self.out_of_bounds(what, b))?;
        let invalid = match resp.headers().get(crate::wire::CONFIG_INVALID_HEADER) {
            None => None,
            Some(v) => Some(
                v.to_str()
                    .ok()
                    .and_then(crate::wire::ConfigInvalid::from_header)
                    .ok_or_else(|| {
                        ClientError::Decode(format!(
                            "{what}: a Macfleet-Config-Invalid header that does not read as line=L; column=C; message=\"...\""
                        ))
                    })?,
            ),
        };
        let bytes = self
            .read_capped(resp, bounded::MAX_CONFIG, what, "a config document")
            .await?;
        let text = String::from_utf8(bytes)
            .map_err(|_| ClientError::Decode(format!("{what}: the document is not UTF-8")))?;
        Ok(ConfigDoc {
            text,
            revision,
            invalid,
        })
    }

    pub async fn history(&self) -> Result<History, ClientError> {
        Ok(self.history_and_rollouts().await?.0)
    }

    /// `GET /v1/config/history`, with the steps of the newest staged
    /// rollouts it lists (`rollouts`, newest first; none from a hub that
    /// predates them).
    pub async fn history_and_rollouts(
        &self,
    ) -> Result<(History, Vec<crate::rollout::Step>), ClientError> {
        /// The answer's own fields beside its `revisions`.
        #[derive(serde::Deserialize)]
        struct Page {
            #[serde(default)]
            rollouts: Vec<crate::rollout::Step>,
        }
        let resp = self.get("v1/config/history", &[]).await?;
        let mut n = 0;
        let (page, items): (Page, _) = self
            .read_page(
                resp,
                "GET /v1/config/history",
                "revisions",
                "history entry",
                |e: &HistoryEntry| {
                    n += 1;
                    if n > bounded::MAX_HISTORY {
                        return Err(format!(
                            "it holds more than {} revisions",
                            bounded::MAX_HISTORY
                        ));
                    }
                    bounded::check_entry(e)
                },
            )
            .await?;
        if page.rollouts.len() > bounded::MAX_ROLLOUT_STEPS {
            return Err(self.out_of_bounds(
                "GET /v1/config/history",
                format!(
                    "it lists more than {} rollout steps",
                    bounded::MAX_ROLLOUT_STEPS
                ),
            ));
        }
        Ok((History { revisions: items }, page.rollouts))
    }

    /// `GET /v1/rollouts/current`: the newest rollout; `None` when none
    /// has run (`404 no_rollout`).
    pub async fn rollout(&self) -> Result<Option<crate::rollout::wire::RolloutView>, ClientError> {
        match self.get("v1/rollouts/current", &[]).await {
            Ok(resp) => Ok(Some(
                self.decode_small(resp, "GET /v1/rollouts/current").await?,
            )),
            Err(ClientError::Hub {
                status: 404, code, ..
            }) if code == "no_rollout" => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `POST /v1/plan`: what `agents` would do over the whole fleet, as
    /// the hub projects it (writes nothing; an owner or a viewer may ask).
    pub async fn plan(&self, agents: &[String]) -> Result<crate::wire::PlanAnswer, ClientError> {
        let body = serde_json::to_vec(&crate::wire::PlanRequest {
            agents: agents.to_vec(),
        })
        .map_err(|e| ClientError::Decode(e.to_string()))?;
        let rb = self
            .request(reqwest::Method::POST, "v1/plan")
            .header(header::CONTENT_TYPE, "application/json")
            .body(body);
        let resp = self.send(rb).await?;
        self.decode_small(resp, "POST /v1/plan").await
    }

    /// `GET /v1/workers`, every worker held (for readers that sort or
    /// look them up; `get workers -o json` streams with
    /// [`Client::workers_stream`] instead).
    pub async fn workers(&self, since: Option<&str>) -> Result<WorkersPage, ClientError> {
        let resp = self.get("v1/workers", &since_query(since)).await?;
        let mut reader = self.workers_reader(resp);
        let mut items = Vec::new();
        loop {
            match reader.next().await? {
                PagePart::Head(_) => {}
                PagePart::Item(w) => items.push(w),
                PagePart::End(mut page) => {
                    page.workers = items;
                    return Ok(page);
                }
            }
        }
    }

    /// `GET /v1/workers` as a stream of its parts: each worker decoded and
    /// checked against the contract's bounds (and seen once, at most
    /// `max_workers`) as its bytes arrive, so a reader can write it out
    /// before the next is read. The page's own fields come first as
    /// [`PagePart::Head`] when the hub sends them before the list (the
    /// reference hub does), and always as [`PagePart::End`], checked, once
    /// the body has ended whole. Any break of the body or of a bound is an
    /// error of [`PageReader::next`], and nothing follows it.
    ///
    /// A page of the largest fleet takes longer to read than the 30 s a
    /// request is given (250,000 largest workers: over 2 GB), so this one
    /// is held to the event stream's bounds instead: at most 45 s without
    /// a byte, and the whole body within [`STREAMED_PAGE_WITHIN`].
    pub async fn workers_stream(
        &self,
        since: Option<&str>,
    ) -> Result<PageReader<'_, WorkersPage, WorkerView>, ClientError> {
        let mut rb = self
            .stream_http
            .get(self.url("v1/workers"))
            .query(&since_query(since));
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t.expose());
        }
        let deadline = tokio::time::Instant::now() + STREAMED_PAGE_WITHIN;
        let resp = tokio::time::timeout_at(deadline, self.send(rb))
            .await
            .map_err(|_| self.too_slow("GET /v1/workers"))??;
        let mut reader = self.workers_reader(resp);
        reader.deadline = Some(deadline);
        Ok(reader)
    }

    /// A streamed page that did not end within [`STREAMED_PAGE_WITHIN`].
    fn too_slow(&self, what: &str) -> ClientError {
        ClientError::Unreachable(format!(
            "{} did not finish its answer to {what} within {} minutes; check that the hub is not overloaded or stuck",
            self.hub(),
            STREAMED_PAGE_WITHIN.as_secs() / 60
        ))
    }

    /// [`Client::workers_stream`] over an answer already received.
    pub(crate) fn workers_reader(
        &self,
        resp: reqwest::Response,
    ) -> PageReader<'_, WorkersPage, WorkerView> {
        let mut seen = bounded::Seen::new(self.max_workers);
        let mut reader = PageReader::new(
            self,
            resp,
            "GET /v1/workers",
            "workers",
            "worker entry",
            move |w: &WorkerView| {
                bounded::check_worker(w)?;
                seen.admit(&w.worker)
            },
        );
        reader.check_page =
            Some(|p: &WorkersPage| bounded::check_page_fields(&p.config_revision, &p.cursor));
        reader
    }

    pub async fn failovers(&self, q: &FailoverQuery) -> Result<FailoversPage, ClientError> {
        let mut query = q.log_query();
        if let Some(k) = q.kind {
            query.push(("kind", k.as_str().to_string()));
        }
        let resp = self.get("v1/failovers", &query).await?;
        let mut order = LogOrder::new(q);
        let (mut page, items): (FailoversPage, _) = self
            .read_page(
                resp,
                "GET /v1/failovers",
                "events",
                "failover record",
                |r: &FailoverRecord| {
                    order.next(r.seq)?;
                    bounded::check_record(r)
                },
            )
            .await?;
        page.events = items;
        Ok(page)
    }

    /// `GET /v1/recoveries`: workers back on a higher rung, paged as the
    /// failover log (the query's `kind` does not apply and is not sent).
    pub async fn recoveries(
        &self,
        q: &FailoverQuery,
    ) -> Result<crate::wire::RecoveriesPage, ClientError> {
        let resp = self.get("v1/recoveries", &q.log_query()).await?;
        let mut order = LogOrder::new(q);
        let (mut page, items): (crate::wire::RecoveriesPage, _) = self
            .read_page(
                resp,
                "GET /v1/recoveries",
                "events",
                "recovery record",
                |r: &crate::wire::RecoveryRecord| {
                    order.next(r.seq)?;
                    bounded::check_recovery(r)
                },
            )
            .await?;
        page.events = items;
        Ok(page)
    }

    /// `GET /metrics`: the Prometheus text, as the hub wrote it (read
    /// within [`bounded::MAX_METRICS`]).
    pub async fn metrics(&self) -> Result<String, ClientError> {
        let resp = self
            .send(self.request(reqwest::Method::GET, "metrics"))
            .await?;
        let what = "GET /metrics";
        let bytes = self
            .read_capped(resp, bounded::MAX_METRICS, what, "a metrics text")
            .await?;
        String::from_utf8(bytes)
            .map_err(|_| ClientError::Decode(format!("{what}: the text is not UTF-8")))
    }

    /// `POST /v1/heartbeats`: report, and receive the projection.
    pub async fn heartbeat(&self, hb: &Heartbeat) -> Result<Projection, ClientError> {
        let resp = self
            .send(
                self.request(reqwest::Method::POST, "v1/heartbeats")
                    .json(hb),
            )
            .await?;
        self.decode_small(resp, "POST /v1/heartbeats").await
    }

    /// `GET /v1/events` as a stream that reconnects by itself with capped
    /// exponential backoff (at most 10 s) and resumes with `Last-Event-ID`.
    /// `types` filters event kinds (`heartbeat`, `failover`, `config`);
    /// empty means all. The stream never ends on its own. A line or an
    /// event's data past 256 KiB drops the connection with
    /// [`ClientError::OutOfBounds`]'s text, and it reconnects as after any
    /// other break.
    pub fn events(
        &self,
        last_event_id: Option<String>,
        types: &[&str],
    ) -> impl Stream<Item = StreamItem> + Send + 'static {
        let client = self.clone();
        let types = types.join(",");
        let (tx, rx) = tokio::sync::mpsc::channel::<StreamItem>(256);
        tokio::spawn(async move {
            let mut last_id = last_event_id;
            let mut backoff = Duration::from_millis(250);
            loop {
                let error = match client.stream_once(&types, &mut last_id, &tx).await {
                    Ok(()) => "the hub closed the stream".to_string(),
                    Err(StreamEnd::ReceiverGone) => return,
                    Err(StreamEnd::Failed(e)) => e,
                };
                if tx
                    .send(StreamItem::Disconnected {
                        error,
                        retry_in: backoff,
                    })
                    .await
                    .is_err()
                {
                    return;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
                if tx.is_closed() {
                    return;
                }
            }
        });
        tokio_stream::wrappers::ReceiverStream::new(rx)
    }

    async fn stream_once(
        &self,
        types: &str,
        last_id: &mut Option<String>,
        tx: &tokio::sync::mpsc::Sender<StreamItem>,
    ) -> Result<(), StreamEnd> {
        let mut rb = self
            .stream_http
            .get(self.url("v1/events"))
            .header(header::ACCEPT, "text/event-stream");
        if !types.is_empty() {
            rb = rb.query(&[("types", types)]);
        }
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t.expose());
        }
        if let Some(id) = last_id.as_deref() {
            rb = rb.header("Last-Event-ID", id);
        }
        let mut resp = rb
            .send()
            .await
            .map_err(|e| StreamEnd::Failed(self.transport(e).to_string()))?;
        if !resp.status().is_success() {
            return Err(StreamEnd::Failed(
                self.without_token(self.error_from(resp).await).to_string(),
            ));
        }
        tx.send(StreamItem::Connected)
            .await
            .map_err(|_| StreamEnd::ReceiverGone)?;
        let mut parser = sse::SseParser::new();
        let mut ready: Vec<sse::SseEvent> = Vec::new();
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => return Ok(()),
                Err(e) => {
                    return Err(StreamEnd::Failed(format!(
                        "event stream broke: {}",
                        self.transport(e)
                    )));
                }
            };
            parser.feed(&chunk, &mut ready).map_err(|bound| {
                StreamEnd::Failed(self.out_of_bounds("GET /v1/events", bound).to_string())
            })?;
            for ev in ready.drain(..) {
                let Some(event) = self.event_of(&ev) else {
                    continue;
                };
                let id = (!ev.id.is_empty()).then(|| ev.id.clone());
                if id.is_some() {
                    last_id.clone_from(&id);
                }
                if event == HubEvent::Reset {
                    // The resume point is gone: start from "now" next time.
                    *last_id = id.clone();
                }
                tx.send(StreamItem::Event { id, event })
                    .await
                    .map_err(|_| StreamEnd::ReceiverGone)?;
            }
        }
    }

    /// One SSE event as a [`HubEvent`]; `None` for kinds this client does
    /// not know (they are for newer clients) and for undecodable data
    /// (warned about, its text scrubbed and escaped).
    fn event_of(&self, ev: &sse::SseEvent) -> Option<HubEvent> {
        let data = ev.data.as_deref().unwrap_or_default();
        let parsed = match ev.event.as_str() {
            "heartbeat" => serde_json::from_str(data).map(|v| HubEvent::Heartbeat(Box::new(v))),
            "failover" => serde_json::from_str(data).map(|v| HubEvent::Failover(Box::new(v))),
            "config" => serde_json::from_str(data).map(HubEvent::Config),
            "state" => serde_json::from_str(data).map(|v| HubEvent::State(Box::new(v))),
            "sync" => serde_json::from_str(data).map(|v| HubEvent::Sync(Box::new(v))),
            "recovery" => serde_json::from_str(data).map(|v| HubEvent::Recovery(Box::new(v))),
            "summary" => serde_json::from_str(data).map(|v| HubEvent::Summary(Box::new(v))),
            "rollout" => serde_json::from_str(data).map(|v| HubEvent::Rollout(Box::new(v))),
            "problem" => serde_json::from_str(data).map(|v| HubEvent::Problem(Box::new(v))),
            "reset" => return Some(HubEvent::Reset),
            _ => return None,
        };
        let bounds = match &parsed {
            Ok(HubEvent::Heartbeat(w) | HubEvent::State(w) | HubEvent::Sync(w)) => {
                bounded::check_worker(w)
            }
            Ok(HubEvent::Failover(r)) => bounded::check_record(r),
            Ok(HubEvent::Recovery(r)) => bounded::check_recovery(r),
            Ok(HubEvent::Summary(s)) => window::check_summary(s),
            Ok(HubEvent::Problem(p)) => bounded::check_problem(p),
            _ => Ok(()),
        };
        let error = match (parsed, bounds) {
            (Ok(e), Ok(())) => return Some(e),
            (Ok(_), Err(b)) => b,
            (Err(e), _) => e.to_string(),
        };
        // The event's name and serde's message quote the hub's text: shown
        // scrubbed and escaped, never raw.
        tracing::warn!(
            hub = %self.hub(),
            event = %crate::textsafe::for_terminal(&ev.event),
            error = %crate::textsafe::for_terminal(&error),
            "undecodable hub event skipped"
        );
        None
    }
}

enum StreamEnd {
    ReceiverGone,
    Failed(String),
}

/// How long a page read as a stream ([`Client::workers_stream`]) may take
/// in all.
pub const STREAMED_PAGE_WITHIN: Duration = Duration::from_secs(10 * 60);

fn since_query(since: Option<&str>) -> Vec<(&'static str, String)> {
    since
        .map(|s| ("since", s.to_string()))
        .into_iter()
        .collect()
}

/// One part of a page read as a stream ([`PageReader::next`]).
#[derive(Debug)]
pub enum PagePart<P, T> {
    /// The page's own fields (its list empty), when all of them came before
    /// the list; checked as [`PagePart::End`]'s are.
    Head(P),
    /// One element of the list, decoded and within the contract's bounds.
    Item(T),
    /// The body ended whole: the page's own fields (its list empty),
    /// checked. Nothing follows.
    End(P),
}

/// Whether an element is within the contract (its bound's text if not).
type Admit<'c, T> = Box<dyn FnMut(&T) -> Result<(), String> + Send + 'c>;
/// Whether a page's own fields are.
type Check<P> = fn(&P) -> Result<(), String>;

/// A page's body read as it arrives ([`Client::workers_stream`]). It holds
/// at most one chunk of the body and the elements decoded from it, never
/// the page: a reader that writes each element out as it comes stays small
/// whatever the page's size.
pub struct PageReader<'c, P, T> {
    client: &'c Client,
    resp: reqwest::Response,
    what: &'static str,
    split: bounded::Splitter,
    admit: Admit<'c, T>,
    /// A check of the page's own fields beside serde's.
    check_page: Option<Check<P>>,
    ready: std::collections::VecDeque<PagePart<P, T>>,
    /// An error met after the parts in `ready`: given once they are.
    failed: Option<ClientError>,
    /// When the whole body must have come (streamed pages only).
    deadline: Option<tokio::time::Instant>,
    ended: bool,
}

impl<'c, P: DeserializeOwned, T: DeserializeOwned> PageReader<'c, P, T> {
    fn new(
        client: &'c Client,
        resp: reqwest::Response,
        what: &'static str,
        key: &'static str,
        noun: &'static str,
        admit: impl FnMut(&T) -> Result<(), String> + Send + 'c,
    ) -> Self {
        PageReader {
            client,
            resp,
            what,
            split: bounded::Splitter::new(key, noun),
            admit: Box::new(admit),
            check_page: None,
            ready: std::collections::VecDeque::new(),
            failed: None,
            deadline: None,
            ended: false,
        }
    }

    fn cut(&self, c: bounded::Cut) -> ClientError {
        match c {
            bounded::Cut::Bound(b) => self.client.out_of_bounds(self.what, b),
            bounded::Cut::Malformed(m) => ClientError::Decode(format!("{}: {m}", self.what)),
        }
    }

    /// The page's own fields, decoded and checked.
    fn page(&self, bytes: &[u8]) -> Result<P, ClientError> {
        let page: P = serde_json::from_slice(bytes).map_err(|e| decode_error(self.what, &e))?;
        if let Some(check) = self.check_page {
            check(&page).map_err(|b| self.client.out_of_bounds(self.what, b))?;
        }
        Ok(page)
    }

    /// The next part; `Ok(End)` once, then errors. An error ends the page:
    /// what came before it was whole and checked, what follows is dropped.
    pub async fn next(&mut self) -> Result<PagePart<P, T>, ClientError> {
        loop {
            if let Some(part) = self.ready.pop_front() {
                return Ok(part);
            }
            if let Some(e) = self.failed.take() {
                self.ended = true;
                return Err(e);
            }
            if self.ended {
                return Err(ClientError::Decode(format!(
                    "{}: read past the page's end",
                    self.what
                )));
            }
            let next = match self.deadline {
                Some(d) => tokio::time::timeout_at(d, self.resp.chunk()).await,
                None => Ok(self.resp.chunk().await),
            };
            let chunk = match next {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => {
                    self.ended = true;
                    return Err(self.client.transport(e));
                }
                Err(_) => {
                    self.ended = true;
                    return Err(self.client.too_slow(self.what));
                }
            };
            let Some(chunk) = chunk else {
                self.ended = true;
                let split = std::mem::replace(&mut self.split, bounded::Splitter::new("", ""));
                let rest = split.finish().map_err(|c| self.cut(c))?;
                return Ok(PagePart::End(self.page(&rest)?));
            };
            let mut decode_failed: Option<ClientError> = None;
            let mut heads: Option<Vec<u8>> = None;
            let what = self.what;
            let admit = &mut self.admit;
            let ready = &mut self.ready;
            let r = self.split.feed_parts(&chunk, &mut |part| match part {
                bounded::Part::Opened(head) => {
                    heads = Some(head.to_vec());
                    Ok(())
                }
                bounded::Part::Element(bytes) => {
                    let item: T = serde_json::from_slice(bytes).map_err(|e| {
                        decode_failed = Some(decode_error(what, &e));
                        bounded::Cut::Malformed(String::new())
                    })?;
                    admit(&item).map_err(bounded::Cut::Bound)?;
                    ready.push_back(PagePart::Item(item));
                    Ok(())
                }
            });
            if let Some(head) = heads {
                // All the page's fields before its list: a head to write
                // first. Some missing (they come after the list): none.
                if let Ok(page) = serde_json::from_slice::<P>(&head) {
                    let checked = match self.check_page {
                        Some(check) => check(&page).map(|()| page),
                        None => Ok(page),
                    };
                    match checked {
                        Ok(page) => self.ready.push_front(PagePart::Head(page)),
                        Err(b) => {
                            self.ready.clear();
                            self.failed = Some(self.client.out_of_bounds(self.what, b));
                            continue;
                        }
                    }
                }
            }
            if let Err(c) = r {
                self.failed = Some(decode_failed.take().unwrap_or_else(|| self.cut(c)));
            }
        }
    }
}

/// The right to be handed the one write path, given only to sessions that
/// are not read-only. It turns into a [`Writer`] once the hub says the
/// token is an owner's ([`WriteGrant::writer`]), so a session can start
/// before the hub answers and gain its writer when it does.
#[derive(Clone, Debug)]
pub struct WriteGrant {
    client: Client,
}

impl WriteGrant {
    pub fn new(client: Client) -> WriteGrant {
        WriteGrant { client }
    }

    /// The writer, if `whoami` (the hub's answer for this token) is an owner.
    pub fn writer(&self, whoami: &Whoami) -> Option<Writer> {
        Writer::new(self.client.clone(), whoami)
    }
}

/// The one write path to the hub. Only an owner gets one.
#[derive(Clone, Debug)]
pub struct Writer {
    client: Client,
}

impl Writer {
    /// `Some` only when the hub says this token is an owner's.
    pub fn new(client: Client, whoami: &Whoami) -> Option<Writer> {
        (whoami.role == Role::Owner).then_some(Writer { client })
    }

    /// `PUT /v1/config` with `If-Match`, checked when its answer is lost
    /// ([`Writer::put_config_checked`]); a write whose outcome could not be
    /// checked is [`ClientError::Unreachable`], saying it may be on the hub.
    pub async fn put_config(
        &self,
        text: &str,
        if_match: &str,
    ) -> Result<ConfigAccepted, ClientError> {
        match self.put_config_checked(text, if_match, |_| {}).await {
            Ok(w) => Ok(w.accepted),
            Err(WriteError::Refused(e)) => Err(e),
            Err(e @ WriteError::Unknown { .. }) => Err(ClientError::Unreachable(e.to_string())),
        }
    }

    /// `PUT /v1/config` with `If-Match` and a fresh `Idempotency-Key`.
    /// When the answer is lost after the request went out (the connection
    /// reset or closed, a timeout, a proxy's 502/504), the outcome is
    /// unknown: `on_lost` is told why (a UI says "may not have been
    /// written: checking"), and the same request is sent again with the
    /// same key, a few times over about 4 s, until the hub answers. The hub
    /// answers a key it holds with the first answer, so a 200 means the
    /// write is on the hub (written once), and any refusal (a 412: someone
    /// else wrote first) that it was not written.
    pub async fn put_config_checked(
        &self,
        text: &str,
        if_match: &str,
        on_lost: impl FnMut(&str),
    ) -> Result<Written, WriteError> {
        self.put_config_keyed(text, if_match, &new_idempotency_key(), on_lost)
            .await
    }

    /// [`Writer::put_config_checked`] with the caller's `key`: a write sent
    /// again later as the same write (the TUI asks again with the key of a
    /// write whose outcome it could not learn, once the hub answers), which
    /// the hub answers with its first answer when it holds the key.
    pub async fn put_config_keyed(
        &self,
        text: &str,
        if_match: &str,
        key: &str,
        on_lost: impl FnMut(&str),
    ) -> Result<Written, WriteError> {
        let make = || {
            self.client
                .request(reqwest::Method::PUT, "v1/config")
                .header(header::CONTENT_TYPE, "application/toml")
                .header(header::IF_MATCH, format!("\"{if_match}\""))
                .header(IDEMPOTENCY_KEY, key)
                .body(text.to_string())
        };
        let (accepted, lost) = self
            .checked(make, "PUT /v1/config", "macfleet get agents", on_lost)
            .await?;
        Ok(Written { accepted, lost })
    }

    /// Send `make()`'s request, and when its answer is lost send it again
    /// (the same request, so the same `Idempotency-Key`) a few times over
    /// about 4 s until the hub answers: the answer, and why the first was
    /// lost when it was. `look` is what to run when it cannot be checked.
    async fn checked<T: DeserializeOwned>(
        &self,
        make: impl Fn() -> reqwest::RequestBuilder,
        what: &str,
        look: &'static str,
        mut on_lost: impl FnMut(&str),
    ) -> Result<(T, Option<String>), WriteError> {
        let lost = match self.attempt(make(), what).await {
            Attempt::Answered(Ok(answer)) => return Ok((answer, None)),
            Attempt::Answered(Err(e)) => return Err(WriteError::Refused(e)),
            Attempt::Lost(why) => why,
        };
        on_lost(&lost);
        let mut last = String::new();
        for wait in CHECK_WAITS {
            tokio::time::sleep(wait).await;
            match self.attempt(make(), what).await {
                Attempt::Answered(Ok(answer)) => return Ok((answer, Some(lost))),
                // Not asked (nothing answers, a 503): the first attempt's
                // outcome is still unknown.
                Attempt::Answered(Err(ClientError::Unreachable(why))) | Attempt::Lost(why) => {
                    last = why;
                }
                // The hub cannot write now (its config or database): that
                // says nothing of the first attempt, still unknown.
                Attempt::Answered(Err(e @ ClientError::Hub { status: 503, .. })) => {
                    last = e.to_string();
                }
                Attempt::Answered(Err(e)) => return Err(WriteError::Refused(e)),
            }
        }
        Err(WriteError::Unknown {
            hub: self.client.hub(),
            lost,
            check: last,
            look,
        })
    }

    /// One write: the hub's answer, or why there is none although the
    /// request may have reached it.
    async fn attempt<T: DeserializeOwned>(
        &self,
        rb: reqwest::RequestBuilder,
        what: &str,
    ) -> Attempt<T> {
        let resp = match rb.send().await {
            Ok(r) => r,
            // Never connected: nothing was sent.
            Err(e) if e.is_connect() => {
                return Attempt::Answered(Err(self.client.transport(e)));
            }
            Err(e) => return Attempt::Lost(self.client.transport(e).to_string()),
        };
        let status = resp.status();
        if status == StatusCode::BAD_GATEWAY || status == StatusCode::GATEWAY_TIMEOUT {
            // A proxy's: the hub may have had the request.
            return Attempt::Lost(format!("a proxy answered {status}"));
        }
        if !status.is_success() {
            let e = self.client.error_from(resp).await;
            return Attempt::Answered(Err(self.client.without_token(e)));
        }
        match self.client.decode_small(resp, what).await {
            Ok(a) => Attempt::Answered(Ok(a)),
            // A 2xx whose body broke off: done, but its answer is asked
            // again.
            Err(ClientError::Unreachable(why)) => Attempt::Lost(why),
            Err(e) => Attempt::Answered(Err(e)),
        }
    }
}

impl Writer {
    /// `POST /v1/rollouts?<query>`: `text` to a cohort first, made from
    /// the accepted revision `if_match`, with a fresh `Idempotency-Key`.
    pub async fn start_rollout(
        &self,
        text: &str,
        if_match: &str,
        query: &crate::rollout::RolloutQuery,
    ) -> Result<crate::rollout::wire::RolloutView, ClientError> {
        match self
            .start_rollout_checked(text, if_match, query, |_| {})
            .await
        {
            Ok((v, _)) => Ok(v),
            Err(WriteError::Refused(e)) => Err(e),
            Err(e @ WriteError::Unknown { .. }) => Err(ClientError::Unreachable(e.to_string())),
        }
    }

    /// [`Writer::start_rollout`], checked as a write is when its answer is
    /// lost ([`Writer::put_config_checked`]): sent again with the same
    /// `Idempotency-Key`, so the hub answers with the rollout that key
    /// started (baking, or since ended), or starts it if the first never
    /// arrived; a refusal says it was not started. The rollout, and why
    /// its first answer was lost when it was.
    pub async fn start_rollout_checked(
        &self,
        text: &str,
        if_match: &str,
        query: &crate::rollout::RolloutQuery,
        on_lost: impl FnMut(&str),
    ) -> Result<(crate::rollout::wire::RolloutView, Option<String>), WriteError> {
        let path = format!("v1/rollouts?{query}");
        let key = new_idempotency_key();
        let make = || {
            self.client
                .request(reqwest::Method::POST, &path)
                .header(header::CONTENT_TYPE, "application/toml")
                .header(header::IF_MATCH, format!("\"{if_match}\""))
                .header(IDEMPOTENCY_KEY, key.as_str())
                .body(text.to_string())
        };
        self.checked(
            make,
            "POST /v1/rollouts",
            "macfleet agents rollout status",
            on_lost,
        )
        .await
    }

    /// `POST /v1/rollouts/current/promote` (`promote: true`) or `/abort`.
    pub async fn rollout_step(
        &self,
        promote: bool,
    ) -> Result<crate::rollout::wire::RolloutView, ClientError> {
        let (path, what) = if promote {
            (
                "v1/rollouts/current/promote",
                "POST /v1/rollouts/current/promote",
            )
        } else {
            (
                "v1/rollouts/current/abort",
                "POST /v1/rollouts/current/abort",
            )
        };
        let resp = self
            .client
            .send(self.client.request(reqwest::Method::POST, path))
            .await?;
        self.client.decode_small(resp, what).await
    }
}

/// The header a write carries (docs/hub-api.md, "Idempotency-Key").
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The waits before each re-send of a write whose answer was lost.
const CHECK_WAITS: [Duration; 5] = [
    Duration::from_millis(0),
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
];

/// A fresh key for one write: 128 random bits as 32 hex digits.
pub fn new_idempotency_key() -> String {
    use rand::RngCore;
    let mut b = [0u8; 16];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

enum Attempt<T> {
    Answered(Result<T, ClientError>),
    Lost(String),
}

/// An accepted write.
#[derive(Debug, Clone)]
pub struct Written {
    pub accepted: ConfigAccepted,
    /// Why its first answer was lost, when it was: the write was then
    /// checked (sent again with its key) and found on the hub.
    pub lost: Option<String>,
}

/// A write that is not known to be on the hub.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WriteError {
    /// The hub answered: not written.
    #[error(transparent)]
    Refused(ClientError),
    /// The answer was lost and the hub could not be asked again: it may be
    /// on the hub or not.
    #[error(
        "the answer to the write was lost ({lost}) and {hub} could not be asked whether it landed ({check}): it may be on the hub; look (`{look}`) before writing again"
    )]
    Unknown {
        hub: String,
        lost: String,
        check: String,
        /// What to run to look.
        look: &'static str,
    },
}

impl WriteError {
    /// The README's exit code: the hub's refusal's, 5 when unknown.
    pub fn exit_code(&self) -> i32 {
        match self {
            WriteError::Refused(e) => e.exit_code(),
            WriteError::Unknown { .. } => 5,
        }
    }
}

fn etag_of(resp: &reqwest::Response) -> Option<String> {
    let v = resp.headers().get(header::ETAG)?.to_str().ok()?;
    Some(
        v.trim()
            .trim_start_matches("W/")
            .trim_matches('"')
            .to_string(),
    )
}

/// The innermost message of an error's chain (the OS's or the TLS
/// library's own words), and the whole chain for matching.
fn chain(e: &reqwest::Error) -> (String, String) {
    let mut all = e.to_string();
    let mut last = all.clone();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        last = s.to_string();
        all.push_str(": ");
        all.push_str(&last);
        source = s.source();
    }
    (last, all)
}

/// Whether an `io::Error` of `kind` is in the chain.
fn has_io_kind(e: &reqwest::Error, kind: std::io::ErrorKind) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
        {
            return true;
        }
        source = s.source();
    }
    false
}

/// A transport error as one sentence that names the hub and what to check
/// (not reqwest's chain of library errors).
fn transport_error(hub: &str, e: reqwest::Error) -> ClientError {
    let (root, all) = chain(&e);
    if e.is_decode() {
        return ClientError::Decode(format!("the answer of {hub} did not decode ({root})"));
    }
    if let Some(hint) = certificate_hint(&all) {
        return ClientError::Unreachable(format!(
            "the TLS certificate of {hub} was refused: {hint}"
        ));
    }
    let root = match root.find(" (os error") {
        Some(i) => root[..i].to_string(),
        None => root,
    };
    let sentence = if has_io_kind(&e, std::io::ErrorKind::ConnectionRefused) {
        format!(
            "nothing answers at {hub} (connection refused); check that the hub is running and that the URL and port are right"
        )
    } else if all.contains("dns error") || all.contains("failed to lookup address") {
        format!("cannot find the host of {hub} ({root}); check the host name in the URL")
    } else if e.is_timeout() && e.is_connect() {
        format!(
            "{hub} did not accept a connection in time; check the address, the network or firewall on the way, and that the hub is running"
        )
    } else if e.is_timeout() {
        format!("{hub} did not answer in time; check that the hub is not overloaded or stuck")
    } else if e.is_connect() {
        format!(
            "cannot connect to {hub} ({root}); check that the hub is running and that the URL, port and scheme (http or https) are right"
        )
    } else {
        format!(
            "the connection to {hub} failed ({root}); check that the hub is running and reachable"
        )
    };
    ClientError::Unreachable(sentence)
}

/// What a certificate error from rustls/webpki means and what to do, for
/// the errors people meet setting up a hub. `None` for any other error.
pub fn certificate_hint(raw: &str) -> Option<&'static str> {
    const HINTS: &[(&[&str], &str)] = &[
        (
            &["CaUsedAsEndEntity"],
            "the hub serves a CA certificate as its own (what `openssl req -x509` makes by default), \
             and a CA certificate may only sign others. Make a private CA and a server certificate \
             signed by it (`macfleet hub tls-init --dir D --name HOST` does both), serve the server \
             certificate with --tls-cert/--tls-key, and trust the CA with --ca-cert (or a context's ca_cert)",
        ),
        (
            &["UnknownIssuer"],
            "it is not signed by a CA this machine trusts. Give the hub's CA certificate with \
             --ca-cert FILE (or a context's ca_cert)",
        ),
        (
            &["NotValidForName", "not valid for name"],
            "it does not name the host in the hub URL. Connect with a name the certificate holds, \
             or make one for this name (`macfleet hub tls-init --name HOST`)",
        ),
        (
            &["Expired", "certificate expired"],
            "it has expired (or this machine's clock is wrong). Renew the hub's certificate",
        ),
        (
            &["NotValidYet", "not valid yet"],
            "it is not valid yet (or this machine's clock is wrong)",
        ),
    ];
    HINTS
        .iter()
        .find(|(needles, _)| needles.iter().any(|n| raw.contains(n)))
        .map(|(_, hint)| *hint)
}

/// serde's message about a hub's answer: it may quote the hub's text.
fn decode_error(what: &str, e: &serde_json::Error) -> ClientError {
    ClientError::Decode(format!(
        "{what}: {}",
        crate::textsafe::for_terminal(&e.to_string())
    ))
}

impl Client {
    /// What a transport error means, for this hub.
    fn transport(&self, e: reqwest::Error) -> ClientError {
        transport_error(&self.hub(), e)
    }

    /// The error a non-2xx answer stands for; its body is read up to
    /// [`bounded::MAX_ERROR_BODY`].
    async fn error_from(&self, resp: reqwest::Response) -> ClientError {
        let status = resp.status();
        let etag = etag_of(&resp);
        let what = format!("its {} answer to {}", status.as_u16(), resp.url().path());
        let bytes = match self
            .read_capped(resp, bounded::MAX_ERROR_BODY, &what, "an error body")
            .await
        {
            Ok(b) => b,
            Err(e @ ClientError::OutOfBounds { .. }) => return e,
            Err(_) => Vec::new(),
        };
        let body: Option<ErrorBody> = serde_json::from_slice(&bytes).ok();
        error_of(&self.hub(), status, etag, body)
    }
}

fn error_of(
    hub: &str,
    status: StatusCode,
    etag: Option<String>,
    body: Option<ErrorBody>,
) -> ClientError {
    let (code, message, line, column, current) = match body {
        Some(b) => (
            crate::textsafe::for_terminal(&b.error.code).into_owned(),
            crate::textsafe::for_terminal(&b.error.message).into_owned(),
            b.error.line,
            b.error.column,
            b.error
                .current_revision
                .map(|r| crate::textsafe::for_terminal(&r).into_owned()),
        ),
        None => (
            status.as_str().to_string(),
            status.canonical_reason().unwrap_or("error").to_string(),
            None,
            None,
            None,
        ),
    };
    match status {
        StatusCode::UNAUTHORIZED => ClientError::Unauthorized(message),
        StatusCode::FORBIDDEN => ClientError::Forbidden(message),
        StatusCode::PRECONDITION_FAILED => ClientError::Conflict {
            current_revision: current.or(etag),
            message,
        },
        StatusCode::CONFLICT => ClientError::InConflict { code, message },
        StatusCode::BAD_REQUEST
        | StatusCode::UNPROCESSABLE_ENTITY
        | StatusCode::PAYLOAD_TOO_LARGE
        | StatusCode::UNSUPPORTED_MEDIA_TYPE
        | StatusCode::PRECONDITION_REQUIRED => ClientError::Validation {
            code,
            message,
            line,
            column,
        },
        // The hub itself says nothing was changed and why (a config it
        // cannot read or replace, a database it cannot write): an answer,
        // not an unreachable hub, so a write says `not written` (exit 1).
        StatusCode::SERVICE_UNAVAILABLE
            if code == "config_unavailable" || code == "database_unavailable" =>
        {
            ClientError::Hub {
                status: status.as_u16(),
                code,
                message,
            }
        }
        s if s.is_server_error()
            && (s == StatusCode::BAD_GATEWAY
                || s == StatusCode::SERVICE_UNAVAILABLE
                || s == StatusCode::GATEWAY_TIMEOUT) =>
        {
            ClientError::Unreachable(format!(
                "{hub} answered {s} ({message}); the hub or a proxy in front of it is down or overloaded"
            ))
        }
        s => ClientError::Hub {
            status: s.as_u16(),
            code,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(code: &str) -> Option<ErrorBody> {
        serde_json::from_value(serde_json::json!({
            "error": {"code": code, "message": "the config is a symlink outside its own directory"}
        }))
        .ok()
    }

    /// Fresh-eyes finding F4 (issue 29): a 503 the hub answers with
    /// `config_unavailable` or `database_unavailable` said nothing was
    /// written; the CLI called it an unreachable hub and exited 5 ("may
    /// have been written").
    #[test]
    fn a_hub_saying_nothing_changed_is_not_an_unreachable_hub() {
        for code in ["config_unavailable", "database_unavailable"] {
            let e = error_of("h", StatusCode::SERVICE_UNAVAILABLE, None, body(code));
            assert!(
                matches!(e, ClientError::Hub { status: 503, .. }),
                "{code}: {e:?}"
            );
            assert_eq!(e.exit_code(), 1, "{code}");
            assert!(e.to_string().contains(code), "{e}");
        }
        // A 503 without the hub's word (a proxy, an overloaded hub) stays
        // unreachable.
        let e = error_of(
            "h",
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            body("overloaded"),
        );
        assert_eq!(e.exit_code(), 5, "{e:?}");
        let e = error_of("h", StatusCode::SERVICE_UNAVAILABLE, None, None);
        assert_eq!(e.exit_code(), 5, "{e:?}");
    }
}
