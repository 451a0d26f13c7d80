//! The scrubber's contract, from the outside.
//!
//! No secret-shaped string is written out in this file: every fake secret
//! is a prefix glued to characters from a small deterministic generator at
//! run time, so the repository never holds one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::borrow::Cow;
use std::cell::Cell;
use std::time::{Duration, Instant};

use macfleet::scrub::{Kind, PLACEHOLDER_PREFIX, find_secrets, scrub};
use proptest::prelude::*;

// ------------------------------------------------------------- allocations

/// Counts this thread's allocations, to check that clean text costs none.
struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCS.with(|c| c.get());
    f();
    ALLOCS.with(|c| c.get()) - before
}

// ------------------------------------------------------------- generators

const B62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const HEX: &[u8] = b"0123456789abcdef";

/// xorshift64: a tiny deterministic generator.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize] as char)
            .collect()
    }
    /// Random base62 that mixes letter cases and digits, as real keys do.
    fn b62(&mut self, n: usize) -> String {
        let mut s = self.pick(B62, n);
        let mix = ["aQ3", "Zk8", "m7P"][(self.next() % 3) as usize];
        let at = (self.next() as usize) % (n - 2);
        s.replace_range(at..at + 3, mix);
        s
    }
}

/// The secret's random part must not survive, not even a piece of it.
fn assert_no_fragment(out: &str, secret: &str, ctx: &str) {
    const W: usize = 8;
    assert!(
        !out.contains(secret),
        "secret survived in {out:?} (from {ctx:?})"
    );
    if secret.len() >= W {
        for i in 0..=secret.len() - W {
            let frag = &secret[i..i + W];
            assert!(
                !out.contains(frag),
                "fragment {frag:?} survived in {out:?} (from {ctx:?})"
            );
        }
    }
}

/// A PEM private-key header, never written out whole in the source.
fn pem_begin() -> String {
    format!("-----BEGIN {} KEY-----", "PRIVATE")
}

fn placeholder(kind: &str) -> String {
    format!("{PLACEHOLDER_PREFIX}{kind}]")
}

// ------------------------------------------------------------- positives

struct Case {
    /// The text as a worker would send it.
    text: String,
    /// The placeholder kind expected.
    kind: &'static str,
    /// The part that must be gone.
    secret: String,
    /// Text that must still be there (kept non-secret parts).
    keep: &'static [&'static str],
}

