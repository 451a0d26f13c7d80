//! The HTTP routes of the hub API v1. Every failure is a precise 4xx with
//! the JSON error body, and changes nothing.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;
use futures::Stream;
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::db::FailoverFilter;
use super::domain::{IngestError, ReplaceError, Replaced, Replay};
use super::events::Event;
use super::fleet::Cursor;
use super::ingest::HeartbeatIn;
use super::worker::Stored;
use super::{Current, Hub};
use crate::agents_doc::DocError;
use crate::wire::{
    API_VERSION, ConfigAccepted, ErrorBody, ErrorDetail, EventKind, FailoversPage, History, Role,
    Whoami,
};

mod rollouts;

/// The header of `GET /v1/config` when the document on disk does not
/// validate: why (message, line, column).
pub const CONFIG_INVALID: &str = crate::wire::CONFIG_INVALID_HEADER;

/// Largest config document.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;
/// Largest heartbeat.
pub const MAX_HEARTBEAT_BYTES: usize = 64 * 1024;

/// Bounds of the event streams (`GET /v1/events`).
#[derive(Debug, Clone, Copy)]
pub struct StreamLimits {
    /// Streams one token may hold open.
    pub per_token: usize,
    /// Streams open in all.
    pub total: usize,
    /// Events buffered for one subscriber.
    pub buffer: usize,
    /// Bytes of event data buffered for one subscriber (an event larger
    /// than this takes the whole budget).
    pub buffer_bytes: usize,
    /// How long a full buffer may wait for its subscriber before the
    /// subscriber counts as fallen behind.
    pub grace: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            per_token: 64,
            total: 1024,
            buffer: 256,
            buffer_bytes: 256 * 1024,
            grace: Duration::from_secs(5),
        }
    }
}

/// An error answer: status and the JSON body.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    detail: Box<ErrorDetail>,
    etag: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            detail: Box::new(ErrorDetail {
                code: code.into(),
                message: message.into(),
                line: None,
                column: None,
                current_revision: None,
            }),
            etag: None,
        }
    }
    /// A read of the database failed: 503 `database_unavailable` when it
    /// met damage (the writer sets the file aside and makes it afresh
    /// within a second; said in health and the log, not per request), else
    /// 500.
    fn read_failed(e: super::db::DbError) -> ApiError {
        // Damage, or no file at all (one that could not be made afresh).
        let no_file = e.to_string().contains("no such table");
        if !e.is_damage() && !no_file {
            return ApiError::internal(e);
        }
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable",
            "the hub's database met damage; it is being moved aside and made afresh from what the hub holds: retry in a few seconds",
        )
    }
    fn internal(what: impl std::fmt::Display) -> ApiError {
        tracing::error!(error = %what, "internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the hub failed; see its log",
        )
    }
}

/// serde's message with the input's values taken out: it names fields and
/// positions, but for an unknown variant or a wrong value it quotes what
/// was sent (`unknown variant `sk-ant-…``), and errors name fields, never
/// inputs.
fn without_values(message: &str) -> String {
    use std::sync::LazyLock;
    static VARIANT: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r"unknown (variant|field) `(?:[^`\\]|\\.)*`").ok());
    static STRING: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r#"string "(?:[^"\\]|\\.)*""#).ok());
    let mut out = message.to_string();
    if let Some(re) = VARIANT.as_ref() {
        out = re.replace_all(&out, "unknown $1").into_owned();
    }
    if let Some(re) = STRING.as_ref() {
        out = re.replace_all(&out, "a string").into_owned();
    }
    out
}

/// The names a heartbeat's JSON objects may hold (`wire::Heartbeat` and
/// what it holds): a key outside this list is the sender's text (a
/// `capabilities` key, an unknown field) and is never echoed.
const HEARTBEAT_FIELDS: &[&str] = &[
    "worker",
    "host",
    "sent_at",
    "config_revision",
    "agents",
    "active_agent",
    "capabilities",
    "failovers",
    "turn",
    "agent",
    "since",
    "next_turn_agent",
    "binary",
    "token",
    "preflight",
    "id",
    "at",
    "from",
    "to",
    "cause",
    "kind",
    "status",
    "source",
    "detail",
];

/// Where in a heartbeat body parsing failed, as a path of field names and
/// indexes (`failovers[0].cause.kind`); a key the sender chose is shown as
/// `*`. Only run on a body that failed to parse.
fn heartbeat_error_path(body: &[u8]) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut de = serde_json::Deserializer::from_slice(body);
    let e = serde_path_to_error::deserialize::<_, HeartbeatIn<'_>>(&mut de).err()?;
    let mut path = String::new();
    for seg in e.path().iter() {
        match seg {
            Segment::Seq { index } => path.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !path.is_empty() {
                    path.push('.');
                }
                let known = HEARTBEAT_FIELDS.contains(&key.as_str());
                path.push_str(if known { key } else { "*" });
            }
            Segment::Unknown => path.push_str(".?"),
        }
    }
    (!path.is_empty()).then_some(path)
}

/// What an error may say of the input: scrubbed, and short.
fn excerpt(message: &str) -> String {
    const MAX: usize = 240;
    let clean = crate::scrub::scrub(message);
    if clean.chars().count() <= MAX {
        clean.into_owned()
    } else {
        let mut s: String = clean.chars().take(MAX).collect();
        s.push('…');
        s
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = ErrorCode(self.detail.code.clone());
        let mut resp = (
            self.status,
            axum::Json(ErrorBody {
                error: *self.detail,
            }),
        )
            .into_response();
        if let Some(etag) = self
            .etag
            .and_then(|e| HeaderValue::from_str(&format!("\"{e}\"")).ok())
        {
            resp.headers_mut().insert(header::ETAG, etag);
        }
        resp.extensions_mut().insert(code);
        // Every 503 says when to come back (callers may set their own).
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"macfleet\""),
            );
        }
        resp
    }
}

type ApiResult<T> = Result<T, ApiError>;

pub fn router(hub: Arc<Hub>) -> Router {
    Router::new()
        .route("/v1/health", get(health))
        .route("/v1/whoami", get(whoami))
        .route("/v1/config", get(get_config).put(put_config))
        .route("/v1/config/history", get(history))
        .route("/v1/plan", axum::routing::post(post_plan))
        .route("/v1/heartbeats", axum::routing::post(post_heartbeat))
        .route("/v1/workers", get(workers))
        .route("/v1/summary", get(summary))
        .route("/v1/failovers", get(failovers))
        .route("/v1/events", get(events))
        .route("/v1/recoveries", get(recoveries))
        .route("/v1/rollouts", axum::routing::post(rollouts::post_rollout))
        .route("/v1/rollouts/current", get(rollouts::get_current))
        .route(
            "/v1/rollouts/current/promote",
            axum::routing::post(rollouts::promote),
        )
        .route(
            "/v1/rollouts/current/abort",
            axum::routing::post(rollouts::abort),
        )
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(limit_target))
        .layer(axum::middleware::from_fn_with_state(
            hub.clone(),
            count_requests,
        ))
        .layer(compression())
        .with_state(hub)
}

