//! Issue #10's proofs in table form, against the real hub on loopback: the
//! authorization matrix of docs/hub-api.md (every endpoint x {no token, a
//! wrong token, worker, viewer, owner}), and a table of hostile requests,
//! each answered with a precise 4xx and the JSON error body, after which
//! the hub is healthy and nothing it stores has changed.

use crate::common;

use common::{CONFIG, TestHub, ago, heartbeat};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug)]
enum Tok {
    None,
    Wrong,
    Worker,
    Viewer,
    Owner,
}

fn token(h: &TestHub, t: Tok) -> Option<String> {
    match t {
        Tok::None => None,
        Tok::Wrong => Some(format!("{}{}", "mft_", "wrong".repeat(8))),
        Tok::Worker => Some(h.worker.clone()),
        Tok::Viewer => Some(h.viewer.clone()),
        Tok::Owner => Some(h.owner.clone()),
    }
}

async fn send(
    h: &TestHub,
    method: Method,
    path: &str,
    tok: Tok,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let mut rb = h.http().request(method, h.path(path)).body(body);
    if let Some(t) = token(h, tok) {
        rb = rb.bearer_auth(t);
    }
    for (k, v) in headers {
        rb = rb.header(*k, v.as_str());
    }
    let r = rb.send().await.expect("the hub answers");
    let status = r.status();
    // An event stream is not read to its end.
    if r.headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
    {
        return (status, Value::Null);
    }
    let text = r.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The role table of docs/hub-api.md, every cell.
#[tokio::test]
async fn authorization_matrix() {
    let h = TestHub::start().await;
    let rev = h.client(&h.viewer).config().await.expect("config").revision;
    let hb = serde_json::to_vec(&heartbeat("w-auth", None, json!([]))).expect("json");
    let json_ct = ("content-type", "application/json".to_string());
    let toml_ct = ("content-type", "application/toml".to_string());
    let if_match = ("if-match", format!("\"{rev}\""));
    // (method, path, headers, body, [no token, wrong, worker, viewer, owner])
    type Row<'a> = (Method, &'a str, Vec<(&'a str, String)>, Vec<u8>, [u16; 5]);
    let rows: Vec<Row> = vec![
        (Method::GET, "/v1/health", vec![], vec![], [200; 5]),
        (
            Method::GET,
            "/v1/whoami",
            vec![],
            vec![],
            [401, 401, 200, 200, 200],
        ),
        (
            Method::GET,
            "/v1/config",
            vec![],
            vec![],
            [401, 401, 200, 200, 200],
        ),
        (
            Method::PUT,
            "/v1/config",
            vec![toml_ct.clone(), if_match.clone()],
            CONFIG.as_bytes().to_vec(),
            [401, 401, 403, 403, 200],
        ),
        (
            Method::GET,
            "/v1/config/history",
            vec![],
            vec![],
            [401, 401, 403, 200, 200],
        ),
        (
            Method::POST,
            "/v1/heartbeats",
            vec![json_ct.clone()],
            hb.clone(),
            [401, 401, 200, 403, 403],
        ),
        (
            Method::GET,
            "/v1/workers",
            vec![],
            vec![],
            [401, 401, 403, 200, 200],
        ),
        (
            Method::GET,
            "/v1/workers?sort=host&limit=5",
            vec![],
            vec![],
            [401, 401, 403, 200, 200],
        ),
        (
            Method::GET,
            "/v1/summary",
            vec![],
            vec![],
            [401, 401, 403, 200, 200],
        ),
        (
            Method::GET,
            "/v1/failovers",
            vec![],
            vec![],
            [401, 401, 403, 200, 200],
        ),
        (
            Method::GET,
            "/v1/events",
            vec![],
            vec![],
            [401, 401, 403, 200, 200],
        ),
    ];
    let toks = [Tok::None, Tok::Wrong, Tok::Worker, Tok::Viewer, Tok::Owner];
    let mut cells = 0;
    for (method, path, headers, body, want) in &rows {
        for (tok, want) in toks.iter().zip(want) {
            let (s, v) = send(&h, method.clone(), path, *tok, headers, body.clone()).await;
            assert_eq!(s.as_u16(), *want, "{method} {path} as {tok:?}: {v}");
            match *want {
                401 => assert_eq!(v["error"]["code"], "unauthorized", "{path} {tok:?}"),
                403 => assert_eq!(v["error"]["code"], "forbidden", "{path} {tok:?}"),
                _ => {}
            }
            cells += 1;
        }
    }
    assert_eq!(cells, 55);
}

/// What the hub stores, as its readers see it.
async fn stored(h: &TestHub) -> (String, String, usize, Value, usize) {
    let viewer = h.client(&h.viewer);
    let c = viewer.config().await.expect("config");
    let hist = viewer.history().await.expect("history").revisions.len();
    let log = viewer
        .failovers(&macfleet::client::FailoverQuery::default())
        .await
        .expect("failovers");
    let workers = viewer.workers(None).await.expect("workers").workers.len();
    (
        c.text,
        c.revision,
        hist,
        serde_json::to_value(&log.events).expect("json"),
        workers,
    )
}

/// Heartbeat bodies a hostile or broken worker sends: (name, body, status).
fn hostile_heartbeats() -> Vec<(String, Vec<u8>, u16)> {
    let base = heartbeat("w-hostile", None, json!([]));
    let fo = json!({"id": "f-1", "at": ago(5), "from": "opencode", "to": "claude",
        "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router", "detail": "429"}});
    let with = |path: &[&str], v: Value| {
        let mut b = base.clone();
        let mut at = &mut b;
        for p in &path[..path.len() - 1] {
            at = &mut at[*p];
        }
        at[path[path.len() - 1]] = v;
        serde_json::to_vec(&b).expect("json")
    };
    let with_fo = |key: &[&str], v: Value| {
        let mut f = fo.clone();
        let mut at = &mut f;
        for p in &key[..key.len() - 1] {
            at = &mut at[*p];
        }
        at[key[key.len() - 1]] = v;
        with(&["failovers"], json!([f]))
    };
    let many = |n: usize| (0..n).map(|i| format!("a{i}")).collect::<Vec<_>>();
    let mut caps = serde_json::Map::new();
    for a in many(65) {
        caps.insert(a, json!({"binary": true, "token": true, "preflight": "ok"}));
    }
    let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    let mut bad_utf8 = serde_json::to_vec(&base).expect("json");
    let at = bad_utf8.len() - 2;
    bad_utf8.splice(at..at, [b',', b'"', 0xff, 0xfe, b'"', b':', b'1']);
    let mut fos = Vec::new();
    for i in 0..257 {
        let mut f = fo.clone();
        f["id"] = json!(format!("f-{i}"));
        fos.push(f);
    }
    let v = |s: &str| s.as_bytes().to_vec();
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("empty body", vec![], 400),
        ("truncated", v(r#"{"worker":"w-1","host":"#), 400),
        ("not JSON", v("worker=w-1"), 400),
        ("invalid UTF-8", bad_utf8, 400),
        ("1000-deep nesting", deep.into_bytes(), 422),
        ("an array", v("[]"), 422),
        ("null", v("null"), 422),
        ("a string", v(r#""hb""#), 422),
        ("a number", v("42"), 422),
        (
            "worker missing",
            {
                let mut b = base.clone();
                b.as_object_mut().expect("object").remove("worker");
                serde_json::to_vec(&b).expect("json")
            },
            422,
        ),
        ("worker a number", with(&["worker"], json!(7)), 422),
        ("worker empty", with(&["worker"], json!("")), 422),
        ("worker with a space", with(&["worker"], json!("w 1")), 422),
        (
            "worker with a control",
            with(&["worker"], json!("w\u{1}")),
            422,
        ),
        (
            "worker with bidi",
            with(&["worker"], json!("w\u{202e}1")),
            422,
        ),
        (
            "worker with zero-width space",
            with(&["worker"], json!("w\u{200b}1")),
            422,
        ),
        (
            "worker 129 bytes",
            with(&["worker"], json!("w".repeat(129))),
            422,
        ),
        ("host empty", with(&["host"], json!("")), 422),
        ("host with a slash", with(&["host"], json!("a/b")), 422),
        ("host with ESC", with(&["host"], json!("h\u{1b}[2J")), 422),
        (
            "host 254 bytes",
            with(&["host"], json!("h".repeat(254))),
            422,
        ),
        (
            "sent_at not a time",
            with(&["sent_at"], json!("yesterday")),
            422,
        ),
        (
            "sent_at year 10000 in UTC",
            with(&["sent_at"], json!("9999-12-31T23:59:59-23:59")),
            422,
        ),
        (
            "sent_at 25 hours ahead",
            with(&["sent_at"], json!(ago(-25 * 3600))),
            422,
        ),
        (
            "sent_at a number",
            with(&["sent_at"], json!(1_764_428_645)),
            422,
        ),
        ("agents a string", with(&["agents"], json!("opencode")), 422),
        (
            "agents upper case",
            with(&["agents"], json!(["Claude"])),
            422,
        ),
        ("agents 65", with(&["agents"], json!(many(65))), 422),
        (
            "agent with a control",
            with(&["agents"], json!(["pi\u{7}"])),
            422,
        ),
        (
            "agent with bidi",
            with(&["agents"], json!(["pi\u{2066}"])),
            422,
        ),
        (
            "agent 33 chars",
            with(&["agents"], json!(["a".repeat(33)])),
            422,
        ),
        (
            "active_agent a number",
            with(&["active_agent"], json!(1)),
            422,
        ),
        (
            "active_agent bad name",
            with(&["active_agent"], json!("Claude Code")),
            422,
        ),
        (
            "capabilities an array",
            with(&["capabilities"], json!([])),
            422,
        ),
        (
            "capability missing a field",
            with(&["capabilities", "claude"], json!({"binary": true})),
            422,
        ),
        (
            "capability preflight unknown",
            with(&["capabilities", "claude", "preflight"], json!("maybe")),
            422,
        ),
        (
            "capability binary a string",
            with(&["capabilities", "claude", "binary"], json!("yes")),
            422,
        ),
        (
            "capabilities 65",
            with(&["capabilities"], Value::Object(caps)),
            422,
        ),
        ("unknown field", with(&["transcript"], json!("…")), 422),
        (
            "config_revision with a space",
            with(&["config_revision"], json!("a b")),
            422,
        ),
        (
            "config_revision 65 chars",
            with(&["config_revision"], json!("r".repeat(65))),
            422,
        ),
        ("failovers an object", with(&["failovers"], json!({})), 422),
        ("failovers 257", with(&["failovers"], json!(fos)), 422),
        (
            "cause kind unknown",
            with_fo(&["cause", "kind"], json!("transcript_said_so")),
            422,
        ),
        (
            "cause kind a key",
            with_fo(
                &["cause", "kind"],
                json!(format!("{}{}", "sk-ant-", "api03-x")),
            ),
            422,
        ),
        (
            "cause rate_limited without status",
            {
                let mut f = fo.clone();
                f["cause"].as_object_mut().expect("cause").remove("status");
                with(&["failovers"], json!([f]))
            },
            422,
        ),
        ("status 42", with_fo(&["cause", "status"], json!(42)), 422),
        ("status 600", with_fo(&["cause", "status"], json!(600)), 422),
        ("status -1", with_fo(&["cause", "status"], json!(-1)), 422),
        (
            "status 70000",
            with_fo(&["cause", "status"], json!(70000)),
            422,
        ),
        (
            "status a string",
            with_fo(&["cause", "status"], json!("429")),
            422,
        ),
        (
            "source unknown",
            with_fo(&["cause", "source"], json!("moon")),
            422,
        ),
        (
            "detail 201 chars",
            with_fo(&["cause", "detail"], json!("d".repeat(201))),
            422,
        ),
        (
            "detail with ESC",
            with_fo(&["cause", "detail"], json!("ok\u{1b}]52;c;aGk=\u{7}")),
            422,
        ),
        (
            "detail with NUL",
            with_fo(&["cause", "detail"], json!("ok\u{0}")),
            422,
        ),
        (
            "detail with CR",
            with_fo(&["cause", "detail"], json!("ok\rforged")),
            422,
        ),
        (
            "detail a number",
            with_fo(&["cause", "detail"], json!(5)),
            422,
        ),
        (
            "cause unknown field",
            with_fo(&["cause", "raw"], json!("provider said")),
            422,
        ),
        ("failover id empty", with_fo(&["id"], json!("")), 422),
        (
            "failover id with a space",
            with_fo(&["id"], json!("f 1")),
            422,
        ),
        (
            "failover id 129",
            with_fo(&["id"], json!("f".repeat(129))),
            422,
        ),
        ("from equals to", with_fo(&["to"], json!("opencode")), 422),
        ("from bad name", with_fo(&["from"], json!("OpenCode")), 422),
        ("to bad name", with_fo(&["to"], json!("")), 422),
        (
            "at year 10000 in UTC",
            with_fo(&["at"], json!("9999-12-31T23:59:59-23:59")),
            422,
        ),
        (
            "at year 0",
            with_fo(&["at"], json!("0000-01-01T00:00:00+23:59")),
            422,
        ),
        (
            "at 31 days back",
            with_fo(&["at"], json!(ago(31 * 86_400))),
            422,
        ),
        ("at not a time", with_fo(&["at"], json!("soon")), 422),
        (
            "failover unknown field",
            with_fo(&["transcript"], json!("…")),
            422,
        ),
        (
            "over 64 KiB",
            {
                let mut b = base.clone();
                b["host"] = json!("h".repeat(70_000));
                serde_json::to_vec(&b).expect("json")
            },
            413,
        ),
    ];
    cases
        .into_iter()
        .map(|(n, b, s)| (n.to_string(), b, s))
        .collect()
}

/// Every hostile request gets its precise status and the JSON error body;
/// afterwards the hub is healthy and nothing it stores has changed.
#[tokio::test]
async fn hostile_requests_change_nothing() {
    let h = TestHub::start().await;
    // Something stored first, so "unchanged" means something.
    let worker = h.client(&h.worker);
    let hb: macfleet::wire::Heartbeat = serde_json::from_value(heartbeat(
        "w-base",
        None,
        json!([common::failover("f-base", "rate_limited", "429")]),
    ))
    .expect("hb");
    worker.heartbeat(&hb).await.expect("heartbeat");
    let before = stored(&h).await;
    let rev = before.1.clone();
    let mut tried = 0;

    let json_ct = || ("content-type", "application/json".to_string());
    for (name, body, want) in hostile_heartbeats() {
        let (s, v) = send(
            &h,
            Method::POST,
            "/v1/heartbeats",
            Tok::Worker,
            &[json_ct()],
            body,
        )
        .await;
        assert_eq!(s.as_u16(), want, "heartbeat, {name}: {v}");
        let code = if want == 413 {
            "payload_too_large"
        } else {
            "invalid_heartbeat"
        };
        assert_eq!(v["error"]["code"], code, "heartbeat, {name}: {v}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(!msg.contains("sk-ant"), "heartbeat, {name}: {msg}");
        if name.starts_with("cause kind") {
            // The field is named; the value sent is not echoed.
            assert!(msg.contains("kind"), "heartbeat, {name}: {msg}");
            assert!(
                !msg.contains("transcript_said_so") && !msg.contains("api03"),
                "heartbeat, {name}: {msg}"
            );
        }
        assert!(
            !msg.chars().any(|c| c.is_control()),
            "heartbeat, {name}: {msg:?}"
        );
        tried += 1;
    }

    let valid_hb = serde_json::to_vec(&heartbeat("w-x", None, json!([]))).expect("json");
    let many = |n: usize| (0..n).map(|i| format!("a{i}")).collect::<Vec<_>>();
    let toml_ct = || ("content-type", "application/toml".to_string());
    let im = |v: &str| ("if-match", v.to_string());
    let cur = format!("\"{rev}\"");
    let doc = |agents: &str| format!("[fleet]\nMAC_CODING_AGENTS = {agents}\n").into_bytes();
    let mut big = CONFIG.as_bytes().to_vec();
    big.extend(std::iter::repeat_n(b'#', 1024 * 1024));
    let deep_toml = format!("x = {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    type Case<'a> = (
        &'a str,
        Method,
        String,
        Tok,
        Vec<(&'a str, String)>,
        Vec<u8>,
        u16,
        &'a str,
    );
    let long_kind = "k".repeat(5000);
    let cases: Vec<Case> = vec![
        (
            "heartbeat as owner",
            Method::POST,
            "/v1/heartbeats".into(),
            Tok::Owner,
            vec![json_ct()],
            valid_hb.clone(),
            403,
            "forbidden",
        ),
        (
            "heartbeat as viewer",
            Method::POST,
            "/v1/heartbeats".into(),
            Tok::Viewer,
            vec![json_ct()],
            valid_hb.clone(),
            403,
            "forbidden",
        ),
        (
            "heartbeat without token",
            Method::POST,
            "/v1/heartbeats".into(),
            Tok::None,
            vec![json_ct()],
            valid_hb.clone(),
            401,
            "unauthorized",
        ),
        (
            "heartbeat wrong token",
            Method::POST,
            "/v1/heartbeats".into(),
            Tok::Wrong,
            vec![json_ct()],
            valid_hb.clone(),
            401,
            "unauthorized",
        ),
        (
            "heartbeat text/plain",
            Method::POST,
            "/v1/heartbeats".into(),
            Tok::Worker,
            vec![("content-type", "text/plain".into())],
            valid_hb.clone(),
            415,
            "unsupported_media_type",
        ),
        (
            "heartbeat no content type",
            Method::POST,
            "/v1/heartbeats".into(),
            Tok::Worker,
            vec![],
            valid_hb.clone(),
            415,
            "unsupported_media_type",
        ),
        (
            "heartbeat application/jsonx",
            Method::POST,
            "/v1/heartbeats".into(),
            Tok::Worker,
            vec![("content-type", "application/jsonx".into())],
            valid_hb.clone(),
            415,
            "unsupported_media_type",
        ),
        (
            "put without If-Match",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct()],
            doc(r#"["pi"]"#),
            428,
            "precondition_required",
        ),
        (
            "put unquoted If-Match",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&rev)],
            doc(r#"["pi"]"#),
            400,
            "bad_request",
        ),
        (
            "put stale If-Match",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im("\"nope\"")],
            doc(r#"["pi"]"#),
            412,
            "revision_mismatch",
        ),
        (
            "put weak If-Match",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&format!("W/{cur}"))],
            doc(r#"["pi"]"#),
            412,
            "revision_mismatch",
        ),
        (
            "put empty If-Match",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im("")],
            doc(r#"["pi"]"#),
            400,
            "bad_request",
        ),
        (
            "put as JSON",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![json_ct(), im(&cur)],
            doc(r#"["pi"]"#),
            415,
            "unsupported_media_type",
        ),
        (
            "put as viewer",
            Method::PUT,
            "/v1/config".into(),
            Tok::Viewer,
            vec![toml_ct(), im(&cur)],
            doc(r#"["pi"]"#),
            403,
            "forbidden",
        ),
        (
            "put as worker",
            Method::PUT,
            "/v1/config".into(),
            Tok::Worker,
            vec![toml_ct(), im(&cur)],
            doc(r#"["pi"]"#),
            403,
            "forbidden",
        ),
        (
            "put not UTF-8",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            vec![b'a', b'=', 0xff],
            400,
            "invalid_toml",
        ),
        (
            "put not TOML",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            b"MAC_CODING_AGENTS = [".to_vec(),
            400,
            "invalid_toml",
        ),
        (
            "put 100,000-deep TOML",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            deep_toml.into_bytes(),
            400,
            "invalid_toml",
        ),
        (
            "put empty body",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            vec![],
            422,
            "invalid_agents",
        ),
        (
            "put no agents key",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            b"[fleet]\nx = 1\n".to_vec(),
            422,
            "invalid_agents",
        ),
        (
            "put empty list",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            doc("[]"),
            422,
            "invalid_agents",
        ),
        (
            "put duplicate",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            doc(r#"["pi", "pi"]"#),
            422,
            "invalid_agents",
        ),
        (
            "put bad name",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            doc(r#"["Claude"]"#),
            422,
            "invalid_agents",
        ),
        (
            "put control in a name",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            doc("[\"pi\\u001b[2J\"]"),
            422,
            "invalid_agents",
        ),
        (
            "put bidi in a name",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            doc("[\"pi\\u202e\"]"),
            422,
            "invalid_agents",
        ),
        (
            "put a number",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            doc("7"),
            422,
            "invalid_agents",
        ),
        (
            "put 65 agents",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            doc(&format!("{:?}", many(65))),
            422,
            "invalid_agents",
        ),
        (
            "put in two places",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            b"MAC_CODING_AGENTS = [\"pi\"]\n[fleet]\nMAC_CODING_AGENTS = [\"pi\"]\n".to_vec(),
            422,
            "invalid_agents",
        ),
        (
            "put over 1 MiB",
            Method::PUT,
            "/v1/config".into(),
            Tok::Owner,
            vec![toml_ct(), im(&cur)],
            big,
            413,
            "payload_too_large",
        ),
        (
            "failovers limit 0",
            Method::GET,
            "/v1/failovers?limit=0".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "failovers limit 1001",
            Method::GET,
            "/v1/failovers?limit=1001".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "failovers limit abc",
            Method::GET,
            "/v1/failovers?limit=abc".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "failovers since -1",
            Method::GET,
            "/v1/failovers?since=-1".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "failovers bad worker",
            Method::GET,
            "/v1/failovers?worker=w%201".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "failovers bad agent",
            Method::GET,
            "/v1/failovers?agent=Claude".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "failovers SQL in agent",
            Method::GET,
            "/v1/failovers?agent=pi'%20OR%201=1--".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "failovers 5,000-char kind",
            Method::GET,
            format!("/v1/failovers?kind={long_kind}"),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "workers bad cursor",
            Method::GET,
            "/v1/workers?since=garbage".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "events unknown type",
            Method::GET,
            "/v1/events?types=nope".into(),
            Tok::Viewer,
            vec![],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "events bad Last-Event-ID",
            Method::GET,
            "/v1/events".into(),
            Tok::Viewer,
            vec![("last-event-id", "abc".into())],
            vec![],
            400,
            "invalid_query",
        ),
        (
            "no such path",
            Method::GET,
            "/v1/nope".into(),
            Tok::Viewer,
            vec![],
            vec![],
            404,
            "not_found",
        ),
        (
            "path traversal",
            Method::GET,
            "/v1/../etc/passwd".into(),
            Tok::Viewer,
            vec![],
            vec![],
            404,
            "not_found",
        ),
        (
            "DELETE config",
            Method::DELETE,
            "/v1/config".into(),
            Tok::Owner,
            vec![],
            vec![],
            405,
            "method_not_allowed",
        ),
        (
            "POST workers",
            Method::POST,
            "/v1/workers".into(),
            Tok::Owner,
            vec![],
            vec![],
            405,
            "method_not_allowed",
        ),
        (
            "GET heartbeats",
            Method::GET,
            "/v1/heartbeats".into(),
            Tok::Worker,
            vec![],
            vec![],
            405,
            "method_not_allowed",
        ),
        (
            "Basic auth",
            Method::GET,
            "/v1/whoami".into(),
            Tok::None,
            vec![("authorization", "Basic YWxpY2U6cHc=".into())],
            vec![],
            401,
            "unauthorized",
        ),
        (
            "empty Bearer",
            Method::GET,
            "/v1/whoami".into(),
            Tok::None,
            vec![("authorization", "Bearer ".into())],
            vec![],
            401,
            "unauthorized",
        ),
    ];
    for (name, method, path, tok, headers, body, want, code) in cases {
        let (s, v) = send(&h, method, &path, tok, &headers, body).await;
        assert_eq!(s.as_u16(), want, "{name}: {v}");
        assert_eq!(v["error"]["code"], code, "{name}: {v}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.chars().count() <= 300, "{name}: a short message");
        assert!(
            !msg.contains(&long_kind[..100]),
            "{name}: the value is not echoed"
        );
        tried += 1;
    }
    eprintln!("{tried} hostile requests, each a precise 4xx with the JSON error body");
    assert!(tried >= 80, "{tried}");
    assert_eq!(h.health().await.status(), 200);
    assert_eq!(stored(&h).await, before, "nothing stored changed");
}

/// Send raw bytes on a fresh connection and read the answer until the hub
/// closes it (bounded: 10 s, 1 MiB).
async fn raw_exchange(h: &TestHub, request: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = h.url().trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    // The hub may answer and close before it has read everything.
    let _ = s.write_all(request).await;
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while out.len() < 1 << 20 {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    out
}

/// The answers the HTTP layer gives before any handler sees the request
/// (hyper writes them itself) carry the JSON error body too; afterwards the
/// hub is healthy and nothing stored changed.
#[tokio::test]
async fn http_layer_errors_have_the_json_body() {
    let h = TestHub::start().await;
    let before = stored(&h).await;
    let get = |target: &str, headers: &str| {
        format!("GET {target} HTTP/1.1\r\nhost: x\r\n{headers}\r\n").into_bytes()
    };
    let many_headers: String = (0..101).map(|i| format!("x-h{i}: v\r\n")).collect();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "a 100 KiB header",
            get("/v1/health", &format!("x-big: {}\r\n", "a".repeat(100 * 1024))),
            431,
            "headers_too_large",
        ),
        (
            "a 70,000-byte header (just over the 64 KiB head limit)",
            get("/v1/health", &format!("x-big: {}\r\n", "a".repeat(70_000))),
            431,
            "headers_too_large",
        ),
        (
            "a 70,000-byte target (a head over 64 KiB)",
            get(&format!("/v1/failovers?kind={}", "k".repeat(70_000)), ""),
            431,
            "headers_too_large",
        ),
        (
            "101 headers",
            get("/v1/health", &many_headers),
            431,
            "headers_too_large",
        ),
        (
            "a 9,000-byte target",
            get(
                &format!("/v1/failovers?kind={}", "k".repeat(9_000)),
                "connection: close\r\n",
            ),
            414,
            "uri_too_long",
        ),
        (
            "a 60,000-byte target, no token",
            get(
                &format!("/v1/whoami?{}", "k".repeat(60_000)),
                "connection: close\r\n",
            ),
            414,
            "uri_too_long",
        ),
        (
            "a malformed request line",
            b"GARBAGE\r\n\r\n".to_vec(),
            400,
            "bad_request",
        ),
        (
            "an unknown HTTP version",
            b"GET /v1/health HTTP/2.5\r\nhost: x\r\n\r\n".to_vec(),
            400,
            "bad_request",
        ),
        (
            "a space in a header name",
            get("/v1/health", "bad header: a\r\n"),
            400,
            "bad_request",
        ),
        (
            "two Content-Lengths",
            b"POST /v1/heartbeats HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nabcde".to_vec(),
            400,
            "bad_request",
        ),
        (
            "a control byte in the target",
            b"GET /v1/he\x01alth HTTP/1.1\r\nhost: x\r\n\r\n".to_vec(),
            400,
            "bad_request",
        ),
    ];
    for (name, request, want, code) in &cases {
        let t = std::time::Instant::now();
        let out = raw_exchange(&h, request).await;
        eprintln!("{name}: answered and closed in {:?}", t.elapsed());
        let text = String::from_utf8_lossy(&out);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|r| r.get(..3))
            .and_then(|s| s.parse::<u16>().ok());
        assert_eq!(status, Some(*want), "{name}: {head}");
        let head_lc = head.to_ascii_lowercase();
        assert!(
            head_lc.contains("\r\ncontent-type: application/json\r\n"),
            "{name}: {head}"
        );
        assert!(
            head_lc.contains(&format!("\r\ncontent-length: {}\r\n", body.len())),
            "{name}: {head}"
        );
        let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        assert_eq!(v["error"]["code"], *code, "{name}: {body:?}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(!msg.is_empty() && msg.len() <= 100, "{name}: {msg}");
    }
    // A normal request on the same kind of raw connection is untouched.
    let out = raw_exchange(&h, &get("/v1/health", "connection: close\r\n")).await;
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\nok"), "{text}");
    assert_eq!(h.health().await.status(), 200);
    assert_eq!(stored(&h).await, before, "nothing stored changed");
}
