//! Cost of `scrub` on one failover detail (≤ 200 characters): two clean
//! details of exactly 200 bytes (without and with trigger words), clean text
//! without a trigger word (the common case), clean text with trigger words
//! (a URL, `tokens`, `key`), a detail holding two secrets, clean non-ASCII
//! text, a key hidden by a zero-width space, and `textsafe::for_terminal`
//! (scrub, then escape) on clean text and on text with bidi controls.
//!
//! The `fields` group: the clean path beyond a detail, as the readers run
//! it: one heartbeat's worker fields scrubbed one by one (worker id, host,
//! agent names, model, revision, a failover's cause), and the fleet's
//! config document (the agents ladder TOML, 1.3 kB, comments too, as a
//! non-owner reads it), each clean and with one secret in it.
//!
//! `cargo bench --bench scrub`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use macfleet::scrub::scrub;
use macfleet::textsafe::for_terminal;

/// Deterministic base62, so no secret-shaped literal sits in the source.
fn b62(n: usize) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ABC[(x % 62) as usize] as char
        })
        .collect()
}

/// `s` cut or padded with spaces and `.` to exactly 200 bytes.
fn pad200(s: &str) -> String {
    let mut t: String = s.chars().take(200).collect();
    while t.len() < 199 {
        t.push(' ');
    }
    t.push('.');
    t.truncate(200);
    t
}

fn details(c: &mut Criterion) {
    let clean = "opencode route: 429 Too Many Requests from upstream anthropic; retry after 30s, \
                 failing over to pi (claude-sonnet-4-5-20250929), worker 3f2a9c1e-7b4d-4e8a-9f0c-1d2e3f4a5b6c";
    let triggers = "opencode: POST https://api.anthropic.com/v1/messages returned 529 overloaded; \
                    tokens: 1200 of max_tokens=4096, key rotation not needed, worker 3f2a9c1e-7b4d";
    let dirty: String = format!(
        "opencode route: 401 from upstream, key sk-ant-api03-{} rejected; token={}",
        b62(93),
        b62(24)
    )
    .chars()
    .take(200)
    .collect();
    // Exactly 200 bytes, the `detail` bound: prose with none of the
    // trigger words, and prose that holds the new ones (`left`, `%`,
    // `credit`, `@`-less `user`, `session`, `pass`) but nothing secret.
    let clean_200 = pad200(
        "opencode route: 429 Too Many Requests from upstream anthropic; retry after 30s, \
         failing over to pi (claude-sonnet-4-5-20250929) on host mac-mini-07, worker 3f2a9c1e-7b4d",
    );
    let clean_200_triggers = pad200(
        "opencode: 3 retries left, 50% of quota used, credits renew on 1 Dec; session resumed, \
         tests pass, HTTP 429 from v2.3.1, max_tokens=4096, retry in 30 seconds on host mac-mini",
    );
    assert_eq!((clean_200.len(), clean_200_triggers.len()), (200, 200));
    assert!(matches!(scrub(&clean_200), std::borrow::Cow::Borrowed(_)));
    assert!(matches!(
        scrub(&clean_200_triggers),
        std::borrow::Cow::Borrowed(_)
    ));
    let mut g = c.benchmark_group("scrub_detail");
    g.bench_function("clean_200", |b| b.iter(|| scrub(black_box(&clean_200))));
    g.bench_function("clean_200_triggers", |b| {
        b.iter(|| scrub(black_box(&clean_200_triggers)))
    });
    g.bench_function("clean", |b| b.iter(|| scrub(black_box(clean))));
    g.bench_function("clean_with_triggers", |b| {
        b.iter(|| scrub(black_box(triggers)))
    });
    g.bench_function("dirty", |b| b.iter(|| scrub(black_box(&dirty))));
    // findings31's slow path: near misses of one detector packed in a
    // 200-byte detail (every `curl` read its line to the end: quadratic).
    let near_curl = "curl -u a:".repeat(20);
    g.bench_function("near_miss_curl_200", |b| {
        b.iter(|| scrub(black_box(&near_curl)))
    });
    let near_at = "a@".repeat(100);
    g.bench_function("near_miss_at_200", |b| {
        b.iter(|| scrub(black_box(&near_at)))
    });
    let non_ascii = "opencode route: 429 — “Too Many Requests” from upstream anthropic; réessayer \
                     dans 30 s, bascule vers pi (claude-sonnet-4-5), nœud 東京-3, worker 3f2a9c1e";
    g.bench_function("clean_non_ascii", |b| {
        b.iter(|| scrub(black_box(non_ascii)))
    });
    let k = b62(60);
    let hidden = format!(
        "opencode route: 401 from upstream, key sk-ant-api03-{}\u{200B}{} rejected",
        &k[..30],
        &k[30..]
    );
    g.bench_function("dirty_hidden", |b| b.iter(|| scrub(black_box(&hidden))));
    g.bench_function("for_terminal_clean", |b| {
        b.iter(|| for_terminal(black_box(clean)))
    });
    let bidi = "opencode route: 429 from upstream, file ok \u{202E}gnp.exe\u{202C} \
                attached, retry after 30s, failing over to pi, worker 3f2a9c1e-7b4d-4e8a";
    g.bench_function("for_terminal_bidi", |b| {
        b.iter(|| for_terminal(black_box(bidi)))
    });
    g.finish();
}