/// Answers compressed when the client asks (`Accept-Encoding: zstd` or
/// `gzip`), at the fastest level: a page of a large fleet shrinks about
/// tenfold for little of the hub's time. Event streams stay plain (the
/// predicate's default skips `text/event-stream`: a compressor would hold
/// events back until its buffer fills), and so do answers under 32 bytes.
fn compression() -> tower_http::compression::CompressionLayer {
    tower_http::compression::CompressionLayer::new()
        .no_br()
        .no_deflate()
        .quality(tower_http::CompressionLevel::Fastest)
}

/// The error code of an error answer, for the request counters.
#[derive(Debug, Clone)]
struct ErrorCode(String);

/// Count every answer by route and status (`macfleet_hub_requests_total`),
/// and refused heartbeats by their error code.
async fn count_requests(
    State(hub): State<Arc<Hub>>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let path = req.uri().path().to_owned();
    let resp = next.run(req).await;
    let code = resp.extensions().get::<ErrorCode>().map(|c| c.0.as_str());
    hub.metrics.request(&path, resp.status().as_u16(), code);
    resp
}

/// `GET /metrics`: any role's token.
async fn metrics(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> ApiResult<Response> {
    let p = authenticate(&hub, &headers)?;
    require(
        &p,
        &[Role::Owner, Role::Viewer, Role::Worker],
        "read the metrics",
    )?;
    let text = tokio::task::spawn_blocking(move || hub.metrics_text())
        .await
        .map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, super::metrics::CONTENT_TYPE)], text).into_response())
}

#[derive(Deserialize)]
struct RecoveriesQuery {
    since: Option<u64>,
    limit: Option<u32>,
    worker: Option<String>,
    agent: Option<String>,
}

/// `GET /v1/recoveries`: paged and filtered as `GET /v1/failovers`.
async fn recoveries(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    query: Result<Query<RecoveriesQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<axum::Json<crate::wire::RecoveriesPage>> {
    let p = authenticate(&hub, &headers)?;
    require(&p, READERS, "read recoveries")?;
    let Query(q) = query.map_err(|e| bad_query(e.body_text()))?;
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > 1000 {
        return Err(bad_query("limit is 1 to 1000"));
    }
    if q.worker
        .as_deref()
        .is_some_and(|w| !crate::wire::is_worker_id(w))
    {
        return Err(bad_query("worker is not a worker id"));
    }
    if q.agent
        .as_deref()
        .is_some_and(|a| !crate::wire::is_agent_name(a))
    {
        return Err(bad_query("agent is not an agent name"));
    }
    let filter = super::recovery::RecoveryFilter {
        since: q.since.unwrap_or(0),
        limit,
        worker: q.worker,
        agent: q.agent,
    };
    let hub2 = hub.clone();
    let page = tokio::task::spawn_blocking(move || hub2.db.recoveries(&filter))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok(axum::Json(page))
}

/// The longest request target (path and query) taken, in bytes. Every
/// query the API defines fits in far less; hyper's own limit (65,534 bytes,
/// past the 64 KiB head limit anyway) would answer 431.
pub const MAX_TARGET: usize = 8 * 1024;

async fn limit_target(req: Request, next: axum::middleware::Next) -> Response {
    let len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if len > MAX_TARGET {
        return ApiError::new(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            "the request target is over 8 KiB",
        )
        .into_response();
    }
    next.run(req).await
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take that method",
    )
}

/// Who is calling, from `Authorization: Bearer`. The token is never kept,
/// logged or echoed.
fn authenticate(hub: &Hub, headers: &HeaderMap) -> ApiResult<Principal> {
    hub.tokens
        .lookup(bearer(headers)?)
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "unknown token"))
}

/// The token of `Authorization: Bearer`. More than one `Authorization`
/// header is refused (400), never read as the first: which one counts
/// would depend on which a proxy passed first.
fn bearer(headers: &HeaderMap) -> ApiResult<&str> {
    let unauthorized = |m: &str| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m);
    let n = headers.get_all(header::AUTHORIZATION).iter().count();
    if n > 1 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!(
                "this request carries {n} Authorization headers: send one, Authorization: Bearer <token>"
            ),
        ));
    }
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized("missing Authorization: Bearer token"))?;
    let value = value
        .to_str()
        .map_err(|_| unauthorized("malformed Authorization header"))?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| unauthorized("expected Authorization: Bearer <token>"))
}

fn require(p: &Principal, allowed: &[Role], what: &str) -> ApiResult<()> {
    if allowed.contains(&p.role) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("the {} role may not {what}", p.role),
        ))
    }
}

const READERS: &[Role] = &[Role::Owner, Role::Viewer];

