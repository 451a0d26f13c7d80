//! The detectors. One case-insensitive Aho-Corasick pass finds trigger
//! words; each trigger runs a small hand-written matcher at that spot.
//!
//! Every matcher works on bytes and only ends a run at an ASCII byte or at
//! the end of the text, so ranges always fall on `char` boundaries. Work per
//! trigger is bounded, or remembered so that the same stretch is not
//! scanned again: the whole scan is linear in the input.

use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::keys::{self, Mode};

mod cmdline;
mod kube;
mod shapes;
mod special;
use super::{Finding, Kind, PLACEHOLDER_PREFIX};

/// What a trigger word asks to be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trig {
    /// A token with a known prefix (`sk-`, `ghp_`, `mft_`, `eyJ`, `AKIA`, …).
    Token(Fam),
    /// `://`: a URL's userinfo.
    Url,
    /// `Bearer <token>` anywhere.
    Bearer,
    /// `Basic <base64 of user:password>` anywhere.
    Basic,
    /// `-----BEGIN … PRIVATE KEY-----`.
    Pem,
    /// `arn:aws:…:<account>:`.
    Arn,
    /// `@`: an e-mail address (an account's name).
    Email,
    /// A word that says "balance", "credit", "left", …: an amount of money
    /// near it is a balance.
    Money,
    /// `mysql`/`mariadb`: a password glued to `-p` on that command line.
    MysqlP,
    /// A word that may be part of a secret key name (`token`, `key`, …).
    Word,
    /// A token whose shape needs its own matcher (see [`Special`]).
    Special(Special),
    /// `curl`: credentials given with `-u`/`--user` on its command line.
    Curl,
    /// ` -a`: credentials after HTTPie's `-a` or `redis-cli`'s `-a`.
    DashA,
    /// `sshpass`, `docker login`, `htpasswd`, …: a password given by a
    /// flag of that command (see [`cmdline`]).
    CmdPass,
    /// `secret`, as in `kind: Secret`: the values under the manifest's
    /// `data:` and `stringData:` (see [`kube`]).
    Kube,
    /// The base64 of `:gh…_` or `:gl…-` at any of its three alignments: a
    /// base64 word that decodes to `user:<token>` (see [`shapes`]).
    B64Cred,
}

/// Token shapes with no prefix of their own at their start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    /// `<bot id>:AA…` (Telegram bot tokens); the trigger is `:aa`.
    Telegram,
    /// 32 hex characters near an `….openai.azure.com` endpoint.
    AzureOpenai,
    /// `<15–16 digit app id>|<app secret>` (Facebook); the trigger is the
    /// `|`.
    FacebookPair,
    /// `A3-XXXXXX-…` (1Password secret keys).
    OnePassword,
    /// `<32 hex>-us<n>` (Mailchimp); the trigger is `-us`.
    Mailchimp,
    /// `4b1d` and 38 alphanumerics mixing both cases (ClickHouse Cloud).
    ClickHouse,
    /// `discord.com/api/webhooks/<id>/<token>` (also `/api/v10/…`, and
    /// with JSON's escaped `\/`); the trigger is `webhooks/`.
    DiscordHook,
    /// `hooks.slack.com\/services\/…`: a Slack webhook with JSON's escaped
    /// slashes; the trigger is `slack.com\/`.
    SlackHookEscaped,
}

/// Token families: a trigger of one family inside a run that the same
/// family already scanned is skipped (its result could only be a part of
/// the earlier one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fam {
    Sk,
    Github,
    Mft,
    Aws,
    Google,
    Xai,
    Groq,
    Hf,
    Org,
    Jwt,
    Gitlab,
    GoogleOauth,
    Pplx,
    Slack,
    Stripe,
    Npm,
    Pypi,
    Sendgrid,
    Azure,
    Ids,
    Vendor,
    More,
}
const FAMS: usize = 22;

const TRIGGERS: &[(&str, Trig)] = &[
    ("sk-", Trig::Token(Fam::Sk)),
    ("ghp_", Trig::Token(Fam::Github)),
    ("gho_", Trig::Token(Fam::Github)),
    ("ghu_", Trig::Token(Fam::Github)),
    ("ghs_", Trig::Token(Fam::Github)),
    ("ghr_", Trig::Token(Fam::Github)),
    ("github_pat_", Trig::Token(Fam::Github)),
    ("mft_", Trig::Token(Fam::Mft)),
    ("akia", Trig::Token(Fam::Aws)),
    ("asia", Trig::Token(Fam::Aws)),
    ("abia", Trig::Token(Fam::Aws)),
    ("acca", Trig::Token(Fam::Aws)),
    ("aiza", Trig::Token(Fam::Google)),
    ("xai-", Trig::Token(Fam::Xai)),
    ("gsk_", Trig::Token(Fam::Groq)),
    ("hf_", Trig::Token(Fam::Hf)),
    ("org-", Trig::Token(Fam::Org)),
    ("eyj", Trig::Token(Fam::Jwt)),
    ("glpat-", Trig::Token(Fam::Gitlab)),
    ("glptt-", Trig::Token(Fam::Gitlab)),
    ("gldt-", Trig::Token(Fam::Gitlab)),
    ("glrt-", Trig::Token(Fam::Gitlab)),
    ("gloas-", Trig::Token(Fam::Gitlab)),
    ("gocspx-", Trig::Token(Fam::GoogleOauth)),
    ("ya29.", Trig::Token(Fam::GoogleOauth)),
    ("api_org_", Trig::Token(Fam::Hf)),
    ("pplx-", Trig::Token(Fam::Pplx)),
    ("xox", Trig::Token(Fam::Slack)),
    ("xapp-", Trig::Token(Fam::Slack)),
    ("hooks.slack.com", Trig::Token(Fam::Slack)),
    ("k_live_", Trig::Token(Fam::Stripe)),
    ("k_test_", Trig::Token(Fam::Stripe)),
    ("npm_", Trig::Token(Fam::Npm)),
    ("pypi-", Trig::Token(Fam::Pypi)),
    ("sg.", Trig::Token(Fam::Sendgrid)),
    ("q~", Trig::Token(Fam::Azure)),
    ("basic", Trig::Basic),
    ("://", Trig::Url),
    ("bearer", Trig::Bearer),
    ("-----begin", Trig::Pem),
    ("arn:", Trig::Arn),
    ("acct_", Trig::Token(Fam::Ids)),
    ("proj_", Trig::Token(Fam::Ids)),
    ("user-", Trig::Token(Fam::Ids)),
    ("age-secret-key-", Trig::Token(Fam::Vendor)),
    ("akcp", Trig::Token(Fam::Vendor)),
    ("atatt3", Trig::Token(Fam::Vendor)),
    ("atctt3", Trig::Token(Fam::Vendor)),
    ("clojars_", Trig::Token(Fam::Vendor)),
    ("ezak", Trig::Token(Fam::Vendor)),
    ("eztk", Trig::Token(Fam::Vendor)),
    ("flwpubk_test-", Trig::Token(Fam::Vendor)),
    ("flwseck", Trig::Token(Fam::Vendor)),
    ("hrku-", Trig::Token(Fam::Vendor)),
    ("nrak-", Trig::Token(Fam::Vendor)),
    ("pmak-", Trig::Token(Fam::Vendor)),
    ("dapi", Trig::Token(Fam::Vendor)),
    ("doo_v1_", Trig::Token(Fam::Vendor)),
    ("dop_v1_", Trig::Token(Fam::Vendor)),
    ("dor_v1_", Trig::Token(Fam::Vendor)),
    ("dp.ct.", Trig::Token(Fam::Vendor)),
    ("dp.pt.", Trig::Token(Fam::Vendor)),
    ("dp.st.", Trig::Token(Fam::Vendor)),
    ("dt0c01.", Trig::Token(Fam::Vendor)),
    ("duffel_", Trig::Token(Fam::Vendor)),
    ("fio-u-", Trig::Token(Fam::Vendor)),
    ("fo1_", Trig::Token(Fam::Vendor)),
    ("glc_", Trig::Token(Fam::Vendor)),
    ("glsa_", Trig::Token(Fam::Vendor)),
    ("hvb.", Trig::Token(Fam::Vendor)),
    ("hvs.", Trig::Token(Fam::Vendor)),
    ("lin_api_", Trig::Token(Fam::Vendor)),
    ("ntn_", Trig::Token(Fam::Vendor)),
    ("ops_eyj", Trig::Token(Fam::Vendor)),
    ("pnu_", Trig::Token(Fam::Vendor)),
    ("pscale_", Trig::Token(Fam::Vendor)),
    ("pul-", Trig::Token(Fam::Vendor)),
    ("rdme_", Trig::Token(Fam::Vendor)),
    ("s-s4t2", Trig::Token(Fam::Vendor)),
    ("sgp_", Trig::Token(Fam::Vendor)),
    ("shpat_", Trig::Token(Fam::Vendor)),
    ("shpca_", Trig::Token(Fam::Vendor)),
    ("shppa_", Trig::Token(Fam::Vendor)),
    ("shpss_", Trig::Token(Fam::Vendor)),
    ("sm_aat_", Trig::Token(Fam::Vendor)),
    ("sm_pat_", Trig::Token(Fam::Vendor)),
    ("sm_sat_", Trig::Token(Fam::Vendor)),
    ("sntry", Trig::Token(Fam::Vendor)),
    ("sqa_", Trig::Token(Fam::Vendor)),
    ("sqp_", Trig::Token(Fam::Vendor)),
    ("squ_", Trig::Token(Fam::Vendor)),
    ("tfp_", Trig::Token(Fam::Vendor)),
    ("tskey-", Trig::Token(Fam::Vendor)),
    ("xkeysib-", Trig::Token(Fam::Vendor)),
    ("ico-", Trig::Token(Fam::Vendor)),
    ("@", Trig::Email),
    ("balance", Trig::Money),
    ("credit", Trig::Money),
    ("remain", Trig::Money),
    ("left", Trig::Money),
    ("availab", Trig::Money),
    ("fund", Trig::Money),
    ("wallet", Trig::Money),
    ("prepaid", Trig::Money),
    ("token", Trig::Word),
    ("secret", Trig::Word),
    ("passw", Trig::Word),
    ("passphrase", Trig::Word),
    ("pwd", Trig::Word),
    ("key", Trig::Word),
    ("account", Trig::Word),
    ("organization", Trig::Word),
    ("org_id", Trig::Word),
    ("org-id", Trig::Word),
    ("orgid", Trig::Word),
    ("balance", Trig::Word),
    ("credential", Trig::Word),
    ("sig", Trig::Word),
    ("auth", Trig::Word),
    ("cookie", Trig::Word),
    ("pw=", Trig::Word),
    ("pw:", Trig::Word),
    ("pw\"", Trig::Word),
    ("pw'", Trig::Word),
    ("pw =", Trig::Word),
    ("pass", Trig::Word),
    ("creds", Trig::Word),
    ("jwt", Trig::Word),
    ("session", Trig::Word),
    ("code=", Trig::Word),
    ("pat=", Trig::Word),
    ("sid=", Trig::Word),
    ("mysql", Trig::MysqlP),
    ("mariadb", Trig::MysqlP),
    ("sshpass", Trig::CmdPass),
    ("docker login", Trig::CmdPass),
    ("podman login", Trig::CmdPass),
    ("mongosh", Trig::CmdPass),
    ("az login", Trig::CmdPass),
    ("htpasswd", Trig::CmdPass),
    ("smbclient", Trig::CmdPass),
    ("ssh-keygen", Trig::CmdPass),
    ("k_prod_", Trig::Token(Fam::Stripe)),
    ("absk", Trig::Token(Fam::More)),
    ("bedrock-api", Trig::Token(Fam::More)),
    ("v1.0-", Trig::Token(Fam::More)),
    // Three bytes where a fourth would do: more triggers of four bytes or
    // more would take a third Teddy automaton (see [`FAST_AC`]).
    ("atb", Trig::Token(Fam::More)),
    ("eaa", Trig::Token(Fam::More)),
    ("fm2_", Trig::Token(Fam::More)),
    ("fm1", Trig::Token(Fam::More)),
    (":aa", Trig::Special(Special::Telegram)),
    ("openai.azure.", Trig::Special(Special::AzureOpenai)),
    ("|", Trig::Special(Special::FacebookPair)),
    ("a3-", Trig::Special(Special::OnePassword)),
    ("-us", Trig::Special(Special::Mailchimp)),
    ("4b1d", Trig::Special(Special::ClickHouse)),
    ("webhooks/", Trig::Special(Special::DiscordHook)),
    ("webhooks\\/", Trig::Special(Special::DiscordHook)),
    ("slack.com\\/", Trig::Special(Special::SlackHookEscaped)),
    ("curl", Trig::Curl),
    (" -a", Trig::DashA),
    ("secret", Trig::Kube),
    ("contribsys", Trig::Word),
    ("cloudflare", Trig::Word),
    // The vendor names of `keys::is_vendor` and `MessageBirdClientID` by a
    // part prose rarely has (`source` and `message` are everywhere).
    ("cegraph", Trig::Word),
    ("ebird", Trig::Word),
    ("sonar", Trig::Word),
    ("sumo", Trig::Word),
    // `budget alert: $12.40 spent`: what an account spent or may spend.
    ("spent", Trig::Money),
    ("spend", Trig::Money),
    ("budget", Trig::Money),
    // `:gh` / `:gl` in base64 at offset 0 (`Omdo`, `Omds`), the next
    // group at offset 1 (`hp_`, `ho_`, `hs_`, `hu_`, `hr_`, `ith`, `lpa`),
    // and `gh`/`gi`/`gl` at offset 2.
    ("omd", Trig::B64Cred),
    ("z2h", Trig::B64Cred),
    ("z2l", Trig::B64Cred),
    ("z2x", Trig::B64Cred),
    ("ahb", Trig::B64Cred),
    ("ag9", Trig::B64Cred),
    ("ahn", Trig::B64Cred),
    ("ahv", Trig::B64Cred),
    ("ahj", Trig::B64Cred),
    ("axr", Trig::B64Cred),
    ("bhb", Trig::B64Cred),
];

static TRIGGER_AC: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(TRIGGERS.iter().map(|t| t.0))
        .expect("the trigger patterns are valid")
});

/// The fast path's automata: the same (lower-case) triggers, matched
/// case-sensitively against lower-cased text, which lets them use a SIMD
/// prefilter (Teddy) that a case-insensitive automaton cannot. They are
/// split by length: Teddy fingerprints a pattern by its first
/// `min(4, shortest)` bytes and spreads the patterns over 8 or 16 buckets,
/// so one automaton of every trigger (2-byte `q~` among them, 57 in all)
/// matched most positions of ordinary prose and sent each to verification:
/// clean text went from ~114 ns to ~689 ns. Triggers of 4 bytes or more
/// get a 4-byte fingerprint; the few 3-byte ones sit in a small automaton
/// of their own; the 1- or 2-byte ones (`q~`) in a third, which memchr
/// drives. Together they find exactly what one automaton would.
///
/// Teddy takes at most 64 patterns (beyond that aho-corasick falls back to
/// a slower prefilter: with the vendor prefixes of issue 18, 122 triggers
/// of 4 bytes or more, clean text went from ~0.24 µs to ~1.6 µs), and
/// fewer patterns a bucket means fewer candidates to verify: the long
/// triggers are split into automata of at most [`TEDDY_CHUNK`]. No trigger
/// of one or two bytes may start with a common letter (`pw` did: every
/// `p` of prose was a candidate); `pw=`, `pw:` are three.
static FAST_AC: LazyLock<Vec<AhoCorasick>> = LazyLock::new(|| {
    let build = |pats: &[&str]| {
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(pats)
            .expect("the trigger patterns are valid")
    };
    let of = |keep: fn(usize) -> bool| -> Vec<&str> {
        fast_patterns()
            .into_iter()
            .filter(|t| keep(t.len()))
            .collect()
    };
    let mut acs: Vec<AhoCorasick> = of(|n| n >= 4).chunks(TEDDY_CHUNK).map(build).collect();
    acs.push(build(&of(|n| n == 3)));
    acs.push(build(&of(|n| n <= 2)));
    acs
});

/// Most triggers in one fast-path automaton.
const TEDDY_CHUNK: usize = 64;