/// One heartbeat's fields as a reader shows them, none of them secret.
fn worker_fields() -> Vec<String> {
    [
        "w-00042",
        "3f2a9c1e-7b4d-4e8a-9f0c-1d2e3f4a5b6c",
        "mac-mini-07.fleet.internal",
        "opencode",
        "claude-code",
        "pi",
        "claude-sonnet-4-5-20250929",
        "rate_limited",
        "hub_router",
        "r-000183",
        "2026-12-02T13:27:01Z",
        "token-refresher-3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The agents ladder as the hub serves it: 40 agents, comments, blocks.
fn config_document(secret_comment: Option<&str>) -> String {
    let mut d = String::from(
        "# fleet agents ladder: first is tried first; edited by macfleet agents\n[fleet]\n\
         MAC_CODING_AGENTS = [\n",
    );
    for i in 1..=40 {
        d.push_str(&format!("    \"agent-{i:02}\","));
        if i % 7 == 0 {
            d.push_str(&format!(" # tier {}, retry after 30s on 429", i / 7));
        }
        d.push('\n');
        if i % 10 == 0 {
            d.push_str(&format!("    # block {}\n", i / 10));
        }
    }
    if let Some(c) = secret_comment {
        d.push_str(&format!("    # {c}\n"));
    }
    d.push_str("]\nsize = 40\n");
    d
}

fn fields(c: &mut Criterion) {
    let clean = worker_fields();
    let mut dirty = clean.clone();
    dirty[4] = format!("claude-code sk-ant-api03-{}", b62(93));
    let doc = config_document(None);
    let doc_dirty = config_document(Some(&format!("old key: ghp_{}", b62(36))));
    assert!(
        clean
            .iter()
            .all(|f| matches!(scrub(f), std::borrow::Cow::Borrowed(_)))
    );
    assert!(matches!(scrub(&doc), std::borrow::Cow::Borrowed(_)));
    assert!(matches!(scrub(&doc_dirty), std::borrow::Cow::Owned(_)));
    let all = |fs: &[String]| fs.iter().map(|f| scrub(black_box(f)).len()).sum::<usize>();
    let mut g = c.benchmark_group("scrub_fields");
    g.bench_function("worker_fields_clean", |b| b.iter(|| all(&clean)));
    g.bench_function("worker_fields_one_secret", |b| b.iter(|| all(&dirty)));
    g.bench_function("config_document_clean", |b| {
        b.iter(|| scrub(black_box(&doc)))
    });
    g.bench_function("config_document_one_secret", |b| {
        b.iter(|| scrub(black_box(&doc_dirty)))
    });
    g.finish();
}

/// Issue 31: 64 KiB of adversarial near misses in one text (the hub takes
/// a heartbeat of 64 KiB): `a@` over and over (each `@` read 256 bytes
/// back before), `a:b@` pairs, `curl -u a:`, and a clean 64 KiB of prose
/// with the same trigger density for comparison.
fn near_misses_64k(c: &mut Criterion) {
    let n = 64 * 1024;
    let mut g = c.benchmark_group("near_miss_64k");
    g.sample_size(10);
    let at = "a@".repeat(n / 2);
    g.bench_function("at", |b| b.iter(|| scrub(black_box(&at))));
    let scp = "a:b@".repeat(n / 4);
    g.bench_function("colon_at", |b| b.iter(|| scrub(black_box(&scp))));
    let dots = format!("{}.", b62(16)).repeat(n / 17);
    g.bench_function("dotted_runs", |b| b.iter(|| scrub(black_box(&dots))));
    let curl = "curl -u a:".repeat(n / 10);
    g.bench_function("curl", |b| b.iter(|| scrub(black_box(&curl))));
    g.finish();
}

criterion_group!(benches, details, fields, near_misses_64k);
criterion_main!(benches);