/// `ok` as text; with `Accept: application/json`, whether the hub is
/// degraded and why, and what it met in its database (no token needed:
/// counts and sentences naming files and positions, no stored content).
async fn health(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> Response {
    let wants_json = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/json"));
    if !wants_json {
        return "ok".into_response();
    }
    let health = hub.health();
    let Ok(mut v) = serde_json::to_value(&health) else {
        return axum::Json(health).into_response();
    };
    // The status word (crate::verdict), as the hub can know it: never one
    // of the client's (HUB DOWN, UNAUTHORIZED, FORBIDDEN, HUB ERROR). From
    // AT RISK up, `status` is `degraded` and the fleet's part is a problem.
    let figures = crate::verdict::Figures {
        built_in: health.built_in_order,
        rollout_halted: hub.rollouts.halted(),
        // A config the hub cannot read or replace (or gone) is not OK:
        // the next write or start would fail.
        config_invalid: health.config.as_ref().is_some_and(|c| c.invalid.is_some())
            || hub.config_place.in_trouble(),
        // Failovers, new workers and writes are refused 503 meanwhile.
        database_unavailable: health.database.unavailable,
        ..hub
            .fleet
            .lock()
            .map(|f| f.verdict_figures())
            .unwrap_or_default()
    };
    let word = crate::verdict::verdict(crate::verdict::Reach::Up, &figures)
        .unwrap_or(crate::verdict::Verdict::Ok);
    // The fleet's no route and its risk are named whatever the word (a
    // higher one, CONFIG INVALID say, does not hide them).
    let mut fleet_problems = Vec::new();
    if figures.no_route > 0 {
        fleet_problems.push(format!(
            "{} live workers have no route (nothing they can run)",
            figures.no_route
        ));
    }
    if crate::verdict::at_risk(figures.one_failure, figures.healthy) {
        fleet_problems.push(format!(
            "{} of {} healthy workers are one failure from no route (over a quarter, as MacfleetHeadroomLow pages)",
            figures.one_failure, figures.healthy
        ));
    }
    if let Some(o) = v.as_object_mut() {
        o.insert("word".into(), word.to_string().into());
        if word.is_degraded_status() {
            o.insert("status".into(), "degraded".into());
        }
        if let Some(list) = o.get_mut("problems").and_then(|p| p.as_array_mut()) {
            list.extend(fleet_problems.into_iter().map(serde_json::Value::from));
        }
    }
    axum::Json(v).into_response()
}

async fn whoami(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> ApiResult<axum::Json<Whoami>> {
    let p = authenticate(&hub, &headers)?;
    Ok(axum::Json(Whoami {
        name: p.name.clone(),
        role: p.role,
        hub: hub.opts.name.clone(),
        api: API_VERSION.into(),
        instance: hub.db.instance().ok(),
    }))
}

/// The writing client, for History: the request's `User-Agent`, scrubbed,
/// with every character a terminal could act on escaped, at most 64
/// characters. Owners who share a token are told apart by it.
fn client_of(headers: &HeaderMap) -> Option<String> {
    let ua = headers.get(header::USER_AGENT)?;
    let ua = String::from_utf8_lossy(ua.as_bytes());
    let safe = crate::textsafe::for_terminal(ua.trim());
    let client: String = safe.chars().take(64).collect();
    (!client.is_empty()).then_some(client)
}

/// `*`, or a comma-separated list of entity tags (`"x"`, `W/"x"`), as
/// RFC 9110 writes them; an unquoted revision is refused.
fn is_entity_tag_list(v: &str) -> bool {
    let v = v.trim();
    v == "*"
        || (!v.is_empty()
            && v.split(',').map(str::trim).all(|t| {
                let t = t.strip_prefix("W/").unwrap_or(t);
                t.len() >= 2
                    && t.starts_with('"')
                    && t.ends_with('"')
                    && !t[1..t.len() - 1].contains('"')
            }))
}

fn etag_matches(header_value: &str, revision: &str) -> bool {
    header_value
        .split(',')
        .map(str::trim)
        .any(|v| v == "*" || v.trim_start_matches("W/").trim_matches('"') == revision)
}

async fn get_config(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> ApiResult<Response> {
    let p = authenticate(&hub, &headers)?;
    require(
        &p,
        &[Role::Owner, Role::Viewer, Role::Worker],
        "read the config",
    )?;
    let c = hub.current();
    // Only an owner reads the document byte for byte; another role gets it
    // scrubbed (comments too), under a weak ETag: the same revision, not
    // the same bytes. A file the hub did not take (over 1 MiB, not UTF-8,
    // a link it does not follow: held as a record that is never UTF-8) is
    // never served: an empty body, its reason in the header.
    let owner = p.role == Role::Owner;
    let body = match std::str::from_utf8(&c.bytes) {
        Err(_) => Bytes::new(),
        Ok(_) if owner => c.bytes.clone(),
        Ok(text) => match crate::scrub::scrub(text) {
            std::borrow::Cow::Borrowed(_) => c.bytes.clone(),
            std::borrow::Cow::Owned(s) => Bytes::from(s),
        },
    };
    let etag = if owner {
        format!("\"{}\"", c.revision)
    } else {
        format!("W/\"{}\"", c.revision)
    };
    if let Some(inm) = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    {
        // A weak comparison is right for If-None-Match (RFC 9110 13.1.2).
        if etag_matches(inm, &c.revision) {
            return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response());
        }
    }
    let mut resp = (
        [
            (header::CONTENT_TYPE, "application/toml".to_string()),
            (header::ETAG, etag),
            (header::CACHE_CONTROL, "no-cache".to_string()),
        ],
        body,
    )
        .into_response();
    // Served as it stands, but not in force: the reason goes with it.
    if let Some(v) = c
        .invalid
        .as_ref()
        .and_then(|i| HeaderValue::from_str(&super::disk::header_value(i)).ok())
    {
        resp.headers_mut().insert(CONFIG_INVALID, v);
    }
    Ok(resp)
}

/// Read the body, refusing it past `limit` bytes or when it has not all
/// arrived within `within` (a client that announces a body and sends it
/// slowly, or never, holds a connection and a task).
async fn read_body(body: Body, limit: usize, within: Duration) -> ApiResult<Bytes> {
    let read = tokio::time::timeout(within, axum::body::to_bytes(body, limit))
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!("the body did not arrive within {} s", within.as_secs()),
            )
        })?;
    read.map_err(|e| {
        let too_large = std::error::Error::source(&e)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
            || e.to_string().contains("length limit");
        if too_large {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("the body is over {limit} bytes"),
            )
        } else {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "the body could not be read",
            )
        }
    })
}

fn content_type_is(headers: &HeaderMap, expected: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(expected))
}

fn doc_error(e: DocError) -> ApiError {
    match e {
        DocError::NotUtf8 { line, column } | DocError::Toml { line, column, .. } => {
            let mut err = ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_toml",
                excerpt(&e.to_string()),
            );
            err.detail.line = Some(line);
            err.detail.column = Some(column);
            err
        }
        other => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_agents",
            excerpt(&other.to_string()),
        ),
    }
}

/// The header a client names its write with, so that a retry is answered
/// with the first answer (docs/hub-api.md, "Idempotency-Key").
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Longest `Idempotency-Key`.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// The request's `Idempotency-Key`: 1 to 255 printable ASCII characters;
/// any other shape (or two of them) is a 400 with a sentence.
fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let bad = |why: &str| {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!(
                "Idempotency-Key {why}: it is 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters (a UUID, say), one per write"
            ),
        ))
    };
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(v) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return bad("is sent twice");
    }
    let b = v.as_bytes();
    if b.is_empty() {
        return bad("is empty");
    }
    if b.len() > MAX_IDEMPOTENCY_KEY {
        return bad(&format!("is {} bytes long", b.len()));
    }
    if !b.iter().all(|c| (0x20..0x7f).contains(c)) {
        return bad("holds a character that is not printable ASCII");
    }
    Ok(Some(String::from_utf8_lossy(b).into_owned()))
}

/// The first answer again, for a retry by its key.
fn replayed(r: Replay) -> Response {
    let mut resp = (
        StatusCode::OK,
        [(header::ETAG, format!("\"{}\"", r.revision))],
        axum::Json(ConfigAccepted {
            revision: r.revision,
            agents: r.agents,
        }),
    )
        .into_response();
    resp.headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    resp
}

async fn put_config(State(hub): State<Arc<Hub>>, req: Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let p = authenticate(&hub, headers)?;
    require(&p, &[Role::Owner], "change the config")?;
    if !content_type_is(headers, "application/toml") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the config is sent as Content-Type: application/toml",
        ));
    }
    let key = idempotency_key(headers)?;
    let bytes = read_body(body, MAX_CONFIG_BYTES, hub.opts.limits.body_timeout).await?;
    // A key the hub holds is answered with the first answer before
    // If-Match is judged (and again under the write lock, for a retry
    // that races its first attempt).
    if let Some(k) = &key {
        match hub.replay_of(k, &bytes) {
            Ok(Some(r)) => return Ok(replayed(r)),
            Ok(None) => {}
            Err(e) => return Ok(replace_error(&hub, e)),
        }
    }
    let if_match = if_match_of(headers, "the ETag of the document you edited")?;
    // A file the hub cannot read or replace (a directory at its path, mode
    // 000, its directory read-only): 503, never a 200 with nothing on disk.
    let unusable = || super::config_unusable(&hub.opts.config, &hub.opts.config_link_dirs);
    if let Some(why) = unusable() {
        return Ok(config_unavailable(&why));
    }
    let client = client_of(headers);
    match hub
        .replace_config_keyed(&p.name, client.as_deref(), &if_match, key.as_deref(), bytes)
        .await
    {
        Ok(Replaced::Now(c)) => Ok(accepted(&c)),
        Ok(Replaced::Replayed(r)) => Ok(replayed(r)),
        Err(e) => Ok(replace_error(&hub, e)),
    }
}