/// The triggers the fast path looks for: each trigger that holds no other
/// one (text with `passw` in it holds `pass`), once. Finding any of these
/// is finding any trigger.
fn fast_patterns() -> Vec<&'static str> {
    let mut all: Vec<&str> = TRIGGERS.iter().map(|t| t.0).collect();
    all.sort_unstable();
    all.dedup();
    all.iter()
        .copied()
        .filter(|t| !all.iter().any(|o| o != t && t.contains(o)))
        .collect()
}

/// Whether `text` holds any trigger, in any case. Lower-cases through a
/// stack buffer, chunk by chunk: no allocation.
fn has_trigger(text: &str) -> bool {
    const CHUNK: usize = 512;
    const OVERLAP: usize = 16; // > the longest trigger
    let acs = &*FAST_AC;
    let b = text.as_bytes();
    let mut buf = [0u8; CHUNK];
    let mut start = 0;
    loop {
        let end = (start + CHUNK).min(b.len());
        let chunk = &mut buf[..end - start];
        for (d, s) in chunk.iter_mut().zip(&b[start..end]) {
            *d = s.to_ascii_lowercase();
        }
        if acs.iter().any(|ac| ac.is_match(&*chunk)) {
            return true;
        }
        if end == b.len() {
            return false;
        }
        start = end - OVERLAP;
    }
}

/// Longest key name looked at, in bytes.
const MAX_IDENT: usize = 64;

/// A run found before merging; `prio` picks the kind when runs overlap.
#[derive(Debug, Clone)]
struct Span {
    start: usize,
    end: usize,
    kind: Kind,
    prio: u8,
}

/// Token-shaped runs name their kind better than the key they sit under.
const PRIO_TOKEN: u8 = 2;
const PRIO_CONTEXT: u8 = 1;

struct Scanner<'a> {
    b: &'a [u8],
    spans: Vec<Span>,
    /// Phase-1 runs, merged: key names do not reach into them.
    hard: Vec<Range<usize>>,
    /// Per family: triggers before this offset are inside a run already
    /// scanned by that family.
    fam_done: [usize; FAMS],
    /// Word triggers before this offset belong to a key name already seen.
    ident_done: usize,
    /// Word triggers in here sit inside a value redacted to the end of its
    /// line; anything they could find lies inside it too.
    line_skip: Range<usize>,
    /// The last unquoted value scanned: `(from, end, url)`, so a key inside
    /// that value does not rescan it.
    value_memo: (usize, usize, bool),
    pem_done: usize,
    /// A `kind: Secret` trigger before this offset lies in a manifest
    /// already read.
    kube_done: usize,
    /// The authority (`user:pass@host:port`) of the last URL seen: a value
    /// that starts in it ends with it, so the URL keeps its shape.
    authority: Range<usize>,
    /// A `curl` before this offset lies on a command line already read
    /// from an earlier `curl`: its words were read then (reading every
    /// `curl` of `curl -u a:curl -u a:…` to its line's end was quadratic).
    curl_done: usize,
    /// A base64 credential trigger before this offset lies in a word
    /// already decoded.
    b64_done: usize,
    /// The `@` triggers' word, read once however many `@` it holds.
    at_word: AtWord,
    /// `:secret:<name>` of each Secrets Manager ARN: a name, kept.
    arn_secret_names: Vec<Range<usize>>,
}

/// What ends the word of an scp-style remote (`user:pw@host:repo`).
fn scp_stop(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'`' | b'=' | b'(' | b'<')
}

/// The word an `@` sits in, read forward once, not back from every `@`
/// (which made `a@a@…` cost 256 bytes an `@`): where it starts when
/// whitespace ends it and when an scp stop does ([`scp_stop`]), its first
/// `://` in each, its first `:` and whether an `@` follows that `:`.
#[derive(Default)]
struct AtWord {
    /// The bytes before this were read.
    to: usize,
    ws_start: usize,
    ws_scheme: Option<usize>,
    stop_start: usize,
    stop_colon: Option<usize>,
    stop_scheme: Option<usize>,
    stop_at_after_colon: bool,
}

impl AtWord {
    /// Read up to `at` (exclusive); `at` never goes back.
    fn read_to(&mut self, b: &[u8], at: usize) {
        for k in self.to..at {
            let c = b[k];
            let scheme = c == b':' && b[k..].starts_with(b"://");
            if c.is_ascii_whitespace() {
                self.ws_start = k + 1;
                self.ws_scheme = None;
            } else if scheme && self.ws_scheme.is_none() {
                self.ws_scheme = Some(k);
            }
            if scp_stop(c) {
                self.stop_start = k + 1;
                self.stop_colon = None;
                self.stop_scheme = None;
                self.stop_at_after_colon = false;
                continue;
            }
            if scheme && self.stop_scheme.is_none() {
                self.stop_scheme = Some(k);
            }
            if c == b':' && self.stop_colon.is_none() {
                self.stop_colon = Some(k);
            }
            if c == b'@' && self.stop_colon.is_some() {
                self.stop_at_after_colon = true;
            }
        }
        self.to = self.to.max(at);
    }
}

pub(super) fn scan(text: &str) -> Vec<Finding> {
    let mut dotted = Vec::new();
    shapes::dotted_keys(text.as_bytes(), &mut dotted);
    if !has_trigger(text) {
        return if dotted.is_empty() {
            Vec::new()
        } else {
            merge(text, dotted)
        };
    }
    let ac = &*TRIGGER_AC;
    let mut s = Scanner {
        b: text.as_bytes(),
        spans: dotted,
        hard: Vec::new(),
        fam_done: [0; FAMS],
        ident_done: 0,
        line_skip: 0..0,
        value_memo: (0, 0, false),
        pem_done: 0,
        kube_done: 0,
        authority: 0..0,
        curl_done: 0,
        b64_done: 0,
        at_word: AtWord::default(),
        arn_secret_names: Vec::new(),
    };
    // Phase 1: secrets recognised by their own shape. Phase-2 triggers are
    // kept on the stack for later (the automaton runs again only if there
    // are more than fit).
    let mut later = [(0usize, 0usize, Trig::Word); 32];
    let mut n_later = 0;
    let mut overflow = false;
    for m in ac.find_overlapping_iter(text) {
        let (ms, me) = (m.start(), m.end());
        match TRIGGERS[m.pattern().as_usize()].1 {
            Trig::Token(fam) => s.token_trigger(fam, ms),
            Trig::Bearer => s.bearer(ms, me),
            Trig::Basic => s.basic(ms, me),
            Trig::Pem => s.pem(ms),
            Trig::Arn => s.arn(ms),
            Trig::Email => s.email(ms),
            Trig::Money => s.money(ms, me),
            Trig::MysqlP => s.mysql_p(ms),
            Trig::Special(sp) => s.special(sp, ms, me),
            Trig::Kube => s.kube(ms, me),
            Trig::CmdPass => s.command_password(ms, me),
            Trig::B64Cred => s.b64_credential(ms),
            t @ (Trig::Url | Trig::Word | Trig::Curl | Trig::DashA) => {
                if n_later < later.len() {
                    later[n_later] = (ms, me, t);
                    n_later += 1;
                } else {
                    overflow = true;
                }
            }
        }
    }
    // Key names and URL parts end where those secrets begin or end, exactly
    // as they end at the brackets of a placeholder when the output is
    // scrubbed again; and nothing that overlaps one is taken for a `$VAR`.
    s.hard = hard_ranges(&s.spans);
    // Phase 2: secrets recognised by their place (URL userinfo) or by the
    // name before them. URL passwords join the hard ranges as found.
    let mut phase2 = |ms: usize, me: usize, t: Trig| {
        if t == Trig::Url {
            s.url(ms)
        } else if t == Trig::Curl {
            s.curl(ms, me)
        } else if t == Trig::DashA {
            s.dash_a(ms)
        } else {
            // `code=`, `pw:`: the name is the part before the `=`.
            let mut me = me;
            while me > ms + 1 && !is_ident(s.b[me - 1]) {
                me -= 1;
            }
            s.word(ms, me)
        }
    };
    if overflow {
        for m in ac.find_overlapping_iter(text) {
            if let t @ (Trig::Url | Trig::Word | Trig::Curl | Trig::DashA) =
                TRIGGERS[m.pattern().as_usize()].1
            {
                phase2(m.start(), m.end(), t);
            }
        }
    } else {
        for &(ms, me, t) in &later[..n_later] {
            phase2(ms, me, t);
        }
    }
    merge(text, s.spans)
}

/// The phase-1 runs as sorted, disjoint ranges.
fn hard_ranges(spans: &[Span]) -> Vec<Range<usize>> {
    if spans.is_empty() {
        return Vec::new();
    }
    let mut r: Vec<Range<usize>> = spans.iter().map(|s| s.start..s.end).collect();
    r.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(r.len());
    for x in r {
        match out.last_mut() {
            Some(last) if x.start <= last.end => last.end = last.end.max(x.end),
            _ => out.push(x),
        }
    }
    out
}

/// Sort, merge overlapping runs (keeping the better kind), and make sure
/// every range is on `char` boundaries.
fn merge(text: &str, mut spans: Vec<Span>) -> Vec<Finding> {
    if spans.is_empty() {
        return Vec::new();
    }
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        if let Some(last) = out.last_mut()
            && s.start < last.end
        {
            last.end = last.end.max(s.end);
            if s.prio > last.prio {
                last.kind = s.kind;
                last.prio = s.prio;
            }
            continue;
        }
        out.push(s);
    }
    out.into_iter()
        .map(|s| {
            let mut start = s.start.min(text.len());
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = s.end.min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            Finding {
                range: start..end,
                kind: s.kind,
            }
        })
        .collect()
}

