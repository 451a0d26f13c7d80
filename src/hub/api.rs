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
use super::db::{FailoverFilter, NewFailover};
use super::events::{Event, Payload};
use super::fleet::{Cursor, Stored};
use super::ingest::HeartbeatIn;
use super::{Current, Hub, publish_config, store};
use crate::agents_doc::{self, DocError};
use crate::wire::{
    API_VERSION, ConfigAccepted, ErrorBody, ErrorDetail, EventKind, FailoversPage, History,
    HistoryEntry, Role, Whoami,
};

/// Largest config document.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;
/// Largest heartbeat.
pub const MAX_HEARTBEAT_BYTES: usize = 64 * 1024;

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
    fn internal(what: impl std::fmt::Display) -> ApiError {
        tracing::error!(error = %what, "internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the hub failed; see its log",
        )
    }
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
        .route("/v1/heartbeats", axum::routing::post(post_heartbeat))
        .route("/v1/workers", get(workers))
        .route("/v1/failovers", get(failovers))
        .route("/v1/events", get(events))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(hub)
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
fn authenticate<'h>(hub: &'h Hub, headers: &HeaderMap) -> ApiResult<&'h Principal> {
    let unauthorized = |m: &str| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m);
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized("missing Authorization: Bearer token"))?;
    let value = value
        .to_str()
        .map_err(|_| unauthorized("malformed Authorization header"))?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| unauthorized("expected Authorization: Bearer <token>"))?;
    hub.opts
        .tokens
        .lookup(token)
        .ok_or_else(|| unauthorized("unknown token"))
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

async fn health() -> &'static str {
    "ok"
}

async fn whoami(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> ApiResult<axum::Json<Whoami>> {
    let p = authenticate(&hub, &headers)?;
    Ok(axum::Json(Whoami {
        name: p.name.clone(),
        role: p.role,
        hub: hub.opts.name.clone(),
        api: API_VERSION.into(),
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
        p,
        &[Role::Owner, Role::Viewer, Role::Worker],
        "read the config",
    )?;
    let c = hub.current();
    let etag = format!("\"{}\"", c.revision);
    if let Some(inm) = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    {
        // A weak comparison is right for If-None-Match (RFC 9110 13.1.2).
        if etag_matches(inm, &c.revision) {
            return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response());
        }
    }
    Ok((
        [
            (header::CONTENT_TYPE, "application/toml".to_string()),
            (header::ETAG, etag),
            (header::CACHE_CONTROL, "no-cache".to_string()),
        ],
        c.text.as_str().to_owned(),
    )
        .into_response())
}

/// Read the body, refusing it past `limit` bytes.
async fn read_body(body: Body, limit: usize) -> ApiResult<Bytes> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
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

async fn put_config(State(hub): State<Arc<Hub>>, req: Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let p = authenticate(&hub, headers)?;
    require(p, &[Role::Owner], "change the config")?;
    if !content_type_is(headers, "application/toml") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the config is sent as Content-Type: application/toml",
        ));
    }
    let if_match = headers
        .get(header::IF_MATCH)
        .map(|v| v.to_str().unwrap_or("").to_string())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::PRECONDITION_REQUIRED,
                "precondition_required",
                "send If-Match: \"<revision>\" (the ETag of the document you edited)",
            )
        })?;
    let bytes = read_body(body, MAX_CONFIG_BYTES).await?;
    let text = agents_doc::decode(&bytes).map_err(doc_error)?;
    let located = agents_doc::locate(text).map_err(doc_error)?;

    let _guard = hub.write_lock.lock().await;
    let before = hub.current();
    // Only strong comparison counts for If-Match (RFC 9110 13.1.1).
    let matches = if_match
        .split(',')
        .map(str::trim)
        .any(|v| v == "*" || (!v.starts_with("W/") && v.trim_matches('"') == before.revision));
    if !matches {
        let mut err = ApiError::new(
            StatusCode::PRECONDITION_FAILED,
            "revision_mismatch",
            format!(
                "the document changed: it is at revision {} now; reload, reapply, and send again",
                before.revision
            ),
        );
        err.detail.current_revision = Some(before.revision.clone());
        err.etag = Some(before.revision.clone());
        return Err(err);
    }
    let new = Current::new(
        text.to_string(),
        located.agents,
        hub.opts.heartbeat_interval_s,
    );
    if new.revision != before.revision {
        let path = hub.opts.config.clone();
        let data = bytes.clone();
        tokio::task::spawn_blocking(move || store::write_atomic(&path, &data))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)?;
        let new = Arc::new(new);
        hub.current.store(new.clone());
        if let Err(e) = hub
            .db
            .record_history(HistoryEntry {
                revision: new.revision.clone(),
                at: Utc::now(),
                by: p.name.clone(),
                agents: new.agents.clone(),
                previous_agents: before.agents.clone(),
            })
            .await
        {
            // The document is stored; a restart records the revision anyway.
            tracing::error!(error = %e, "history not recorded");
        }
        // The `config` event first, then the `sync` flips it causes.
        publish_config(&hub, &new, &p.name);
        if let Ok(mut f) = hub.fleet.lock() {
            f.resync(&new.revision);
        }
        tracing::info!(by = %p.name, revision = %new.revision, agents = ?new.agents, "config replaced");
        return Ok(accepted(&new));
    }
    Ok(accepted(&before))
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