/// A write's `If-Match`: 428 without one (`which` says what ETag to
/// send), 400 when it is not a list of quoted entity tags.
fn if_match_of(headers: &HeaderMap, which: &str) -> ApiResult<String> {
    let if_match = headers
        .get(header::IF_MATCH)
        .map(|v| v.to_str().unwrap_or("").to_string())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::PRECONDITION_REQUIRED,
                "precondition_required",
                format!("send If-Match: \"<revision>\" ({which})"),
            )
        })?;
    if !is_entity_tag_list(&if_match) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "If-Match takes the ETag as it was sent, quoted: \"<revision>\" (or *)",
        ));
    }
    Ok(if_match)
}

/// `412 revision_mismatch` with the current revision as its ETag.
fn mismatch(message: String, current: String) -> Response {
    let mut err = ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        "revision_mismatch",
        message,
    );
    err.detail.current_revision = Some(current.clone());
    err.etag = Some(current);
    err.into_response()
}

/// The answer a refused write gets.
fn replace_error(hub: &Hub, e: ReplaceError) -> Response {
    match e {
        ReplaceError::KeyReused { first } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency_key_reused",
            format!(
                "this Idempotency-Key was sent with another document (written as revision {first}); nothing was written: send a new key with each new write"
            ),
        )
        .into_response(),
        ReplaceError::Doc(e) => doc_error(e).into_response(),
        ReplaceError::RolloutInProgress { id } => rollouts::in_progress(&id).into_response(),
        ReplaceError::Mismatch { current } => mismatch(
            format!(
                "the document changed: it is at revision {current} now; reload, reapply, and send again"
            ),
            current,
        ),
        ReplaceError::WeakMatch { current } => mismatch(
            format!(
                "If-Match holds the weak ETag W/\"{current}\": a write needs the strong ETag, \"{current}\" (If-Match compares strongly; GET /v1/config with an owner's token gives it). Nothing was written; the document is still at revision {current}"
            ),
            current,
        ),
        ReplaceError::Unavailable(e) => {
            hub.repeats.error(
                "config-write-refused",
                &format!("config write refused: {e}"),
            );
            let mut resp = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "database_unavailable",
                format!(
                    "the hub's database cannot be written at its path ({}); nothing was written: retry once it is back",
                    excerpt(&e)
                ),
            )
            .into_response();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            resp
        }
        // The config became one the hub cannot replace while the write was
        // made (a link repointed out of its directory, say): the same 503.
        ReplaceError::ConfigUnusable(why) => config_unavailable(&why),
        ReplaceError::Internal(e) => {
            match super::config_unusable(&hub.opts.config, &hub.opts.config_link_dirs) {
                Some(why) => config_unavailable(&why),
                None => ApiError::internal(e).into_response(),
            }
        }
    }
}

/// 503 `config_unavailable`: the hub cannot read or replace the config
/// now (`why`, the sentence `/v1/health` says); nothing was written.
fn config_unavailable(why: &str) -> Response {
    let mut resp = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "config_unavailable",
        format!("{why}; nothing was written: retry once it is fixed"),
    )
    .into_response();
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    resp
}

fn accepted(c: &Current) -> Response {
    (
        StatusCode::OK,
        [(header::ETAG, format!("\"{}\"", c.revision))],
        axum::Json(ConfigAccepted {
            revision: c.revision.clone(),
            agents: c.agents.clone(),
        }),
    )
        .into_response()
}

/// Largest `POST /v1/plan` body.
pub const MAX_PLAN_BYTES: usize = 64 * 1024;

/// `POST /v1/plan` (owner or viewer): what `{"agents": [...]}` would do
/// over the whole fleet, against the hub's list now. Writes nothing. The
/// lock is held only to take the views; the pass runs on a blocking
/// thread, apart from ingest (a window pass pool is not on main yet).
async fn post_plan(State(hub): State<Arc<Hub>>, req: Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let p = authenticate(&hub, &parts.headers)?;
    require(&p, READERS, "ask for a plan")?;
    if !content_type_is(&parts.headers, "application/json") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "a plan is asked as Content-Type: application/json",
        ));
    }
    let bytes = read_body(body, MAX_PLAN_BYTES, hub.opts.limits.body_timeout).await?;
    let asked = plan_request(&bytes)?;
    crate::agents_doc::validate_list(&asked.agents).map_err(doc_error)?;
    let current = hub.current();
    let source = hub.clone();
    // A plan pass is a window pass: on a window thread, its turn queued,
    // the lock held only to take the views once its turn has come.
    let pass = super::window::Passes::hub().run(move || {
        let views = match source.fleet.lock() {
            Ok(f) => f.window_source().0,
            Err(_) => return Err(ApiError::internal("fleet lock poisoned")),
        };
        Ok(super::plan::plan_over(
            &views,
            &current.projected,
            &current.agents,
            &asked.agents,
        ))
    });
    match pass.await {
        Ok(answer) => Ok(axum::Json(answer?).into_response()),
        Err(e) => Ok(overloaded(&e)),
    }
}

/// A `POST /v1/plan` body, `{"agents": ["name", ...]}`, or a 400 whose
/// sentence says what is wrong and where, as a `PUT`'s validation does
/// (`not JSON: … (line L, column C)` with `line` and `column`, or which
/// part is not of the shape), never serde's words (a Rust type's name, a
/// JSON array taken for the struct's fields in order: `[["pi"]]` was a
/// plan of pi).
fn plan_request(bytes: &[u8]) -> ApiResult<crate::wire::PlanRequest> {
    const SHAPE: &str = "the body is {\"agents\": [\"name\", ...]}";
    let bad = |why: String| ApiError::new(StatusCode::BAD_REQUEST, "bad_request", excerpt(&why));
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        let mut message = without_values(&e.to_string());
        if let Some(at) = message.find(" at line ") {
            message.truncate(at);
        }
        let mut err = bad(format!(
            "not JSON: {message} (line {}, column {}); {SHAPE}",
            e.line(),
            e.column()
        ));
        err.detail.line = Some(e.line());
        err.detail.column = Some(e.column());
        err
    })?;
    let kind = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    };
    let serde_json::Value::Object(mut fields) = value else {
        return Err(bad(format!(
            "the body is {}, not an object: {SHAPE}",
            kind(&value)
        )));
    };
    let agents = fields.remove("agents");
    if !fields.is_empty() {
        return Err(bad(format!(
            "the body holds a field other than \"agents\": {SHAPE}"
        )));
    }
    let Some(agents) = agents else {
        return Err(bad(format!("the body has no \"agents\": {SHAPE}")));
    };
    let serde_json::Value::Array(items) = agents else {
        return Err(bad(format!(
            "\"agents\" is {}, not an array of strings: {SHAPE}",
            kind(&agents)
        )));
    };
    let mut names = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        match item {
            serde_json::Value::String(a) => names.push(a),
            other => {
                return Err(bad(format!(
                    "agents[{i}] is {}, not a string: {SHAPE}",
                    kind(&other)
                )));
            }
        }
    }
    Ok(crate::wire::PlanRequest { agents: names })
}