// ---------------------------------------------------------------- bytes

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// base64url and friends: what most tokens are made of.
fn is_tok(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

fn is_b62u(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Characters of a key name.
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

/// Standard base64 without padding (AWS secret keys).
fn is_b64(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'/' || c == b'+'
}

/// Characters of a `Bearer` credential (RFC 6750 `b64token`).
fn is_b64token(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// Where an unquoted value ends.
fn ends_value(c: u8, url: bool) -> bool {
    c.is_ascii_whitespace()
        || matches!(
            c,
            b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b')' | b']' | b'}' | b'>' | b'<' | b'\\'
        )
        || (url && c == b'#')
}

/// Where a URL's authority ends.
fn ends_authority(c: u8) -> bool {
    c.is_ascii_whitespace()
        || matches!(
            c,
            b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' | b'\\'
        )
}

fn scan_while(b: &[u8], mut i: usize, f: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && f(b[i]) {
        i += 1;
    }
    i
}

/// How many of lower case, upper case and digits occur.
fn classes(s: &[u8]) -> u8 {
    let (mut lo, mut up, mut dg) = (false, false, false);
    for &c in s {
        lo |= c.is_ascii_lowercase();
        up |= c.is_ascii_uppercase();
        dg |= c.is_ascii_digit();
    }
    lo as u8 + up as u8 + dg as u8
}

fn longest_alnum_run(s: &[u8]) -> usize {
    let (mut best, mut cur) = (0, 0);
    for &c in s {
        if is_alnum(c) {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// End of a `[redacted:<kind>]` placeholder starting at `i`.
fn placeholder_at(b: &[u8], i: usize) -> Option<usize> {
    let p = PLACEHOLDER_PREFIX.as_bytes();
    if !b.get(i..)?.starts_with(p) {
        return None;
    }
    let k = scan_while(b, i + p.len(), |c| c.is_ascii_lowercase() || c == b'-');
    (k > i + p.len() && b.get(k) == Some(&b']')).then_some(k + 1)
}

/// End of something that stands for a secret rather than being one:
/// a placeholder, `$VAR`, `${VAR}`, `%VAR%`, `{{ … }}` or `<…>`.
fn reference_at(b: &[u8], i: usize) -> Option<usize> {
    if let Some(mut e) = placeholder_at(b, i) {
        // Adjacent placeholders (a value that held two secrets) count as one.
        while let Some(next) = placeholder_at(b, e) {
            e = next;
        }
        return Some(e);
    }
    let is_var = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let var_start = |c: u8| c.is_ascii_alphabetic() || c == b'_';
    // Terraform references: `var.db_password`, `local.x`, `data.y.z`.
    for r in [&b"var."[..], b"local.", b"data.", b"module."] {
        if b[i..].starts_with(r) && b.get(i + r.len()).is_some_and(|&c| var_start(c)) {
            return Some(scan_while(b, i + r.len(), |c| is_var(c) || c == b'.'));
        }
    }
    // A sops-encrypted value: `ENC[AES256_GCM,data:…]`.
    if b[i..].starts_with(b"ENC[AES256_GCM,") || b[i..].starts_with(b"ENC[AES") {
        let k = scan_while(&b[..b.len().min(i + 4096)], i, |c| c != b']' && c != b'\n');
        return (b.get(k) == Some(&b']')).then_some(k + 1);
    }
    match *b.get(i)? {
        b'$' => match *b.get(i + 1)? {
            // `${VAR}`, `${VAR:-default}`, `${aws_db.default.password}`.
            b'{' => {
                let k = scan_while(&b[..b.len().min(i + 130)], i + 2, |c| {
                    is_var(c) || matches!(c, b'.' | b':' | b'-' | b'=' | b'$' | b'/')
                });
                (k > i + 2 && b.get(k) == Some(&b'}')).then_some(k + 1)
            }
            // `$(cat /run/secrets/x)`: a command's output.
            b'(' => {
                let k = scan_while(&b[..b.len().min(i + 130)], i + 2, |c| {
                    !matches!(c, b')' | b'(' | b'\n' | b'[' | b']')
                });
                (b.get(k) == Some(&b')')).then_some(k + 1)
            }
            c if var_start(c) => Some(scan_while(b, i + 1, is_var)),
            _ => None,
        },
        b'%' => {
            let k = scan_while(b, i + 1, is_var);
            (k > i + 1 && b.get(k) == Some(&b'%')).then_some(k + 1)
        }
        // `{{ secrets.DB }}`, `<api-key>`: plain names only, so that
        // nothing inside can itself be redacted and move the brackets.
        b'{' if b.get(i + 1) == Some(&b'{') => {
            let k = scan_while(b, i + 2, |c| is_var(c) || c == b'.' || c == b' ');
            (k < i + 128 && b[k..].starts_with(b"}}")).then_some(k + 2)
        }
        b'<' => {
            let k = scan_while(b, i + 1, |c| is_var(c) || matches!(c, b'.' | b'-' | b' '));
            (k > i + 1 && k < i + 64 && b.get(k) == Some(&b'>')).then_some(k + 1)
        }
        // `{SumoAccessKey}`: a template's name.
        b'{' => {
            let k = scan_while(b, i + 1, |c| is_var(c) || c == b'.');
            (k > i + 1 && k < i + 64 && b.get(k) == Some(&b'}')).then_some(k + 1)
        }
        _ => None,
    }
}

/// Whether `host` (the text before a `webhooks/` trigger) ends with
/// Discord's API path: `discord.com/api/`, `discordapp.com/api/`, with a
/// version (`api/v10/`) or not, in any case, its slashes JSON-escaped
/// (`\/`) or not.
fn discord_host_before(host: &[u8]) -> bool {
    let strip_sep = |h: &[u8]| -> Option<usize> {
        if h.ends_with(b"\\/") {
            Some(h.len() - 2)
        } else if h.ends_with(b"/") {
            Some(h.len() - 1)
        } else {
            None
        }
    };
    let ends_ci =
        |h: &[u8], w: &[u8]| h.len() >= w.len() && h[h.len() - w.len()..].eq_ignore_ascii_case(w);
    let Some(mut n) = strip_sep(host) else {
        return false;
    };
    // `v10`, `v9`, …
    let d = host[..n]
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if (1..=2).contains(&d) && n > d && matches!(host[n - d - 1], b'v' | b'V') {
        match strip_sep(&host[..n - d - 1]) {
            Some(m) => n = m,
            None => return false,
        }
    }
    if !ends_ci(&host[..n], b"api") {
        return false;
    }
    let Some(n) = strip_sep(&host[..n - 3]) else {
        return false;
    };
    ends_ci(&host[..n], b"discord.com") || ends_ci(&host[..n], b"discordapp.com")
}

/// End of a webhook's secret path from `i`: path characters and JSON's
/// escaped slashes (`\/`), not a trailing `\`.
fn escaped_path_end(b: &[u8], i: usize) -> usize {
    let mut k = i;
    while k < b.len() {
        if is_path(b[k]) {
            k += 1;
        } else if b[k] == b'\\' && b.get(k + 1) == Some(&b'/') {
            k += 2;
        } else {
            break;
        }
    }
    k
}

/// curl's short flags grouped in one word, the last one `-u` or `-U`
/// (`-su`, `-fsSLu`): the next word is its value.
fn grouped_u(word: &[u8]) -> bool {
    word.len() >= 3
        && word.len() <= 12
        && word[0] == b'-'
        && word[1..].iter().all(u8::is_ascii_alphabetic)
        && matches!(word[word.len() - 1], b'u' | b'U')
        && !matches!(word[1], b'u' | b'U')
}

/// Whether `seg` (a command line before a ` -a`) runs HTTPie (`http`,
/// `https`, `httpie`: `Some(false)`) or `redis-cli` (`Some(true)`), as a
/// whole word (a path before it is fine: `/usr/bin/http`).
fn command_in(seg: &[u8]) -> Option<bool> {
    let mut found = None;
    for w in seg.split(|&c| c == b' ' || c == b'\t') {
        let name = w.rsplit(|&c| c == b'/').next().unwrap_or(w);
        match name {
            b"http" | b"https" | b"httpie" | b"xh" | b"xhs" => found = Some(false),
            b"redis-cli" => found = Some(true),
            _ => {}
        }
    }
    found
}

/// A value that says how much or where, not a secret: a number of at
/// most three digits (an HTTP status, `auth: 401`; a count, `tests pass:
/// 128`), a percentage (`balance: 50%`), or a file path made of words
/// (`pwd: /home/ci/work`, `private_key: ~/.ssh/id_ed25519`).
fn is_plain_value(w: &[u8]) -> bool {
    if w.len() <= 3 && w.iter().all(u8::is_ascii_digit) {
        return true;
    }
    if let Some(n) = w.strip_suffix(b"%") {
        return !n.is_empty() && n.len() <= 6 && n.iter().all(|&c| c.is_ascii_digit() || c == b'.');
    }
    let path = w.strip_prefix(b"~").unwrap_or(w);
    path.len() >= 2
        && path[0] == b'/'
        && path.iter().filter(|&&c| c == b'/').count() >= 2
        && path
            .iter()
            .all(|&c| is_alnum(c) || matches!(c, b'/' | b'.' | b'_' | b'-'))
        && path.split(|&c| c == b'/').all(|seg| classes(seg) < 3)
}

/// Values that say something about a secret without being one.
const BENIGN: &[&str] = &[
    "null",
    "none",
    "nil",
    "true",
    "false",
    "undefined",
    "unset",
    "missing",
    "empty",
    "required",
    "invalid",
    "expired",
    "revoked",
    "incorrect",
    "denied",
    "rejected",
    "unauthorized",
    "forbidden",
    "not",
    "n/a",
    "redacted",
    "hidden",
    "masked",
    "omitted",
    "present",
    "absent",
    "set",
    "ok",
    "yes",
    "no",
    "unknown",
    "default",
    "provided",
    "new",
    "bearer",
    "basic",
];

/// Environment-variable suffixes: `api_key: OPENAI_API_KEY` names where the
/// secret lives, it does not hold it.
const ENV_SUFFIXES: &[&str] = &[
    "_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASS",
    "_PWD",
    "_PAT",
    "_CREDENTIALS",
];

fn is_benign(v: &[u8]) -> bool {
    if BENIGN.iter().any(|w| v.eq_ignore_ascii_case(w.as_bytes())) {
        return true;
    }
    if v.iter()
        .all(|&c| matches!(c, b'*' | b'x' | b'X' | b'.' | b'-' | b'#'))
    {
        return true;
    }
    v.first().is_some_and(|c| c.is_ascii_uppercase())
        && v.iter()
            .all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        && ENV_SUFFIXES.iter().any(|s| v.ends_with(s.as_bytes()))
}

// ---------------------------------------------------------------- money

/// End of a number at `i`: digits, with `,` `.` `'` between digit groups
/// (`4,821.55`, `7,50`, `1'000`).
fn number_end(b: &[u8], i: usize, hi: usize) -> usize {
    let mut e = scan_while(&b[..hi], i, |c| c.is_ascii_digit());
    while e + 1 < hi && matches!(b[e], b',' | b'.' | b'\'') && b[e + 1].is_ascii_digit() {
        e = scan_while(&b[..hi], e + 1, |c| c.is_ascii_digit());
    }
    e
}

/// The words around the one at `ms`, at most six each way, in the same
/// clause: `(start, end)` in bytes. Only plain words count: at most 32
/// bytes, with no `[` or `]`. A longer word (a key) or a placeholder ends
/// the window as a clause end does, so a second pass, where that key is a
/// placeholder, sees the same window or a smaller one. `None` when the
/// word at `ms` is not plain.
fn clause_words(b: &[u8], ms: usize) -> Option<(usize, usize)> {
    const WORDS: usize = 6;
    const LONGEST: usize = 32;
    let brk = |c: u8| is_space(c) || c == b'\n';
    let plain = |w: &[u8]| w.len() <= LONGEST && !w.iter().any(|&c| matches!(c, b'[' | b']'));
    let ends_clause = |w: &[u8]| {
        w.last()
            .is_some_and(|&c| matches!(c, b'.' | b';' | b'!' | b'?'))
    };
    let mut ws = ms;
    while ws > 0 && ms - ws <= LONGEST && !brk(b[ws - 1]) {
        ws -= 1;
    }
    let we = scan_while(&b[..b.len().min(ms + LONGEST + 1)], ms, |c| !brk(c));
    if !plain(&b[ws..we]) || (ws > 0 && !brk(b[ws - 1])) {
        return None;
    }
    let mut lo = ws;
    for _ in 0..WORDS {
        let k = {
            let mut k = lo;
            while k > 0 && lo - k < 8 && is_space(b[k - 1]) {
                k -= 1;
            }
            k
        };
        if k == lo || k == 0 || b[k - 1] == b'\n' {
            break;
        }
        let mut s = k;
        while s > 0 && k - s <= LONGEST && !brk(b[s - 1]) {
            s -= 1;
        }
        let w = &b[s..k];
        if !plain(w) || ends_clause(w) || (s > 0 && !brk(b[s - 1])) {
            break;
        }
        lo = s;
    }
    let mut hi = we;
    if !ends_clause(&b[ws..we]) {
        for _ in 0..WORDS {
            let k = scan_while(&b[..b.len().min(hi + 8)], hi, is_space);
            if k == hi || k == b.len() || b[k] == b'\n' {
                break;
            }
            let e = scan_while(&b[..b.len().min(k + LONGEST + 1)], k, |c| !brk(c));
            let w = &b[k..e];
            if !plain(w) || (e < b.len() && !brk(b[e])) {
                break;
            }
            hi = e;
            if ends_clause(w) {
                break;
            }
        }
    }
    Some((lo, hi))
}

/// ISO 4217 codes written after or before an amount.
const CURRENCY_CODES: &[&[u8]] = &[
    b"USD", b"EUR", b"GBP", b"JPY", b"CNY", b"INR", b"CAD", b"AUD", b"CHF", b"SEK", b"NOK", b"DKK",
    b"PLN", b"BRL", b"MXN", b"KRW", b"SGD", b"HKD", b"NZD", b"ZAR", b"TRY", b"RUB",
];

/// Currency symbols, as UTF-8.
const CURRENCY_SYMBOLS: &[&str] = &[
    "$", "€", "£", "¥", "₹", "₩", "₽", "₺", "₪", "฿", "₫", "₴", "¢",
];

/// The amount `i..n_end` with its currency (a symbol or code before or
/// after it, or the word `credits` after it); `(i, n_end)` when it has none.
fn currency_around(b: &[u8], i: usize, n_end: usize, hi: usize) -> (usize, usize) {
    let mut start = i;
    // Before: `$4`, `US$ 4`, `-$4`, `USD 4`, `€ 7,50`.
    let mut k = i;
    if k > 0 && b[k - 1] == b' ' {
        k -= 1;
    }
    if let Some(sym) = CURRENCY_SYMBOLS
        .iter()
        .find(|s| b[..k].ends_with(s.as_bytes()))
    {
        start = k - sym.len();
        if b[..start].ends_with(b"US") || b[..start].ends_with(b"CA") || b[..start].ends_with(b"AU")
        {
            start -= 2;
        }
    } else if k >= 3
        && CURRENCY_CODES.iter().any(|c| &b[k - 3..k] == *c)
        && (k == 3 || !is_alnum(b[k - 4]))
        && k < i
    {
        start = k - 3;
    }
    // After: `912.40 USD`, `7,50 €`, `12 credits`.
    let mut end = n_end;
    let j = if b.get(n_end) == Some(&b' ') {
        n_end + 1
    } else {
        n_end
    };
    let rest = &b[j.min(hi)..hi];
    if let Some(sym) = CURRENCY_SYMBOLS
        .iter()
        .find(|s| rest.starts_with(s.as_bytes()))
    {
        end = j + sym.len();
    } else if rest.len() >= 3
        && CURRENCY_CODES.iter().any(|c| rest.starts_with(c))
        && rest.get(3).is_none_or(|&c| !is_alnum(c))
    {
        end = j + 3;
    } else {
        let w = scan_while(rest, 0, |c| c.is_ascii_alphabetic());
        if [&b"credit"[..], b"credits"].contains(&&rest[..w]) && j > n_end {
            end = j + w;
        }
    }
    if start == i && end == n_end {
        (i, n_end)
    } else {
        (start, end)
    }
}

// ---------------------------------------------------------------- fillers

/// A body that only stands for a key: mostly `x`, `a`, `0` or `1`
/// (`ghp_xxxx…`, `AKIAXXXX…`, `glc_1111…`), a run of eight or more
/// consecutive letters (`abcdefgh`, `klmnopqrstuvwx`),
/// or a word saying so (`EXAMPLE`, `YOUR_TOKEN_HERE`, `placeholder`). A
/// random key has none of these.
fn is_filler(body: &[u8]) -> bool {
    let body = &body[..body.len().min(512)];
    let mut counts = [0u16; 128];
    let mut n = 0u16;
    let (mut run, mut best_run) = (1, 1);
    let mut prev = 0u8;
    for &c in body {
        if !is_alnum(c) {
            run = 1;
            prev = 0;
            continue;
        }
        counts[c as usize] += 1;
        n += 1;
        if prev.is_ascii_alphabetic() && c == prev + 1 {
            run += 1;
            best_run = best_run.max(run);
        } else {
            run = 1;
        }
        prev = c;
    }
    if n < 6 {
        return false;
    }
    is_blank_counts(&counts, n)
        || best_run >= 8
        || ["example", "your_", "_here", "placeholder", "changeme"]
            .iter()
            .any(|w| contains_ci(body, w.as_bytes()))
        // `…AccessTokenHere`, `KEYHERE`.
        || (body.len() > 4
            && body[body.len() - 4..].eq_ignore_ascii_case(b"here")
            && body[body.len() - 5].is_ascii_alphabetic())
}

/// The characters people fill a key's place with (`x`, `a`, `0`, `1`) make
/// 60% or more of its letters and digits.
fn is_blank_counts(counts: &[u16; 128], n: u16) -> bool {
    let most = b"xXaA01"
        .iter()
        .map(|&c| counts[c as usize])
        .max()
        .unwrap_or(0);
    n >= 6 && most * 10 >= n * 6
}

/// An AWS secret access key: 40 base64 characters mixing classes, not
/// 40 hex ones (a git hash) and not a stand-in (`…EXAMPLEKEY`).
fn aws_secret_shaped(v: &[u8]) -> bool {
    v.len() == 40 && classes(v) >= 2 && !v.iter().all(u8::is_ascii_hexdigit) && !is_filler(v)
}

/// A body that is nothing but a stand-in: mostly `x`, `a`, `0` or `1`
/// (`ghp_xxxx…`, `A3-XXXXXX-…`). Unlike [`is_filler`], a run of letters
/// or a word such as `EXAMPLE` does not count: a key with a provider's
/// prefix and a key's length is a key whatever its body reads like.
fn is_blank(body: &[u8]) -> bool {
    let body = &body[..body.len().min(512)];
    let mut counts = [0u16; 128];
    let mut n = 0u16;
    for &c in body {
        if is_alnum(c) {
            counts[c as usize] += 1;
            n += 1;
        }
    }
    is_blank_counts(&counts, n)
}

/// A value that reads as random, for a name that is not a secret's by
/// itself (a vendor's bare name): 32 to 256 token characters mixing
/// classes, an unbroken alphanumeric stretch of 16 or more, and at least
/// 3.3 bits of Shannon entropy a character (random hex has about 3.7,
/// base62 about 4.7, English words and hashes' names far less at this
/// length), and no filler.
fn is_random(v: &[u8]) -> bool {
    if !(32..=256).contains(&v.len())
        || !v.iter().all(|&c| is_b64token(c))
        || classes(v) < 2
        || longest_alnum_run(v) < 16
        || is_filler(v)
    {
        return false;
    }
    let mut counts = [0u32; 128];
    for &c in v {
        counts[c as usize] += 1;
    }
    let n = v.len() as f64;
    let bits: f64 = counts
        .iter()
        .filter(|&&k| k > 0)
        .map(|&k| {
            let p = f64::from(k) / n;
            -p * p.log2()
        })
        .sum();
    bits >= 3.3
}

/// A token's body that is words, not random: three or more camel-case
/// words of three letters or more and no digit
/// (`hf_requiredCharacteristicTypesForDisplayMetadata`, a method name).
fn is_camel_words(body: &[u8]) -> bool {
    let mut words = 0;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'_' | b'-' => i += 1,
            c if c.is_ascii_alphabetic() => {
                let e = scan_while(body, i + 1, |c| c.is_ascii_lowercase());
                if e - i < 3 {
                    return false;
                }
                words += 1;
                i = e;
            }
            _ => return false,
        }
    }
    words >= 3 && is_name(body)
}

/// A value that is a name rather than a secret (`MySecretManagerKey`,
/// `secret/mysecret`, `my-secrets-manager-secret`, `api-key`): words of
/// letters, camel-case humps of three letters or more, at most two digits
/// in a row, and at least a quarter vowels. For the value of a bare `key`
/// (`- key: MySecretManagerKey` in a manifest names the key, it is not
/// one).
fn is_name(v: &[u8]) -> bool {
    if v.len() < 3 || v.len() > 64 {
        return false;
    }
    let mut i = 0;
    let (mut letters, mut vowels) = (0, 0);
    while i < v.len() {
        let c = v[i];
        if matches!(c, b'-' | b'_' | b'/' | b'.') {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let e = scan_while(v, i, |c| c.is_ascii_digit());
            if e - i > 2 {
                return false;
            }
            i = e;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return false;
        }
        // One word: a capital, then lower case; or lower case; or capitals.
        let start = i;
        let separated = i == 0 || !v[i - 1].is_ascii_alphabetic();
        let e = if c.is_ascii_uppercase() && v.get(i + 1).is_some_and(u8::is_ascii_lowercase) {
            scan_while(v, i + 1, |c| c.is_ascii_lowercase())
        } else if c.is_ascii_uppercase() {
            scan_while(v, i, |c| c.is_ascii_uppercase())
        } else {
            scan_while(v, i, |c| c.is_ascii_lowercase())
        };
        let len = e - start;
        if len < 2 || (len < 3 && !separated) {
            return false;
        }
        letters += len;
        vowels += v[start..e]
            .iter()
            .filter(|c| b"aeiouyAEIOUY".contains(c))
            .count();
        i = e;
    }
    letters >= 3 && vowels * 4 >= letters
}

// ---------------------------------------------------------------- tokens

/// A key name found in the text and what it names (see `Scanner::word`).
struct Named<'a> {
    ident: &'a str,
    /// Where the name starts and ends.
    s: usize,
    e: usize,
    class: keys::KeyClass,
    /// A vendor's bare name: only a random value counts.
    random_only: bool,
    /// `--token`: a command line's flag.
    flag: bool,
    /// After `?`, `&` or `#`: a URL's query or fragment.
    url: bool,
}

/// A prefix-token scan at one spot: how far the family's run goes (for
/// skipping) and, when it is a secret, its end and kind.
struct TokenScan {
    prefix: usize,
    run_end: usize,
    hit: Option<(usize, Kind)>,
}

/// Token families with one simple rule: one of `prefixes` (longer first
/// where one starts another), then at least `min` characters of `class`,
/// with at least two of lower/upper/digit (or any mix once the body is
/// `loose` characters long). `mid_word` prefixes are distinctive enough to
/// count even right after a letter (`xsk-ant-…`, a key glued to the colour
/// code before it).
struct Simple {
    prefixes: &'static [&'static [u8]],
    fam: Fam,
    kind: Kind,
    min: usize,
    loose: usize,
    class: fn(u8) -> bool,
    mid_word: bool,
}

/// Never loose: always two character classes.
const STRICT: usize = usize::MAX;

const fn simple(
    prefixes: &'static [&'static [u8]],
    fam: Fam,
    kind: Kind,
    min: usize,
    loose: usize,
    class: fn(u8) -> bool,
    mid_word: bool,
) -> Simple {
    Simple {
        prefixes,
        fam,
        kind,
        min,
        loose,
        class,
        mid_word,
    }
}

fn is_alpha(c: u8) -> bool {
    c.is_ascii_alphabetic()
}

/// Slack webhook paths: `T…/B…/<secret>`.
fn is_path(c: u8) -> bool {
    is_tok(c) || c == b'/' || c == b'+'
}

/// SendGrid keys: `SG.<22>.<43>`.
fn is_tok_dot(c: u8) -> bool {
    is_tok(c) || c == b'.'
}

const GITHUB: &[&[u8]] = &[b"github_pat_", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"];
const GITLAB: &[&[u8]] = &[b"glpat-", b"glptt-", b"gldt-", b"glrt-", b"gloas-"];
const SLACK: &[&[u8]] = &[
    b"xoxb-", b"xoxp-", b"xoxa-", b"xoxe-", b"xoxo-", b"xoxr-", b"xoxs-", b"xapp-",
];
const SLACK_HOOK: &[&[u8]] = &[
    b"hooks.slack.com/services/",
    b"hooks.slack.com/workflows/",
    b"hooks.slack.com/triggers/",
];
const STRIPE: &[&[u8]] = &[
    b"sk_live_",
    b"sk_test_",
    b"sk_prod_",
    b"rk_live_",
    b"rk_test_",
    b"rk_prod_",
];
/// AWS Bedrock API keys: long-term `ABSK…` (base64) and short-lived
/// `bedrock-api-key-…` (a base64 presigned URL).
const BEDROCK: &[&[u8]] = &[b"bedrock-api-key-"];
/// Fly.io macaroon tokens (`FlyV1 fm2_…`).
const FLY: &[&[u8]] = &[b"fm2_", b"fm1a_", b"fm1r_"];
/// `EAA` and an upper-case letter: Facebook's user, page and app tokens
/// (`EAAG…`, `EAAB…`, `EAAC…`, `EAAM…`, …).
const FACEBOOK: &[&[u8]] = &[
    b"EAAA", b"EAAB", b"EAAC", b"EAAD", b"EAAE", b"EAAF", b"EAAG", b"EAAH", b"EAAI", b"EAAJ",
    b"EAAK", b"EAAL", b"EAAM", b"EAAN", b"EAAO", b"EAAP", b"EAAQ", b"EAAR", b"EAAS", b"EAAT",
    b"EAAU", b"EAAV", b"EAAW", b"EAAX", b"EAAY", b"EAAZ",
];
/// Provider account, user and project ids (Stripe `acct_`, OpenAI
/// `user-` and `proj_`).
const IDS: &[&[u8]] = &[b"acct_", b"proj_", b"user-"];
/// Other vendors' token prefixes from gitleaks' rules (Shopify,
/// DigitalOcean, Databricks, Grafana, Linear, Prefect, ReadMe, Fly.io,
/// Sentry, Sourcegraph, Notion, SonarQube, Doppler, Atlassian, Postman,
/// Pulumi, Heroku, age, Tailscale, Vault, New Relic,
/// PlanetScale, Brevo, Dynatrace, EasyPost, Clojars, Duffel, Frame.io,
/// Flutterwave, Typeform, SettleMint, 42, Artifactory, 1Password,
/// Infracost): longer first where one starts another.
const VENDOR: &[&[u8]] = &[
    b"AGE-SECRET-KEY-1",
    b"pscale_oauth_",
    b"FLWSECK_TEST-",
    b"FLWPUBK_TEST-",
    b"duffel_test_",
    b"duffel_live_",
    b"pscale_tkn_",
    b"pscale_pw_",
    b"s-s4t2ud-",
    b"s-s4t2af-",
    b"lin_api_",
    b"xkeysib-",
    b"ico-",
    b"CLOJARS_",
    b"FLWSECK-",
    b"dop_v1_",
    b"doo_v1_",
    b"dor_v1_",
    b"sntrys_",
    b"sntryu_",
    b"dt0c01.",
    b"sm_pat_",
    b"sm_aat_",
    b"sm_sat_",
    b"ops_eyJ",
    b"shpat_",
    b"shpca_",
    b"shppa_",
    b"shpss_",
    b"dp.pt.",
    b"dp.st.",
    b"dp.ct.",
    b"ATATT3",
    b"ATCTT3",
    b"tskey-",
    b"fio-u-",
    b"glsa_",
    b"rdme_",
    b"PMAK-",
    b"HRKU-",
    b"NRAK-",
    b"dapi",
    b"glc_",
    b"pnu_",
    b"fo1_",
    b"sgp_",
    b"ntn_",
    b"sqp_",
    b"squ_",
    b"sqa_",
    b"pul-",
    b"hvs.",
    b"hvb.",
    b"EZAK",
    b"EZTK",
    b"tfp_",
    b"AKCp",
];

// A table: one rule a line.
#[rustfmt::skip]
const SIMPLE: &[Simple] = &[
    //     prefixes       family            kind                     min  loose   class       mid_word
    simple(GITHUB,        Fam::Github,      Kind::GithubToken,       10,  30,     is_b62u,    true),
    simple(GITLAB,        Fam::Gitlab,      Kind::GitlabToken,       20,  20,     is_tok,     true),
    simple(&[b"mft_"],    Fam::Mft,         Kind::MacfleetToken,     40,  STRICT, is_tok,     true),
    simple(&[b"AIza"],    Fam::Google,      Kind::GoogleApiKey,      30,  STRICT, is_tok,     true),
    simple(&[b"GOCSPX-"], Fam::GoogleOauth, Kind::GoogleOauth,       24,  24,     is_tok,     true),
    simple(&[b"ya29."],   Fam::GoogleOauth, Kind::GoogleOauth,       20,  STRICT, is_tok,     false),
    simple(&[b"xai-"],    Fam::Xai,         Kind::XaiKey,            40,  STRICT, is_alnum,   false),
    simple(&[b"gsk_"],    Fam::Groq,        Kind::GroqKey,           40,  STRICT, is_alnum,   false),
    simple(&[b"hf_"],     Fam::Hf,          Kind::HuggingfaceToken,  30,  STRICT, is_alnum,   false),
    simple(&[b"api_org_"],Fam::Hf,          Kind::HuggingfaceToken,  30,  STRICT, is_alpha,   false),
    simple(&[b"pplx-"],   Fam::Pplx,        Kind::PerplexityKey,     40,  STRICT, is_alnum,   false),
    simple(&[b"org-"],    Fam::Org,         Kind::AccountId,         20,  STRICT, is_alnum,   false),
    simple(SLACK,         Fam::Slack,       Kind::SlackToken,        20,  20,     is_tok,     true),
    simple(SLACK_HOOK,    Fam::Slack,       Kind::SlackToken,        20,  20,     is_path,    true),
    simple(STRIPE,        Fam::Stripe,      Kind::StripeKey,         16,  24,     is_alnum,   true),
    simple(&[b"npm_"],    Fam::Npm,         Kind::NpmToken,          36,  36,     is_alnum,   true),
    simple(&[b"pypi-"],   Fam::Pypi,        Kind::PypiToken,         50,  50,     is_tok,     true),
    simple(&[b"SG."],     Fam::Sendgrid,    Kind::SendgridKey,       40,  STRICT, is_tok_dot, false),
    simple(IDS,           Fam::Ids,         Kind::AccountId,         12,  STRICT, is_alnum,   false),
    simple(VENDOR,        Fam::Vendor,      Kind::Token,             20,  STRICT, is_tok_dot, false),
    simple(&[b"ABSK"],    Fam::More,        Kind::Token,             100, STRICT, is_b64_eq,  false),
    simple(BEDROCK,       Fam::More,        Kind::Token,             40,  STRICT, is_b64_eq,  true),
    simple(&[b"v1.0-"],   Fam::More,        Kind::Token,             100, 100,    is_tok,     false),
    simple(&[b"ATBB"],    Fam::More,        Kind::Token,             28,  STRICT, is_alnum,   false),
    simple(FACEBOOK,      Fam::More,        Kind::Token,             96,  STRICT, is_alnum,   false),
    simple(FLY,           Fam::More,        Kind::Token,             40,  STRICT, is_b64_eq,  false),
];

/// Base64 with its padding (Bedrock and Fly.io tokens).
fn is_b64_eq(c: u8) -> bool {
    is_b64(c) || c == b'='
}

/// The simple rule whose prefix `rest` starts with, and that prefix's
/// length.
fn simple_rule(rest: &[u8]) -> Option<(&'static Simple, usize)> {
    SIMPLE
        .iter()
        .find_map(|s| {
            s.prefixes
                .iter()
                .find(|p| rest.starts_with(p))
                .map(|p| (s, p.len()))
        })
        .or_else(|| folded_rule(rest))
}

/// Prefixes no word or example starts with in any case: a key typed or
/// logged in another case (`GHP_…`, `HOOKS.SLACK.COM/Services/…`, a
/// lower-case `age-secret-key-1…`) is still one.
const FOLDED: &[&[u8]] = &[
    b"gh",
    b"github_pat_",
    b"hooks.slack.com/",
    b"AGE-SECRET-KEY-1",
    b"glpat-",
];

fn folded_rule(rest: &[u8]) -> Option<(&'static Simple, usize)> {
    SIMPLE.iter().find_map(|s| {
        s.prefixes
            .iter()
            .find(|p| {
                FOLDED.iter().any(|f| p.starts_with(f))
                    && rest.len() >= p.len()
                    && rest[..p.len()].eq_ignore_ascii_case(p)
            })
            .map(|p| (s, p.len()))
    })
}

const AWS_ID_PREFIXES: [&[u8]; 4] = [b"AKIA", b"ASIA", b"ABIA", b"ACCA"];

/// `sk-` keys whose next word names the provider: distinctive enough to
/// count right after a letter.
const SK_DISTINCT: [&[u8]; 5] = [b"ant-", b"proj-", b"or-v1-", b"svcacct-", b"admin-"];

/// The token starting exactly at `i` (case-sensitive), if any family's
/// prefix is there and `i` starts a word (or the prefix is distinctive
/// enough not to need it).
fn token_at(b: &[u8], i: usize) -> Option<(Fam, TokenScan)> {
    let glued = i > 0 && is_alnum(b[i - 1]) && !after_colour_code(b, i);
    let rest = b.get(i..)?;
    // `SK-ANT-…`: Anthropic's prefix in any case.
    let ant = rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(b"sk-ant-");
    if rest.starts_with(b"sk-") || ant {
        if glued && !ant && !SK_DISTINCT.iter().any(|p| rest[3..].starts_with(p)) {
            return None;
        }
        return Some((Fam::Sk, sk_key(b, i)));
    }
    if glued {
        let (s, prefix) = simple_rule(rest)?;
        if !s.mid_word {
            return None;
        }
        return Some((s.fam, simple_at(b, i, s, prefix)));
    }
    if rest.starts_with(b"eyJ") {
        return Some((Fam::Jwt, jwt(b, i)));
    }
    if AWS_ID_PREFIXES.iter().any(|p| rest.starts_with(p)) {
        let end = i + 20;
        let hit = end <= b.len()
            && b[i + 4..end]
                .iter()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            && b.get(end).is_none_or(|&c| !is_alnum(c));
        return Some((
            Fam::Aws,
            TokenScan {
                prefix: 4,
                run_end: i + 4,
                hit: hit.then_some((end, Kind::AwsAccessKeyId)),
            },
        ));
    }
    let (s, prefix) = simple_rule(rest)?;
    if rest.starts_with(b"sgp_") {
        return Some((s.fam, sourcegraph_at(b, i)));
    }
    Some((s.fam, simple_at(b, i, s, prefix)))
}

/// `sgp_<40 hex>`, `sgp_<16 hex>_<40 hex>`, `sgp_local_<40 hex>`
/// (Sourcegraph): hex is its shape, so a body with another letter in it
/// (gitleaks' near misses `sgp_local_…G…`, `sgp_<20>_<40>`) is not one.
/// A body cut short (a 200-byte detail) still counts from 20 hex on.
fn sourcegraph_at(b: &[u8], i: usize) -> TokenScan {
    let hex = |k: usize| scan_while(b, k, |c| c.is_ascii_hexdigit());
    let from = i + 4;
    let mut k = from;
    if b[k..].starts_with(b"local_") {
        k += 6;
    } else if hex(k) == k + 16 && b.get(k + 16) == Some(&b'_') {
        k += 17;
    }
    let end = hex(k);
    let hit = end - k >= 20 && end - k <= 40 && b.get(end).is_none_or(|&c| !is_tok(c));
    TokenScan {
        prefix: 4,
        run_end: scan_while(b, from, is_tok_dot),
        hit: hit.then_some((end, Kind::Token)),
    }
}

/// Whether the token at `i` has a provider's own prefix, one no word or
/// example text starts with (`sk-ant-`, `ghp_`, `glpat-`, `ABSK`, …): such
/// a key of a key's length is a key even when its body reads like an
/// example (`sk-ant-api03-abc123xyz-…`).
fn distinctive(b: &[u8], i: usize, kind: Kind) -> bool {
    let rest = &b[i..];
    if let Some(sk) = rest.strip_prefix(b"sk-") {
        return SK_DISTINCT.iter().any(|p| sk.starts_with(p));
    }
    kind != Kind::AccountId
        && simple_rule(rest).is_some_and(|(s, _)| s.mid_word || s.fam == Fam::More)
}

/// How long a real key's body is, at least, for [`distinctive`] prefixes.
fn key_length(kind: Kind) -> usize {
    match kind {
        // `sk-ant-api03-` and 95 characters: from `ant-`, 100 or more.
        Kind::AnthropicKey => 100,
        _ => 40,
    }
}

/// Whether `b[..i]` ends with what is left of a terminal colour code once
/// its ESC is gone (`[0m`, `[1;31m`, `[2`): a word starts after it.
fn after_colour_code(b: &[u8], i: usize) -> bool {
    let mut k = i;
    if k > 0 && b[k - 1].is_ascii_alphabetic() {
        k -= 1;
    }
    let params = k;
    while k > 0 && params - k < 16 && (b[k - 1].is_ascii_digit() || b[k - 1] == b';') {
        k -= 1;
    }
    k > 0 && b[k - 1] == b'[' && k < i
}

fn simple_at(b: &[u8], i: usize, s: &Simple, prefix: usize) -> TokenScan {
    let from = i + prefix;
    let mut end = scan_while(b, from, s.class);
    // A sentence's full stop is not part of a dotted token.
    while end > from && b[end - 1] == b'.' {
        end -= 1;
    }
    // `glpat-…https://host`: a URL glued to the token is not part of it.
    if b[end..].starts_with(b"://") {
        for scheme in [&b"https"[..], b"http"] {
            if end - from > scheme.len() && b[end - scheme.len()..end].eq_ignore_ascii_case(scheme)
            {
                end -= scheme.len();
                break;
            }
        }
    }
    let body = &b[from..end];
    let hit = body.len() >= s.min && (body.len() >= s.loose || classes(body) >= 2);
    TokenScan {
        prefix,
        run_end: end,
        hit: hit.then_some((end, s.kind)),
    }
}

/// `sk-…`: Anthropic (`sk-ant-`), OpenRouter (`sk-or-`) or OpenAI. A key has
/// at least 20 characters after `sk-`, mixes letter cases or digits and has
/// a long unbroken alphanumeric stretch (so `sk-learn` and hyphenated slugs
/// stay); a provider's masked echo (`sk-proj-****…abcd`) counts too.
fn sk_key(b: &[u8], i: usize) -> TokenScan {
    let from = i + 3;
    let end = scan_while(b, from, |c| is_tok(c) || c == b'*');
    let body = &b[from..end];
    let kind = if body.len() >= 4 && body[..4].eq_ignore_ascii_case(b"ant-") {
        Kind::AnthropicKey
    } else if body.starts_with(b"or-") {
        Kind::OpenrouterKey
    } else {
        Kind::OpenaiKey
    };
    if kind == Kind::AnthropicKey {
        return ant_key(b, i, end);
    }
    let hit = body.len() >= 20
        && (contains(body, b"****") || (classes(body) >= 2 && longest_alnum_run(body) >= 12));
    TokenScan {
        prefix: 3,
        run_end: end,
        hit: hit.then_some((end, kind)),
    }
}

/// `sk-ant-<version>-<body>` (`end` is where its token run ends): a
/// provider's prefix is a key whatever follows, so any body of 8
/// characters or more counts (one cut at a detail's bound, one with no
/// long alphanumeric stretch), and so do the parts of a key split by a
/// blank after the prefix (`sk-ant-api03- <body>`) or elided in the middle
/// (`sk-ant-api03-<40>...<53>`, `…`).
fn ant_key(b: &[u8], i: usize, end: usize) -> TokenScan {
    let tail = i + 7;
    let ver = scan_while(&b[..end], tail, is_alnum);
    let versioned = ver > tail && ver - tail <= 12 && b.get(ver) == Some(&b'-');
    let from = if versioned { ver + 1 } else { tail };
    let mut stop = end;
    // A blank between the prefix and its body.
    if versioned && end == from {
        let k = scan_while(&b[..b.len().min(end + 4)], end, is_space);
        let z = scan_while(b, k, is_tok);
        if k > end && z - k >= 20 {
            stop = z;
        }
    }
    // An elided middle: `...` or `…` and the tail of the key.
    for gap in [&b"..."[..], "\u{2026}".as_bytes()] {
        if stop > from && b[stop..].starts_with(gap) {
            let z = scan_while(b, stop + gap.len(), is_tok);
            if z - (stop + gap.len()) >= 8 {
                stop = z;
            }
        }
    }
    let body = stop - from;
    let hit = if versioned { body >= 8 } else { body >= 12 };
    TokenScan {
        prefix: 3,
        run_end: end,
        hit: hit.then_some((stop, Kind::AnthropicKey)),
    }
}

/// `eyJ<header>.eyJ<payload>[.<signature>]`. The signature is optional,
/// as in gitleaks: a token cut at a length bound (a 200-character detail)
/// still carries its claims, and an unsigned one (`alg: none`) is whole.
fn jwt(b: &[u8], i: usize) -> TokenScan {
    let p1 = scan_while(b, i, is_tok);
    let miss = TokenScan {
        prefix: 3,
        run_end: p1,
        hit: None,
    };
    if p1 - i < 10 || b.get(p1) != Some(&b'.') || !b[p1 + 1..].starts_with(b"eyJ") {
        return miss;
    }
    let p2 = scan_while(b, p1 + 1, is_tok);
    if p2 - (p1 + 1) < 10 {
        return miss;
    }
    let end = if b.get(p2) == Some(&b'.') {
        scan_while(b, p2 + 1, is_tok)
    } else {
        p2
    };
    TokenScan {
        prefix: 3,
        run_end: p1,
        hit: Some((end, Kind::Jwt)),
    }
}

// ---------------------------------------------------------------- scanner

impl Scanner<'_> {
    /// Whether the span was taken.
    fn emit(&mut self, start: usize, end: usize, kind: Kind, prio: u8) -> bool {
        let take = start < end && !self.overlaps_placeholder(start, end);
        if take {
            self.spans.push(Span {
                start,
                end,
                kind,
                prio,
            });
        }
        take
    }

    /// Whether `start..end` runs into a `[redacted:<kind>]` the text already
    /// holds (a second scrub of scrubbed text): such a span is not emitted,
    /// so what was redacted stays as it is and a second scrub changes
    /// nothing (`token_=$password_[redacted:password]` would otherwise lose
    /// its placeholder's name to a wider `token` span).
    fn overlaps_placeholder(&self, start: usize, end: usize) -> bool {
        let p = PLACEHOLDER_PREFIX.as_bytes();
        // A placeholder is `[redacted:`, a kind's name and `]`: one that
        // starts more than that before `start` ends before it.
        let from = start.saturating_sub(p.len() + 32);
        let to = end.min(self.b.len());
        let mut i = from;
        while i < to {
            // Only a prefix that starts before `to` matters: search no further.
            let stop = (to + p.len() - 1).min(self.b.len());
            let Some(off) = self.b[i..stop].windows(p.len()).position(|w| w == p) else {
                return false;
            };
            let at = i + off;
            if at >= to {
                return false;
            }
            if placeholder_at(self.b, at).is_some_and(|pe| pe > start) {
                return true;
            }
            i = at + 1;
        }
        false
    }

    /// Emit `start..end`, named after the token at `start` if one is there.
    fn emit_value(&mut self, start: usize, end: usize, kind: Kind) -> bool {
        match token_at(self.b, start) {
            Some((
                _,
                TokenScan {
                    hit: Some((tend, tkind)),
                    ..
                },
            )) => self.emit(start, end.max(tend), tkind, PRIO_TOKEN),
            _ => self.emit(start, end, kind, PRIO_CONTEXT),
        }
    }

    fn token_trigger(&mut self, fam: Fam, ms: usize) {
        let ms = match fam {
            Fam::Azure => return self.azure(ms),
            // The trigger is `k_live_`: the token starts one byte earlier.
            Fam::Stripe if ms > 0 && matches!(self.b[ms - 1], b's' | b'r') => ms - 1,
            Fam::Stripe => return,
            _ => ms,
        };
        if ms < self.fam_done[fam as usize] {
            return;
        }
        // A vendor's prefix inside base64 or a file name (`…+EZAK…`,
        // `box.ico-…`) starts no token.
        if matches!(fam, Fam::Vendor | Fam::More)
            && ms > 0
            && matches!(self.b[ms - 1], b'+' | b'/' | b'.')
        {
            return;
        }
        let Some((found, scan)) = token_at(self.b, ms) else {
            return;
        };
        // A later trigger of the family inside this run could only find a
        // part of it, unless its prefix reaches past the run's end.
        self.fam_done[found as usize] = (scan.run_end + 1).saturating_sub(scan.prefix).max(ms + 1);
        if let Some((end, kind)) = scan.hit {
            let body = &self.b[(ms + scan.prefix).min(end)..end];
            // Anthropic's prefix is a key whatever its body reads like
            // (issue 31); the others keep a body of only `x`, `a`, `0`.
            let stand_in = if kind == Kind::AnthropicKey && distinctive(self.b, ms, kind) {
                false
            } else if distinctive(self.b, ms, kind) && body.len() >= key_length(kind) {
                is_blank(body)
            } else {
                is_filler(body) || is_camel_words(body)
            };
            if kind == Kind::Jwt || !stand_in {
                self.emit(ms, end, kind, PRIO_TOKEN);
                if kind == Kind::AwsAccessKeyId {
                    self.aws_secret_beside(ms, end);
                }
            }
        }
    }

    /// `AKIA… wJalr…`: the 40-character secret key written beside its
    /// access key id (`s..e`) with no name, after it or before it, apart
    /// by a space, `:`, `,`, `=`, `;` or `|` (quotes allowed). Never 40
    /// hex characters (a git hash, a revision).
    fn aws_secret_beside(&mut self, s: usize, e: usize) {
        let b = self.b;
        let sep = |c: u8| {
            matches!(
                c,
                b' ' | b'\t' | b':' | b',' | b'=' | b';' | b'|' | b'"' | b'\''
            )
        };
        let a = scan_while(&b[..b.len().min(e + 4)], e, sep);
        let z = scan_while(&b[..b.len().min(a + 41)], a, is_b64);
        if a > e && b.get(z).is_none_or(|&c| !is_b64(c) && c != b'=') && aws_secret_shaped(&b[a..z])
        {
            self.emit(a, z, Kind::AwsSecretKey, PRIO_TOKEN);
        }
        let mut z = s;
        while z > 0 && s - z < 4 && sep(b[z - 1]) {
            z -= 1;
        }
        let mut a = z;
        while a > 0 && z - a < 41 && is_b64(b[a - 1]) {
            a -= 1;
        }
        if z < s && (a == 0 || !is_b64(b[a - 1])) && aws_secret_shaped(&b[a..z]) {
            self.emit(a, z, Kind::AwsSecretKey, PRIO_TOKEN);
        }
    }

    /// `scheme://user:password@host`: redact the password; a long random
    /// user name with no password (`https://<key>@sentry.io`) too. The
    /// scheme is not checked: what precedes `://` may be a placeholder.
    fn url(&mut self, ms: usize) {
        let b = self.b;
        let k = self.hard.partition_point(|r| r.end <= ms);
        if self.hard.get(k).is_some_and(|r| r.start < ms + 3) {
            return; // inside a secret
        }
        // The authority, stepping over secrets as a rescan steps over their
        // placeholders; `@` and `:` are looked for outside them only.
        let a = ms + 3;
        let (end, at, colon) = self.authority_at(a);
        self.authority = a..end;
        let Some(at) = at else {
            self.raw_password(end, colon);
            self.cut_password(a, end, colon);
            return;
        };
        // The user part's first `:` (a later `@` moves the end of the
        // user part, not its colon).
        let colon = colon.filter(|&c| c < at);
        match colon {
            Some(c) => {
                let ps = c + 1;
                if ps < at && !self.stands_in(ps, at) {
                    self.emit_value(ps, at, Kind::Password);
                    self.add_hard(ps..at);
                }
            }
            None => {
                let user = &b[a..at];
                if user.len() >= 20 && classes(user) >= 2 && user.iter().all(|&c| is_tok(c)) {
                    self.emit_value(a, at, Kind::Token);
                    self.add_hard(a..at);
                }
            }
        }
    }

    /// `redis://app:<pw>` with no `@host` after it (a detail cut at its
    /// bound, or words after it): what follows the `:` is not a port, so
    /// it is a password. Only at the end of the text or before a blank.
    fn cut_password(&mut self, a: usize, end: usize, colon: Option<usize>) {
        let b = self.b;
        let Some(c) = colon else {
            return;
        };
        let pw = &b[c + 1..end];
        if b.get(end).is_some_and(|&x| !is_space(x))
            || pw.len() < 3
            || pw.iter().all(u8::is_ascii_digit)
            || !b[a..c].iter().all(|&x| is_tok(x) || x == b'.')
            || pw.iter().any(|&x| matches!(x, b'[' | b']' | b':'))
            || (classes(pw) < 2 && pw.len() < 12)
            || self.stands_in(c + 1, end)
        {
            return;
        }
        self.emit_value(c + 1, end, Kind::Password);
        self.add_hard(c + 1..end);
    }

    /// `https://user:pa/ss@host/x`: a password with a raw `/`, `?` or `#`
    /// ends the authority early, as URL parsers read it, and its `@` comes
    /// later in the same word. Where that part ends is not known, so all of
    /// the word from the password on is redacted (host and path too). Not a
    /// port (`host:8080/users/jo@acme.io`).
    fn raw_password(&mut self, end: usize, colon: Option<usize>) {
        let b = self.b;
        let Some(c) = colon else {
            return;
        };
        if !matches!(b.get(end), Some(b'/' | b'?' | b'#'))
            || b[c + 1..end].iter().all(u8::is_ascii_digit)
        {
            return;
        }
        let stop = |c: u8| {
            c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'`' | b'<' | b'>' | b'\\')
        };
        let w = scan_while(&b[..b.len().min(end + 512)], end, |c| !stop(c));
        let Some(at) = b[end..w].iter().position(|&c| c == b'@').map(|p| end + p) else {
            return;
        };
        if contains(&b[end..at], b"://") || !b.get(at + 1).is_some_and(|&c| is_alnum(c)) {
            return;
        }
        self.emit(c + 1, w, Kind::Password, PRIO_CONTEXT);
        self.add_hard(c + 1..w);
    }

    /// Scan a URL authority from `a`, stepping over secrets as a rescan
    /// steps over their placeholders: its end, its last `@` and its first
    /// `:`, both outside those.
    fn authority_at(&self, a: usize) -> (usize, Option<usize>, Option<usize>) {
        let b = self.b;
        let mut h = self.hard.partition_point(|r| r.end <= a);
        let (mut i, mut at, mut colon) = (a, None, None);
        while i < b.len() {
            if let Some(r) = self.hard.get(h).filter(|r| r.start <= i) {
                i = i.max(r.end);
                h += 1;
                continue;
            }
            if b[i] == b'[' {
                if let Some(pe) = placeholder_at(b, i) {
                    i = pe;
                    continue;
                }
            }
            match b[i] {
                c if ends_authority(c) => break,
                b'@' => at = Some(i),
                b':' if colon.is_none() => colon = Some(i),
                _ => {}
            }
            i += 1;
        }
        (i, at, colon)
    }

    fn authority_end(&self, a: usize) -> usize {
        self.authority_at(a).0
    }

    /// `Bearer <credential>` outside a header we recognised.
    fn bearer(&mut self, ms: usize, me: usize) {
        let b = self.b;
        if ms > 0 && is_alnum(b[ms - 1]) {
            return;
        }
        let j = scan_while(b, me, is_space);
        if j == me {
            return;
        }
        let k = scan_while(b, j, is_b64token);
        let cred = &b[j..k];
        if cred.len() >= 8 && classes(cred) >= 2 {
            self.emit_value(j, k, Kind::Authorization);
        }
    }

    /// `Basic <credentials>` anywhere, when the credentials are base64 of
    /// printable `user:password` (so `Basic Authentication` stays).
    fn basic(&mut self, ms: usize, me: usize) {
        use base64::Engine as _;
        use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
        const B64: GeneralPurpose = GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
        );
        let b = self.b;
        // Any case: `basic`, `BASIC` (GitHub's `AUTHORIZATION: basic …`).
        if ms > 0 && is_alnum(b[ms - 1]) {
            return;
        }
        let j = scan_while(b, me, is_space);
        if j == me {
            return;
        }
        let k = scan_while(b, j, |c| is_alnum(c) || matches!(c, b'+' | b'/' | b'='));
        let cred = &b[j..k];
        if cred.len() < 8 || cred.len() > 4096 {
            return;
        }
        let Ok(plain) = B64.decode(cred) else {
            return;
        };
        if plain.contains(&b':') && plain.iter().all(|&c| (0x20..0x7f).contains(&c)) {
            self.emit_value(j, k, Kind::Authorization);
        }
    }

    /// Azure AD client secrets: `[\w~.]{3}\dQ~[\w~.-]{31,34}`; the
    /// trigger is the `Q~` at offset 4.
    fn azure(&mut self, ms: usize) {
        let b = self.b;
        let head = |c: u8| is_alnum(c) || matches!(c, b'_' | b'~' | b'.');
        if ms < 4
            || b[ms] != b'Q'
            || !b[ms - 1].is_ascii_digit()
            || !b[ms - 4..ms - 1].iter().all(|&c| head(c))
            || (ms > 4 && (head(b[ms - 5]) || b[ms - 5] == b'-'))
        {
            return;
        }
        let end = scan_while(b, ms + 2, |c| head(c) || c == b'-');
        if end - (ms + 2) >= 31 && classes(&b[ms + 2..end]) >= 2 {
            self.emit(ms - 4, end, Kind::AzureSecret, PRIO_TOKEN);
        }
    }

    /// A PEM private-key block, to its END line or the end of the text.
    fn pem(&mut self, ms: usize) {
        let b = self.b;
        if ms < self.pem_done || !b[ms..].starts_with(b"-----BEGIN ") {
            return;
        }
        let lim = (ms + 80).min(b.len());
        let Some(h) = (ms + 11..lim).find(|&k| b[k..].starts_with(b"-----")) else {
            return;
        };
        if !contains(&b[ms..h], b"PRIVATE KEY") {
            return;
        }
        let body = h + 5;
        // `-----BEGIN PRIVATE KEY-----\nanything\n-----END…`: no key in it.
        let key_chars = b[body..b.len().min(body + 64)]
            .iter()
            .take_while(|&&c| c != b'-' && c != b'[')
            .filter(|&&c| is_b64(c))
            .count();
        if key_chars < 16 {
            return;
        }
        let end = (body..b.len())
            .find(|&k| b[k..].starts_with(b"-----END"))
            .map(|k| {
                let lim = (k + 80).min(b.len());
                (k + 8..lim)
                    .find(|&e| b[e..].starts_with(b"-----"))
                    .map_or_else(|| scan_while(b, k, |c| c != b'\n'), |e| e + 5)
            })
            .unwrap_or(b.len());
        self.pem_done = end;
        self.emit(ms, end, Kind::PrivateKey, PRIO_TOKEN);
    }

    /// `arn:<partition>:<service>:<region>:<account>:…`: the account field.
    /// An ARN naming a Secrets Manager secret (`…:secret:prod/db-Ab3dEf`)
    /// keeps the secret's name: it says where a secret is, as an
    /// environment variable's name does, and is not one (a key-value rule
    /// would take `secret:<name>` for a secret's value).
    fn arn(&mut self, ms: usize) {
        let b = self.b;
        if (ms > 0 && is_alnum(b[ms - 1])) || !b[ms..].starts_with(b"arn:") {
            return;
        }
        let field = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-';
        let mut k = ms + 4;
        let mut service = k..k;
        for n in 0..3 {
            let e = scan_while(b, k, field);
            if e - k > 40 || b.get(e) != Some(&b':') {
                return;
            }
            if n == 1 {
                service = k..e;
            }
            k = e + 1;
        }
        let e = scan_while(b, k, |c| c.is_ascii_digit());
        let end = if e - k == 12 && b.get(e).is_none_or(|&c| !is_alnum(c)) {
            self.emit(k, e, Kind::AccountId, PRIO_TOKEN);
            e
        } else if let Some(p) = placeholder_at(b, k) {
            p // scanned again: the account is a placeholder already
        } else {
            return;
        };
        if &b[service] == b"secretsmanager" && b[end..].starts_with(b":secret:") {
            let name_end = scan_while(b, end + 8, |c| {
                is_ident(c) || matches!(c, b'/' | b'+' | b'=' | b'@')
            });
            self.arn_secret_names.push(end..name_end);
        }
    }

    /// A word that may be part of a key name: find the whole name, and if
    /// it names a secret and a separator follows, redact the value.
    fn word(&mut self, ms: usize, me: usize) {
        let b = self.b;
        let Some((s, e)) = self.key_name(ms, me) else {
            return;
        };
        // Only ASCII bytes here, so this is a valid str.
        let Ok(ident) = std::str::from_utf8(&b[s..e]) else {
            return;
        };
        let Some((class, random_only)) = self.key_class(ident, s, e) else {
            return;
        };
        let name = Named {
            ident,
            s,
            e,
            class,
            random_only,
            // `--token VALUE` on a command line.
            flag: b[s] == b'-' && (s == 0 || b[s - 1].is_ascii_whitespace()),
            url: s > 0 && matches!(b[s - 1], b'?' | b'&' | b'#'),
        };
        if self.takes_no_value(&name) {
            return;
        }
        if let Some(j) = self.separator(&name) {
            self.after_separator(&name, j);
        }
    }

    /// The whole name around the trigger word `ms..me`, within the phase-1
    /// runs around it; `None` when the word is part of a secret or of one
    /// of our own placeholders, or was read already.
    fn key_name(&mut self, ms: usize, me: usize) -> Option<(usize, usize)> {
        let b = self.b;
        if ms < self.ident_done
            || self.line_skip.contains(&ms)
            || self.arn_secret_names.iter().any(|r| r.contains(&ms))
        {
            return None;
        }
        // Bounds from the phase-1 runs around the word.
        let k = self.hard.partition_point(|r| r.end <= ms);
        let lo = if k > 0 { self.hard[k - 1].end } else { 0 };
        let hi = match self.hard.get(k) {
            Some(r) if r.start < me => return None, // the word is part of a secret
            Some(r) => r.start,
            None => b.len(),
        };
        let mut s = ms;
        while s > lo && ms - s < MAX_IDENT && is_ident(b[s - 1]) {
            s -= 1;
        }
        let mut e = me;
        while e < hi && e - me < MAX_IDENT && is_ident(b[e]) {
            e += 1;
        }
        self.ident_done = e;
        // The kind inside one of our own placeholders.
        let p = PLACEHOLDER_PREFIX.as_bytes();
        if s >= p.len() && &b[s - p.len()..s] == p {
            return None;
        }
        Some((s, e))
    }

    /// What the name's value is, and whether only a random value counts
    /// (a vendor's bare name); a name that names no secret may still have
    /// its value glued to it (`token_<random>`).
    fn key_class(&mut self, ident: &str, s: usize, e: usize) -> Option<(keys::KeyClass, bool)> {
        match keys::classify(ident) {
            Some(c) => Some((c, false)),
            None if keys::is_vendor(ident) => Some((
                keys::KeyClass {
                    kind: Kind::Token,
                    mode: Mode::Value,
                    near_secret: false,
                    url_only: false,
                },
                true,
            )),
            None => {
                self.glued(s, e);
                None
            }
        }
    }

    /// A name read elsewhere or not here: `http --auth user:password`
    /// (HTTPie, read as curl's `-u`, so the user stays), a URL-only name
    /// outside a URL, `${API_KEY:=$2}` (a shell default, not an
    /// assignment).
    fn takes_no_value(&mut self, n: &Named<'_>) -> bool {
        let b = self.b;
        (n.flag
            && n.ident.trim_start_matches('-').eq_ignore_ascii_case("auth")
            && self.auth_flag(n.e))
            || (n.class.url_only && !n.url)
            || (n.s >= 2 && &b[n.s - 2..n.s] == b"${")
            // `/etc/passwd: permission denied`: a file's name in an error.
            || (n.s > 0 && b[n.s - 1] == b'/' && !n.url && b[n.e..].starts_with(b": "))
    }

    /// Where the value starts after the name's separator (`=`, `:`, `:=`,
    /// `=>`, `.=`, `::=`, `, ` in a call, after an optional closing quote
    /// and a type), or `None` when the value was handled here (an XML
    /// element, a value after whitespace) or there is none.
    fn separator(&mut self, n: &Named<'_>) -> Option<usize> {
        let b = self.b;
        let len = b.len();
        let mut j = n.e;
        let mut quotes = 0;
        while j < len && quotes < 2 && matches!(b[j], b'"' | b'\'' | b'\\') {
            j += 1;
            quotes += 1;
        }
        let ws = j;
        while j < len && j - ws < 8 && is_space(b[j]) {
            j += 1;
        }
        if j > ws && quotes == 0 {
            j = self.past_type(j);
        }
        match b.get(j) {
            // `.=` (PHP), `?=` and `+=` (make).
            Some(b'.' | b'?' | b'+') if b.get(j + 1) == Some(&b'=') && j > ws => j += 2,
            // `::=`, `:::=` (make).
            Some(b':') if b[j..].starts_with(b"::=") || b[j..].starts_with(b":::=") => {
                j = scan_while(b, j, |c| c == b':') + 1;
            }
            Some(b',') if self.call_argument(n, quotes, j) => j += 1,
            // `<apiToken>\n    …\n</apiToken>`.
            Some(b'>') if quotes == 0 && j == ws && n.s > 0 && b[n.s - 1] == b'<' => {
                j = scan_while(&b[..len.min(j + 17)], j + 1, |c| c.is_ascii_whitespace());
                if b.get(j) != Some(&b'<') {
                    self.value(j, None, false, n.class.kind);
                }
                return None;
            }
            Some(b'=') if b.get(j + 1) != Some(&b'=') => {
                j += 1;
                if b.get(j) == Some(&b'>') {
                    j += 1;
                }
            }
            Some(b':') if b.get(j + 1) != Some(&b':') => {
                if !self.colon_is_separator(n, j) {
                    return None;
                }
                j += 1;
                if b.get(j) == Some(&b'=') {
                    j += 1;
                }
            }
            _ if n.flag && quotes == 0 && j > ws && j < len && self.flag_value(j) => {}
            _ => {
                self.no_separator(n, quotes, ws, j);
                return None;
            }
        }
        Some(j)
    }

    /// `var apiToken string = "…"`: past a type between the name and `=`.
    fn past_type(&self, j: usize) -> usize {
        let b = self.b;
        for t in [&b"string"[..], b"String", b"str", b"[]byte"] {
            let k = j + t.len();
            if b[j..].starts_with(t) && b.get(k).is_some_and(|&c| is_space(c)) {
                let k = scan_while(&b[..b.len().min(k + 8)], k, is_space);
                if b.get(k) == Some(&b'=') {
                    return k;
                }
                break;
            }
        }
        j
    }

    /// `setProperty("API_TOKEN", "…")`: a quoted name, a comma, a quoted
    /// value, in a call's parentheses (in a JSON list or object,
    /// `"kind":"Secret","metadata"`, the next string is not the name's
    /// value).
    fn call_argument(&self, n: &Named<'_>, quotes: usize, j: usize) -> bool {
        let b = self.b;
        quotes > 0 && n.s >= 2 && b[..n.s - 1].trim_ascii_end().ends_with(b"(") && {
            let k = scan_while(&b[..b.len().min(j + 9)], j + 1, is_space);
            matches!(b.get(k), Some(b'"' | b'\'' | b'`'))
        }
    }

    /// A `:` after the name separates its value, unless it is a URL's user
    /// name or scheme (`url` handles those) or a Maven group
    /// (`io.jsonwebtoken:jjwt-jackson`).
    fn colon_is_separator(&self, n: &Named<'_>, j: usize) -> bool {
        let b = self.b;
        let s = n.s;
        if (s >= 3 && &b[s - 3..s] == b"://") || b[j + 1..].starts_with(b"//") {
            return false;
        }
        !(j == n.e
            && ["io.", "com.", "org.", "net."]
                .iter()
                .any(|p| n.ident.starts_with(p)))
    }

    /// `--token VALUE`, when VALUE looks like a credential (so that
    /// `--api-key flag missing` stays readable).
    fn flag_value(&self, j: usize) -> bool {
        let b = self.b;
        let w = &b[j..self.word_end(j)];
        classes(w) >= 2 || w.len() >= 12 || token_at(b, j).is_some_and(|(_, t)| t.hit.is_some())
    }

    /// No separator after the name: a value after whitespace (one word,
    /// without a sentence's closing punctuation), or a secret or account
    /// number near the name.
    fn no_separator(&mut self, n: &Named<'_>, quotes: usize, ws: usize, j: usize) {
        let b = self.b;
        match self.spaced_value(n.ident, n.class, quotes, ws, j) {
            Some(v) => {
                let raw = self.unquoted_end(v, false);
                let mut end = self.clamp(v, raw);
                while end > v && matches!(b[end - 1], b'.' | b':' | b')') {
                    end -= 1;
                }
                if end > v && !self.stands_in(v, end) {
                    self.emit_value(v, end, n.class.kind);
                }
            }
            None if n.class.near_secret => self.near_secret(n.s, n.e, n.class.kind),
            None if n.class.kind == Kind::AccountId => self.near_account(n.e),
            None => {}
        }
    }

    /// The value after the separator at `j`: its opening quote, its end,
    /// and what it may only stand for, then read by the name's mode.
    fn after_separator(&mut self, n: &Named<'_>, mut j: usize) {
        let b = self.b;
        let ws = j;
        while j < b.len() && j - ws < 8 && is_space(b[j]) {
            j += 1;
        }
        // Opening quote.
        let (quote, v) = match b.get(j) {
            Some(b'"') => (Some(b'"'), j + 1),
            Some(b'\'') => (Some(b'\''), j + 1),
            Some(b'`') => (Some(b'`'), j + 1),
            Some(b'\\') if b.get(j + 1) == Some(&b'"') => (Some(b'\\'), j + 2),
            _ => (None, j),
        };
        if n.url {
            return self.value(v, quote, true, Kind::UrlQuery);
        }
        let end = match quote {
            Some(q) => self.quoted_end(v, q),
            None => self.unquoted_end(v, false),
        };
        // `` `etcdctl get /x` ``: a command's output. A secret found in
        // phase 1 (a PEM key's `BEGIN PRIVATE KEY` has spaces) or its
        // placeholder on a rescan is not a command's words: both are
        // stepped over, so a rescan decides as the first scan did.
        if quote == Some(b'`') && self.space_outside_secrets(v, end) {
            return;
        }
        if n.ident.eq_ignore_ascii_case("key") && quote.is_some() && self.key_attribute(v, end) {
            return;
        }
        // `- key: MySecretManagerKey`, `secretKey: api-key`: the value of a
        // key's name is a name.
        if matches!(n.class.kind, Kind::ApiKey | Kind::Secret)
            && n.ident.len() >= 3
            && n.ident.as_bytes()[n.ident.len() - 3..].eq_ignore_ascii_case(b"key")
            && is_name(&b[v..end])
            && !self.overlaps_hard(v, end)
        {
            return;
        }
        if n.random_only && !is_random(&b[v..end]) {
            return;
        }
        match n.class.mode {
            Mode::Cookie => self.rest_of_line(v, quote, n.class.kind),
            Mode::Authorization => self.authorization(v, quote, n.class.kind),
            Mode::Value => self.value(v, quote, false, n.class.kind),
        }
    }

    /// `<add key="ClearTextPassword" value="…" />`: the key attribute
    /// (its quoted value `v..end`) names the value attribute's secret.
    /// Whether a value attribute follows (and was read).
    fn key_attribute(&mut self, v: usize, end: usize) -> bool {
        let b = self.b;
        let k = scan_while(&b[..b.len().min(end + 9)], end + 1, is_space);
        if k <= end + 1 || !b[k..].starts_with(b"value=") {
            return false;
        }
        let q = k + 6;
        if let (Some(c), Some(&qc)) = (
            keys::classify(&String::from_utf8_lossy(&b[v..end])),
            b.get(q),
        ) {
            if matches!(qc, b'"' | b'\'') {
                self.value(q + 1, Some(qc), false, c.kind);
            }
        }
        true
    }

    /// A value after a secret's name and whitespace, with no `=` or `:`:
    /// `password is hunter2`, `token<TAB>value`, `api-key <credential>`.
    /// Where the value starts, when the word there looks like a credential:
    /// after `is`, or after a tab, mixing classes or 8 characters long; after
    /// a space, 16 characters mixing classes, or a known token. A bare
    /// `key` or `auth` needs `is` or a tab (`key rotation`, `cache key
    /// 3f2a…` stay).
    fn spaced_value(
        &self,
        ident: &str,
        class: keys::KeyClass,
        quotes: usize,
        ws: usize,
        j: usize,
    ) -> Option<usize> {
        let b = self.b;
        if quotes > 0 || j == ws || j >= b.len() || class.url_only || class.mode != Mode::Value {
            return None;
        }
        if !matches!(
            class.kind,
            Kind::Token
                | Kind::ApiKey
                | Kind::Password
                | Kind::Secret
                | Kind::AwsSecretKey
                | Kind::Signature
                | Kind::Authorization
        ) {
            return None;
        }
        let token = |j: usize| token_at(b, j).is_some_and(|(_, t)| t.hit.is_some());
        let word = |j: usize| &b[j..self.word_end(j)];
        let loose = |j: usize| {
            let w = word(j);
            !w.is_empty() && !is_benign(w) && (classes(w) >= 2 || w.len() >= 8 || token(j))
        };
        let w = word(j);
        if w.eq_ignore_ascii_case(b"is") {
            let v = scan_while(b, j + 2, is_space);
            return (v > j + 2 && v - j < 12 && loose(v)).then_some(v);
        }
        if b[ws..j].contains(&b'\t') {
            return loose(j).then_some(j);
        }
        let bare = ident.eq_ignore_ascii_case("key") || ident.eq_ignore_ascii_case("auth");
        // `$MAC_HUB_TOKEN claude-sonnet-4-5`: a variable, then a model name.
        let var = ws > ident.len() && matches!(b[ws - ident.len() - 1], b'$' | b'%' | b'{');
        let strong =
            (w.len() >= 16 && classes(w) >= 2 && longest_alnum_run(w) >= 12 && !is_benign(w))
                || token(j);
        (!bare && !var && strong).then_some(j)
    }

    /// A secret glued to its name inside one word, as names and ids are
    /// written: `token_<random>`, `secret-<random>`, `db-pass-<random>`,
    /// `account-123456789012`. The name is a whole segment (between `_`,
    /// `-` or `.`), and the run right after it is random: 10 characters or
    /// more with a digit and another class, or 16 mixing classes; for an
    /// account, 6 digits or more. `token-refresher-3` and `secret-store-1`
    /// stay.
    fn glued(&mut self, s: usize, e: usize) {
        const NAMES: &[(&[u8], Kind)] = &[
            (b"token", Kind::Token),
            (b"secret", Kind::Secret),
            (b"pass", Kind::Password),
            (b"passwd", Kind::Password),
            (b"password", Kind::Password),
            (b"pwd", Kind::Password),
            (b"apikey", Kind::ApiKey),
            (b"account", Kind::AccountId),
            (b"acct", Kind::AccountId),
        ];
        let b = self.b;
        let sep = |c: u8| matches!(c, b'_' | b'-' | b'.');
        let mut i = s;
        while i < e {
            let w = scan_while(&b[..e], i, is_alnum);
            let seg = &b[i..w];
            let named = NAMES
                .iter()
                .find(|(n, _)| seg.eq_ignore_ascii_case(n))
                .map(|&(_, k)| k);
            if let Some(kind) = named.filter(|_| w + 1 < e && sep(b[w])) {
                let r = w + 1;
                if kind == Kind::AccountId {
                    let z = scan_while(&b[..e], r, |c| c.is_ascii_digit() || c == b'-');
                    let digits = b[r..z].iter().filter(|c| c.is_ascii_digit()).count();
                    if digits >= 6
                        && b[r].is_ascii_digit()
                        && b.get(z).is_none_or(|&c| !is_alnum(c))
                    {
                        self.emit(r, z, kind, PRIO_CONTEXT);
                        return;
                    }
                } else {
                    let z = scan_while(&b[..e], r, is_alnum);
                    let run = &b[r..z];
                    let digit = run.iter().any(u8::is_ascii_digit);
                    if ((run.len() >= 10 && digit && classes(run) >= 2)
                        || (run.len() >= 16 && classes(run) >= 2))
                        && !is_filler(run)
                    {
                        self.emit(r, e, kind, PRIO_CONTEXT);
                        return;
                    }
                }
            }
            i = scan_while(&b[..e], w, |c| !is_alnum(c)).max(w + 1);
        }
    }

    /// `curl -u user:password`, `--user 'name:pass'`, `-u ":pass"`,
    /// `-u "pass:"` (a key given as the user), with any quoting, on a curl
    /// command line (continued over `\` line ends). The password, or the
    /// user when the password is empty, is redacted; what only stands for
    /// one (`$PASS`, `<password>`, `[PASSWORD]`, `{{ … }}`, `user:pass`,
    /// `test:test`, `xxx:yyy`) is kept.
    fn curl(&mut self, ms: usize, me: usize) {
        let b = self.b;
        // `curl.exe` on Windows.
        let me = if b.len() >= me + 4 && b[me..me + 4].eq_ignore_ascii_case(b".exe") {
            me + 4
        } else {
            me
        };
        if (ms > 0 && is_alnum(b[ms - 1]))
            || !b[ms..ms + 4].eq_ignore_ascii_case(b"curl")
            || b.get(me).is_some_and(|&c| !is_space(c))
        {
            return;
        }
        if ms < self.curl_done {
            return;
        }
        let lim = b.len().min(ms + 4096);
        let mut i = me;
        let mut want_value = false;
        loop {
            self.curl_done = i;
            // Blanks and `\` line continuations.
            loop {
                i = scan_while(&b[..lim], i, is_space);
                if b[i..lim].starts_with(b"\\\n") {
                    i += 2;
                } else if b[i..lim].starts_with(b"\\\r\n") {
                    i += 3;
                } else {
                    break;
                }
            }
            if i >= lim || matches!(b[i], b'\n' | b'\r' | b'|' | b';' | b'&') {
                return;
            }
            let ws = i;
            let we = self.shell_word(ws, lim);
            i = we.max(ws + 1);
            if want_value {
                want_value = false;
                self.curl_credentials(ws, we);
                continue;
            }
            let word = &b[ws..we];
            if matches!(word, b"-u" | b"--user" | b"--proxy-user" | b"-U") || grouped_u(word) {
                want_value = true;
            } else if let Some(p) = [&b"--user="[..], b"--proxy-user="]
                .iter()
                .find(|p| word.starts_with(p))
            {
                self.curl_credentials(ws + p.len(), we);
            } else if word.len() > 2
                && (word.starts_with(b"-u") || word.starts_with(b"-U"))
                && word[2] != b'-'
            {
                self.curl_credentials(ws + 2, we);
            }
        }
    }

    /// `http -a user:password` (HTTPie, also `https`, `httpie`, the flag
    /// anywhere on its command line, glued as `-auser:pw`) and `redis-cli
    /// -a <password>`. HTTPie's value is read as curl's `-u` is (the part
    /// after the first `:`; a value with no `:` is a user, unless the
    /// command says `bearer`, when it is the token); `redis-cli`'s is the
    /// password whole. The trigger is ` -a`; `-A` (HTTPie's auth type)
    /// and `-avz` are not it.
    fn dash_a(&mut self, ms: usize) {
        let b = self.b;
        let flag = ms + 1;
        if b.get(flag + 1) != Some(&b'a') {
            return;
        }
        let after = flag + 2;
        let glued = b.get(after).is_some_and(|&c| !is_space(c));
        // The command this flag belongs to: the part of the line before
        // it, back to a `|`, `;`, `&` or `(`.
        let lo = ms.saturating_sub(1024);
        let seg = b[lo..ms]
            .iter()
            .rposition(|&c| matches!(c, b'\n' | b'|' | b';' | b'&' | b'('))
            .map_or(lo, |p| lo + p + 1);
        let Some(redis) = command_in(&b[seg..ms]) else {
            return;
        };
        let lim = b.len().min(ms + 1024);
        let ws = if glued {
            after
        } else {
            let ws = scan_while(&b[..lim], after, |c| c == b' ' || c == b'\t');
            if ws == after || ws >= lim || matches!(b[ws], b'\n' | b'\r' | b'-') {
                return;
            }
            ws
        };
        let we = self.shell_word(ws, lim);
        let v = &b[ws..we];
        if redis {
            if !glued {
                self.whole_credential(ws, we, Kind::Password);
            }
        } else if v.contains(&b':') {
            self.curl_credentials(ws, we);
        } else if !glued && contains_ci(&b[seg..ms], b"bearer") {
            self.whole_credential(ws, we, Kind::Authorization);
        }
    }

    /// The value of `--auth` at `e` (HTTPie's long flag: `--auth
    /// user:pw`, `--auth=user:pw`, quoted, `--auth :pw`), read as curl's
    /// `-u` value when it holds a `:`. Whether it did; a value with no
    /// `:` (a user alone, or a bearer token) is left to the key's rule.
    fn auth_flag(&mut self, e: usize) -> bool {
        let b = self.b;
        let vs = match b.get(e) {
            Some(b'=') => e + 1,
            Some(b' ' | b'\t') => scan_while(&b[..b.len().min(e + 9)], e, is_space),
            _ => return false,
        };
        let we = self.shell_word(vs, b.len().min(vs + 1024));
        if we <= vs || b[vs] == b'-' || !b[vs..we].contains(&b':') {
            return false;
        }
        self.curl_credentials(vs, we);
        true
    }

    /// A shell word that is a credential whole (quotes stay).
    fn whole_credential(&mut self, ws: usize, we: usize, kind: Kind) {
        let b = self.b;
        let (mut a, mut z) = (ws, we);
        while a < z && matches!(b[a], b'"' | b'\'') {
            a += 1;
        }
        while z > a && matches!(b[z - 1], b'"' | b'\'') {
            z -= 1;
        }
        if z >= a + 3 && !self.curl_stand_in(&b[a..z]) && !self.stands_in(a, z) {
            self.emit(a, z, kind, PRIO_CONTEXT);
        }
    }

    /// End of the shell word at `i`: unquoted whitespace, or `|`, `;`,
    /// `&` outside quotes; quoted parts run to their closing quote.
    fn shell_word(&self, i: usize, lim: usize) -> usize {
        let b = self.b;
        let mut k = i;
        while k < lim {
            match b[k] {
                c if c.is_ascii_whitespace() || matches!(c, b'|' | b';' | b'&') => break,
                q @ (b'"' | b'\'') => {
                    match b[k + 1..lim].iter().position(|&c| c == q || c == b'\n') {
                        Some(p) if b[k + 1 + p] == q => k += p + 2,
                        _ => return k + 1 + scan_while(&b[k + 1..lim], 0, |c| c != b'\n'),
                    }
                }
                _ => k += 1,
            }
        }
        k
    }

    /// `user:password` in `vs..ve` (a curl `-u` value, quotes and all).
    fn curl_credentials(&mut self, vs: usize, ve: usize) {
        let b = self.b;
        // The first `:` outside secrets already found and placeholders.
        let mut h = self.hard.partition_point(|r| r.end <= vs);
        let mut k = vs;
        let mut colon = None;
        while k < ve {
            if let Some(r) = self.hard.get(h).filter(|r| r.start <= k) {
                k = k.max(r.end);
                h += 1;
                continue;
            }
            if let Some(pe) = placeholder_at(b, k) {
                k = pe;
                continue;
            }
            if b[k] == b':' {
                colon = Some(k);
                break;
            }
            k += 1;
        }
        let Some(c) = colon else {
            return;
        };
        let trim = |mut a: usize, mut z: usize| {
            while a < z && matches!(b[a], b'"' | b'\'') {
                a += 1;
            }
            while z > a && matches!(b[z - 1], b'"' | b'\'') {
                z -= 1;
            }
            (a, z)
        };
        let (pa, pz) = trim(c + 1, ve.max(c + 1));
        let (ua, uz) = trim(vs, c);
        // A user that reads as a key (`-u <random>:x-oauth-basic`) is one.
        if pz > pa && is_random(&b[ua..uz]) {
            self.emit(ua, uz, Kind::Token, PRIO_CONTEXT);
        }
        let (a, z) = if pz > pa { (pa, pz) } else { (ua, uz) };
        if z < a + 3 || self.curl_stand_in(&b[a..z]) {
            return;
        }
        self.emit(a, z, Kind::Password, PRIO_CONTEXT);
    }

    /// A curl credential that only stands for one.
    fn curl_stand_in(&self, v: &[u8]) -> bool {
        const WORDS: &[&str] = &[
            "pass", "password", "passwd", "pwd", "test", "token", "changeme", "changeit", "secret",
            "user", "username", "admin", "apikey", "api_key", "foo", "bar",
        ];
        matches!(v[0], b'$' | b'<' | b'[' | b'%' | b'*')
            || v.starts_with(b"{{")
            || matches!(v[v.len() - 1], b'>' | b']')
            || v.iter().all(|&c| c.eq_ignore_ascii_case(&v[0]))
            || WORDS.iter().any(|w| v.eq_ignore_ascii_case(w.as_bytes()))
            || is_benign(v)
            || is_filler(v)
    }

    /// `mysql -u root -pS3cret`: the password glued to `-p` on a MySQL or
    /// MariaDB command line.
    fn mysql_p(&mut self, ms: usize) {
        let b = self.b;
        if ms > 0 && is_alnum(b[ms - 1]) {
            return;
        }
        let lim = b.len().min(ms + 1024);
        let line_end = scan_while(&b[..lim], ms, |c| c != b'\n');
        let mut i = ms;
        while let Some(p) = b[i..line_end].windows(3).position(|w| w == b" -p") {
            let v = i + p + 3;
            let end = scan_while(&b[..line_end], v, |c| {
                !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b'`' | b';' | b'|' | b'&')
            });
            if end > v && b[v] != b'-' && b[v] != b'=' && !self.stands_in(v, end) {
                self.emit(v, end, Kind::Password, PRIO_CONTEXT);
            }
            i = end.max(v);
        }
    }

    /// End of the word at `j`: whitespace, or the start of a phase-1 secret
    /// or of a placeholder (which a rescan would find in its place).
    fn word_end(&self, j: usize) -> usize {
        let b = self.b;
        let lim = self
            .hard
            .get(self.hard.partition_point(|r| r.end <= j))
            .map_or(b.len(), |r| r.start.max(j));
        let mut k = j;
        while k < lim && !b[k].is_ascii_whitespace() && placeholder_at(b, k).is_none() {
            k += 1;
        }
        k
    }

    /// Whether the value `v..end` only stands for a secret (`$VAR`, a
    /// placeholder, `null`, …). Never when a phase-1 secret overlaps it.
    fn stands_in(&self, v: usize, end: usize) -> bool {
        if let Some(re) = reference_at(self.b, v).filter(|&re| re >= end) {
            return !self.overlaps_hard(v, re);
        }
        let w = &self.b[v..end];
        // One character (`PuttyPassword=0`) holds no secret.
        (w.len() == 1 || is_benign(w) || is_filler(w) || is_plain_value(w))
            && !self.overlaps_hard(v, end)
    }

    /// A value that starts in a URL's authority ends with it, and at an
    /// `@`: the URL must parse the same once the value is a placeholder.
    fn clamp(&self, v: usize, end: usize) -> usize {
        if self.authority.start <= v && v <= self.authority.end && !self.authority.is_empty() {
            let mut end = end.min(self.authority.end);
            if end > v && self.b[end - 1] == b':' && self.b[end..].starts_with(b"//") {
                end -= 1; // leave the next URL's `://` whole
            }
            self.b[v..end]
                .iter()
                .position(|&c| c == b'@')
                .map_or(end, |p| v + p)
        } else {
            end
        }
    }

    /// A space in `v..end` outside the hard ranges and placeholders.
    fn space_outside_secrets(&self, v: usize, end: usize) -> bool {
        let b = self.b;
        let mut i = v;
        while i < end {
            let k = self.hard.partition_point(|r| r.end <= i);
            if let Some(r) = self.hard.get(k).filter(|r| r.start <= i) {
                i = r.end;
                continue;
            }
            if let Some(e) = placeholder_at(b, i) {
                i = e;
                continue;
            }
            if b[i] == b' ' {
                return true;
            }
            i += 1;
        }
        false
    }

    fn overlaps_hard(&self, a: usize, z: usize) -> bool {
        let k = self.hard.partition_point(|r| r.end <= a);
        self.hard.get(k).is_some_and(|r| r.start < z)
    }

    /// Add a range to the sorted, disjoint hard ranges.
    fn add_hard(&mut self, r: Range<usize>) {
        let lo = self.hard.partition_point(|x| x.end < r.start);
        let hi = self.hard.partition_point(|x| x.start <= r.end);
        let mut merged = r;
        if lo < hi {
            merged.start = merged.start.min(self.hard[lo].start);
            merged.end = merged.end.max(self.hard[hi - 1].end);
        }
        self.hard.splice(lo..hi, [merged]);
    }

    /// Redact from `v` to the closing quote or the end of the line.
    fn rest_of_line(&mut self, v: usize, quote: Option<u8>, kind: Kind) {
        let end = self.clamp(v, self.quoted_end(v, quote.unwrap_or(b'\n')));
        if end <= v || self.stands_in(v, end) {
            return;
        }
        // A value that runs into a placeholder the text already holds is
        // not taken, and then what follows in its line is looked at.
        if self.emit(v, end, kind, PRIO_CONTEXT) {
            self.skip_line(v, end);
        }
    }

    /// Words inside `v..end` need no look when that value runs to the end
    /// of its line: whatever they would find ends there too.
    fn skip_line(&mut self, v: usize, end: usize) {
        if end == self.b.len() || self.b[end] == b'\n' {
            self.line_skip = v..end;
        }
    }

    /// End of a quoted value: the closing quote, the end of the line or of
    /// the text. `\\` stands for an escaped `\"` quote. Secrets found in
    /// phase 1 are stepped over, as a rescan steps over their placeholders.
    fn quoted_end(&self, v: usize, q: u8) -> usize {
        let b = self.b;
        let stop = |c: u8| {
            c == b'\n'
                || if q == b'\\' {
                    c == b'\\' || c == b'"'
                } else {
                    c == q
                }
        };
        let mut h = self.hard.partition_point(|r| r.end <= v);
        let mut i = v;
        loop {
            let lim = self.hard.get(h).map_or(b.len(), |r| r.start.max(i));
            i = scan_while(&b[..lim], i, |c| !stop(c));
            if i < lim || i == b.len() {
                return i;
            }
            i = self.hard[h].end;
            h += 1;
        }
    }

    fn unquoted_end(&mut self, v: usize, url: bool) -> usize {
        let (from, end, memo_url) = self.value_memo;
        if memo_url == url && from <= v && v < end {
            return end;
        }
        let b = self.b;
        let mut end = scan_while(b, v, |c| !ends_value(c, url));
        // `password=abc,def`: a `,`, `;` or `&` inside a value does not end
        // it, unless whitespace or the next `name=` follows.
        while !url && end > v && end + 1 < b.len() && matches!(b[end], b',' | b';' | b'&') {
            let next = end + 1;
            if ends_value(b[next], false) {
                break;
            }
            let w = scan_while(&b[..b.len().min(next + MAX_IDENT)], next, is_ident);
            if w > next && matches!(b.get(w), Some(b'=' | b':')) {
                break;
            }
            end = scan_while(b, next, |c| !ends_value(c, url));
        }
        self.value_memo = (v, end, url);
        end
    }

    /// A plain value at `v`: redact it unless it is empty, a reference to
    /// a secret (`$VAR`, a placeholder, …) or a benign word.
    fn value(&mut self, v: usize, quote: Option<u8>, url: bool, kind: Kind) {
        let end = match quote {
            Some(q) => self.quoted_end(v, q),
            None => {
                let end = self.unquoted_end(v, url);
                // A value that takes a URL's `://` takes its (last one's)
                // authority too, or a rescan would read what is left of it
                // as a different URL.
                match (v..end.saturating_sub(2))
                    .rev()
                    .find(|&k| self.b[k..].starts_with(b"://"))
                {
                    Some(p) => end.max(self.authority_end(p + 3)),
                    None => end,
                }
            }
        };
        let mut end = self.clamp(v, end);
        if end > v && self.b[end - 1] == b':' && self.b[end..].starts_with(b"//") {
            end -= 1; // leave a URL's `://` whole
        }
        if end <= v || self.stands_in(v, end) {
            return;
        }
        // A value that runs into a placeholder the text already holds
        // (`password='[redacted:token] sig=…`, an unbalanced quote) is not
        // taken, and then the words after it in its line are looked at.
        if self.emit_value(v, end, kind) {
            self.skip_line(v, end);
        }
    }

    /// An `Authorization` header value: keep a scheme word (`Bearer`,
    /// `Basic`, …), redact the credentials.
    fn authorization(&mut self, v: usize, quote: Option<u8>, kind: Kind) {
        const SINGLE: &[&str] = &[
            "bearer",
            "basic",
            "token",
            "apikey",
            "api-key",
            "key",
            "negotiate",
            "ntlm",
            "dpop",
            "sso-key",
        ];
        const MULTI: &[&str] = &[
            "digest",
            "aws4-hmac-sha256",
            "hoba",
            "mutual",
            "signature",
            "hmac",
            "hmac-sha256",
            "oauth",
        ];
        let b = self.b;
        let w = scan_while(b, v, |c| is_alnum(c) || c == b'-');
        let scheme = &b[v..w];
        let is_scheme = |set: &[&str]| {
            set.iter()
                .any(|s| scheme.eq_ignore_ascii_case(s.as_bytes()))
        };
        let followed = w < b.len() && is_space(b[w]);
        if followed && is_scheme(SINGLE) {
            let c = scan_while(b, w, is_space);
            self.value(c, quote, false, kind);
        } else if followed && is_scheme(MULTI) {
            let c = scan_while(b, w, is_space);
            self.rest_of_line(c, quote, kind);
        } else {
            self.value(v, quote, false, kind);
        }
    }

    /// `AWS account 123456789012`, `account #1234-5678-9012`: a number of
    /// six digits or more after an account's name, with at most a few
    /// plain words (`id`, `number`, `is`, `#`) between them.
    fn near_account(&mut self, e: usize) {
        const FILLER: &[&[u8]] = &[b"id", b"number", b"no", b"no.", b"num", b"is", b"#", b"nr"];
        let b = self.b;
        let mut i = e;
        for _ in 0..4 {
            let j = scan_while(b, i, is_space);
            if j == i && i < b.len() && b[i] != b'#' {
                return;
            }
            i = j;
            let w = scan_while(b, i, |c| !c.is_ascii_whitespace() && c != b',');
            let word = &b[i..w];
            let digits = word.iter().filter(|c| c.is_ascii_digit()).count();
            let core = word.strip_prefix(b"#").unwrap_or(word);
            let core = core.strip_suffix(b".").unwrap_or(core);
            if digits >= 6 && core.iter().all(|&c| c.is_ascii_digit() || c == b'-') {
                let a = i + (word.len() - word.strip_prefix(b"#").unwrap_or(word).len());
                self.emit(a, a + core.len(), Kind::AccountId, PRIO_CONTEXT);
                return;
            }
            if !FILLER.iter().any(|f| word.eq_ignore_ascii_case(f)) {
                return;
            }
            i = w;
        }
    }

    /// `jo.smith@acme.io`: an e-mail address names an account. Not the
    /// user part of a URL (`https://u:p@host`, which `url` reads) nor an
    /// scp-style remote (`git@github.com:org/repo.git`).
    fn email(&mut self, at: usize) {
        let b = self.b;
        if self.scp_password(at) {
            return;
        }
        let local_c = |c: u8| is_alnum(c) || matches!(c, b'.' | b'_' | b'%' | b'+' | b'-');
        let mut s = at;
        while s > 0 && at - s < 64 && local_c(b[s - 1]) {
            s -= 1;
        }
        while s < at && b[s] == b'.' {
            s += 1;
        }
        if s == at || b[at - 1] == b'.' || (s > 0 && b[s - 1] == b'@') {
            return;
        }
        let d = at + 1;
        let mut e = scan_while(&b[..b.len().min(d + 255)], d, |c| {
            is_alnum(c) || c == b'.' || c == b'-'
        });
        while e > d && matches!(b[e - 1], b'.' | b'-') {
            e -= 1;
        }
        let domain = &b[d..e];
        let Some(dot) = domain.iter().rposition(|&c| c == b'.') else {
            return;
        };
        let tld = &domain[dot + 1..];
        if tld.len() < 2
            || !tld.iter().all(|c| c.is_ascii_alphabetic())
            || domain.split(|&c| c == b'.').any(<[u8]>::is_empty)
            || !is_alnum(domain[0])
        {
            return;
        }
        // `git@github.com:org/repo.git`.
        if b.get(e) == Some(&b':') && b.get(e + 1).is_some_and(|&c| !c.is_ascii_whitespace()) {
            return;
        }
        // The user part of a URL: `://` earlier in the same word.
        if self.at_word.ws_scheme.is_some_and(|p| p + 3 <= s) {
            return;
        }
        self.emit(s, e, Kind::AccountId, PRIO_TOKEN);
    }

    /// `user:password@host:repo.git` or `user:password@host/path` without a
    /// scheme (scp-style git remotes, `mysql://`-less DSNs): the password.
    fn scp_password(&mut self, at: usize) -> bool {
        let b = self.b;
        let stop = scp_stop;
        self.at_word.read_to(b, at);
        let aw = &self.at_word;
        let w = aw.stop_start;
        // A remote's user and password are short; `a@a@…` over a long
        // word is not one (and reading it again at every `@` was not
        // linear).
        if at - w > 256 || aw.stop_scheme.is_some() || aw.stop_at_after_colon {
            return false;
        }
        let word = &b[w..at];
        let Some(colon) = aw.stop_colon.map(|c| c - w) else {
            return false;
        };
        let user = &word[..colon];
        let (ps, pe) = (w + colon + 1, at);
        if user.is_empty()
            || !user
                .iter()
                .all(|&c| is_alnum(c) || matches!(c, b'.' | b'_' | b'-'))
            || ps >= pe
        {
            return false;
        }
        let h = scan_while(b, at + 1, |c| is_alnum(c) || c == b'.' || c == b'-');
        if h == at + 1
            || b.get(h).is_some_and(|&c| {
                !(stop(c) || matches!(c, b':' | b'/' | b',' | b';' | b')' | b'>'))
            })
        {
            return false;
        }
        if self.stands_in(ps, pe) {
            return true;
        }
        self.emit_value(ps, pe, Kind::Password);
        true
    }

    /// An amount of money stated as a balance, credit or remainder: a word
    /// that says so (`balance`, `credit`, `remaining`, `left`, …) and, in
    /// the same clause and at most a few words away, an amount with a
    /// currency (`$4,821.55`, `912.40 USD`, `€7,50`, `12 credits`) or a
    /// number right after the word (`balance 912.40`). The window is
    /// counted in plain words (see [`clause_words`]), so that a second pass
    /// finds nothing more.
    fn money(&mut self, ms: usize, me: usize) {
        let b = self.b;
        if ms > 0 && is_alnum(b[ms - 1]) {
            return; // inside a longer word (`overleft`)
        }
        // Only a balance or a credit names the number right after it
        // (`balance 912.40`); `left 3 retries` does not.
        let names =
            |w: &[u8]| b[ms..].len() >= w.len() && b[ms..ms + w.len()].eq_ignore_ascii_case(w);
        let names_number = names(b"balance") || names(b"credit");
        // The whole word the trigger sits in.
        let we = scan_while(&b[..b.len().min(me + 32)], me, is_alnum);
        let Some((lo, hi)) = clause_words(b, ms) else {
            return;
        };
        // Where a number right after the word may start: over `is`, `of`,
        // `:`, `now`, ….
        let after = {
            let mut i = we;
            for _ in 0..3 {
                // `balance-12.40`, `credit-left-12.40-USD`: an id's
                // separators join the words too.
                let j = scan_while(b, i, |c| {
                    is_space(c) || matches!(c, b':' | b'=' | b'-' | b'_')
                });
                let w = scan_while(b, j, |c| c.is_ascii_alphabetic());
                let word = &b[j..w];
                if [
                    "is",
                    "of",
                    "was",
                    "now",
                    "at",
                    "currently",
                    "balance",
                    "remaining",
                    "left",
                ]
                .iter()
                .any(|f| word.eq_ignore_ascii_case(f.as_bytes()))
                {
                    i = w;
                } else {
                    i = j;
                    break;
                }
            }
            i
        };
        let mut i = lo;
        while i < hi {
            let c = b[i];
            if !c.is_ascii_digit() || (i > 0 && (is_alnum(b[i - 1]) || b[i - 1] == b'.')) {
                i += 1;
                continue;
            }
            let n_end = number_end(b, i, hi);
            let (cs, ce) = currency_around(b, i, n_end, hi);
            let adjacent = names_number && (i == after || cs == after);
            if b.get(n_end) == Some(&b'%') || (cs == i && ce == n_end && !adjacent) {
                i = n_end.max(i + 1);
                continue;
            }
            self.emit(cs, ce, Kind::Balance, PRIO_TOKEN);
            i = ce.max(i + 1);
        }
    }
    /// `AWS secret access key wJalr…`: a lone 40-character base64 word
    /// after a secret's name, with only plain words (`access`, `key`, `is`,
    /// `=`) between them.
    fn near_secret(&mut self, s: usize, e: usize, kind: Kind) {
        let b = self.b;
        let n = b.len();
        let mut i = e;
        for _ in 0..5 {
            i = scan_while(b, i, is_space);
            let w_end = scan_while(&b[..n.min(i + 48)], i, |c| !c.is_ascii_whitespace());
            let word = &b[i..w_end];
            if word.is_empty() || word.len() >= 48 {
                return;
            }
            let trim = |c: &u8| {
                matches!(
                    c,
                    b'"' | b'\'' | b'`' | b':' | b'=' | b',' | b';' | b'(' | b')' | b'.'
                )
            };
            let a = i + word.iter().position(|c| !trim(c)).unwrap_or(word.len());
            let z = i + word.iter().rposition(|c| !trim(c)).map_or(0, |p| p + 1);
            if a < z && z - a == 40 && b[a..z].iter().all(|&c| is_b64(c)) && classes(&b[a..z]) >= 2
            {
                let before = &b[s.saturating_sub(12)..a];
                let kind = if kind == Kind::AwsSecretKey
                    || contains_ci(before, b"aws")
                    || contains_ci(before, b"access")
                {
                    Kind::AwsSecretKey
                } else {
                    kind
                };
                self.emit(a, z, kind, PRIO_CONTEXT);
                return;
            }
            if !word
                .iter()
                .all(|&c| c.is_ascii_alphabetic() || trim(&c) || c == b'_' || c == b'-')
            {
                return;
            }
            i = w_end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `scp_password` and `email` read back from each `@` before
    /// [`AtWord`] (up to the word's start): the same answers, read once.
    #[test]
    fn the_at_word_read_once_agrees_with_reading_back_from_every_at() {
        let alphabet = b"a:@/ \"=.x-";
        let mut x: u64 = 0x5EED;
        for _ in 0..3000 {
            let n = 1 + (x % 48) as usize;
            let text: Vec<u8> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            let mut aw = AtWord::default();
            for at in (0..text.len()).filter(|&i| text[i] == b'@') {
                aw.read_to(&text, at);
                let back = |stop: fn(u8) -> bool| {
                    let mut w = at;
                    while w > 0 && !stop(text[w - 1]) {
                        w -= 1;
                    }
                    w
                };
                let scheme = |w: usize| (w..at).find(|&k| text[k..at].starts_with(b"://"));
                let w = back(scp_stop);
                let colon = (w..at).find(|&k| text[k] == b':');
                let at_after = colon.is_some_and(|c| text[c + 1..at].contains(&b'@'));
                let ws = back(|c| c.is_ascii_whitespace());
                let got = (
                    aw.stop_start,
                    aw.stop_colon,
                    aw.stop_scheme,
                    aw.stop_at_after_colon,
                );
                assert_eq!(
                    got,
                    (w, colon, scheme(w), at_after),
                    "{:?} at {at}",
                    String::from_utf8_lossy(&text)
                );
                assert_eq!(
                    (aw.ws_start, aw.ws_scheme),
                    (ws, scheme(ws)),
                    "{:?} at {at}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }

    #[test]
    fn fast_path_agrees_with_the_full_automaton() {
        assert!(TRIGGERS.iter().all(|t| t.0.len() < 16));
        assert!(TRIGGERS.iter().all(|t| t.0 == t.0.to_ascii_lowercase()));
        let filler = "x 12 .,;é ".repeat(200);
        for (word, _) in TRIGGERS {
            let upper = word.to_ascii_uppercase();
            let mixed: String = word
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            for w in [word.to_string(), upper, mixed] {
                // Around the first chunk boundary, and far out.
                for at in (490..530).chain([0, 1500]) {
                    let mut at = at.min(filler.len());
                    while !filler.is_char_boundary(at) {
                        at += 1;
                    }
                    let text = format!("{}{}{}", &filler[..at], w, &filler[at..]);
                    assert!(has_trigger(&text), "{w:?} at {at}");
                    assert!(TRIGGER_AC.is_match(&text));
                }
            }
        }
        assert!(!has_trigger(&filler));
        assert!(!has_trigger(""));
        // Every trigger holds one of the fast path's patterns.
        let fast = fast_patterns();
        assert!(
            TRIGGERS
                .iter()
                .all(|t| fast.iter().any(|f| t.0.contains(f)))
        );
        let n: usize = FAST_AC.iter().map(|ac| ac.patterns_len()).sum();
        assert_eq!(n, fast.len());
    }
}
