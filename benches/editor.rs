//! A move in a ~1 MB document against toml_edit's own parse-and-print of
//! the same document, side by side. The editor must cost at most 1.5x.
//!
//! `cargo bench --bench editor` runs both under criterion, then times them
//! interleaved and prints the ratio.

use std::hint::black_box;
use std::str::FromStr;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use macfleet::agents_doc::{Op, apply};

/// The list near the top, then ~1 MB of other tables, comments, arrays.
fn document() -> String {
    let mut s = String::from(
        "# fleet configuration\n[fleet]\nname = \"prod\"\nMAC_CODING_AGENTS = [\n    # cheapest first\n    \"opencode\", # local router\n    # \"pi\",     # waiting for credits\n    \"claude\",   # fallback\n\n    \"codex\",\n    \"cursor\",\n]\n\n",
    );
    let mut i = 0;
    while s.len() < 1_000_000 {
        s.push_str(&format!(
            "# service {i}: owned by team-{t}\n[services.svc-{i}]\nhost = \"node-{i}.example.internal\"\nport = {p}\nenabled = {e}\nweights = [1, 2, 3, {i}]  # tuned\ntags = [\"a\", \"b\", # why\n        \"c\"]\nlimits = {{ cpu = 2, mem = \"4Gi\" }}\ndescription = \"\"\"\nA service with a long description, line one.\nLine two of service {i}.\n\"\"\"\n\n",
            t = i % 17,
            p = 8000 + i % 1000,
            e = i % 2 == 0,
        ));
        i += 1;
    }
    s
}

fn parse_print(text: &str) -> String {
    toml_edit::DocumentMut::from_str(text)
        .map(|d| d.to_string())
        .unwrap_or_default()
}

fn edit(text: &str) -> String {
    let op = Op::Move {
        name: "cursor".into(),
        index: 0,
    };
    apply(text, &op).map(|e| e.text).unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let text = document();
    let mut g = c.benchmark_group("one_megabyte");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(8));
    g.bench_function("toml_edit_parse_and_print", |b| {
        b.iter(|| parse_print(black_box(&text)))
    });
    g.bench_function("editor_move", |b| b.iter(|| edit(black_box(&text))));
    g.finish();
}

criterion_group!(benches, bench);

/// Interleaved timing: the median of many rounds of each, and their ratio.
fn ratio() {
    let text = document();
    assert!(edit(&text) != text, "the move applies");
    let mut base = Vec::new();
    let mut ours = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        black_box(parse_print(black_box(&text)));
        base.push(t.elapsed());
        let t = Instant::now();
        black_box(edit(black_box(&text)));
        ours.push(t.elapsed());
    }
    base.sort();
    ours.sort();
    let (b, o) = (base[base.len() / 2], ours[ours.len() / 2]);
    let r = o.as_secs_f64() / b.as_secs_f64();
    println!(
        "document: {} bytes; toml_edit parse+print median {:.2} ms; editor move median {:.2} ms; ratio {:.2} (limit 1.50)",
        text.len(),
        b.as_secs_f64() * 1e3,
        o.as_secs_f64() * 1e3,
        r
    );
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    ratio();
}