/// `503 overloaded` with `Retry-After: 1`: every window thread is busy and
/// the queue of passes waiting for one is full.
fn overloaded(e: &dyn std::fmt::Display) -> Response {
    let mut resp =
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", e.to_string()).into_response();
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// `GET /v1/config/history`: the revisions, and the steps of the newest
/// rollouts (`rollouts`, newest first), which `wire::History` readers
/// that predate them ignore.
#[derive(Serialize)]
struct HistoryOut {
    #[serde(flatten)]
    history: History,
    rollouts: Vec<crate::rollout::Step>,
}

async fn history(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
) -> ApiResult<axum::Json<HistoryOut>> {
    let p = authenticate(&hub, &headers)?;
    require(&p, READERS, "read the history")?;
    let hub2 = hub.clone();
    let limit = hub.opts.bounds.history.min(u64::from(u32::MAX)) as u32;
    let (revisions, rollouts) = tokio::task::spawn_blocking(move || {
        let steps = hub2.rollout_steps(rollouts::HISTORY_ROLLOUTS);
        hub2.db.history(limit).map(|h| (h, steps))
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::read_failed)?;
    Ok(axum::Json(HistoryOut {
        history: History { revisions },
        rollouts,
    }))
}

fn invalid_heartbeat(status: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError::new(status, "invalid_heartbeat", message)
}

async fn post_heartbeat(State(hub): State<Arc<Hub>>, req: Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let p = authenticate(&hub, &parts.headers)?;
    require(&p, &[Role::Worker], "send heartbeats")?;
    if !content_type_is(&parts.headers, "application/json") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "heartbeats are sent as Content-Type: application/json",
        ));
    }
    let bytes = read_body(body, MAX_HEARTBEAT_BYTES, hub.opts.limits.body_timeout).await?;
    let hb = HeartbeatIn::parse(&bytes).map_err(|e| {
        let status = match e.classify() {
            serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::BAD_REQUEST,
        };
        // serde's message names the position; the values it may quote are
        // taken out, and the rest scrubbed all the same. The field's path
        // goes first.
        let message = excerpt(&without_values(&e.to_string()));
        let message = match heartbeat_error_path(&bytes) {
            Some(path) => format!("{path}: {message}"),
            None => message,
        };
        invalid_heartbeat(status, message)
    })?;
    let retry = |status: StatusCode, code: &str, message: String, after: &'static str| {
        let mut resp = ApiError::new(status, code, message).into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static(after));
        resp
    };
    match hub.ingest(&p, hb, Utc::now()).await {
        Ok(projection) => Ok((
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            projection,
        )
            .into_response()),
        Err(IngestError::Invalid(e)) => Err(invalid_heartbeat(
            StatusCode::UNPROCESSABLE_ENTITY,
            excerpt(&e.to_string()),
        )),
        Err(IngestError::FleetFull { max }) => Ok(retry(
            StatusCode::SERVICE_UNAVAILABLE,
            "fleet_full",
            format!(
                "the hub holds its maximum of {max} workers (--max-workers); a worker not heard from for {} h is forgotten",
                hub.opts.evict_after.as_secs() / 3600
            ),
            "60",
        )),
        Err(IngestError::Overloaded) => Ok(retry(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "the failover log is behind; retry this heartbeat".into(),
            "1",
        )),
        Err(e @ IngestError::OtherPool { .. }) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "worker_of_another_pool",
            format!(
                "{}: it is bound to the pool that first reported it; give this pool's workers their own ids",
                excerpt(&e.to_string())
            ),
        )),
        Err(IngestError::Unavailable(e)) => {
            hub.repeats
                .error("heartbeat-refused", &format!("heartbeat refused: {e}"));
            Ok(retry(
                StatusCode::SERVICE_UNAVAILABLE,
                "database_unavailable",
                format!(
                    "the hub's database cannot be written at its path ({}); nothing was stored: retry this heartbeat",
                    excerpt(&e)
                ),
                "5",
            ))
        }
        Err(IngestError::TooFast { wait }) => {
            let after = super::pacing::retry_after_s(wait);
            let mut resp = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "heartbeat_too_fast",
                format!(
                    "this worker's heartbeats come far faster than the interval the hub told it (past a burst of {}, at most twice that rate); nothing of this one was applied: send the next in {after} s",
                    super::pacing::BURST
                ),
            )
            .into_response();
            if let Ok(v) = HeaderValue::from_str(&after.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            Ok(resp)
        }
        Err(IngestError::Internal(e)) => Err(ApiError::internal(e)),
    }
}

#[derive(Deserialize)]
struct WorkersQuery {
    since: Option<String>,
    sort: Option<String>,
    q: Option<String>,
    limit: Option<u32>,
    offset: Option<u64>,
    page: Option<String>,
}

impl WorkersQuery {
    /// The window asked for, if any of its parameters is given.
    fn window(&self) -> ApiResult<Option<crate::wire::WindowQuery>> {
        if self.sort.is_none()
            && self.q.is_none()
            && self.limit.is_none()
            && self.offset.is_none()
            && self.page.is_none()
        {
            return Ok(None);
        }
        if self.since.is_some() {
            return Err(bad_query(
                "since cannot be combined with a window (sort, q, limit, offset, page)",
            ));
        }
        let sort = match self.sort.as_deref() {
            None | Some("") => crate::wire::WindowSort::default(),
            Some(s) => crate::wire::WindowSort::parse(s).ok_or_else(|| {
                bad_query(format!(
                    "sort is one of {}",
                    crate::wire::WindowSort::ALL.map(|s| s.as_str()).join(", ")
                ))
            })?,
        };
        Ok(Some(crate::wire::WindowQuery {
            sort,
            q: self.q.clone().unwrap_or_default(),
            limit: self.limit.unwrap_or(super::window::DEFAULT_LIMIT),
            offset: self.offset,
            page: self.page.clone().filter(|p| !p.is_empty()),
        }))
    }
}

fn bad_query(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message)
}