async fn history(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
) -> ApiResult<axum::Json<History>> {
    let p = authenticate(&hub, &headers)?;
    require(p, READERS, "read the history")?;
    let hub2 = hub.clone();
    let limit = hub.opts.bounds.history.min(u64::from(u32::MAX)) as u32;
    let revisions = tokio::task::spawn_blocking(move || hub2.db.history(limit))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok(axum::Json(History { revisions }))
}

fn invalid_heartbeat(status: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError::new(status, "invalid_heartbeat", message)
}

async fn post_heartbeat(State(hub): State<Arc<Hub>>, req: Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let p = authenticate(&hub, &parts.headers)?;
    require(p, &[Role::Worker], "send heartbeats")?;
    if !content_type_is(&parts.headers, "application/json") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "heartbeats are sent as Content-Type: application/json",
        ));
    }
    let bytes = read_body(body, MAX_HEARTBEAT_BYTES).await?;
    let mut hb = HeartbeatIn::parse(&bytes).map_err(|e| {
        let status = match e.classify() {
            serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::BAD_REQUEST,
        };
        // serde's message names the field and position, never a long
        // excerpt of the input; scrub it all the same.
        invalid_heartbeat(status, excerpt(&e.to_string()))
    })?;
    hb.validate().map_err(|e| {
        invalid_heartbeat(StatusCode::UNPROCESSABLE_ENTITY, excerpt(&e.to_string()))
    })?;
    for f in &mut hb.failovers {
        f.cause.detail = f.cause.detail.take().map(crate::scrub::scrub_string);
    }
    let received_at = Utc::now();
    if !hb.failovers.is_empty() {
        let batch: Vec<NewFailover> = hb
            .failovers
            .iter()
            .map(|f| NewFailover {
                worker: hb.worker.as_str().to_owned(),
                host: hb.host.as_str().to_owned(),
                received_at,
                failover: f.clone(),
            })
            .collect();
        let overloaded = || {
            let mut resp = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
                "the failover log is behind; retry this heartbeat",
            )
            .into_response();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            resp
        };
        let Some(committed) = hub.db.queue_failovers(batch).map_err(ApiError::internal)? else {
            return Ok(overloaded());
        };
        // A heartbeat that carries failovers is answered once they are on
        // disk: an acknowledged failover survives a crash. (Batched with
        // every other heartbeat's, so a storm costs one commit per batch.)
        match tokio::time::timeout(std::time::Duration::from_secs(10), committed).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => return Err(ApiError::internal(e)),
            Ok(Err(_)) => return Err(ApiError::internal("database writer is gone")),
            Err(_) => return Ok(overloaded()),
        }
    }
    let Ok(mut fleet) = hub.fleet.lock() else {
        return Err(ApiError::internal("fleet lock poisoned"));
    };
    // Read under the fleet lock: a config PUT stores the new document and
    // then resyncs the fleet under this lock, so the revision this heartbeat
    // is judged against is never older than the last resync. A guard, not a
    // clone: no await follows, and no reference count moves.
    let current = hub.current.load();
    let view = fleet.record(&hb, received_at, &current.revision);
    // Published under the fleet lock, like the sweeper's `state` and a
    // resync's `sync` events: the feed's order is the order of change, so
    // a client that applies views in feed order ends with the latest.
    hub.events.publish(Payload::Heartbeat(view));
    drop(fleet);
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        current.projection.clone(),
    )
        .into_response())
}

