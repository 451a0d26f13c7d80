//! The rollout routes (issue 33, docs/hub-api.md "Rollouts"):
//! `POST /v1/rollouts`, `GET /v1/rollouts/current`, `POST
//! /v1/rollouts/current/promote` and `/abort`. They parse, call
//! `hub::rollout` and map its answer to a status.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{
    ApiError, ApiResult, READERS, authenticate, config_unavailable, content_type_is, doc_error,
    excerpt, idempotency_key, if_match_of, read_body, replace_error, require,
};
use crate::hub::Hub;
use crate::hub::rollout::{RolloutError, Started};
use crate::rollout::RolloutQuery;
use crate::rollout::wire::RolloutView;
use crate::wire::Role;

/// Rollouts whose steps `GET /v1/config/history` lists.
pub const HISTORY_ROLLOUTS: u32 = 20;

/// `409 rollout_in_progress`, naming the rollout.
pub fn in_progress(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "rollout_in_progress",
        format!(
            "rollout {id} is baking: the list changes by its promotion; promote or abort it first (POST /v1/rollouts/current/promote or /abort)"
        ),
    )
}

fn no_rollout() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_rollout",
        "no rollout has run on this hub",
    )
}

fn rollout_error(hub: &Hub, e: RolloutError) -> Response {
    match e {
        RolloutError::Doc(d) => doc_error(d).into_response(),
        RolloutError::Query(why) => {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", why).into_response()
        }
        RolloutError::InProgress { id } => in_progress(&id).into_response(),
        RolloutError::NotBaking { id, state } => ApiError::new(
            StatusCode::CONFLICT,
            "rollout_not_baking",
            format!("rollout {id} is not baking: it is {state}"),
        )
        .into_response(),
        RolloutError::NoRollout => ApiError::new(
            StatusCode::CONFLICT,
            "rollout_not_baking",
            "no rollout has run on this hub: nothing bakes",
        )
        .into_response(),
        RolloutError::NoChange(list) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_change",
            format!(
                "the candidate's list is the list in force ({}): nothing to roll out",
                excerpt(&list)
            ),
        )
        .into_response(),
        RolloutError::KeyReused { first } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency_key_reused",
            format!(
                "this Idempotency-Key started another rollout ({first}); nothing was started: send a new key with each new rollout"
            ),
        )
        .into_response(),
        RolloutError::Replace(e) => replace_error(hub, e),
        RolloutError::Unavailable(e) => {
            let mut resp = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "database_unavailable",
                format!(
                    "the hub's database cannot record the rollout ({}); nothing changed: retry once it is back",
                    excerpt(&e)
                ),
            )
            .into_response();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            resp
        }
    }
}

fn view(status: StatusCode, v: RolloutView) -> Response {
    (status, axum::Json(v)).into_response()
}

/// `POST /v1/rollouts?cohort=10%&bake=10m&promote=auto` (owner): the
/// candidate document as `application/toml`, `If-Match` on the accepted
/// revision; `201` with the rollout.
pub async fn post_rollout(State(hub): State<Arc<Hub>>, req: Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let p = authenticate(&hub, headers)?;
    require(&p, &[Role::Owner], "start a rollout")?;
    let q = RolloutQuery::parse(parts.uri.query())
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.to_string()))?;
    if !content_type_is(headers, "application/toml") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the candidate is sent as Content-Type: application/toml",
        ));
    }
    let key = idempotency_key(headers)?;
    let bytes = read_body(body, super::MAX_CONFIG_BYTES, hub.opts.limits.body_timeout).await?;
    let if_match = if_match_of(
        headers,
        "the ETag of the accepted document the candidate was made from",
    )?;
    if let Some(why) = super::super::config_unusable(&hub.opts.config, &hub.opts.config_link_dirs) {
        return Ok(config_unavailable(&why));
    }
    match hub
        .start_rollout(&p.name, &if_match, key.as_deref(), q, bytes)
        .await
    {
        Ok(Started::Now(v)) => Ok(view(StatusCode::CREATED, v)),
        Ok(Started::Replayed(v)) => {
            let mut resp = view(StatusCode::CREATED, v);
            resp.headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
            Ok(resp)
        }
        Err(e) => Ok(rollout_error(&hub, e)),
    }
}

/// `GET /v1/rollouts/current` (owner or viewer): the newest rollout, as it
/// stands; `404 no_rollout` when none has run.
pub async fn get_current(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> ApiResult<Response> {
    let p = authenticate(&hub, &headers)?;
    require(&p, READERS, "read the rollout")?;
    match hub.rollout_view() {
        Some(v) => Ok(view(StatusCode::OK, v)),
        None => Err(no_rollout()),
    }
}

/// `POST /v1/rollouts/current/promote` (owner).
pub async fn promote(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> ApiResult<Response> {
    let p = authenticate(&hub, &headers)?;
    require(&p, &[Role::Owner], "promote a rollout")?;
    match hub.promote_rollout(&p.name).await {
        Ok(v) => Ok(view(StatusCode::OK, v)),
        Err(e) => Ok(rollout_error(&hub, e)),
    }
}

/// `POST /v1/rollouts/current/abort` (owner).
pub async fn abort(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> ApiResult<Response> {
    let p = authenticate(&hub, &headers)?;
    require(&p, &[Role::Owner], "abort a rollout")?;
    match hub.abort_rollout(&p.name).await {
        Ok(v) => Ok(view(StatusCode::OK, v)),
        Err(e) => Ok(rollout_error(&hub, e)),
    }
}