async fn workers(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    query: Result<Query<WorkersQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let p = authenticate(&hub, &headers)?;
    require(&p, READERS, "list workers")?;
    let Query(q) = query.map_err(|e| bad_query(e.body_text()))?;
    if let Some(w) = q.window()? {
        return window(&hub, w).await;
    }
    let since = match q.since.as_deref() {
        None | Some("") => None,
        Some(s) => Some(Cursor::parse(s).ok_or_else(|| {
            bad_query("since must be a cursor from an earlier answer (like c1764428645000-42)")
        })?),
    };
    let snap = match hub.fleet.lock() {
        Ok(f) => f.snapshot(since),
        Err(_) => return Err(ApiError::internal("fleet lock poisoned")),
    };
    let current = hub.current();
    let mut workers = snap.workers;
    if !snap.delta {
        workers.sort_unstable_by(|a, b| a.worker().cmp(b.worker()));
    }
    let head = WorkersPageHead {
        now: Utc::now(),
        config_revision: &current.projected,
        heartbeat_interval_s: hub.interval_now(),
        cursor: snap.cursor.to_string(),
        delta: snap.delta,
        total: None,
        offset: None,
        next_page: None,
    };
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        workers_body(&head, workers).map_err(ApiError::internal)?,
    )
        .into_response())
}

/// Workers serialised per chunk of the answer.
const WORKERS_PER_CHUNK: usize = 1000;

/// `WorkersPage` without its `workers`, in the wire type's field order.
#[derive(Serialize)]
struct WorkersPageHead<'a> {
    now: chrono::DateTime<Utc>,
    config_revision: &'a str,
    heartbeat_interval_s: u64,
    cursor: String,
    delta: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    /// `Some(None)` is a window's end: `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_page: Option<Option<String>>,
}

fn window_error(e: super::window::WindowError) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, e.code(), e.to_string())
}

/// `GET /v1/workers` as a window: sorted, filtered and paged by the fleet.
/// The pass runs on a window thread (hub/window.rs, `Passes`), one a
/// core at a lower priority, never on a thread heartbeats need; past the
/// queue of those waiting, `503 overloaded`.
async fn window(hub: &Arc<Hub>, w: crate::wire::WindowQuery) -> ApiResult<Response> {
    super::window::precheck(&w).map_err(window_error)?;
    let source = hub.clone();
    let pass = super::window::Passes::hub().run(move || {
        // The lock is held only to take the views (a pointer each), on
        // this thread, once its turn has come; the pass over them runs
        // after, while heartbeats go on.
        let (views, cursor) = match source.fleet.lock() {
            Ok(f) => f.window_source(),
            Err(_) => return Err(ApiError::internal("fleet lock poisoned")),
        };
        let win = super::window::window_over(&views, cursor, &w, super::window::HEAP_ROWS)
            .map_err(window_error);
        drop(views);
        win
    });
    let win = match pass.await {
        Ok(win) => win?,
        Err(e) => return Ok(overloaded(&e)),
    };
    let current = hub.current();
    let head = WorkersPageHead {
        now: Utc::now(),
        config_revision: &current.projected,
        heartbeat_interval_s: hub.interval_now(),
        cursor: win.cursor.to_string(),
        delta: false,
        total: Some(win.total),
        offset: Some(win.offset),
        next_page: Some(win.next_page),
    };
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        workers_body(&head, win.workers).map_err(ApiError::internal)?,
    )
        .into_response())
}

/// The page as a body that is serialised a chunk of workers at a time, as
/// the client reads it: a 100,000-worker answer (~50 MB) is never held
/// whole, and its first bytes leave at once.
fn workers_body(head: &WorkersPageHead<'_>, workers: Vec<Arc<Stored>>) -> serde_json::Result<Body> {
    let mut first = serde_json::to_vec(head)?;
    // `{...}` becomes `{...,"workers":[`.
    first.pop();
    first.extend_from_slice(br#","workers":["#);
    if workers.len() <= WORKERS_PER_CHUNK {
        write_workers(&mut first, &workers, true)?;
        first.extend_from_slice(b"]}");
        return Ok(Body::from(first));
    }
    let workers = Arc::new(workers);
    let chunks = workers.len().div_ceil(WORKERS_PER_CHUNK);
    let body = futures::StreamExt::map(futures::stream::iter(0..=chunks), move |i| {
        let mut buf = if i == 0 {
            std::mem::take(&mut first)
        } else {
            Vec::with_capacity(WORKERS_PER_CHUNK * 600)
        };
        if i < chunks {
            let from = i * WORKERS_PER_CHUNK;
            let to = (from + WORKERS_PER_CHUNK).min(workers.len());
            write_workers(&mut buf, &workers[from..to], i == 0)?;
        } else {
            buf.extend_from_slice(b"]}");
        }
        Ok::<_, serde_json::Error>(Bytes::from(buf))
    });
    Ok(Body::from_stream(body))
}

fn write_workers(
    buf: &mut Vec<u8>,
    workers: &[Arc<Stored>],
    first: bool,
) -> serde_json::Result<()> {
    for (i, w) in workers.iter().enumerate() {
        if i > 0 || !first {
            buf.push(b',');
        }
        serde_json::to_writer(&mut *buf, &**w)?;
    }
    Ok(())
}

async fn summary(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
) -> ApiResult<axum::Json<crate::wire::Summary>> {
    let p = authenticate(&hub, &headers)?;
    require(&p, READERS, "read the summary")?;
    Ok(axum::Json(hub.summary().map_err(ApiError::internal)?))
}

#[derive(Deserialize)]
struct FailoversQuery {
    since: Option<u64>,
    limit: Option<u32>,
    worker: Option<String>,
    agent: Option<String>,
    kind: Option<String>,
}

async fn failovers(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    query: Result<Query<FailoversQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<axum::Json<FailoversPage>> {
    let p = authenticate(&hub, &headers)?;
    require(&p, READERS, "read failovers")?;
    let Query(q) = query.map_err(|e| bad_query(e.body_text()))?;
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > 1000 {
        return Err(bad_query("limit is 1 to 1000"));
    }
    if let Some(w) = &q.worker {
        if !crate::wire::is_worker_id(w) {
            return Err(bad_query("worker is not a worker id"));
        }
    }
    if let Some(a) = &q.agent {
        if !crate::wire::is_agent_name(a) {
            return Err(bad_query("agent is not an agent name"));
        }
    }
    if let Some(k) = &q.kind {
        // The message names the field, never echoes the value.
        k.parse::<crate::wire::CauseKind>().map_err(|_| {
            bad_query(format!(
                "kind is not a cause kind ({})",
                crate::wire::CauseKind::ALL.map(|k| k.as_str()).join(", ")
            ))
        })?;
    }
    let since = q.since.unwrap_or(0).min(i64::MAX as u64);
    // Read the head first: everything up to it is committed, so a page that
    // is not full may safely advance `next` to it.
    let head = hub.db.head();
    let filter = FailoverFilter {
        since,
        limit,
        worker: q.worker,
        agent: q.agent,
        kind: q.kind,
    };
    let hub2 = hub.clone();
    let (scan, oldest) = tokio::task::spawn_blocking(move || {
        let scan = hub2.db.failovers(&filter)?;
        let oldest = hub2.db.oldest()?;
        Ok::<_, super::db::DbError>((scan, oldest))
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::read_failed)?;
    // Paging counts the rows scanned, unreadable ones too, so a page never
    // stops on a row it skipped.
    let next = if scan.scanned == limit {
        scan.last.unwrap_or(since)
    } else {
        // Everything up to the head was scanned. A `since` beyond the head
        // (an old cursor, a client's guess) is answered with the head.
        head.max(scan.last.unwrap_or(0))
    };
    Ok(axum::Json(FailoversPage {
        events: scan.records,
        next,
        oldest,
    }))
}

#[derive(Deserialize)]
struct EventsQuery {
    types: Option<String>,
}

async fn events(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let p = authenticate(&hub, &headers)?;
    require(&p, READERS, "follow events")?;
    let Query(q) = query.map_err(|e| bad_query(e.body_text()))?;
    // All but `summary`, which comes only when named.
    let mut want = [true; EventKind::ALL.len()];
    want[EventKind::Summary as usize] = false;
    if let Some(types) = q.types.as_deref().filter(|t| !t.is_empty()) {
        want = [false; EventKind::ALL.len()];
        for t in types.split(',').map(str::trim) {
            match t.parse::<EventKind>() {
                Ok(k) => want[k as usize] = true,
                Err(_) => {
                    return Err(bad_query(format!(
                        "unknown event type {:?} ({})",
                        crate::scrub::scrub(&t.chars().take(32).collect::<String>()),
                        EventKind::names()
                    )));
                }
            }
        }
    }
    let last_id = match headers.get("last-event-id").map(|v| v.to_str()) {
        None => None,
        Some(Ok(s)) if s.trim().is_empty() => None,
        Some(Ok(s)) => Some(s.trim().parse::<u64>().map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "Last-Event-ID must be an id this hub sent",
            )
        })?),
        Some(Err(_)) => return Err(bad_query("Last-Event-ID is not text")),
    };
    let slot = hub.streams.open(&p.name).map_err(|e| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_streams",
            format!("{e}; close one first"),
        )
    })?;
    let sub = hub.events.subscribe(last_id);
    // Every problem known now, once, first (after a `reset`): one found at
    // start, before anyone subscribed, reaches each subscriber.
    let problems = match want[EventKind::Problem as usize] {
        true => hub.problems_now(&hub.current()),
        false => Vec::new(),
    };
    let wanted = move |e: &Event| want[e.payload.kind() as usize];
    let first = Start { sub, problems };
    let stream = async_stream(
        first,
        wanted,
        hub.closing.subscribe(),
        slot,
        hub.opts.streams,
    );
    // A token revoked (SIGHUP) while its stream is open ends the stream.
    let revoked = hub
        .tokens
        .revoked(super::auth::hash_token(bearer(&headers)?), READERS);
    let stream = futures::StreamExt::take_until(stream, Box::pin(revoked));
    Ok(Sse::new(stream).keep_alive(
        KeepAlive::new()
            .interval(hub.opts.keepalive.max(Duration::from_millis(100)))
            .text("keep-alive"),
    ))
}