fn case(text: String, kind: &'static str, secret: String, keep: &'static [&'static str]) -> Case {
    Case {
        text,
        kind,
        secret,
        keep,
    }
}

fn positive_cases() -> Vec<Case> {
    let mut r = Rng::new(7);
    let mut v = Vec::new();
    let route = |s: &str| format!("opencode route: 401 from upstream, key {s} rejected");

    // Prefixed keys.
    for (prefix, body_len, kind) in [
        ("sk-ant-api03-", 93, "anthropic-key"),
        ("sk-ant-admin01-", 93, "anthropic-key"),
        ("sk-ant-oat01-", 93, "anthropic-key"),
        ("sk-ant-ort01-", 93, "anthropic-key"),
        ("sk-", 48, "openai-key"),
        ("sk-proj-", 120, "openai-key"),
        ("sk-svcacct-", 120, "openai-key"),
        ("sk-admin-", 60, "openai-key"),
        ("sk-or-v1-", 64, "openrouter-key"),
        ("ghp_", 36, "github-token"),
        ("gho_", 36, "github-token"),
        ("ghu_", 36, "github-token"),
        ("ghs_", 36, "github-token"),
        ("ghr_", 36, "github-token"),
        ("mft_", 43, "macfleet-token"),
        ("AIza", 35, "google-api-key"),
        ("xai-", 80, "xai-key"),
        ("gsk_", 52, "groq-key"),
        ("hf_", 34, "huggingface-token"),
        ("org-", 24, "account-id"),
    ] {
        let body = r.b62(body_len);
        let key = format!("{prefix}{body}");
        v.push(case(
            route(&key),
            kind,
            body,
            &["opencode route: 401", "rejected"],
        ));
    }
    // OpenAI legacy key with the usual marker in the middle.
    let body = format!("{}{}{}", r.b62(20), "T3BlbkFJ", r.b62(20));
    v.push(case(route(&format!("sk-{body}")), "openai-key", body, &[]));
    // OpenRouter keys are hex.
    let body = r.pick(HEX, 64);
    v.push(case(
        route(&format!("sk-or-v1-{body}")),
        "openrouter-key",
        body,
        &[],
    ));
    // Fine-grained GitHub PAT.
    let body = format!("{}_{}", r.b62(22), r.b62(59));
    v.push(case(
        format!("git push failed: github_pat_{body} lacks scope"),
        "github-token",
        body,
        &["git push failed:", "lacks scope"],
    ));
    // AWS access key ids.
    for prefix in ["AKIA", "ASIA"] {
        let body = r.pick(UPPER_DIGITS, 16);
        v.push(case(
            format!("bedrock: InvalidClientTokenId {prefix}{body}, region us-east-1"),
            "aws-access-key-id",
            format!("{prefix}{body}"),
            &["bedrock: InvalidClientTokenId", "region us-east-1"],
        ));
    }
    // AWS secret keys in context.
    let aws = || {
        format!(
            "{}/{}+{}",
            Rng::new(99).b62(18),
            Rng::new(98).b62(10),
            "Q9x"
        )
    };
    let s40 = {
        let mut s = aws();
        s.push_str(&Rng::new(97).b62(40 - s.len()));
        s
    };
    assert_eq!(s40.len(), 40);
    for text in [
        format!("aws_secret_access_key = {s40}"),
        format!("AWS_SECRET_ACCESS_KEY={s40} bedrock 403"),
        format!("{{\"SecretAccessKey\": \"{s40}\"}}"),
        format!("AWS secret access key {s40} is invalid"),
    ] {
        v.push(case(text, "aws-secret-key", s40.clone(), &[]));
    }
    // JWT.
    let (h, p, s) = (r.b62(30), r.b62(60), r.b62(43));
    v.push(case(
        format!("claude: session eyJ{h}.eyJ{p}.{s} expired"),
        "jwt",
        format!("{h}.eyJ{p}.{s}"),
        &["claude: session", "expired"],
    ));
    // Headers.
    let t = r.b62(40);
    v.push(case(
        format!("request headers: Authorization: Bearer {t}, 401"),
        "authorization",
        t.clone(),
        &["Authorization: Bearer ", ", 401"],
    ));
    let t = r.b62(24);
    v.push(case(
        format!("curl -H 'authorization: Basic {t}' failed"),
        "authorization",
        t,
        &["authorization: Basic ", "' failed"],
    ));
    let t = r.b62(30);
    v.push(case(
        format!("Authorization: token {t}"),
        "authorization",
        t,
        &["Authorization: token "],
    ));
    let t = r.b62(32);
    v.push(case(
        format!("proxy said Authorization: {t}"),
        "authorization",
        t,
        &["proxy said Authorization: "],
    ));
    let t = r.b62(32);
    v.push(case(
        format!("x-api-key: {t} -> 401"),
        "api-key",
        t,
        &["x-api-key: ", " -> 401"],
    ));
    let t = r.b62(32);
    v.push(case(
        format!("sent Bearer {t} to upstream"),
        "authorization",
        t,
        &["sent Bearer ", " to upstream"],
    ));
    let t = r.b62(32);
    v.push(case(
        format!("Cookie: session={t}; theme=dark"),
        "cookie",
        t,
        &["Cookie: "],
    ));
    // URL passwords and query values.
    let pw = r.b62(18);
    v.push(case(
        format!("git fetch https://worker:{pw}@git.example.com/fleet.git: 403"),
        "password",
        pw,
        &["https://worker:", "@git.example.com/fleet.git: 403"],
    ));
    for name in [
        "token",
        "key",
        "secret",
        "password",
        "signature",
        "sig",
        "access_token",
        "api_key",
        "auth",
        "X-Amz-Signature",
    ] {
        let t = r.b62(28);
        v.push(case(
            format!("GET https://api.example.com/v1/run?{name}={t}&x=1 -> 500"),
            "url-query",
            t,
            &["GET https://api.example.com/v1/run?", "&x=1 -> 500"],
        ));
    }
    // Connection strings.
    let pw = r.b62(16);
    v.push(case(
        format!("db: postgres://fleet:{pw}@db.internal:5432/hub unreachable"),
        "password",
        pw,
        &["postgres://fleet:", "@db.internal:5432/hub unreachable"],
    ));
    let pw = r.b62(16);
    v.push(case(
        format!("Server=tcp:db,1433;User ID=hub;Password={pw};Encrypt=true"),
        "password",
        pw,
        &["Server=tcp:db,1433;User ID=hub;Password=", ";Encrypt=true"],
    ));
    // key=value, key: value, "key": "value".
    for (key, kind) in [
        ("token", "token"),
        ("secret", "secret"),
        ("password", "password"),
        ("passwd", "password"),
        ("api_key", "api-key"),
        ("apikey", "api-key"),
        ("apiKey", "api-key"),
        ("access_key", "secret"),
        ("account_id", "account-id"),
        ("accountId", "account-id"),
        ("account", "account-id"),
        ("client_secret", "secret"),
        ("refresh_token", "token"),
        ("MAC_HUB_TOKEN", "token"),
        ("credentials", "secret"),
    ] {
        let t = r.b62(20);
        v.push(case(
            format!("config {key}={t} bad"),
            kind,
            t,
            &["config ", " bad"],
        ));
        let t = r.b62(20);
        v.push(case(format!("{key}: {t}"), kind, t, &[]));
        let t = r.b62(20);
        v.push(case(
            format!("body {{\"{key}\": \"{t}\", \"model\": \"gpt-4o-mini\"}}"),
            kind,
            t,
            &["\"model\": \"gpt-4o-mini\""],
        ));
    }
    v.push(case(
        "credit balance: 13.37 USD".to_string(),
        "balance",
        "13.37".to_string(),
        &["credit balance: "],
    ));
    v.push(case(
        format!("arn:aws:sts::{}:assumed-role/worker", "2109".repeat(3)),
        "account-id",
        "2109".repeat(3),
        &["arn:aws:sts::", ":assumed-role/worker"],
    ));
    // A token that is a git-hash-shaped value under a secret name.
    let h = r.pick(HEX, 40);
    v.push(case(format!("token={h}"), "token", h, &[]));
    // Private key block.
    let body = r.b62(64);
    v.push(case(
        format!(
            "ssh: -----BEGIN OPENSSH {}-----\n{body}\n-----END OPENSSH {}-----",
            "PRIVATE KEY", "PRIVATE KEY"
        ),
        "private-key",
        body,
        &["ssh: "],
    ));
    v
}

#[test]
fn positives_are_redacted() {
    let cases = positive_cases();
    assert!(cases.len() >= 80, "{} cases", cases.len());
    for c in &cases {
        let out = scrub(&c.text);
        let out = out.as_ref();
        assert!(
            out.contains(&placeholder(c.kind)),
            "{:?} -> {out:?}, want kind {}",
            c.text,
            c.kind
        );
        assert_no_fragment(out, &c.secret, &c.text);
        for k in c.keep {
            assert!(out.contains(k), "{k:?} lost: {:?} -> {out:?}", c.text);
        }
        assert!(
            find_secrets(&c.text)
                .iter()
                .any(|f| f.kind.as_str() == c.kind),
            "{:?}",
            c.text
        );
        assert_eq!(scrub(out), out, "not idempotent on {:?}", c.text);
    }
}

// ------------------------------------------------------------- negatives

fn negative_cases() -> Vec<String> {
    let mut r = Rng::new(11);
    let uuid = format!(
        "{}-{}-4{}-a{}-{}",
        r.pick(HEX, 8),
        r.pick(HEX, 4),
        r.pick(HEX, 3),
        r.pick(HEX, 3),
        r.pick(HEX, 12)
    );
    let sha1 = r.pick(HEX, 40);
    let sha256 = r.pick(HEX, 64);
    let mut v: Vec<String> = [
        "claude-sonnet-4-5-20250929 overloaded, retrying",
        "model gpt-4o-mini not available for this route",
        "locale sk-SK, fallback sk_SK",
        "OPENAI_API_KEY is not set",
        "ANTHROPIC_API_KEY is not set",
        "export OPENAI_API_KEY before starting opencode",
        "token=$MAC_HUB_TOKEN",
        "token=${MAC_HUB_TOKEN}",
        "Authorization: Bearer $MAC_HUB_TOKEN",
        "api_key: OPENAI_API_KEY",
        "429 Too Many Requests",
        "upstream 502 from route opencode",
        "503 Service Unavailable: upstream connect error",
        "pip install sk-learn failed; task-key collision",
        "rate limit: 80000 input tokens per minute, max_tokens=4096",
        "usage: input_tokens: 1200, output_tokens: 800",
        "token: expired",
        "token: missing",
        "password: incorrect",
        "\"token\": true, \"binary\": true",
        "no_token: worker has no credentials configured",
        "Your credit balance is too low to access the Anthropic API",
        "invalid x-api-key",
        "Authorization header missing",
        "GET https://api.anthropic.com/v1/messages returned 529",
        "clone https://git@github.com/macfleet/macfleet.git: exit 128",
        "npm: https://registry.npmjs.org/@scope/pkg 404",
        "see https://docs.example.com/auth?lang=en#token-types",
        "sort_key=updated_at, cache_key=model",
        "signal: killed (SIGKILL)",
        "author: fleet bot",
        "ssh: connect to host git port 22: Connection refused",
        "opencode exited 1: ENOENT",
        "TASK-1234 queued",
        "region ASIA-PACIFIC unavailable",
        "arn:aws:s3:::fleet-artifacts",
        "password=\"\"",
        "token=",
        "[redacted:anthropic-key] rejected",
        "token=[redacted:token]&x=1",
        "https://bob:[redacted:password]@git.example.com/x.git",
        "résumé — ünïcödé 🙂 status ok",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(format!("worker {uuid} heartbeat late"));
    v.push(format!("commit {sha1} pushed"));
    v.push(format!("artifact sha256:{sha256} verified"));
    v.push(format!("worker_id={uuid} failover to pi"));
    v
}

#[test]
fn negatives_come_back_borrowed_and_identical() {
    let cases = negative_cases();
    assert!(cases.len() >= 40);
    for t in &cases {
        match scrub(t) {
            Cow::Borrowed(b) => assert_eq!(b, t),
            Cow::Owned(o) => panic!("{t:?} was changed to {o:?}"),
        }
        assert!(find_secrets(t).is_empty(), "{t:?}");
    }
}

#[test]
fn clean_text_does_not_allocate() {
    // The automata are built on first use.
    let _ = scrub(&format!("token={}", Rng::new(1).b62(20)));
    let mut texts = negative_cases();
    texts.push("x".repeat(5000));
    texts.push("opencode: POST https://api.anthropic.com/v1/messages 529; tokens: 1200".into());
    for t in &texts {
        let n = allocations(|| {
            let out = scrub(t);
            assert!(matches!(out, Cow::Borrowed(_)));
        });
        assert_eq!(n, 0, "{t:?} allocated {n} times");
    }
    // The counter does count.
    let dirty = format!("token={}", Rng::new(2).b62(20));
    assert!(allocations(|| drop(scrub(&dirty))) > 0);
}

// ------------------------------------------------------------- robustness

#[test]
fn huge_and_pathological_inputs_are_fast() {
    let n = 1 << 20;
    let mut r = Rng::new(5);
    let inputs = [
        "token=".repeat(n / 6),
        "sk--".repeat(n / 4),
        "eyJ-".repeat(n / 4),
        "://".repeat(n / 3),
        "Cookie: ".repeat(n / 8),
        "password: \"".repeat(n / 11),
        "key key key ".repeat(n / 12),
        "secret ".repeat(n / 7),
        pem_begin().repeat(n / 27),
        "Bearer ".repeat(n / 7),
        "https://a:b@".repeat(n / 12),
        "tokentoken".repeat(n / 10),
        format!("token={}", "a".repeat(n)),
        r.pick(B62, n),
        r.pick(b"sk-_=:/@?&\"' $[]{}tokenkey", n),
    ];
    for input in &inputs {
        let t = Instant::now();
        let out = scrub(input);
        let took = t.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "{took:?} on {:?}…",
            &input[..40]
        );
        assert_eq!(scrub(&out), out);
    }
}

#[test]
fn multibyte_text_around_secrets() {
    let mut r = Rng::new(3);
    let k = format!("sk-ant-api03-{}", r.b62(93));
    for t in [
        format!("ключ {k} отклонён"),
        format!("秘密:{k}。"),
        format!("token=é{}", r.b62(20)),
        format!("password=\"🙂{}", r.b62(20)),
    ] {
        let out = scrub(&t);
        assert!(out.contains(PLACEHOLDER_PREFIX), "{t}");
        assert_eq!(scrub(&out), out);
    }
}

// ------------------------------------------------------------- properties

/// A generated secret and the random part of it that must vanish.
fn secret() -> impl Strategy<Value = (String, String)> {
    let body = |n: usize| {
        proptest::collection::vec(proptest::sample::select(B62.to_vec()), n..n + 40).prop_map(|v| {
            let mut s = String::from_utf8(v).unwrap();
            s.replace_range(0..3, "aQ3");
            s
        })
    };
    let upper = proptest::collection::vec(proptest::sample::select(UPPER_DIGITS.to_vec()), 16)
        .prop_map(|v| String::from_utf8(v).unwrap());
    prop_oneof![
        body(93).prop_map(|b| (format!("sk-ant-api03-{b}"), b)),
        body(48).prop_map(|b| (format!("sk-{b}"), b)),
        body(60).prop_map(|b| (format!("sk-proj-{b}"), b)),
        body(64).prop_map(|b| (format!("sk-or-v1-{b}"), b)),
        body(36).prop_map(|b| (format!("ghp_{b}"), b)),
        body(43).prop_map(|b| (format!("mft_{b}"), b)),
        upper.prop_map(|b| (format!("AKIA{b}"), b)),
        (body(20), body(30), body(20))
            .prop_map(|(a, b, c)| (format!("eyJ{a}.eyJ{b}.{c}"), format!("{a}.eyJ{b}.{c}"))),
        body(20).prop_map(|b| (format!("token={b}"), b)),
        body(20).prop_map(|b| (format!("\"password\": \"{b}\""), b)),
        body(20).prop_map(|b| (format!("https://u:{b}@host/x"), b)),
        body(20).prop_map(|b| (format!("/v1?sig={b}&y=2"), b)),
        body(20).prop_map(|b| (format!("Authorization: Bearer {b}"), b)),
    ]
}

/// Text rich in the scrubber's trigger words, quotes and separators.
fn tricky_text() -> impl Strategy<Value = String> {
    let words: Vec<String> = [
        "token",
        "key",
        "Authorization",
        "Proxy-Authorization",
        "Bearer ",
        "Basic ",
        "Digest ",
        "Cookie",
        "Set-Cookie",
        "password",
        "Password=",
        "secret",
        "SecretAccessKey",
        "AWS_SECRET_ACCESS_KEY",
        "aws secret access key ",
        "account_id",
        "org_id",
        "balance",
        "sig",
        "auth",
        "--api-key",
        "--token",
        "x-api-key",
        "sk-",
        "sk-ant-",
        "sk-proj-",
        "sk-or-v1-",
        "ghp_",
        "github_pat_",
        "mft_",
        "AKIA",
        "AIza",
        "xai-",
        "gsk_",
        "hf_",
        "org-",
        "eyJ",
        "https://",
        "postgres://",
        "://",
        "#access_token=",
        "?",
        "&",
        "[redacted:token]",
        "[redacted:",
        "$VAR",
        "${",
        "{{ secrets.X }}",
        "%VAR%",
        "<api-key>",
        "-----END",
        "arn:aws:iam::",
        "null",
        "not",
        "no_",
        "OPENAI_API_KEY",
        "=>",
        ":=",
        "\\\"",
        "é",
        "🙂",
        // Issue 31's and 29's shapes.
        "curl ",
        "curl -u ",
        " --user ",
        " -u ",
        "\\\n",
        ":AA",
        "bot",
        "A3-",
        "-us",
        "4b1d",
        "discord.com/api/webhooks/",
        "openai.azure.com",
        "hooks.slack.com/workflows/",
        "ABSK",
        "v1.0-",
        "EAAC",
        "1234567890123456|",
        "token_",
        "secret-",
        "db-pass-",
        "account-",
        "balance-",
        "credit-left-",
        "__CONTRIBSYS__COM=",
        "sonar.login=",
        "SUMO_ACCESS_ID=",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([pem_begin()])
    .collect();
    let piece = prop_oneof![
        3 => proptest::sample::select(words),
        2 => "[=:@?&\"'\\ \t\n{}\\[\\].,;/#%$<>*+~-]{1,3}",
        2 => "[a-zA-Z0-9_]{1,12}",
        1 => "[A-Za-z0-9/+]{40}",
        1 => "\\PC{1,4}",
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_and_is_idempotent(text in "\\PC{0,300}") {
        let once = scrub(&text).into_owned();
        let twice = scrub(&once).into_owned();
        prop_assert_eq!(twice, once);
    }

    #[test]
    fn embedded_secret_never_survives(
        before in prop_oneof![tricky_text(), "\\PC{0,80}"],
        after in prop_oneof![tricky_text(), "\\PC{0,80}"],
        (secret, body) in secret(),
    ) {
        let text = format!("{before} {secret} {after}");
        let out = scrub(&text);
        prop_assert!(!out.contains(&secret), "{:?}", out);
        prop_assert!(!out.contains(&body), "{:?}", out);
        prop_assert!(out.contains(PLACEHOLDER_PREFIX));
        let again = scrub(&out).into_owned();
        prop_assert_eq!(again.as_str(), out.as_ref());
    }

    #[test]
    fn clean_vocabulary_is_borrowed(
        words in proptest::collection::vec(prop_oneof![
            Just("429 Too Many Requests".to_string()),
            Just("upstream 502 from route opencode".to_string()),
            Just("claude-sonnet-4-5-20250929".to_string()),
            Just("gpt-4o-mini".to_string()),
            Just("sk-SK".to_string()),
            Just("ANTHROPIC_API_KEY is not set".to_string()),
            Just("token=$MAC_HUB_TOKEN".to_string()),
            Just("failover".to_string()),
            "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}",
            "commit [0-9a-f]{40}",
            "[0-9]{1,5}",
        ], 0..12)
    ) {
        let text = words.join(" ");
        prop_assert!(matches!(scrub(&text), Cow::Borrowed(_)), "{:?}", text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn idempotent_on_tricky_text(text in tricky_text()) {
        let once = scrub(&text).into_owned();
        let twice = scrub(&once).into_owned();
        prop_assert_eq!(twice, once);
        for f in find_secrets(&text) {
            prop_assert!(text.is_char_boundary(f.range.start));
            prop_assert!(text.is_char_boundary(f.range.end));
        }
    }
}

#[test]
fn every_kind_has_a_placeholder_that_survives_rescrubbing() {
    for k in Kind::ALL {
        let p = k.placeholder();
        assert_eq!(p, placeholder(k.as_str()));
        assert!(matches!(scrub(&p), Cow::Borrowed(_)));
        assert!(matches!(scrub(&format!("token={p}")), Cow::Borrowed(_)));
    }
}

// ------------------------------------------------------------- the corpus

use macfleet::scrub::corpus::{self, leaked};
use macfleet::textsafe::{for_terminal, is_unsafe};

#[test]
fn corpus_covers_every_family_and_never_survives() {
    let all = corpus::secrets();
    assert!(all.len() >= 60, "only {} fake secrets", all.len());
    for e in &all {
        // Not vacuous: the raw detail does hold the secret.
        assert!(
            leaked(&e.detail, &e.needle),
            "{}: needle not in {:?}",
            e.family,
            e.detail
        );
        let out = scrub(&e.detail);
        assert!(!leaked(&out, &e.needle), "{}: {out:?}", e.family);
        assert!(out.contains(PLACEHOLDER_PREFIX), "{}: {out:?}", e.family);
        assert_eq!(scrub(&out), out, "{}: not idempotent", e.family);
        let shown = for_terminal(&e.detail);
        assert!(!leaked(&shown, &e.needle), "{}: {shown:?}", e.family);
        assert!(
            shown.chars().all(|c| !is_unsafe(c)),
            "{}: {shown:?}",
            e.family
        );
    }
}

#[test]
fn corpus_lookalikes_stay() {
    for t in corpus::lookalikes() {
        let out = scrub(&t);
        assert!(matches!(out, Cow::Borrowed(_)), "{t:?} became {out:?}");
    }
}

#[test]
fn new_families_name_their_kind() {
    let mut r = Rng::new(77);
    let cases = [
        (
            format!(
                "xoxb-{}-{}-{}",
                r.pick(b"0123456789", 12),
                r.pick(b"0123456789", 13),
                r.b62(24)
            ),
            Kind::SlackToken,
        ),
        (format!("sk_live_{}", r.b62(24)), Kind::StripeKey),
        (format!("rk_live_{}", r.b62(24)), Kind::StripeKey),
        (format!("glpat-{}", r.b62(20)), Kind::GitlabToken),
        (format!("npm_{}", r.b62(36)), Kind::NpmToken),
        (format!("SG.{}.{}", r.b62(22), r.b62(43)), Kind::SendgridKey),
        (
            format!(
                "hf_{}",
                r.pick(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 34)
            ),
            Kind::HuggingfaceToken,
        ),
        (
            format!("pypi-AgEIcHlwaS5vcmc{}", r.b62(60)),
            Kind::PypiToken,
        ),
        (format!("GOCSPX-{}", r.b62(28)), Kind::GoogleOauth),
        (format!("{}8Q~{}", r.b62(3), r.b62(34)), Kind::AzureSecret),
        (
            format!("ghp_{}", r.pick(b"abcdefghijklmnopqrstuvwxyz", 36)),
            Kind::GithubToken,
        ),
    ];
    for (secret, kind) in cases {
        let text = format!("route x: key {secret} rejected");
        let found: Vec<Kind> = find_secrets(&text).into_iter().map(|f| f.kind).collect();
        assert_eq!(found, vec![kind], "{text}");
        assert_eq!(
            scrub(&text),
            format!("route x: key {} rejected", kind.placeholder())
        );
    }
}

#[test]
fn hidden_keys_are_found_and_replaced_whole() {
    let mut r = Rng::new(78);
    let body = r.b62(60);
    let (a, z) = body.split_at(25);
    for text in [
        format!("key sk-ant-api03-{a}\u{200B}{z} end"),
        format!("key sk\u{FF0D}ant\u{FF0D}api03\u{FF0D}{body} end"),
        format!("key sk\u{2010}ant\u{2011}api03-{body} end"),
        format!("key \u{1b}[1;31msk-ant-api03-{body}\u{1b}[0m end"),
        format!("key xsk-ant-api03-{body} end"),
        format!("key sk-ant-api03-{a}\u{E0020}{z} end"),
    ] {
        let out = scrub(&text);
        assert!(!leaked(&out, &body), "{text:?} → {out:?}");
        assert!(out.contains("[redacted:anthropic-key]"), "{out:?}");
        assert!(out.starts_with("key ") && out.ends_with(" end"), "{out:?}");
        assert_eq!(scrub(&out), out);
    }
}

/// Unicode 15.1's `Default_Ignorable_Code_Point` ranges (assigned or not)
/// and its format characters (`Cf`).
const IGNORABLE_AND_FORMAT: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

fn ignorable_and_format() -> impl Iterator<Item = char> {
    IGNORABLE_AND_FORMAT
        .iter()
        .flat_map(|&(lo, hi)| lo..=hi)
        .filter_map(char::from_u32)
}

/// `key` with `c` inserted after every `every` characters.
fn interleave(key: &str, c: char, every: usize) -> String {
    let mut out = String::with_capacity(key.len() * 2);
    for (i, k) in key.chars().enumerate() {
        if i > 0 && i % every == 0 {
            out.push(c);
        }
        out.push(k);
    }
    out
}

/// Whether a 10-character piece of `body` is in `out` once `hidden` is
/// taken out of it, as a terminal that shows `hidden` as nothing would.
fn shows(out: &str, hidden: char, body: &str) -> bool {
    let seen: String = out.chars().filter(|&c| c != hidden).collect();
    (0..=body.len() - 10).any(|i| seen.contains(&body[i..i + 10]))
}

#[test]
fn lookalike_hyphens_inside_a_prefix_are_read_as_hyphens() {
    let body = Rng::new(81).b62(60);
    for h in ['\u{2043}', '\u{058A}', '\u{1806}', '\u{30FC}', '\u{FF70}'] {
        for text in [
            format!("key sk{h}ant{h}api03{h}{body} end"),
            format!("key sk-ant{h}api03-{body} end"),
            format!("key sk{h}proj{h}{body} end"),
        ] {
            let out = scrub(&text);
            assert!(!shows(&out, h, &body), "U+{:04X}: {out:?}", h as u32);
            assert!(out.contains(PLACEHOLDER_PREFIX), "{out:?}");
            assert!(out.starts_with("key ") && out.ends_with(" end"), "{out:?}");
            let shown = for_terminal(&text);
            assert!(!shows(&shown, h, &body), "{shown:?}");
        }
    }
    // Prose with those marks and nothing secret stays as it is.
    for t in ["サーバーが応答しません", "ｻｰﾊﾞｰ 429", "բարեւ֊ձեզ"] {
        assert!(matches!(scrub(t), Cow::Borrowed(_)), "{t}");
    }
}

#[test]
fn keys_broken_by_any_default_ignorable_or_format_character_are_caught() {
    let mut r = Rng::new(82);
    let ant = r.b62(60);
    let ghp = r.b62(36);
    let mut n = 0;
    for c in ignorable_and_format() {
        for (prefix, body, every) in [("sk-ant-api03-", &ant, 3), ("ghp_", &ghp, 5)] {
            let text = format!(
                "route x: key {} rejected",
                interleave(&format!("{prefix}{body}"), c, every)
            );
            let out = scrub(&text);
            assert!(!shows(&out, c, body), "U+{:04X}: {out:?}", c as u32);
            assert!(out.contains(PLACEHOLDER_PREFIX), "U+{:04X}", c as u32);
            assert!(
                out.starts_with("route x: key ") && out.ends_with(" rejected"),
                "U+{:04X}: {out:?}",
                c as u32
            );
            // The placeholder took the inserted characters with the key.
            assert!(!out.contains(c), "U+{:04X}: {out:?}", c as u32);
            n += 1;
        }
    }
    assert!(n > 2 * 4096, "{n}");
}

#[test]
fn for_terminal_and_json_escape_every_default_ignorable_and_format_character() {
    for c in ignorable_and_format() {
        // Text that holds no secret: the character is only escaped.
        let text = format!("retry{c}after 30s");
        let shown = for_terminal(&text);
        assert_eq!(
            shown,
            format!("retry<U+{:04X}>after 30s", c as u32),
            "U+{:04X}",
            c as u32
        );
        let json = serde_json::to_string(&serde_json::json!({ "detail": text })).expect("json");
        let safe = macfleet::textsafe::json_for_terminal(&json);
        assert!(!safe.contains(c), "U+{:04X}: {safe}", c as u32);
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back["detail"], text.as_str());
    }
    // Controls, C1 and bidirectional characters too.
    for c in ('\u{0}'..='\u{1f}')
        .chain('\u{7f}'..='\u{9f}')
        .chain(['\u{202E}', '\u{2066}', '\u{2069}', '\u{200F}', '\u{061C}'])
    {
        let text = format!("a{c}b");
        assert_eq!(for_terminal(&text), format!("a<U+{:04X}>b", c as u32));
    }
}

#[test]
fn account_identifiers_are_redacted() {
    let mut r = Rng::new(83);
    let local = r.pick(b"abcdefghijklmnopqrstuvwxyz", 6);
    let id = r.b62(24);
    let digits = r.pick(b"0123456789", 12);
    let cases = [
        (
            format!("claude cap reached for {local}.smith@acme.io"),
            "claude cap reached for [redacted:account-id]",
        ),
        (
            format!("account ops+{local}7@corp.com over its monthly limit"),
            "account [redacted:account-id] over its monthly limit",
        ),
        (
            format!("quota: {local}@sub.example.co.uk."),
            "quota: [redacted:account-id].",
        ),
        (
            format!("stripe: acct_{id} suspended"),
            "stripe: [redacted:account-id] suspended",
        ),
        (
            format!("openai: user-{id} over quota"),
            "openai: [redacted:account-id] over quota",
        ),
        (
            format!("openai: proj_{id} rate limited"),
            "openai: [redacted:account-id] rate limited",
        ),
        (
            format!("bedrock: AWS account {digits} denied"),
            "bedrock: AWS account [redacted:account-id] denied",
        ),
        (
            format!(
                "account id {}-{}-{} denied",
                &digits[..4],
                &digits[4..8],
                &digits[8..]
            ),
            "account id [redacted:account-id] denied",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(scrub(&text), want, "{text}");
        assert_eq!(scrub(want), want);
    }
    for keep in [
        "git@github.com:macfleet/macfleet.git: exit 128",
        "clone https://git@github.com/macfleet/macfleet.git",
        "npm i react@18.2.0 and @scope/pkg",
        "ssh deploy@localhost refused",
        "user-agent curl/8.5, user-defined route",
        "account over its monthly limit",
        "accounts: 3",
    ] {
        assert!(matches!(scrub(keep), Cow::Borrowed(_)), "{keep}");
    }
    // A URL's password is still the URL's, with its user and host kept.
    let pw = r.b62(20);
    assert_eq!(
        scrub(&format!("https://jo.smith:{pw}@acme.io/x")),
        "https://jo.smith:[redacted:password]@acme.io/x"
    );
}

#[test]
fn balances_in_words_are_redacted_and_other_numbers_stay() {
    for (text, want) in [
        (
            "your credit balance is $4,821.55",
            "your credit balance is [redacted:balance]",
        ),
        (
            "remaining balance 912.40 USD",
            "remaining balance [redacted:balance]",
        ),
        (
            "you have €7,50 left on this plan",
            "you have [redacted:balance] left on this plan",
        ),
        (
            "balance: 12.34 USD, retry in 30 seconds",
            "balance: [redacted:balance], retry in 30 seconds",
        ),
        (
            "Credit remaining: £1,200",
            "Credit remaining: [redacted:balance]",
        ),
        ("only 1,234 credits left", "only [redacted:balance] left"),
        (
            "prepaid funds of USD 88 available",
            "prepaid funds of [redacted:balance] available",
        ),
        (
            "balance is 912.40; retry in 30 seconds",
            "balance is [redacted:balance]; retry in 30 seconds",
        ),
    ] {
        assert_eq!(scrub(text), want, "{text}");
        assert_eq!(scrub(want), want);
    }
    for keep in [
        "50% of quota used",
        "retry in 30 seconds",
        "max_tokens=4096",
        "v2.3.1",
        "HTTP 429",
        "credits renew on 1 Dec",
        "3 retries left, 50% of credits used",
        "Your credit balance is too low to access the Anthropic API",
        "left 3 retries, remaining 2 workers",
        "cost $0.02 for 1200 tokens",
    ] {
        assert!(matches!(scrub(keep), Cow::Borrowed(_)), "{keep}");
    }
}

#[test]
fn key_value_shapes_that_passed_are_caught() {
    let mut r = Rng::new(84);
    let v = r.b62(20);
    let hex = r.pick(HEX, 40);
    for (text, want) in [
        (
            format!("login: password is {v}"),
            "login: password is [redacted:password]",
        ),
        (
            format!("ftp pw={v} rejected"),
            "ftp pw=[redacted:password] rejected",
        ),
        (format!("smtp pass={v}"), "smtp pass=[redacted:password]"),
        (format!("db_pass={v}"), "db_pass=[redacted:password]"),
        (
            format!("DB_PASS={v} user=app"),
            "DB_PASS=[redacted:password] user=app",
        ),
        (
            format!("secret_key_base={hex}"),
            "secret_key_base=[redacted:secret]",
        ),
        (format!("creds={v}"), "creds=[redacted:secret]"),
        (
            format!("{{\"private_key_id\": \"{hex}\"}}"),
            "{\"private_key_id\": \"[redacted:secret]\"}",
        ),
        (
            format!("sent api-key {v} upstream"),
            "sent api-key [redacted:api-key] upstream",
        ),
        (format!("token\t{v}"), "token\t[redacted:token]"),
        (
            format!("mysql -h db -u root -p{v} fleet"),
            "mysql -h db -u root -p[redacted:password] fleet",
        ),
    ] {
        assert_eq!(scrub(&text), want, "{text}");
        assert_eq!(scrub(want), want);
    }
    for keep in [
        "password is required",
        "password is incorrect",
        "tests pass, 3 skipped",
        "bypass=1",
        "api-key rotation not needed",
        "key rotation not needed, cache key reused",
        "token\tcount",
        "$MAC_HUB_TOKEN claude-sonnet-4-5-20250929",
        "gcc -pthread -pedantic -o x",
        "mysql -u root -p",
        "session expired, code 401, pat on the back",
        "compass: north",
    ] {
        assert!(matches!(scrub(keep), Cow::Borrowed(_)), "{keep}");
    }
}

/// Issue 31's forms that still passed: HTTPie's `-a` (and `redis-cli`'s),
/// and a Kubernetes `Secret`'s `data:` values under any key, as YAML, as
/// JSON and escaped in an annotation. The user and the keys stay; the
/// look-alikes (`ls -a`, `-A bearer`, an `ExternalSecret`, a `ConfigMap`,
/// `"kind":"Secret","metadata"`) come back as they were.
#[test]
fn httpie_redis_cli_and_kubernetes_secret_forms_are_caught() {
    let mut r = Rng::new(91);
    let pw = r.b62(16);
    let val = r.b62(24);
    let pass = placeholder("password");
    let sec = placeholder("secret");
    for (text, want) in [
        (
            format!("http -a ops:{pw} POST api.example.com/jobs"),
            format!("http -a ops:{pass} POST api.example.com/jobs"),
        ),
        (
            format!("https -v api.example.com -a 'ops:{pw}'"),
            format!("https -v api.example.com -a 'ops:{pass}'"),
        ),
        (
            format!("/usr/bin/http -aops:{pw} x.example"),
            format!("/usr/bin/http -aops:{pass} x.example"),
        ),
        (
            format!("http -A bearer -a {pw} x.example"),
            format!(
                "http -A bearer -a {} x.example",
                placeholder("authorization")
            ),
        ),
        (
            format!("redis-cli -h c -a \"{pw}\" ping"),
            format!("redis-cli -h c -a \"{pass}\" ping"),
        ),
        (
            format!("apiVersion: v1\ndata:\n\textra: {val}==\nkind: \"secret\"\n"),
            format!("apiVersion: v1\ndata:\n\textra: {sec}\nkind: \"secret\"\n"),
        ),
        (
            format!("kind: Secret\nstringData:\n  url: '{pw}'\n  n: {{{{ .Values.n }}}}\n"),
            format!("kind: Secret\nstringData:\n  url: '{sec}'\n  n: {{{{ .Values.n }}}}\n"),
        ),
        (
            format!("kind: Secret\ndata:\n  ca.pem: >-\n    {val}\n    {pw}==\nmetadata: {{}}"),
            format!("kind: Secret\ndata:\n  ca.pem: >-\n    {sec}\nmetadata: {{}}"),
        ),
        (
            format!(
                r#"{{"apiVersion":"v1","data":{{"a.b":"{val}"}},"kind":"Secret","metadata":{{}}}}"#
            ),
            format!(
                r#"{{"apiVersion":"v1","data":{{"a.b":"{sec}"}},"kind":"Secret","metadata":{{}}}}"#
            ),
        ),
        (
            format!(r#"{{\"data\":{{\"k\":\"{val}\"}},\"kind\":\"Secret\"}}"#),
            format!(r#"{{\"data\":{{\"k\":\"{sec}\"}},\"kind\":\"Secret\"}}"#),
        ),
    ] {
        assert_eq!(scrub(&text), want, "{text}");
        assert_eq!(scrub(&want), want, "{want}");
    }
    for keep in [
        format!("ls -a {pw}:x; rsync -avz src/ h:{pw}"),
        format!("http -a ops x.example {pw}"),
        "http -a user:pass x.example".to_string(),
        format!("kind: ExternalSecret\ndata:\n  extra: {val}\n"),
        format!("kind: Secret\n---\nkind: ConfigMap\ndata:\n  extra: {val}\n"),
        format!("kind: Secret\nspec:\n  data:\n    extra: {val}\n"),
        format!(r#"{{"kind":"Secret","metadata":{{"name":"{pw}"}}}}"#),
        format!(r#"{{"kind":"ExternalSecret","spec":{{"data":"{val}"}}}}"#),
    ] {
        assert!(matches!(scrub(&keep), Cow::Borrowed(_)), "{keep}");
    }
}

/// HTTPie's credentials in every spelling (`-a`, `--auth`, `--auth=`,
/// quoted whole or in part, `-a :pw`): the password is redacted and the
/// user stays, unless the user is itself a key (random, or the only part
/// given, as `--auth "<key>:"`).
#[test]
fn httpie_auth_in_every_form_keeps_the_user_and_redacts_the_password() {
    let mut r = Rng::new(93);
    let pw = r.b62(16);
    let key = r.b62(40);
    let pass = placeholder("password");
    let tok = placeholder("token");
    let cases = [
        (
            format!("http --auth ops:{pw} x"),
            format!("http --auth ops:{pass} x"),
        ),
        (
            format!("http --auth=ops:{pw} x"),
            format!("http --auth=ops:{pass} x"),
        ),
        (
            format!("http --auth 'ops:{pw}' x"),
            format!("http --auth 'ops:{pass}' x"),
        ),
        (
            format!("http --auth=\"ops:{pw}\" x"),
            format!("http --auth=\"ops:{pass}\" x"),
        ),
        (
            format!("http --auth ops:'{pw}' x"),
            format!("http --auth ops:'{pass}' x"),
        ),
        (
            format!("http -a \"ops:{pw}\" x"),
            format!("http -a \"ops:{pass}\" x"),
        ),
        (format!("http -a :{pw} x"), format!("http -a :{pass} x")),
        (
            format!("http --auth :{pw} x"),
            format!("http --auth :{pass} x"),
        ),
        (
            format!("http --auth {key}: x"),
            format!("http --auth {pass}: x"),
        ),
        (
            format!("http -a {key}:{pw} x"),
            format!("http -a {tok}:{pass} x"),
        ),
        (
            format!("curl -u {key}:{pw} x"),
            format!("curl -u {tok}:{pass} x"),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(scrub(&text), want, "{text}");
        assert_eq!(scrub(&want), want, "{want}");
    }
    for keep in [
        "http --auth user:pass x; http --auth=\"$USER:$PASS\" x".to_string(),
        "http --auth ops x; http --auth-type=digest x".to_string(),
    ] {
        assert!(matches!(scrub(&keep), Cow::Borrowed(_)), "{keep}");
    }
}

/// An AWS access key id beside its 40-character secret with no name
/// between them (a space, `:`, `,`, `=`, quotes; either order): the
/// secret goes with the id. Beside a git hash, or a secret beside the
/// documentation's example id, nothing more is taken.
#[test]
fn an_aws_key_id_takes_the_secret_beside_it() {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut r = Rng::new(94);
    let id = format!("AKIA{}", r.pick(UPPER_DIGITS, 16));
    let secret = format!("{}/{}", r.pick(B64, 20), r.b62(19));
    let idp = placeholder("aws-access-key-id");
    let sp = placeholder("aws-secret-key");
    for (text, want) in [
        (
            format!("login {id} {secret} bad"),
            format!("login {idp} {sp} bad"),
        ),
        (format!("login {id}:{secret}"), format!("login {idp}:{sp}")),
        (format!("{id},{secret},x"), format!("{idp},{sp},x")),
        (format!("k {id}={secret}"), format!("k {idp}={sp}")),
        (
            format!("[\"{id}\", \"{secret}\"]"),
            format!("[\"{idp}\", \"{sp}\"]"),
        ),
        (format!("{secret} {id} bad"), format!("{sp} {idp} bad")),
    ] {
        assert_eq!(scrub(&text), want, "{text}");
        assert_eq!(scrub(&want), want, "{want}");
    }
    let sha = r.pick(HEX, 40);
    let text = format!("deploy {id} {sha} at rev {}", r.pick(HEX, 40));
    assert_eq!(
        scrub(&text),
        text.replace(&id, &idp),
        "a git hash beside the id stays"
    );
    let example = format!("AKIAIOSFODNN7{}", "EXAMPLE");
    let text = format!("docs: {example} {secret}");
    assert!(matches!(scrub(&text), Cow::Borrowed(_)), "{text}");
    // Longer than a secret: not one.
    let text = format!("{id} {secret}{}", r.b62(4));
    assert_eq!(scrub(&text), text.replace(&id, &idp));
}

/// The gitleaks families whose literal cases passed: Infracost's
/// `ico-…`, Sourcegraph's bare name and its hex shape (its near misses
/// stay), MessageBird's client id under its name.
#[test]
fn infracost_sourcegraph_and_messagebird_are_caught_and_near_misses_stay() {
    let mut r = Rng::new(95);
    let hexes = b"0123456789abcdefABCDEF";
    let ico = r.b62(32);
    let sg = format!("{}a0", r.pick(hexes, 38));
    let sg16 = r.pick(hexes, 16);
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        r.pick(b"0123456789ABCDEF", 8),
        r.pick(b"0123456789ABCDEF", 4),
        r.pick(b"0123456789ABCDEF", 4),
        r.pick(b"0123456789ABCDEF", 4),
        r.pick(b"0123456789ABCDEF", 12)
    );
    for (text, needle) in [
        (format!("secret_value = \"ico-{ico}\""), ico.clone()),
        (format!("infracost: ico-{ico} invalid"), ico.clone()),
        (format!("sourcegraph: {sg}"), sg.clone()),
        (format!("SOURCEGRAPH={sg}"), sg.clone()),
        (format!("src: sgp_{sg}"), sg.clone()),
        (format!("src: sgp_{sg16}_{sg}"), sg.clone()),
        (format!("src: sgp_local_{sg}"), sg.clone()),
        (
            format!("const MessageBirdClientID = \"{uuid}\""),
            uuid.clone(),
        ),
        (format!("messagebird_client_id: {uuid}"), uuid.clone()),
    ] {
        let out = scrub(&text);
        assert!(!out.contains(&needle), "{text} -> {out}");
        assert_eq!(scrub(&out), out, "{out}");
    }
    for keep in [
        format!("box.ico-{ico}.png"),
        format!("src: sgp_local_{}G{}", &sg[..5], &sg[6..]),
        format!("src: sgp_{}_{sg}", r.pick(hexes, 20)),
        format!("src: sgp_{}!{}", &sg[..14], &sg[15..]),
        "sourcegraph: source map not found".to_string(),
        format!("ClientID = \"{uuid}\""),
    ] {
        assert!(matches!(scrub(&keep), Cow::Borrowed(_)), "{keep}");
    }
}

#[test]
fn query_names_scp_remotes_and_percent_encoded_prefixes_are_caught() {
    let mut r = Rng::new(85);
    let v = r.b62(24);
    let body = r.b62(60);
    for name in ["code", "session_id", "sessionid", "jwt", "pat", "authkey"] {
        let text = format!("GET https://api.example.com/cb?state=ok&{name}={v}&page=2 -> 401");
        let out = scrub(&text);
        assert_eq!(
            out,
            format!(
                "GET https://api.example.com/cb?state=ok&{name}=[redacted:url-query]&page=2 -> 401"
            ),
            "{name}"
        );
        let text = format!("/v1/login?{name}={v}");
        assert!(!scrub(&text).contains(&v), "{text}");
    }
    // Percent-encoded query names, inside another URL's query.
    let text = format!(
        "redirect https://a.example.com/x?next=https%3A%2F%2Fb.example.com%2Fcb%3Fapi_key%3D{v}%26x%3D1"
    );
    let out = scrub(&text);
    assert!(!out.contains(&v), "{out}");
    assert!(out.contains("%26x%3D1"), "{out}");
    assert_eq!(scrub(&out), out);
    // scp-style remotes with a password.
    for (text, want) in [
        (
            format!("git clone deploy:{v}@git.example.com:fleet/hub.git failed"),
            "git clone deploy:[redacted:password]@git.example.com:fleet/hub.git failed",
        ),
        (
            format!("DATABASE=app:{v}@db.internal/fleet"),
            "DATABASE=app:[redacted:password]@db.internal/fleet",
        ),
    ] {
        assert_eq!(scrub(&text), want, "{text}");
        assert_eq!(scrub(want), want);
    }
    // Percent-encoded prefixes.
    for text in [
        format!("key sk%2Dant%2Dapi03%2D{body} rejected"),
        format!("key sk%2dproj%2d{body} rejected"),
        format!("key ghp%5F{} rejected", &body[..36]),
    ] {
        let out = scrub(&text);
        assert!(!out.contains(&body[..20]), "{out}");
        assert!(
            out.starts_with("key [redacted:") && out.ends_with("] rejected"),
            "{out}"
        );
        assert_eq!(scrub(&out), out);
    }
    for keep in [
        "GET https://api.example.com/x?code=&page=2",
        "error code=429 from upstream",
        "opencode route: 50%25 of quota, 100% used",
        "git@github.com:macfleet/macfleet.git",
        "time 10:30 at home",
        "url https%3A%2F%2Fexample.com%2Fdocs",
    ] {
        assert!(matches!(scrub(keep), Cow::Borrowed(_)), "{keep}");
    }
}

#[test]
fn values_with_delimiters_and_url_passwords_with_a_slash_are_caught_whole() {
    let mut r = Rng::new(86);
    let (a, z) = (r.b62(10), r.b62(10));
    for (text, want) in [
        (
            format!("login: password={a},{z}"),
            "login: password=[redacted:password]".to_string(),
        ),
        (
            format!("Password={a};{z};Server=db;User Id=app"),
            "Password=[redacted:password];Server=db;User Id=app".to_string(),
        ),
        (
            format!("token={a}&{z}, retry=3"),
            "token=[redacted:token], retry=3".to_string(),
        ),
        (
            format!("fetch https://bob:{a}/{z}@git.example.com/x.git failed"),
            "fetch https://bob:[redacted:password] failed".to_string(),
        ),
        (
            format!("fetch https://bob:{a}?{z}@git.example.com failed"),
            "fetch https://bob:[redacted:password] failed".to_string(),
        ),
    ] {
        assert_eq!(scrub(&text), want, "{text}");
        assert_eq!(scrub(&want), want);
    }
    for keep in [
        "GET https://example.com:8443/users/@scope/x 404",
        "https://host:8080/path then x@y",
        "retry=3, backoff=2",
    ] {
        assert!(matches!(scrub(keep), Cow::Borrowed(_)), "{keep}");
    }
}

#[test]
fn cyrillic_and_greek_lookalike_letters_inside_a_key_are_read_as_ascii() {
    let body = Rng::new(87).b62(60);
    for text in [
        format!("key sk-\u{0430}nt-api03-{body} end"),
        format!("key sk-ant-\u{0430}pi03-{body} end"),
        format!("key gh\u{0440}_{} end", &body[..36]),
        format!("key \u{0410}KIA{} end", "Q7XH2MZ4WP9RKD3L"),
        format!("key sk-pr\u{03BF}j-{body} end"),
    ] {
        let out = scrub(&text);
        assert!(
            !out.contains(&body[..16]) && !out.contains("Q7XH2MZ4"),
            "{out}"
        );
        assert!(
            out.starts_with("key [redacted:") && out.ends_with("] end"),
            "{out}"
        );
        assert_eq!(scrub(&out), out);
    }
    for keep in [
        "ключ отозван, повторите позже",
        "Ο κωδικός έληξε",
        "сорок секунд",
    ] {
        assert!(matches!(scrub(keep), Cow::Borrowed(_)), "{keep}");
    }
}

#[test]
fn vendor_tokens_with_a_known_prefix_are_caught_bare() {
    let mut r = Rng::new(88);
    for prefix in [
        "shpat_",
        "dop_v1_",
        "glc_",
        "lin_api_",
        "sntrys_",
        "sqp_",
        "PMAK-",
        "hvs.",
        "NRAK-",
        "pscale_tkn_",
        "xkeysib-",
        "tskey-",
        "FLWSECK_TEST-",
        "AGE-SECRET-KEY-1",
        "duffel_live_",
        "s-s4t2ud-",
        "pscale_oauth_",
        "sntryu_",
        "ico-",
    ] {
        let body = r.b62(40);
        let text = format!("deploy: {prefix}{body} rejected");
        assert_eq!(
            scrub(&text),
            "deploy: [redacted:token] rejected",
            "{prefix}"
        );
    }
    for keep in [
        "video_box.ico-7a388b69018576d24b59331fd60aab0c.png",
        "mexico-city region, pull-request 42",
        "the glc_ prefix marks Grafana tokens",
    ] {
        assert!(matches!(scrub(keep), Cow::Borrowed(_)), "{keep}");
    }
}

/// A vendor's bare name before a random value (`cloudflare: "<token>"`),
/// read by the value's randomness; and the near misses gitleaks lists as
/// false positives that stay: a one-character password, a Maven group
/// that ends in `token`, a body that says `…TokenHere`.
#[test]
fn vendor_names_take_a_random_value_and_near_misses_stay() {
    let mut r = Rng::new(131);
    for name in ["cloudflare", "CLOUDFLARE", "my_cloudflare"] {
        let key = r.b62(40);
        let text = format!("{name}: \"{key}\"");
        assert_eq!(
            scrub(&text),
            format!("{name}: \"[redacted:token]\""),
            "{text}"
        );
        let hex = r.pick(b"0123456789abcdef", 37);
        let text = format!("{name}={hex}");
        assert_eq!(scrub(&text), format!("{name}=[redacted:token]"), "{text}");
    }
    for keep in [
        "cloudflare: 403 forbidden from the edge".to_string(),
        "discord: rate limited, retry in 30 seconds".to_string(),
        "heroku: app crashed (H10) on worker 3f2a9c1e-7b4d".to_string(),
        format!("cloudflare: {}", "abcdefghij".repeat(4)),
        "PuttyPassword=0".to_string(),
        "notes = \"Maven - io.jsonwebtoken:jjwt-jackson-0.11.2\"".to_string(),
        format!("{}-1-SlackAppConfigurationAccessTokenHere", "xoxe.xoxp"),
    ] {
        assert_eq!(scrub(&keep), keep);
    }
    let pw = format!("{}9", r.pick(b"abcdefghij", 1));
    assert_eq!(
        scrub(&format!("password={pw}")),
        "password=[redacted:password]"
    );
}

#[test]
fn jwt_without_its_signature_is_caught() {
    let h = format!("eyJ{}", "hbGciOiJIUzI1NiJ9");
    let p = format!("eyJ{}", Rng::new(79).b62(40));
    let text = format!("token {h}.{p}");
    assert_eq!(scrub(&text), "token [redacted:jwt]");
    // A header alone carries nothing.
    assert!(matches!(
        scrub(&format!("header {h} only")),
        Cow::Borrowed(_)
    ));
}

#[test]
fn basic_credentials_are_caught_only_when_they_decode_to_user_password() {
    use base64::Engine as _;
    let cred =
        base64::engine::general_purpose::STANDARD.encode(format!("ci:{}", Rng::new(80).b62(20)));
    assert_eq!(
        scrub(&format!("sent Basic {cred} to the proxy")),
        "sent Basic [redacted:authorization] to the proxy"
    );
    for t in [
        "Basic Authentication required",
        "Basic realm=\"x\"",
        "Basic SGVsbG8gV29ybGQ=",
    ] {
        assert!(matches!(scrub(t), Cow::Borrowed(_)), "{t}");
    }
}

#[test]
fn clean_non_ascii_text_does_not_allocate() {
    let texts = ["café naïve 日本語 🚀 — “quoted” détail", "ok → pi, 3s ago"];
    for t in texts {
        let _ = scrub(t);
        let n = allocations(|| {
            let out = scrub(std::hint::black_box(t));
            assert!(matches!(out, Cow::Borrowed(_)));
            let shown = for_terminal(std::hint::black_box(t));
            assert!(matches!(shown, Cow::Borrowed(_)));
        });
        assert_eq!(n, 0, "{t}");
    }
}

// ------------------------------------------------ through the real hub

mod common;

/// `macfleet hub` (the real binary, `common::HubProcess`), its log at
/// debug level.
struct BinHub(common::HubProcess);

impl BinHub {
    fn spawn(dir: &std::path::Path) -> Result<BinHub, String> {
        common::HubProcess::try_spawn(
            dir,
            common::Spawn {
                env: &[("MACFLEET_LOG", "debug")],
                ..common::Spawn::default()
            },
        )
        .map(BinHub)
    }

    fn stop(mut self) -> String {
        let _ = self.0.child.kill();
        let _ = self.0.child.wait();
        std::thread::sleep(Duration::from_millis(100));
        self.0.log()
    }
}

impl std::ops::Deref for BinHub {
    type Target = common::HubProcess;
    fn deref(&self) -> &common::HubProcess {
        &self.0
    }
}

fn hub_dir(owner_name: &str, owner: &str, worker_name: &str, worker: &str) -> tempfile::TempDir {
    use macfleet::wire::Role;
    common::hub_dir_of(&[
        (owner_name, Role::Owner, owner),
        (worker_name, Role::Worker, worker),
    ])
}

fn heartbeat_with(worker: &str, host: &str, id: &str, detail: &str) -> serde_json::Value {
    let at = macfleet::wire::fmt_time(chrono::Utc::now() - chrono::Duration::seconds(5));
    let mut hb = common::heartbeat(
        worker,
        None,
        serde_json::json!([{
            "id": id, "at": at, "from": "opencode", "to": "claude",
            "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router", "detail": detail}
        }]),
    );
    hb["host"] = serde_json::json!(host);
    hb
}

/// Post `hb`; the hub must refuse it with 422 and not echo `needle`.
/// Returns the answer's body.
async fn refused_unechoed(
    http: &reqwest::Client,
    url: &str,
    worker: &str,
    hb: &serde_json::Value,
    needle: &str,
) -> String {
    let r = http
        .post(format!("{url}/v1/heartbeats"))
        .bearer_auth(worker)
        .json(hb)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 422, "{needle} in {hb}");
    let body = r.text().await.expect("body");
    assert!(!body.contains(needle), "{needle} echoed: {body}");
    body
}

/// Read an SSE stream for at most `for_how_long`, keeping what came.
async fn read_events(mut r: reqwest::Response, for_how_long: Duration) -> String {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + for_how_long;
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, r.chunk()).await {
        got.extend_from_slice(&chunk);
        if got.len() > 8 << 20 {
            break;
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_corpus_secret_comes_back_from_the_hub_the_stream_the_cli_or_the_log() {
    let owner = format!("{}{}", "mft_scrub_", "o".repeat(30));
    let worker = format!("{}{}", "mft_scrub_", "w".repeat(30));
    let dir = hub_dir("alice", &owner, "fleet", &worker);
    let hub = BinHub::spawn(dir.path()).expect("the hub starts");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http");
    let stream = http
        .get(format!("{}/v1/events?types=failover,heartbeat", hub.url))
        .bearer_auth(&owner)
        .send()
        .await
        .expect("events");
    assert_eq!(stream.status(), 200);
    let events = tokio::spawn(read_events(stream, Duration::from_secs(6)));

    let started = std::time::Instant::now();
    let phase = |what: &str| eprintln!("{what}: {:.1?}", started.elapsed());
    let all = corpus::secrets();
    let mut answers = String::new();
    let (mut stored, mut refused) = (Vec::new(), 0);
    // Ten details a worker: `get worker` shows a worker's ten newest
    // failovers, so one call a worker reads every stored detail (a call a
    // detail took most of this test's time).
    for (i, e) in all.iter().enumerate() {
        let hb = heartbeat_with(
            &format!("w-corpus-{}", i / 10),
            "gpu-node-1",
            &format!("f-{i}"),
            &e.detail,
        );
        let r = http
            .post(format!("{}/v1/heartbeats", hub.url))
            .bearer_auth(&worker)
            .json(&hb)
            .send()
            .await
            .expect("post");
        let status = r.status().as_u16();
        answers.push_str(&r.text().await.expect("body"));
        match status {
            200 => stored.push(i),
            // Details with control characters (the colour-coded ones) are refused.
            422 => refused += 1,
            s => panic!("{}: unexpected status {s}", e.family),
        }
    }
    assert!(
        stored.len() >= 55,
        "only {} stored, {refused} refused",
        stored.len()
    );
    // Secret-shaped ids and names are refused, and not echoed.
    let mut r = Rng::new(81);
    let gh = format!("ghp_{}", r.b62(36));
    let ant = format!("sk-ant-api03-{}", r.b62(60));
    let gl = format!("glpat-{}", r.b62(20));
    for (w, host, id, needle) in [
        (gh.as_str(), "gpu-node-1", "f-x1", &gh[4..]),
        ("w-ok-1", ant.as_str(), "f-x2", &ant[13..]),
        ("w-ok-2", "gpu-node-1", gl.as_str(), &gl[6..]),
    ] {
        let r = http
            .post(format!("{}/v1/heartbeats", hub.url))
            .bearer_auth(&worker)
            .json(&heartbeat_with(w, host, id, "ok"))
            .send()
            .await
            .expect("post");
        assert_eq!(r.status(), 422, "{w} {host} {id}");
        let body = r.text().await.expect("body");
        assert!(!leaked(&body, needle), "{body}");
        answers.push_str(&body);
    }
    // Issue 29's names that are secrets (a secret's name glued to its
    // value, an account number, a balance, a key cut under 32 characters
    // by `.` or `:`), as a worker id, a host, a failover id and an agent
    // name: each refused with 422, never echoed.
    let lower = |r: &mut Rng, n: usize| {
        format!(
            "a3{}",
            r.pick(b"abcdefghijklmnopqrstuvwxyz0123456789", n - 2)
        )
    };
    let names = [
        format!("token_{}", r.b62(20)),
        format!("secret-{}", r.b62(20)),
        format!("db-pass-{}", r.b62(12)),
        format!("account-{}", r.pick(b"0123456789", 12)),
        format!(
            "balance-{}.{}",
            r.pick(b"0123456789", 3),
            r.pick(b"0123456789", 2)
        ),
        format!(
            "credit-left-{}.{}-USD",
            r.pick(b"0123456789", 2),
            r.pick(b"0123456789", 2)
        ),
        format!("{}.{}", r.b62(31), r.b62(31)),
        format!("{}:{}", r.b62(31), r.b62(31)),
        // Issue 31: a key split into four dotted runs of 16.
        format!("{}.{}.{}.{}", r.b62(16), r.b62(16), r.b62(16), r.b62(16)),
    ];
    let agents = [
        format!("token_{}", lower(&mut r, 20)),
        format!("secret-{}", lower(&mut r, 20)),
        format!("db-pass-{}", lower(&mut r, 12)),
        format!("account-{}", r.pick(b"0123456789", 12)),
    ];
    let mut tried = 0;
    for name in &names {
        let needle = name
            .rsplit(['_', '-'])
            .find(|p| p.len() >= 5)
            .unwrap_or(name);
        let mut variants = vec![
            heartbeat_with(name, "gpu-node-1", "f-y1", "ok"),
            heartbeat_with("w-ok-3", "gpu-node-1", name, "ok"),
        ];
        if !name.contains(':') {
            variants.push(heartbeat_with("w-ok-4", name, "f-y2", "ok"));
        }
        for hb in variants {
            answers.push_str(&refused_unechoed(&http, &hub.url, &worker, &hb, needle).await);
            tried += 1;
        }
    }
    for name in &agents {
        let mut hb = heartbeat_with("w-ok-5", "gpu-node-1", "f-y3", "ok");
        hb["agents"] = serde_json::json!(["opencode", "claude", name]);
        answers.push_str(&refused_unechoed(&http, &hub.url, &worker, &hb, name).await);
        tried += 1;
    }
    assert_eq!(tried, names.len() * 3 - 1 + agents.len());
    // Ordinary fleet names still pass.
    for (w, host) in [
        ("w-00042", "node-0005"),
        (
            "3f2b9c1e-8a4d-4e2b-9c1a-2b3c4d5e6f70",
            "gpu-node-17.example.internal",
        ),
        ("token-refresher-3", "secret-store-1"),
    ] {
        let mut hb = heartbeat_with(w, host, "f-z1", "ok");
        hb["agents"] = serde_json::json!(["opencode", "claude", "claude-code"]);
        let r = http
            .post(format!("{}/v1/heartbeats", hub.url))
            .bearer_auth(&worker)
            .json(&hb)
            .send()
            .await
            .expect("post");
        assert_eq!(r.status(), 200, "{w} {host}");
    }
    let names: Vec<String> = names.into_iter().chain(agents).collect();

    phase("posted");
    let mut seen = answers;
    for path in [
        "/v1/workers",
        "/v1/failovers?limit=1000",
        "/v1/failovers?limit=1000&worker=w-corpus-3",
    ] {
        let r = http
            .get(format!("{}{path}", hub.url))
            .bearer_auth(&owner)
            .send()
            .await
            .expect("get");
        assert_eq!(r.status(), 200, "{path}");
        seen.push_str(&r.text().await.expect("body"));
    }
    assert!(
        seen.matches(PLACEHOLDER_PREFIX).count() >= stored.len(),
        "the failovers came back without their placeholders"
    );
    let env = [
        ("MAC_HUB_URL", hub.url.as_str()),
        ("MAC_HUB_TOKEN", owner.as_str()),
        ("COLUMNS", "1000"),
    ];
    for args in [
        &["get", "failovers", "--limit", "1000"][..],
        &["get", "failovers", "--limit", "1000", "-o", "json"],
        &["get", "workers"],
        &["get", "workers", "-o", "json"],
    ] {
        let out = common::macfleet(args, &env);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            common::text(&out.stderr)
        );
        seen.push_str(&common::text(&out.stdout));
        seen.push_str(&common::text(&out.stderr));
    }
    phase("read by the API and `get`");
    let mut by_worker = String::new();
    let groups: std::collections::BTreeSet<usize> = stored.iter().map(|i| i / 10).collect();
    for g in &groups {
        let out = common::macfleet(&["get", "worker", &format!("w-corpus-{g}")], &env);
        assert!(
            out.status.success(),
            "get worker: {}",
            common::text(&out.stderr)
        );
        by_worker.push_str(&common::text(&out.stdout));
    }
    // Every stored detail was on its worker's page (its placeholder or,
    // for a detail that keeps its end, that end).
    assert!(
        by_worker.matches(PLACEHOLDER_PREFIX).count() >= stored.len(),
        "get worker showed fewer failovers than were stored"
    );
    seen.push_str(&by_worker);
    let tails: Vec<String> = stored
        .iter()
        .map(|&i| tail(&for_terminal(&all[i].detail)))
        .collect();
    phase("read by `get worker`");
    let screens = tui_screens(&hub.url, &owner, &tails);
    phase("read by the TUI");
    let events = events.await.expect("events task");
    assert!(events.contains("event: failover"), "no failover event seen");
    let log = hub.stop();
    // Each reader on its own line, so a missing rule shows every reader it
    // leaks through (the TUI's screens among them), not only the first.
    let readers = [
        ("the hub's answers or the cli", &seen),
        ("the event stream", &events),
        ("the hub's log", &log),
        ("the TUI's screens", &screens),
    ];
    let leaks: Vec<String> = readers
        .iter()
        .filter_map(|(what, text)| {
            let families = corpus::leaked_families(text, &all);
            (!families.is_empty()).then(|| format!("{what}: {families:?}"))
        })
        .collect();
    phase("searched");
    assert!(leaks.is_empty(), "secrets came back:\n{}", leaks.join("\n"));
    for name in &names {
        assert!(!seen.contains(name.as_str()), "{name} came back");
        assert!(!log.contains(name.as_str()), "{name} is in the hub's log");
    }
}

#[path = "common/pty.rs"]
mod pty;

/// The last characters of a detail as a terminal shows it (no trailing
/// blanks, no cut escape).
fn tail(shown: &str) -> String {
    let t = shown.trim_end();
    let from = t.char_indices().rev().nth(11).map_or(0, |(i, _)| i);
    t[from..].to_string()
}

/// Every screen the TUI (the real binary in a pty, read-only) draws of the
/// hub's failovers and workers: the failovers view, tall and wide enough
/// for every row and its whole detail (each stored detail's end, `tails`,
/// must be on it, so no row and no part of one went undrawn), a
/// failover's detail and raw JSON, a worker's detail and raw JSON.
fn tui_screens(url: &str, token: &str, tails: &[String]) -> String {
    let mut p = pty::Pty::spawn(
        &["--read-only"],
        &[("MAC_HUB_URL", url), ("MAC_HUB_TOKEN", token)],
    );
    p.resize(460, 260);
    p.send("3");
    let mut seen = p.wait_until(
        "every failover, its detail whole",
        Duration::from_secs(30),
        |s| tails.iter().all(|t| s.contains(t.as_str())),
    );
    for (keys, what) in [
        ("\r", "failover detail"),
        ("v", "failover JSON"),
        ("\u{1b}", "failovers"),
        ("2", "workers"),
        ("\r", "worker detail"),
        ("v", "worker JSON"),
    ] {
        let before = p.screen();
        p.send(keys);
        seen.push_str(&p.wait_until(what, Duration::from_secs(10), |s| s != before));
        std::thread::sleep(Duration::from_millis(200));
        seen.push_str(&p.screen());
    }
    p.send("q");
    let _ = p.wait_exit(Duration::from_secs(10));
    seen
}

/// What must never reach a terminal from `macfleet get`.
fn assert_terminal_safe(what: &str, out: &[u8]) {
    let text = std::str::from_utf8(out).expect("utf-8 output");
    for (i, c) in text.char_indices() {
        assert!(
            !is_unsafe(c) || c == '\n',
            "{what}: {c:?} (U+{:04X}) at byte {i} in {text:?}",
            c as u32
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn get_prints_no_control_bidi_or_invisible_character() {
    let owner = format!("{}{}", "mft_scrub_", "p".repeat(30));
    let worker = format!("{}{}", "mft_scrub_", "q".repeat(30));
    // The owner's name (shown as BY in the history) carries an OSC 52
    // clipboard write, a screen clear, a bell and bidi overrides.
    let evil_name = "alice\\u001b]52;c;aGk=\\u0007\\u001b[2J\\u202egnp.exe\\u202c\\u0085";
    let evil_worker = format!("{evil_name}-w");
    let dir = hub_dir(evil_name, &owner, &evil_worker, &worker);
    let (hub, named) = match BinHub::spawn(dir.path()) {
        Ok(h) => (h, true),
        Err(log) => {
            // The hub refuses control, bidi and invisible characters in
            // token names (#10 item 4): safe at the source. Go on with plain
            // names; the worker's text still carries them.
            assert!(log.contains("tokens"), "{log}");
            let dir2 = hub_dir("alice", &owner, "fleet", &worker);
            std::fs::copy(
                dir2.path().join("tokens.toml"),
                dir.path().join("tokens.toml"),
            )
            .expect("tokens");
            (BinHub::spawn(dir.path()).expect("the hub starts"), false)
        }
    };
    let http = reqwest::Client::new();
    let detail = "ok \u{202E}gnp.exe\u{202C} \u{2066}x\u{2069} a\u{200B}b \u{FEFF} \u{E0041}\u{E0042} l\u{2028}m\tn";
    let r = http
        .post(format!("{}/v1/heartbeats", hub.url))
        .bearer_auth(&worker)
        .json(&heartbeat_with(
            "w-bidi-1",
            "gpu-node-1",
            "f-bidi-1",
            detail,
        ))
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    // A history entry by the oddly named owner.
    let client = macfleet::client::Client::new(
        &hub.url,
        Some(macfleet::client::Token::new(&owner)),
        macfleet::client::ClientOptions::default(),
    )
    .expect("client");
    let who = client.whoami().await.expect("whoami");
    let writer = macfleet::client::Writer::new(client.clone(), &who).expect("owner");
    let doc = client.config().await.expect("config");
    let text = doc.text.replace("\"claude\",", "\"claude\", \"pi\",");
    writer.put_config(&text, &doc.revision).await.expect("put");

    let env = [
        ("MAC_HUB_URL", hub.url.as_str()),
        ("MAC_HUB_TOKEN", owner.as_str()),
        ("COLUMNS", "1000"),
    ];
    let mut tables = String::new();
    for args in [
        &["get", "failovers"][..],
        &["get", "failovers", "-o", "json"],
        &["get", "workers"],
        &["get", "workers", "-o", "json"],
        &["get", "history"],
        &["get", "history", "-o", "json"],
        &["get", "agents"],
        &["agents", "show"],
    ] {
        let out = common::macfleet(args, &env);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            common::text(&out.stderr)
        );
        assert_terminal_safe(&format!("{args:?} stdout"), &out.stdout);
        assert_terminal_safe(&format!("{args:?} stderr"), &out.stderr);
        if !args.contains(&"json") {
            tables.push_str(&common::text(&out.stdout));
        }
    }
    // Not vacuous: the odd text is there, escaped.
    assert!(tables.contains("ok <U+202E>gnp.exe<U+202C>"), "{tables}");
    assert!(tables.contains("<U+E0041><U+E0042>"), "{tables}");
    assert!(tables.contains("<U+202E>gnp.exe"), "{tables}");
    if named {
        assert!(
            tables.contains("alice<U+001B>]52;c;aGk=<U+0007>"),
            "{tables}"
        );
    }
    // The error printer, with the owner's name in a "not allowed" message
    // from a worker token.
    let wenv = [
        ("MAC_HUB_URL", hub.url.as_str()),
        ("MAC_HUB_TOKEN", worker.as_str()),
    ];
    let out = common::macfleet(&["agents", "set", "claude,opencode"], &wenv);
    assert!(!out.status.success());
    assert_terminal_safe("agents set stderr", &out.stderr);
    hub.stop();
}

// ------------------------------------------------ gitleaks' own rule cases

/// One of gitleaks' rule test cases (`tests/gitleaks/README.md`).
#[derive(serde::Deserialize)]
struct GitleaksCase {
    rule: String,
    tp: bool,
    text: String,
    /// What gitleaks reports as the secret of a true positive.
    #[serde(default)]
    secret: String,
    /// Written out literally in the rule's `tps`/`fps` (not generated).
    #[serde(default)]
    lit: bool,
}

fn gitleaks_cases() -> Vec<GitleaksCase> {
    use base64::Engine as _;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/gitleaks/cases.jsonl.gz.b64"
    );
    let b64: String = std::fs::read_to_string(path)
        .expect("tests/gitleaks/cases.jsonl.gz.b64")
        .split_whitespace()
        .collect();
    let gz = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64");
    // gzip (RFC 1952) as Python's gzip module writes it: a 10-byte header
    // with no optional fields, raw deflate, then CRC-32 and size.
    assert!(
        gz.len() > 18 && gz[..3] == [0x1f, 0x8b, 8] && gz[3] == 0,
        "gzip header"
    );
    let raw = miniz_oxide::inflate::decompress_to_vec(&gz[10..gz.len() - 8]).expect("deflate");
    let size = u32::from_le_bytes(gz[gz.len() - 4..].try_into().expect("4 bytes"));
    assert_eq!(raw.len() as u32, size, "gzip size");
    let text = String::from_utf8(raw).expect("utf-8");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("one case a line"))
        .collect()
}

/// A rule's family: its id's first word (`curl-auth-header` → `curl`).
fn family(rule: &str) -> &str {
    rule.split('-').next().unwrap_or(rule)
}

/// gitleaks' true positives are caught (the secret gitleaks reports does
/// not come back whole) and its false positives come back untouched, per
/// family and in all, the cases written literally in the rule files apart
/// from the generated ones. Prints the table docs/scrubbing.md gives.
#[test]
fn gitleaks_rule_cases_are_caught_and_their_false_positives_kept() {
    use std::collections::BTreeMap;
    let cases = gitleaks_cases();
    // family -> [literal, generated] x (tp, tp caught, fp, fp kept)
    let mut by: BTreeMap<&str, [[usize; 4]; 2]> = BTreeMap::new();
    let mut missed = Vec::new();
    let mut flagged = Vec::new();
    for c in &cases {
        let out = scrub(&c.text);
        let row = &mut by.entry(family(&c.rule)).or_default()[usize::from(!c.lit)];
        if c.tp {
            row[0] += 1;
            let caught = !matches!(out, Cow::Borrowed(_))
                && (c.secret.is_empty() || !out.contains(c.secret.as_str()));
            if caught {
                row[1] += 1;
            } else {
                missed.push((c.lit, &c.rule, &c.text));
            }
        } else {
            row[2] += 1;
            if out == c.text {
                row[3] += 1;
            } else {
                flagged.push((c.lit, &c.rule, &c.text, out.into_owned()));
            }
        }
    }
    let mut total = [[0usize; 4]; 2];
    for r in by.values() {
        for (t, r) in total.iter_mut().zip(r) {
            for i in 0..4 {
                t[i] += r[i];
            }
        }
    }
    let cell = |n: usize, of: usize| {
        if of == 0 {
            "–".to_string()
        } else {
            format!("{n} / {of}")
        }
    };
    let pct = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
    println!(
        "| family | literal true positives caught | generated caught | literal false positives kept | generated kept |"
    );
    println!("| --- | --- | --- | --- | --- |");
    for (f, [l, g]) in &by {
        println!(
            "| {f} | {} | {} | {} | {} |",
            cell(l[1], l[0]),
            cell(g[1], g[0]),
            cell(l[3], l[2]),
            cell(g[3], g[2])
        );
    }
    let [l, g] = total;
    println!(
        "| all | {} ({:.1}%) | {} ({:.1}%) | {} ({:.1}%) | {} ({:.1}%) |",
        cell(l[1], l[0]),
        pct(l[1], l[0]),
        cell(g[1], g[0]),
        pct(g[1], g[0]),
        cell(l[3], l[2]),
        pct(l[3], l[2]),
        cell(g[3], g[2]),
        pct(g[3], g[2]),
    );
    // Literal false positives that another rule lists, word for word, as
    // its true positive (`cloudflare: "<token>"` is a false positive of
    // the origin-CA rule): a scrubber without rules cannot keep them.
    let tps: std::collections::HashSet<&str> = cases
        .iter()
        .filter(|c| c.tp)
        .map(|c| c.text.as_str())
        .collect();
    let cross: Vec<&GitleaksCase> = cases
        .iter()
        .filter(|c| !c.tp && c.lit && tps.contains(c.text.as_str()))
        .collect();
    let cross_kept = cross.iter().filter(|c| scrub(&c.text) == c.text).count();
    println!(
        "literal false positives that are another rule's true positive: {} ({} kept); \
         without them {} / {} kept ({:.1}%)",
        cross.len(),
        cross_kept,
        l[3] - cross_kept,
        l[2] - cross.len(),
        pct(l[3] - cross_kept, l[2] - cross.len())
    );
    let all = [0, 1, 2, 3].map(|i| l[i] + g[i]);
    println!(
        "all cases: {} / {} true positives caught ({:.1}%), {} / {} false positives kept ({:.1}%)",
        all[1],
        all[0],
        pct(all[1], all[0]),
        all[3],
        all[2],
        pct(all[3], all[2])
    );
    if std::env::var_os("GITLEAKS_CASES_VERBOSE").is_some() {
        for (lit, rule, text) in &missed {
            let how = if *lit { "literal" } else { "generated" };
            println!("missed {how} {rule}: {text:?}");
        }
        for (lit, rule, text, out) in &flagged {
            let how = if *lit { "literal" } else { "generated" };
            println!("flagged {how} {rule}: {text:?} -> {out:?}");
        }
    }
    assert!(all[0] > 5000 && all[2] > 300, "{all:?}");
    assert!(
        l[0] > 250 && l[2] > 300,
        "{l:?}: the literal cases are marked"
    );
    // At least 95% of the true positives caught, literal and in all; at
    // least 80% of the literal false positives kept (75% of all: most of
    // the generated ones are another rule's true positives).
    for (what, t, fp) in [("literal", l, 80), ("all", all, 75)] {
        assert!(
            t[1] * 100 >= t[0] * 95,
            "{what}: {} of {} true positives caught",
            t[1],
            t[0]
        );
        assert!(
            t[3] * 100 >= t[2] * fp,
            "{what}: {} of {} false positives kept",
            t[3],
            t[2]
        );
    }
}

/// Inputs proptest once found where a second pass changed the first's
/// output (a balance word whose amount stood past a redaction).
#[test]
fn scrubbing_twice_changes_nothing_on_found_regressions() {
    for text in [
        "balance#access_token=? $0",
        "balance token=abc $0",
        "credit balance: [x] $12",
    ] {
        let once = scrub(text).into_owned();
        let twice = scrub(&once).into_owned();
        assert_eq!(twice, once, "{text:?}");
    }
}

/// Found by `idempotent_on_tricky_text`: a back-quoted password value that
/// holds a PEM key (whose `BEGIN PRIVATE KEY` has spaces) was left to the
/// key's rule on the first scan and redacted as a password on the second,
/// because the placeholder has none. A rescan changes nothing now.
#[test]
fn a_back_quoted_value_holding_a_pem_key_scrubs_the_same_twice() {
    let pem = format!("-----BEGIN {}KEY-----", "PRIVATE ");
    let text = format!("Password=`_{pem}AaaAa0aaAaAA0aaA");
    let once = macfleet::scrub::scrub(&text).into_owned();
    assert!(!once.contains("AaaAa0aaAaAA0aaA"), "{once}");
    let twice = macfleet::scrub::scrub(&once).into_owned();
    assert_eq!(twice, once);
}

/// Found by `idempotent_on_tricky_text`: a `token_=` value that is a
/// variable glued to a key (`$password_<key>`) keeps the variable and loses
/// the key on the first scan; the second scan read the variable and the
/// placeholder together as the token's value and swallowed the
/// placeholder's name. A span that runs into a placeholder is not emitted
/// now, so a rescan changes nothing.
#[test]
fn a_token_value_ending_in_a_placeholder_scrubs_the_same_twice() {
    let text = format!("token_=$password_{}{}", "0AAAAa", "AIza");
    let once = macfleet::scrub::scrub(&text).into_owned();
    assert!(!once.contains("0AAAAaAIza"), "{once}");
    let twice = macfleet::scrub::scrub(&once).into_owned();
    assert_eq!(twice, once);
}

// ------------------------------------------------- audit 31 (issue 31)

/// Values an on-call engineer reads that only looked like secrets by their
/// name (findings31 "Over-redactions"): status codes, counts, percentages,
/// file paths, and a URL glued after a token.
#[test]
fn status_codes_counts_percentages_and_paths_after_a_secret_name_stay() {
    for keep in [
        "auth: 401 Unauthorized",
        "auth: 403",
        "auth=401",
        "token: 401 invalid",
        "key: 401",
        "tests pass: 128 fail: 2",
        "pwd: /home/ci/work",
        "/etc/passwd: permission denied",
        "private_key: /home/ci/.ssh/id_ed25519",
        "private_key: ~/.ssh/id_rsa",
        "balance: 50% of quota used",
    ] {
        assert_eq!(scrub(keep), keep, "{keep}");
    }
    let mut r = Rng::new(3101);
    let pw = r.b62(16);
    // What looks like one of those but is not stays redacted.
    for (text, gone) in [
        (format!("auth: {pw}"), pw.clone()),
        (format!("password: 40{pw}"), pw.clone()),
        (format!("private_key: /{pw}/{pw}"), pw.clone()),
        ("token: 12345678".to_string(), "12345678".to_string()),
    ] {
        assert_no_fragment(&scrub(&text), &gone, &text);
    }
    let body = r.b62(20);
    let text = format!("glpat-{body}https://gitlab.example.com/x.git");
    assert_eq!(
        scrub(&text),
        format!(
            "{}https://gitlab.example.com/x.git",
            placeholder("gitlab-token")
        )
    );
}

/// Passwords on command lines the audit found passing (findings31 1, 2):
/// curl's `-u` grouped with other short flags, `-U` glued, `curl.exe`,
/// `xh -a`, and the password flags of sshpass, docker/podman login,
/// mongosh, az login, htpasswd -b, smbclient -U and ssh-keygen -N.
#[test]
fn command_line_passwords_in_grouped_flags_and_other_tools_are_caught() {
    let mut r = Rng::new(3102);
    let pw = r.b62(16);
    let pass = placeholder("password");
    let forms = [
        "curl -su bob:{} https://x.example",
        "curl -ku bob:{} https://x.example",
        "curl -Lu bob:{} https://x.example",
        "curl -vu bob:{} https://x.example",
        "curl -sSu 'bob:{}' https://x.example",
        "curl -fsSLu bob:{} https://x.example",
        "curl -Ubob:{} -x proxy:3128 https://x.example",
        "curl.exe -u bob:{} https://x.example",
        "xh -a bob:{} https://x.example",
        "sshpass -p {} ssh ci@host",
        "sshpass -p'{}' ssh ci@host",
        "docker login -u ci -p {} registry.example.com",
        "podman login -u ci -p {} registry.example.com",
        "mongosh mongodb://db:27017 -u admin -p {} --quiet",
        "az login --service-principal -u app -p {} --tenant t",
        "htpasswd -b /etc/nginx/htpasswd admin {}",
        "htpasswd -nbB admin {}",
        "smbclient //h/share -U ci%{} -c ls",
        "ssh-keygen -t ed25519 -N {} -f key",
    ];
    for form in forms {
        let text = form.replace("{}", &pw);
        let out = scrub(&text);
        assert_no_fragment(&out, &pw, &text);
        assert_eq!(out, form.replace("{}", &pass), "{text}");
        assert_eq!(scrub(&out), out, "{out}");
    }
    for keep in [
        "curl -su bob https://x.example",
        "curl -sSL https://x.example -o /tmp/x",
        "docker login -u ci --password-stdin registry.example.com",
        "docker run -p 8080:80 nginx",
        "sshpass -p $SSHPASS ssh ci@host",
        "ssh-keygen -t ed25519 -N '' -f key",
        "htpasswd -c /etc/nginx/htpasswd admin",
        "smbclient -L //h -U ci",
        "az login --identity",
    ] {
        assert_eq!(scrub(keep), keep, "{keep}");
    }
}

/// Webhooks the audit found passing (findings31 3, 4, 5): JSON's escaped
/// slashes, Discord's versioned API path, and hosts and provider prefixes
/// in another case.
#[test]
fn escaped_versioned_and_upper_case_webhooks_and_prefixes_are_caught() {
    let mut r = Rng::new(3103);
    let slack = r.b62(24);
    let (t, bb) = (r.b62(8), r.b62(8));
    let id = "609139099603082462";
    let discord = r.b62(68);
    let tg = format!("AA{}", r.b62(33));
    let upper: String = r.pick(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", 36);
    let bech: String = r.pick(b"qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58);
    let ant = r.b62(93);
    let cases = [
        (
            format!(r#""url":"https:\/\/hooks.slack.com\/services\/T{t}\/B{bb}\/{slack}""#),
            slack.clone(),
        ),
        (
            format!(r#""url":"https:\/\/hooks.slack.com\/workflows\/T{t}\/A{bb}\/{slack}""#),
            slack.clone(),
        ),
        (
            format!(r#""u":"https:\/\/discord.com\/api\/webhooks\/{id}\/{discord}""#),
            discord.clone(),
        ),
        (
            format!(r#""u":"https:\/\/discordapp.com\/api\/v9\/webhooks\/{id}\/{discord}""#),
            discord.clone(),
        ),
        (
            format!("https://discord.com/api/v10/webhooks/{id}/{discord}"),
            discord.clone(),
        ),
        (
            format!("https://discord.com/api/v6/webhooks/{id}/{discord}"),
            discord.clone(),
        ),
        (
            format!("HTTPS://HOOKS.SLACK.COM/services/T{t}/B{bb}/{slack}"),
            slack.clone(),
        ),
        (
            format!("https://hooks.slack.com/Services/T{t}/B{bb}/{slack}"),
            slack.clone(),
        ),
        (
            format!("https://DISCORD.COM/api/webhooks/{id}/{discord}"),
            discord.clone(),
        ),
        (
            format!("https://api.telegram.org/BOT123456789:{tg}/getMe"),
            tg.clone(),
        ),
        (format!("SK-ANT-api03-{ant}AA"), ant.clone()),
        (format!("token GHP_{upper}"), upper.clone()),
        (format!("age-secret-key-1{bech}"), bech.clone()),
    ];
    for (text, secret) in cases {
        let out = scrub(&text);
        assert_no_fragment(&out, &secret, &text);
        assert_eq!(scrub(&out), out, "{out}");
    }
    for keep in [
        "https://discord.com/api/v10/channels/123/messages",
        r#""doc":"https:\/\/api.slack.com\/messaging\/webhooks""#,
        "see https://hooks.slack.com/services for setup",
    ] {
        assert_eq!(scrub(keep), keep, "{keep}");
    }
}

/// A detail cut at its 200-character bound, and short bodies after a
/// provider's prefix (findings31 6): the password of a URL whose `@host`
/// was cut off, `sk-ant-api03-` and 8 characters, `ghp_` and 10, a
/// Telegram token of 30 to 36 characters after the colon.
#[test]
fn secrets_cut_at_a_bound_and_short_prefixed_bodies_are_caught() {
    let mut r = Rng::new(3104);
    let pw = r.b62(14);
    let pass = placeholder("password");
    for (text, want) in [
        (
            format!("failover: redis://app:{pw}"),
            format!("failover: redis://app:{pass}"),
        ),
        (
            format!("https://deploy:{pw} connection reset"),
            format!("https://deploy:{pass} connection reset"),
        ),
        (
            format!("redis://app:{pw} connection reset by peer"),
            format!("redis://app:{pass} connection reset by peer"),
        ),
    ] {
        assert_eq!(scrub(&text), want, "{text}");
    }
    let tg30 = format!("AA{}", r.b62(28));
    let tg36 = format!("AA{}", r.b62(34));
    for secret in [
        format!("sk-ant-api03-{}", r.b62(8)),
        format!("ghp_{}", r.b62(10)),
        format!("ghp_{}", r.b62(16)),
        format!("123456789:{tg30}"),
        format!("123456789:{tg36}"),
    ] {
        let text = format!("error: {secret} rejected");
        assert_no_fragment(&scrub(&text), &secret, &text);
    }
    for keep in [
        "http://localhost:8080 ok",
        "redis://localhost:6379",
        "see http://localhost:port for it",
        "sk-ant-api03-xxxx",
        "ghp_abc",
    ] {
        assert_eq!(scrub(keep), keep, "{keep}");
    }
}

/// Anthropic keys the audit found whole (findings31 7, 8, 9): a body
/// with no 12-character alphanumeric stretch, a full-length body that
/// reads as a placeholder (the issue: a provider's prefix is a secret
/// whatever follows), a key elided in the middle, and a blank after the
/// prefix.
#[test]
fn anthropic_keys_of_any_body_elided_or_split_after_the_prefix_are_caught() {
    let mut r = Rng::new(3105);
    let pieces: Vec<String> = (0..4).map(|_| r.b62(7)).collect();
    let dashed = format!("sk-ant-api03-{}", pieces.join("-"));
    let filler = format!("sk-ant-api03-{}AA", "x".repeat(93));
    let (head, tail) = (r.b62(40), r.b62(53));
    let body = r.b62(60);
    let ant = placeholder("anthropic-key");
    for (text, want, secret) in [
        (
            format!("key {dashed}"),
            format!("key {ant}"),
            dashed.clone(),
        ),
        (
            format!("key {filler}"),
            format!("key {ant}"),
            filler.clone(),
        ),
        (
            format!("key sk-ant-api03-{head}...{tail} rejected"),
            format!("key {ant} rejected"),
            tail.clone(),
        ),
        (
            format!("key sk-ant-api03-{head}\u{2026}{tail}"),
            format!("key {ant}"),
            tail.clone(),
        ),
        (
            format!("key\tsk-ant-api03-\t{body}"),
            format!("key\t{ant}"),
            body.clone(),
        ),
        (
            format!("sk-ant-api03- {body} rejected"),
            format!("{ant} rejected"),
            body.clone(),
        ),
    ] {
        let out = scrub(&text);
        assert_no_fragment(&out, &secret, &text);
        assert_eq!(out, want, "{text}");
    }
    for keep in ["sk-ant-api03- is the prefix", "sk-ant-api03-... is elided"] {
        assert_eq!(scrub(keep), keep, "{keep}");
    }
}

/// findings31's slow path: a 64 KiB text of curl near misses (`curl -u
/// a:` over and over: every `curl` read its command line to its end and
/// emitted every password on it again) scrubs within a bound relative to a
/// clean text with triggers of the same size. A ratio, so a loaded machine
/// moves both sides; the best of three runs each.
#[test]
fn near_misses_of_a_detector_cost_no_more_than_a_bounded_multiple_of_clean_text() {
    let n = 64 * 1024;
    let best = |text: &str| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(scrub(text));
                t.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let clean = "curl https://x.example/a ".repeat(n / 25);
    let near = "curl -u a:".repeat(n / 10);
    assert!(matches!(scrub(&clean), Cow::Borrowed(_)));
    let (c, s) = (best(&clean), best(&near));
    assert!(
        s < c * 40 + Duration::from_millis(50),
        "near misses {s:?} against clean {c:?} ({} B each)",
        near.len()
    );
}

/// Issue 31's shapes left open by the audit, each with the part that must
/// stay: a key whose separators are escaped, Facebook's `EAA<letter>`
/// tokens, `basic` in any case and base64 of `user:<token>` anywhere, a
/// key split into dotted runs, a Secrets Manager ARN (the account goes, the
/// secret's name stays), a URL password behind JSON-escaped slashes, and a
/// budget's spend. Values built at run time.
#[test]
fn escaped_split_and_encoded_keys_spend_and_arns_are_caught_and_near_misses_stay() {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut r = Rng::new(3131);
    let ant = r.b62(60);
    let gh = r.b62(36);
    let fb = r.b62(120);
    let pw = r.b62(16);
    let runs: Vec<String> = (0..4).map(|_| r.b62(16)).collect();
    let dotted = runs.join(".");
    let acct = r.pick(b"0123456789", 12);
    let ant_p = Kind::AnthropicKey.placeholder();
    let cases: Vec<(String, String)> = vec![
        (
            format!("key sk\\u002dant\\u002dapi03\\u002d{ant} rejected"),
            format!("key {ant_p} rejected"),
        ),
        (
            format!("key sk&#45;ant&#45;api03&#45;{ant} rejected"),
            format!("key {ant_p} rejected"),
        ),
        (
            format!("key sk&#x2D;ant&#x2d;api03&#0045;{ant} rejected"),
            format!("key {ant_p} rejected"),
        ),
        (
            format!("key sk\\x2dant\\x2dapi03\\x2d{ant} rejected"),
            format!("key {ant_p} rejected"),
        ),
        (
            format!("key sk%2Dant%2dapi03%2D{ant} rejected"),
            format!("key {ant_p} rejected"),
        ),
        (
            format!("git: ghp&#95;{gh} expired"),
            format!("git: {} expired", Kind::GithubToken.placeholder()),
        ),
        (
            format!("graph: EAAG{fb} expired"),
            format!("graph: {} expired", Kind::Token.placeholder()),
        ),
        (
            format!("graph: EAAB{fb} expired"),
            format!("graph: {} expired", Kind::Token.placeholder()),
        ),
        (
            format!(
                "registry said: basic {} refused",
                b64(&format!("deploy:{pw}"))
            ),
            format!(
                "registry said: basic {} refused",
                Kind::Authorization.placeholder()
            ),
        ),
        (
            format!("sent BASIC {} back", b64(&format!("deploy:{pw}"))),
            format!("sent BASIC {} back", Kind::Authorization.placeholder()),
        ),
        (
            format!("checkout: sent {} and got 403", b64(&format!("x:ghp_{gh}"))),
            format!(
                "checkout: sent {} and got 403",
                Kind::Authorization.placeholder()
            ),
        ),
        (
            format!(
                "checkout: sent {} and got 403",
                b64(&format!("xy:gho_{gh}"))
            ),
            format!(
                "checkout: sent {} and got 403",
                Kind::Authorization.placeholder()
            ),
        ),
        (
            format!(
                "checkout: sent {} and got 403",
                b64(&format!("oauth2:glpat-{}", &gh[..20]))
            ),
            format!(
                "checkout: sent {} and got 403",
                Kind::Authorization.placeholder()
            ),
        ),
        (
            format!(
                "checkout: sent {} and got 403",
                b64(&format!("x-access-token:github_pat_{gh}"))
            ),
            format!(
                "checkout: sent {} and got 403",
                Kind::Authorization.placeholder()
            ),
        ),
        (
            format!("upstream: session {dotted} refused"),
            format!("upstream: session {} refused", Kind::Token.placeholder()),
        ),
        (
            format!("id={}.{}.{}", runs[0], runs[1], runs[2]),
            format!("id={}", Kind::Token.placeholder()),
        ),
        (
            format!(
                "denied on arn:aws:secretsmanager:eu-west-1:{acct}:secret:fleet/db-password-Ab3dEf"
            ),
            format!(
                "denied on arn:aws:secretsmanager:eu-west-1:{}:secret:fleet/db-password-Ab3dEf",
                Kind::AccountId.placeholder()
            ),
        ),
        (
            format!("cache: {{\"url\":\"redis:\\/\\/app:{pw}@cache.internal:6379\"}}"),
            format!(
                "cache: {{\"url\":\"redis:\\/\\/app:{}@cache.internal:6379\"}}",
                Kind::Password.placeholder()
            ),
        ),
        (
            "budget alert: $12.40 spent".to_string(),
            format!("budget alert: {} spent", Kind::Balance.placeholder()),
        ),
        (
            "spent 88.10 USD of the month's budget".to_string(),
            format!(
                "spent {} of the month's budget",
                Kind::Balance.placeholder()
            ),
        ),
    ];
    for (text, want) in &cases {
        let out = scrub(text);
        assert_eq!(&out, want, "{text}");
        assert_eq!(scrub(&out), out, "not idempotent: {text}");
    }
    // Near misses: what stays byte for byte.
    let hex16 = || Rng::new(5).pick(b"0123456789abcdef", 16);
    let keep = [
        "cost $0.02 for 1200 tokens; spent 30 seconds; budget exceeded".to_string(),
        "R&amp;D &#45; 5 \\x41 \\u0041 C:\\Users\\x2dfoo, a \\/ b, 100% done".to_string(),
        "basic usage; BASIC Authentication; basic configuration".to_string(),
        "host gpu-node-17.example.internal, com.example.fleet.worker.Main, v1.2.3".to_string(),
        format!("trace {0}.{0}.{0}.{0}", hex16()),
        "worker 3f2a9c1e-7b4d-4e8a-9f0c-1d2e3f4a5b6c on Johns-MacBook-Pro.local".to_string(),
        "ProductionWorker2024.StagingWorker2025.CanaryWorker2026".to_string(),
        "arn:aws:secretsmanager:eu-west-1:secret".to_string(),
        "EAAGshort and EAAG1234".to_string(),
        "eaag".repeat(30),
    ];
    for t in &keep {
        assert!(
            matches!(scrub(t), Cow::Borrowed(_)),
            "{t:?} became {:?}",
            scrub(t)
        );
    }
    // Plain random runs (not forced to mix), four of 16 or three of 20, as
    // an id in text: each caught.
    let mut missed = Vec::new();
    for i in 0..500 {
        let (n, len) = if i % 2 == 0 { (4, 16) } else { (3, 20) };
        let key: Vec<String> = (0..n).map(|_| r.pick(B62, len)).collect();
        let text = format!("session {} refused", key.join("."));
        if !scrub(&text).contains(&Kind::Token.placeholder()) {
            missed.push(text);
        }
    }
    assert!(
        missed.len() <= 5,
        "{} of 500 missed: {missed:?}",
        missed.len()
    );
    // An escaped key in the hub's JSON form: the whole run goes, escapes too.
    let hidden = format!("sk\\u002dant\\u002dapi03\\u002d{ant}");
    assert!(!scrub(&hidden).contains("002d"), "{}", scrub(&hidden));
}

/// Found by `embedded_secret_never_survives` (2026-12-02): a value with an
/// unbalanced quote that runs into a placeholder the text already holds
/// is not taken, and the words after it in its line were then not looked
/// at either, so a `sig=` or `?sig=` value there came back whole.
#[test]
fn a_value_running_into_a_placeholder_leaves_the_rest_of_its_line_looked_at() {
    let sig = Rng::new(3132).b62(20);
    let p = Kind::Token.placeholder();
    for (text, want) in [
        (
            format!("password='{p} sig={sig}"),
            format!("password='{p} sig={}", Kind::Signature.placeholder()),
        ),
        (
            format!("__CONTRIBSYS__COM='{p} /v1?sig={sig}&y=2 "),
            format!(
                "__CONTRIBSYS__COM='{p} /v1?sig={}&y=2 ",
                Kind::UrlQuery.placeholder()
            ),
        ),
    ] {
        let out = scrub(&text);
        assert_eq!(out, want, "{text}");
        assert_eq!(scrub(&out), out);
    }
}