#[derive(Deserialize)]
struct WorkersQuery {
    since: Option<String>,
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
    require(p, READERS, "list workers")?;
    let Query(q) = query.map_err(|e| bad_query(e.body_text()))?;
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
        config_revision: &current.revision,
        heartbeat_interval_s: hub.opts.heartbeat_interval_s,
        cursor: snap.cursor.to_string(),
        delta: snap.delta,
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
    require(p, READERS, "read failovers")?;
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
        k.parse::<crate::wire::CauseKind>().map_err(bad_query)?;
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
    let (events, oldest) = tokio::task::spawn_blocking(move || {
        let events = hub2.db.failovers(&filter)?;
        let oldest = hub2.db.oldest()?;
        Ok::<_, super::db::DbError>((events, oldest))
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    let next = if events.len() as u32 == limit {
        events.last().map_or(since, |e| e.seq)
    } else {
        // Everything up to the head was scanned. A `since` beyond the head
        // (an old cursor, a client's guess) is answered with the head.
        head.max(events.last().map_or(0, |e| e.seq))
    };
    Ok(axum::Json(FailoversPage {
        events,
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
    require(p, READERS, "follow events")?;
    let Query(q) = query.map_err(|e| bad_query(e.body_text()))?;
    let mut want = [true; EventKind::ALL.len()];
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
    let sub = hub.events.subscribe(last_id);
    let wanted = move |e: &Event| want[e.payload.kind() as usize];
    let stream = async_stream(sub, wanted, hub.closing.subscribe());
    Ok(Sse::new(stream).keep_alive(
        KeepAlive::new()
            .interval(hub.opts.keepalive.max(Duration::from_millis(100)))
            .text("keep-alive"),
    ))
}

fn to_sse(e: &Event) -> SseEvent {
    SseEvent::default()
        .id(e.seq.to_string())
        .event(e.payload.name())
        .data(e.payload.to_json())
}

fn reset_event(at: u64) -> SseEvent {
    SseEvent::default()
        .id(at.to_string())
        .event("reset")
        .data("{\"reason\":\"the hub no longer holds that point; refetch\"}")
}

fn async_stream(
    sub: super::events::Subscription,
    wanted: impl Fn(&Event) -> bool + Send + 'static,
    mut closing: tokio::sync::watch::Receiver<bool>,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    use tokio::sync::broadcast::error::RecvError;
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(1024);
    tokio::spawn(async move {
        let mut live = sub.live;
        let mut at = sub.at;
        if sub.reset && tx.send(reset_event(at)).await.is_err() {
            return;
        }
        for e in &sub.replay {
            if wanted(e) && tx.send(to_sse(e)).await.is_err() {
                return;
            }
        }
        loop {
            tokio::select! {
                () = tx.closed() => return,
                r = closing.changed() => {
                    if r.is_err() || *closing.borrow() {
                        return;
                    }
                    continue;
                }
                r = live.recv() => match r {
                    Ok(e) => {
                        if e.seq <= at {
                            continue;
                        }
                        at = e.seq;
                        if wanted(&e) && tx.send(to_sse(&e)).await.is_err() {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        // Too slow to follow: say so, and carry on from now.
                        if tx.send(reset_event(at)).await.is_err() {
                            return;
                        }
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        }
    });
    futures::StreamExt::map(tokio_stream::wrappers::ReceiverStream::new(rx), Ok)
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