/// An event as sent, and the size of its data.
fn to_sse(e: &Event) -> (SseEvent, usize) {
    let data = e.payload.to_json();
    let size = data.len();
    let ev = SseEvent::default()
        .id(e.seq.to_string())
        .event(e.payload.name())
        .data(data);
    (ev, size)
}

/// A problem known when the subscriber connected: sent without an id
/// (it is not in the feed, and a resume point stays the feed's).
fn problem_event(p: &crate::wire::ProblemEvent) -> (SseEvent, usize) {
    let data = serde_json::to_string(p).unwrap_or_else(|_| "{}".into());
    let size = data.len();
    (SseEvent::default().event("problem").data(data), size)
}

/// What a subscriber's stream starts from: its subscription, and the
/// problems known as it connected.
struct Start {
    sub: super::events::Subscription,
    problems: Vec<crate::wire::ProblemEvent>,
}

fn reset_event(at: u64) -> SseEvent {
    SseEvent::default()
        .id(at.to_string())
        .event("reset")
        .data("{\"reason\":\"the hub no longer holds that point; refetch\"}")
}

/// The event stream of one subscriber. Its buffer holds at most
/// `limits.buffer` events and `limits.buffer_bytes` bytes of their data; a subscriber that has not taken the next one
/// within `limits.grace` (or that the live feed has lapped) has fallen
/// behind: it is sent what is buffered, then `reset`, and the stream ends
/// (the contract's answer to lag). The slot is held as long as the stream.
fn async_stream(
    start: Start,
    wanted: impl Fn(&Event) -> bool + Send + 'static,
    mut closing: tokio::sync::watch::Receiver<bool>,
    slot: super::streams::StreamSlot,
    limits: StreamLimits,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    use tokio::sync::broadcast::error::{RecvError, TryRecvError};
    let (tx, rx) = tokio::sync::mpsc::channel::<(SseEvent, tokio::sync::OwnedSemaphorePermit)>(
        limits.buffer.max(1),
    );
    let budget_bytes = limits.buffer_bytes.clamp(1, u32::MAX as usize);
    let budget = Arc::new(tokio::sync::Semaphore::new(budget_bytes));
    let last = Arc::new(std::sync::Mutex::new(None::<SseEvent>));
    let last2 = last.clone();
    let Start { sub, problems } = start;
    tokio::spawn(async move {
        let mut live = sub.live;
        let mut at = sub.at;
        // The last seq sent: a `reset` names it.
        let mut sent = sub.at;
        // Waiting, coalesced per worker (hub/events.rs): the live feed is
        // taken in as it comes, so one worker's flood never laps this
        // subscriber; it is sent each worker's latest view.
        let mut backlog = super::events::Backlog::default();
        for e in sub.replay {
            if wanted(&e) {
                backlog.push(e);
            }
        }
        // The event being sent (its seq, the event, its size): each holds
        // its size in bytes of the budget until the response takes it.
        let mut staged: Option<(u64, SseEvent, usize)> =
            sub.reset.then(|| (at, reset_event(at), 64));
        let mut first: std::collections::VecDeque<(u64, SseEvent, usize)> = problems
            .iter()
            .map(|p| {
                let (ev, size) = problem_event(p);
                (sent, ev, size)
            })
            .collect();
        let mut deadline = tokio::time::Instant::now() + limits.grace;
        let behind = |at: u64| {
            if let Ok(mut l) = last2.lock() {
                *l = Some(reset_event(at));
            }
        };
        loop {
            if staged.is_none() {
                staged = first.pop_front().or_else(|| {
                    let e = backlog.pop()?;
                    let (ev, size) = to_sse(&e);
                    Some((e.seq, ev, size))
                });
                if staged.is_some() {
                    deadline = tokio::time::Instant::now() + limits.grace;
                }
            }
            // More kept events than the buffer holds: behind.
            if backlog.kept() > limits.buffer.max(1) {
                return behind(sent);
            }
            let n = staged.as_ref().map_or(1, |(_, _, size)| {
                u32::try_from((*size).clamp(1, budget_bytes)).unwrap_or(u32::MAX)
            });
            let room = async {
                let permit = budget.clone().acquire_many_owned(n).await.ok()?;
                let slot = tx.reserve().await.ok()?;
                Some((permit, slot))
            };
            tokio::select! {
                biased;
                () = tx.closed() => return,
                r = closing.changed() => {
                    if r.is_err() || *closing.borrow() {
                        return;
                    }
                }
                room = room, if staged.is_some() => {
                    let Some((permit, slot)) = room else { return };
                    if let Some((seq, ev, _)) = staged.take() {
                        slot.send((ev, permit));
                        sent = seq;
                    }
                }
                // The subscriber has not taken an event within the grace.
                () = tokio::time::sleep_until(deadline), if staged.is_some() => {
                    return behind(sent);
                }
                r = live.recv() => {
                    // This one, and what else is there already (bounded).
                    let mut r = r;
                    for _ in 0..256 {
                        match r {
                            Ok(e) => {
                                if e.seq > at {
                                    at = e.seq;
                                    if wanted(&e) {
                                        backlog.push(e);
                                    }
                                }
                            }
                            // Lapped by the live feed: too slow to follow.
                            Err(RecvError::Lagged(_)) => return behind(sent),
                            Err(RecvError::Closed) => return,
                        }
                        r = match live.try_recv() {
                            Ok(e) => Ok(e),
                            Err(TryRecvError::Empty) => break,
                            Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                            Err(TryRecvError::Closed) => Err(RecvError::Closed),
                        };
                    }
                }
            }
        }
    });
    let events = futures::StreamExt::map(
        tokio_stream::wrappers::ReceiverStream::new(rx),
        |(ev, _budget)| Ok(ev),
    );
    let tail = futures::stream::once(async move {
        // Held until the stream has ended: the slot counts open streams.
        let _slot = slot;
        last.lock().ok().and_then(|mut l| l.take())
    });
    let tail = futures::StreamExt::filter_map(tail, |e| async move { e.map(Ok) });
    futures::StreamExt::chain(events, tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::fleet::Fleet;
    use crate::wire::{Heartbeat, WorkersPage};

    fn heartbeat(i: usize) -> Heartbeat {
        serde_json::from_value(serde_json::json!({
            "worker": format!("w-{i:05}"), "host": format!("h{}", i % 7),
            "sent_at": "2026-11-29T15:04:05Z", "config_revision": "r1",
            "agents": ["pi", "claude"], "active_agent": "pi",
        }))
        .expect("test heartbeat")
    }

    #[test]
    fn errors_name_fields_not_values() {
        let key = format!("{}{}", "sk-ant-", "api03-abcdefghijklmnop");
        let body = format!(
            r#"{{"worker":"w","host":"h","sent_at":"2026-11-29T15:04:05Z","agents":[],"active_agent":null,"failovers":[{{"id":"f","at":"2026-11-29T15:04:05Z","from":"pi","to":null,"cause":{{"kind":"{key}","source":"worker"}}}}]}}"#
        );
        let e = HeartbeatIn::parse(body.as_bytes()).expect_err("unknown kind");
        let msg = without_values(&e.to_string());
        assert!(!msg.contains("sk-ant"), "{msg}");
        assert!(msg.contains("unknown variant"), "{msg}");
        let body = body
            .replace(&format!(r#""kind":"{key}""#), r#""kind":"auth""#)
            .replace(
                r#""source":"worker""#,
                &format!(r#""source":"worker","status":"{key}""#),
            );
        let e = HeartbeatIn::parse(body.as_bytes()).expect_err("wrong type");
        assert!(!without_values(&e.to_string()).contains("sk-ant"));
        let unknown = format!(r#"{{"worker":"w","{key}":1}}"#);
        let e = HeartbeatIn::parse(unknown.as_bytes()).expect_err("unknown field");
        let msg = without_values(&e.to_string());
        assert!(
            !msg.contains("sk-ant") && msg.contains("unknown field"),
            "{msg}"
        );
    }

    #[test]
    fn heartbeat_errors_name_the_field_path_never_a_senders_key() {
        let key = format!("{}{}", "sk-ant-", "api03-abcdefghijklmnop");
        let body = format!(
            r#"{{"worker":"w","host":"h","sent_at":"2026-11-29T15:04:05Z","agents":[],"active_agent":null,"failovers":[{{"id":"f","at":"2026-11-29T15:04:05Z","from":"pi","to":null,"cause":{{"kind":"{key}","source":"worker"}}}}]}}"#
        );
        assert_eq!(
            heartbeat_error_path(body.as_bytes()).as_deref(),
            Some("failovers[0].cause.kind")
        );
        let caps = format!(
            r#"{{"worker":"w","host":"h","sent_at":"2026-11-29T15:04:05Z","agents":[],"capabilities":{{"{key}":{{"binary":1}}}}}}"#
        );
        let path = heartbeat_error_path(caps.as_bytes()).expect("a path");
        assert_eq!(path, "capabilities.*.binary");
        let unknown = format!(r#"{{"worker":"w","{key}":1}}"#);
        let path = heartbeat_error_path(unknown.as_bytes()).unwrap_or_default();
        assert!(!path.contains("sk-ant"), "{path}");
        // Truncated inside a field: that field.
        assert_eq!(
            heartbeat_error_path(b"{\"worker\":").as_deref(),
            Some("worker")
        );
    }

    #[test]
    fn if_match_takes_entity_tags_only() {
        for ok in ["*", "\"r1\"", "W/\"r1\"", "\"a\", \"b\""] {
            assert!(is_entity_tag_list(ok), "{ok}");
        }
        for bad in ["", "r1", "\"r1", "r1\"", "\"a\", b", "\"\"\"", "W/r1"] {
            assert!(!is_entity_tag_list(bad), "{bad}");
        }
    }

    /// Small pages are one buffer; large ones are streamed a chunk at a
    /// time. Both must read back as the wire type, whole and in order.
    #[tokio::test]
    async fn workers_pages_read_back_whole_at_every_size() {
        let now = Utc::now();
        for n in [
            0,
            1,
            WORKERS_PER_CHUNK,
            WORKERS_PER_CHUNK + 1,
            2 * WORKERS_PER_CHUNK + 17,
        ] {
            let mut fleet = Fleet::new(1);
            for i in (0..n).rev() {
                fleet.record(&(&heartbeat(i)).into(), now, "r1");
            }
            let mut workers = fleet.snapshot(None).workers;
            workers.sort_unstable_by(|a, b| a.worker().cmp(b.worker()));
            let head = WorkersPageHead {
                now,
                config_revision: "r1",
                heartbeat_interval_s: 10,
                cursor: fleet.cursor().to_string(),
                delta: false,
                total: None,
                offset: None,
                next_page: None,
            };
            let body = workers_body(&head, workers).expect("body");
            let bytes = axum::body::to_bytes(body, usize::MAX).await.expect("read");
            let page: WorkersPage = serde_json::from_slice(&bytes).expect("a WorkersPage");
            assert_eq!(page.workers.len(), n, "{n} workers");
            assert_eq!(page.cursor, fleet.cursor().to_string());
            assert!(!page.delta);
            for (i, w) in page.workers.iter().enumerate() {
                assert_eq!(w.worker, format!("w-{i:05}"));
                assert_eq!(w.host, format!("h{}", i % 7));
                assert!(w.in_sync);
            }
        }
    }
}
