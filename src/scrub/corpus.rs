//! A corpus of fake secret-shaped strings, one or more per family that
//! matters to a fleet of coding agents (after gitleaks' and TruffleHog's
//! rule sets), and look-alikes that must come back unchanged. Shared by the
//! tests (`tests/scrub.rs`), the fuzz targets and the bench.
//!
//! Nothing here is a real secret, and no secret-shaped literal is written in
//! the source: every entry is a prefix glued at run time to characters from
//! a small deterministic generator.

/// One fake secret, as a worker might send it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Which family (for messages).
    pub family: &'static str,
    /// The text as sent: the secret in a realistic failover detail (at most
    /// 200 characters), possibly with invisible characters or full-width
    /// forms in it.
    pub detail: String,
    /// The random part that must not come back, not even a piece of it
    /// (see [`leaked`]).
    pub needle: String,
}

/// xorshift64: a tiny deterministic generator.
struct Rng(u64);

const B62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
const LOWER_DIGITS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const HEX: &[u8] = b"0123456789abcdef";
const DIGITS: &[u8] = b"0123456789";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

impl Rng {
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
    /// Groups of `lens` characters from `set`, joined by `-`.
    fn dashed(&mut self, set: &[u8], lens: &[usize]) -> String {
        let groups: Vec<String> = lens.iter().map(|&n| self.pick(set, n)).collect();
        groups.join("-")
    }
    /// A version-4 UUID, as npm's legacy tokens are.
    fn uuid4(&mut self) -> String {
        let mut u = self.dashed(HEX, &[8, 4, 4, 4, 12]);
        u.replace_range(14..15, "4");
        u.replace_range(19..20, "a");
        u
    }
    /// Base62 that surely mixes cases and digits, as real keys do.
    fn b62(&mut self, n: usize) -> String {
        let mut s = self.pick(B62, n);
        let at = (self.next() as usize) % (n - 2);
        s.replace_range(at..at + 3, "aQ3");
        s
    }
}

/// A piece of a fake secret's body: literal text, `n` characters drawn
/// from a set, or `n` base62 characters that mix cases and digits.
#[derive(Clone, Copy)]
enum Part {
    Lit(&'static str),
    Of(&'static [u8], usize),
    Mixed(usize),
}

impl Rng {
    /// A body of the given shape, its parts drawn in order.
    fn shape(&mut self, parts: &[Part]) -> String {
        parts
            .iter()
            .map(|p| match *p {
                Part::Lit(s) => s.to_string(),
                Part::Of(set, n) => self.pick(set, n),
                Part::Mixed(n) => self.b62(n),
            })
            .collect()
    }
}

/// A prefix and the shape of the body after it.
type Shaped = (&'static str, &'static str, &'static [Part]);

fn e(family: &'static str, detail: String, needle: String) -> Entry {
    Entry {
        family,
        detail: detail.chars().take(200).collect(),
        needle,
    }
}

/// `template` with `body` in its `{}`; the body is the needle.
fn slot(family: &'static str, template: &str, body: String) -> Entry {
    e(family, template.replacen("{}", &body, 1), body)
}

/// `prefix + body` in a detail; the body is the needle.
fn tok(family: &'static str, prefix: &str, body: String) -> Entry {
    e(
        family,
        format!("opencode route: 401 from upstream, key {prefix}{body} rejected"),
        body,
    )
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn b64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The fake secrets: at least 60, every family.
pub fn secrets() -> Vec<Entry> {
    let mut r = Rng(0x5EED_CAFE_F00D_0001);
    let mut v = Vec::new();
    for part in [
        anthropic,
        model_providers,
        google,
        aws,
        github,
        shaped_keys,
        azure,
        macfleet_own,
        jwts,
        private_keys,
        headers,
        credential_urls,
        key_values,
        accounts,
        balances,
    ] {
        part(&mut r, &mut v);
    }
    v
}

fn anthropic(r: &mut Rng, v: &mut Vec<Entry>) {
    let ant = |r: &mut Rng| format!("{}AA", r.b62(93));
    // Anthropic, and the ways a key hides.
    v.push(tok("anthropic", "sk-ant-api03-", ant(r)));
    v.push(tok("anthropic", "sk-ant-admin01-", ant(r)));
    v.push(tok("anthropic", "sk-ant-oat01-", ant(r)));
    let body = ant(r);
    v.push(e(
        "anthropic glued to a letter",
        format!("claude: key xsk-ant-api03-{body} rejected"),
        body,
    ));
    let body = r.b62(60);
    let (a, z) = body.split_at(30);
    v.push(e(
        "anthropic split by a zero-width space",
        format!("claude: key sk-ant-api03-{a}\u{200B}{z} rejected"),
        body.clone(),
    ));
    let body = r.b62(60);
    v.push(e(
        "anthropic with full-width hyphens",
        format!("claude: key sk\u{FF0D}ant\u{FF0D}api03\u{FF0D}{body} rejected"),
        body,
    ));
    let body = r.b62(60);
    v.push(e(
        "anthropic inside colour codes",
        format!("claude: key \u{1b}[1msk-ant-api03-{body}\u{1b}[0m rejected"),
        body,
    ));
    let body = r.b62(60);
    let (a, z) = body.split_at(20);
    v.push(e(
        "anthropic split by a word joiner and a soft hyphen",
        format!(
            "claude: key sk-ant-api03-{a}\u{2060}{}\u{AD}{}",
            &z[..20],
            &z[20..]
        ),
        body.clone(),
    ));
}

fn model_providers(r: &mut Rng, v: &mut Vec<Entry>) {
    // OpenAI, OpenRouter and the other model providers.
    let body = format!("{}-{}_{}", r.b62(74), r.b62(40), r.b62(40));
    v.push(tok("openai", "sk-proj-", body));
    v.push(tok("openai", "sk-", r.b62(48)));
    v.push(tok("openai", "sk-svcacct-", r.b62(74)));
    v.push(tok("openai", "sk-admin-", r.b62(74)));
    let body = r.b62(48);
    v.push(e(
        "openai glued to a colour code",
        format!("codex: \u{1b}[31msk-{body}\u{1b}[0m invalid"),
        body,
    ));
    v.push(tok("openrouter", "sk-or-v1-", r.pick(HEX, 64)));
    v.push(tok("xai", "xai-", r.b62(80)));
    v.push(tok("groq", "gsk_", r.b62(52)));
    v.push(tok("perplexity", "pplx-", r.b62(48)));
}

fn google(r: &mut Rng, v: &mut Vec<Entry>) {
    // Google.
    v.push(tok("google api key", "AIza", format!("Sy{}", r.b62(33))));
    v.push(tok("google oauth client secret", "GOCSPX-", r.b62(28)));
    v.push(tok(
        "google oauth access token",
        "ya29.",
        format!("a0{}", r.b62(100)),
    ));
}

fn aws(r: &mut Rng, v: &mut Vec<Entry>) {
    // AWS.
    v.push(tok("aws access key id", "AKIA", r.pick(UPPER_DIGITS, 16)));
    v.push(tok("aws session key id", "ASIA", r.pick(UPPER_DIGITS, 16)));
    let body = r.pick(B64, 40);
    v.push(e(
        "aws secret key",
        format!("bedrock: aws_secret_access_key = {body}"),
        body,
    ));
    let body = r.pick(B64, 40);
    v.push(e(
        "aws secret key in prose",
        format!("bedrock: the AWS secret access key {body} is not valid"),
        body,
    ));
}

fn github(r: &mut Rng, v: &mut Vec<Entry>) {
    // GitHub.
    v.push(tok("github classic", "ghp_", r.b62(36)));
    v.push(tok("github all lower case", "ghp_", r.pick(LOWER, 36)));
    v.push(tok("github oauth", "gho_", r.b62(36)));
    v.push(tok("github app", "ghs_", r.b62(36)));
    v.push(tok("github refresh", "ghr_", r.b62(76)));
    let body = format!("{}_{}", r.b62(22), r.b62(59));
    v.push(tok("github fine-grained", "github_pat_", body));
    let body = r.b62(36);
    v.push(e(
        "github glued to a letter",
        format!("git push: token xghp_{body} denied"),
        body,
    ));
}

/// GitLab, Hugging Face and Slack: `prefix + body` of a known shape.
const SHAPED: &[Shaped] = {
    use Part::{Lit, Mixed, Of};
    &[
        ("gitlab personal", "glpat-", &[Mixed(20)]),
        ("gitlab personal, new format", "glpat-", &[Mixed(48)]),
        ("gitlab deploy", "gldt-", &[Mixed(20)]),
        ("gitlab runner", "glrt-", &[Mixed(20)]),
        ("huggingface", "hf_", &[Of(LETTERS, 34)]),
        ("huggingface org", "api_org_", &[Of(LETTERS, 34)]),
        (
            "slack bot",
            "xoxb-",
            &[
                Of(DIGITS, 12),
                Lit("-"),
                Of(DIGITS, 13),
                Lit("-"),
                Mixed(24),
            ],
        ),
        (
            "slack user",
            "xoxp-",
            &[
                Of(DIGITS, 12),
                Lit("-"),
                Of(DIGITS, 12),
                Lit("-"),
                Of(DIGITS, 13),
                Lit("-"),
                Of(HEX, 32),
            ],
        ),
        (
            "slack app",
            "xapp-",
            &[
                Lit("1-A"),
                Of(UPPER_DIGITS, 10),
                Lit("-"),
                Of(DIGITS, 13),
                Lit("-"),
                Of(HEX, 64),
            ],
        ),
    ]
};

/// Stripe, the package registries and SendGrid.
const SHAPED_2: &[Shaped] = {
    use Part::{Lit, Mixed, Of};
    &[
        ("stripe live", "sk_live_", &[Mixed(99)]),
        ("stripe restricted", "rk_live_", &[Mixed(24)]),
        ("stripe test", "sk_test_", &[Mixed(24)]),
        ("npm", "npm_", &[Mixed(36)]),
        ("npm lower case", "npm_", &[Of(LOWER_DIGITS, 36)]),
        ("pypi", "pypi-", &[Lit("AgEIcHlwaS5vcmc"), Mixed(70)]),
        ("sendgrid", "SG.", &[Mixed(22), Lit("."), Mixed(43)]),
    ]
};

fn shaped_keys(r: &mut Rng, v: &mut Vec<Entry>) {
    // GitLab, Hugging Face and Slack, then Stripe, the package registries
    // and SendGrid: `prefix + body` of a known shape.
    use Part::{Lit, Mixed, Of};
    for &(family, prefix, parts) in SHAPED {
        let body = r.shape(parts);
        v.push(tok(family, prefix, body));
    }
    let body = r.shape(&[
        Lit("T"),
        Of(UPPER_DIGITS, 10),
        Lit("/B"),
        Of(UPPER_DIGITS, 10),
        Lit("/"),
        Mixed(24),
    ]);
    v.push(e(
        "slack webhook",
        format!("notify: POST https://hooks.slack.com/services/{body} -> 404"),
        body,
    ));
    for &(family, prefix, parts) in SHAPED_2 {
        let body = r.shape(parts);
        v.push(tok(family, prefix, body));
    }
}

fn azure(r: &mut Rng, v: &mut Vec<Entry>) {
    // Azure.
    let body = format!("{}8Q~{}", r.b62(3), r.b62(34));
    v.push(e(
        "azure ad client secret",
        format!("azure: client secret {body} expired"),
        body,
    ));
    let body = format!("{}==", r.pick(B64, 86));
    v.push(e(
        "azure storage connection string",
        format!("DefaultEndpointsProtocol=https;AccountName=fleetlogs;AccountKey={body};EndpointSuffix=core.windows.net"),
        body,
    ));
    let body = r.b62(32);
    v.push(e(
        "azure openai api-key header",
        format!("azure openai: api-key: {body} (401)"),
        body,
    ));
}

fn macfleet_own(r: &mut Rng, v: &mut Vec<Entry>) {
    // macfleet's own.
    v.push(tok("macfleet", "mft_", r.b62(43)));
}

fn jwts(r: &mut Rng, v: &mut Vec<Entry>) {
    // JWTs.
    let h = b64url(br#"{"alg":"HS256","typ":"JWT"}"#);
    let p = b64url(format!(r#"{{"sub":"{}","exp":1893456000}}"#, r.b62(24)).as_bytes());
    let sig = r.b62(43);
    v.push(e(
        "jwt",
        format!("upstream said: bearer-less token {h}.{p}.{sig} expired"),
        format!("{p}.{sig}"),
    ));
    let long = b64url(
        format!(
            r#"{{"sub":"{}","org":"{}","scope":"all"}}"#,
            r.b62(40),
            r.b62(60)
        )
        .as_bytes(),
    );
    let cut = format!(
        "opencode route: 401, upstream token {h}.{long}.{}",
        r.b62(43)
    );
    v.push(e(
        "jwt cut at the 200-character bound",
        cut,
        long[..60].to_string(),
    ));
    v.push(e(
        "jwt without a signature",
        format!("token {h}.{p} refused"),
        p.clone(),
    ));
}

fn private_keys(r: &mut Rng, v: &mut Vec<Entry>) {
    // Private keys.
    let body = r.pick(B64, 64);
    v.push(e(
        "private key",
        format!(
            "-----BEGIN {} KEY-----\n{body}\n-----END {} KEY-----",
            "RSA PRIVATE", "RSA PRIVATE"
        ),
        body,
    ));
    let body = r.pick(B64, 64);
    v.push(e(
        "openssh private key, cut",
        format!("ssh: -----BEGIN {} KEY-----\n{body}", "OPENSSH PRIVATE"),
        body,
    ));
}

fn headers(r: &mut Rng, v: &mut Vec<Entry>) {
    // Headers and auth schemes.
    let body = r.b62(40);
    v.push(e(
        "bearer",
        format!("GET /v1/models: Authorization: Bearer {body}"),
        body,
    ));
    let body = r.b62(40);
    v.push(e("bare bearer", format!("retry with Bearer {body}"), body));
    let cred = b64(format!("deploy:{}", r.b62(20)).as_bytes());
    v.push(e(
        "basic auth header",
        format!("registry: Authorization: Basic {cred}"),
        cred.clone(),
    ));
    let cred = b64(format!("ci-bot:{}", r.b62(24)).as_bytes());
    v.push(e(
        "bare basic credentials",
        format!("proxy said 407; sent Basic {cred}"),
        cred.clone(),
    ));
    let body = r.b62(32);
    v.push(e("x-api-key", format!("x-api-key: {body}"), body));
    let body = r.b62(32);
    v.push(e(
        "cookie",
        format!("Set-Cookie: session={body}; Path=/; HttpOnly"),
        body,
    ));
}

fn credential_urls(r: &mut Rng, v: &mut Vec<Entry>) {
    // URLs with credentials.
    let pw = r.b62(20);
    v.push(e(
        "url userinfo",
        format!("git fetch https://bot:{pw}@git.example.com/fleet.git failed"),
        pw,
    ));
    let pw = r.b62(20);
    v.push(e(
        "postgres url",
        format!("db: postgres://fleet:{pw}@10.0.0.5:5432/hub"),
        pw,
    ));
    let pw = r.b62(20);
    v.push(e(
        "redis url without a user",
        format!("cache: redis://:{pw}@cache:6379/0 refused"),
        pw,
    ));
    let q = r.b62(32);
    v.push(e(
        "url query token",
        format!("GET https://api.example.com/v1/x?access_token={q}&page=2 -> 401"),
        q,
    ));
    let q = r.b62(32);
    v.push(e(
        "sentry dsn",
        format!("https://{q}@o1.ingest.sentry.io/42"),
        q,
    ));
}

fn key_values(r: &mut Rng, v: &mut Vec<Entry>) {
    // Key-value pairs.
    let body = r.b62(24);
    v.push(e(
        "password=",
        format!("login failed: password={body}"),
        body,
    ));
    let body = r.b62(40);
    v.push(e(
        "json api_key",
        format!(r#"config: {{"api_key": "{body}", "model": "gpt-4o"}}"#),
        body,
    ));
    let body = format!("sk-{}", r.b62(48));
    v.push(e(
        "env assignment",
        format!("env: OPENAI_API_KEY={body}"),
        body[3..].to_string(),
    ));
    let body = r.b62(32);
    v.push(e(
        "client_secret",
        format!("oauth: client_secret: {body}"),
        body,
    ));
    let body = r.b62(32);
    v.push(e(
        "full-width key name",
        format!("\u{FF54}\u{FF4F}\u{FF4B}\u{FF45}\u{FF4E}={body}"),
        body,
    ));
}

fn accounts(r: &mut Rng, v: &mut Vec<Entry>) {
    // Account identifiers: the e-mail address behind a subscription, and
    // providers' account, user and project ids.
    let mail = format!("{}.{}@acme.io", r.pick(LOWER, 5), r.pick(LOWER, 7));
    v.push(e(
        "e-mail address",
        format!("claude cap reached for {mail}"),
        mail,
    ));
    let mail = format!("ops+fleet{}@corp.com", r.pick(DIGITS, 3));
    v.push(e(
        "e-mail address with a tag",
        format!("account {mail} over its monthly limit"),
        mail,
    ));
    for prefix in ["acct_", "user-", "proj_"] {
        let body = r.b62(24);
        v.push(e(
            "provider account id",
            format!("billing: {prefix}{body} is past due"),
            body,
        ));
    }
    let acct = r.pick(DIGITS, 12);
    v.push(e(
        "AWS account in words",
        format!("bedrock: AWS account {acct} has no access to the model"),
        acct,
    ));
    new_families(r, v);
}

fn balances(r: &mut Rng, v: &mut Vec<Entry>) {
    // Balances in words.
    let amount = format!(
        "{},{}.{}",
        r.pick(DIGITS, 2),
        r.pick(DIGITS, 3),
        r.pick(DIGITS, 2)
    );
    v.push(e(
        "credit balance in words",
        format!("your credit balance is ${amount}"),
        amount,
    ));
    let amount = format!("{}.{}", r.pick(DIGITS, 3), r.pick(DIGITS, 2));
    v.push(e(
        "remaining balance with a code",
        format!("remaining balance {amount} USD"),
        amount,
    ));
    let amount = format!("{},{}", r.pick(DIGITS, 3), r.pick(DIGITS, 2));
    v.push(e(
        "amount left",
        format!("you have €{amount} left on this plan"),
        amount,
    ));
}

/// The families of issue 31 (chat webhooks, command-line credentials,
/// cloud, registry, payment and ops keys, prefixed keys whose body reads
/// like an example) and the names of issue 29 (a secret's name glued to
/// its value inside one word).
fn new_families(r: &mut Rng, v: &mut Vec<Entry>) {
    for part in [
        chat_tokens,
        command_line_credentials,
        kubernetes_secrets,
        cloud_and_ai_keys,
        code_hosts_and_ops,
        example_like_bodies,
        glued_names,
        last_forms,
        escaped_separators,
        open_shapes,
    ] {
        part(r, v);
    }
}

/// Issue 31, still open after the audit: a known key whose separators
/// are escaped (JSON `\u002d`, HTML `&#45;` / `&#x2d;`, C `\x2d`,
/// percent `%2D`).
fn escaped_separators(r: &mut Rng, v: &mut Vec<Entry>) {
    for (family, dash) in [
        ("anthropic key, JSON unicode escapes", "\\u002d"),
        ("anthropic key, HTML decimal references", "&#45;"),
        ("anthropic key, HTML hex references", "&#x2d;"),
        ("anthropic key, C hex escapes", "\\x2d"),
        ("anthropic key, percent-encoded", "%2D"),
    ] {
        let body = r.b62(60);
        v.push(e(
            family,
            format!("claude: key sk{dash}ant{dash}api03{dash}{body} rejected"),
            body,
        ));
    }
    let body = r.b62(36);
    v.push(e(
        "github token, HTML reference for its underscore",
        format!("git: ghp&#95;{body} expired"),
        body,
    ));
}

/// Issue 31's open shapes: Facebook tokens of every `EAA` letter, lower
/// case `basic`, base64 of `x:ghp_…`, a key split by dots, a Secrets
/// Manager ARN's account, JSON-escaped URL slashes, a budget's spend.
fn open_shapes(r: &mut Rng, v: &mut Vec<Entry>) {
    for letter in ["G", "B"] {
        let body = r.b62(120);
        v.push(e(
            "facebook access token, another EAA letter",
            format!("graph api: EAA{letter}{body} expired"),
            body,
        ));
    }
    let cred = b64(format!("deploy:{}", r.b62(16)).as_bytes());
    v.push(e(
        "lower-case basic credentials",
        format!("registry: authorization: basic {cred} refused (401)"),
        cred,
    ));
    let cred = b64(format!("x:ghp_{}", r.b62(36)).as_bytes());
    v.push(e(
        "base64 of x:ghp_ in a header",
        format!("git: http.extraheader AUTHORIZATION: basic {cred} -> 403"),
        cred.clone(),
    ));
    let cred = b64(format!("x-access-token:ghs_{}", r.b62(36)).as_bytes());
    v.push(e(
        "bare base64 of a user and a github token",
        format!("checkout: sent {cred} and got 403"),
        cred,
    ));
    let key = [r.b62(16), r.b62(16), r.b62(16), r.b62(16)].join(".");
    v.push(e(
        "key split into four dotted runs",
        format!("upstream: session {key} refused"),
        key,
    ));
    let acct = r.pick(DIGITS, 12);
    v.push(e(
        "secrets manager arn",
        format!(
            "aws: AccessDenied on arn:aws:secretsmanager:eu-west-1:{acct}:secret:fleet/db-Ab3dEf"
        ),
        acct,
    ));
    let pw = r.b62(16);
    v.push(e(
        "url password behind json-escaped slashes",
        format!("cache: {{\"url\":\"redis:\\/\\/app:{pw}@cache.internal:6379\"}} refused"),
        pw,
    ));
    let amount = format!("{}.{}", r.pick(DIGITS, 4), r.pick(DIGITS, 2));
    v.push(e(
        "budget spend figure",
        format!("budget alert: ${amount} spent"),
        amount,
    ));
}

/// Issue 31's last forms: HTTPie's `--auth` in its other spellings, an AWS
/// key id beside its secret with no name, and the gitleaks families that
/// passed (Infracost, Sourcegraph's bare name, MessageBird's client id).
fn last_forms(r: &mut Rng, v: &mut Vec<Entry>) {
    let pw = r.b62(16);
    v.push(e(
        "httpie --auth=, quoted",
        format!("agent ran: http --auth='deploy:{pw}' POST https://api.example.com/jobs -> 401"),
        pw,
    ));
    let pw = r.b62(16);
    v.push(e(
        "httpie -a with no user",
        format!("agent ran: http -a :{pw} https://search.internal:9200/_cat -> 401"),
        pw,
    ));
    let key = r.b62(32);
    v.push(e(
        "httpie --auth with a key as the user",
        format!("agent ran: https --auth \"{key}:\" api.example.com/v1/charges -> 401"),
        key,
    ));
    for (family, sep) in [
        ("aws key id and secret, a space apart", " "),
        ("aws key id and secret, a colon apart", ":"),
        ("aws key id and secret, a comma apart", ","),
        ("aws key id and secret, an equals sign apart", "="),
    ] {
        let id = format!("AKIA{}", r.pick(UPPER_DIGITS, 16));
        let secret = r.pick(B64, 38) + "a0";
        v.push(e(
            family,
            format!("aws: {id}{sep}{secret} refused: InvalidClientTokenId"),
            secret,
        ));
    }
    let body = r.b62(32);
    v.push(e(
        "infracost api token",
        format!("infracost breakdown: key ico-{body} is invalid"),
        body,
    ));
    let body = r.pick(b"0123456789abcdefABCDEF", 38) + "a0";
    v.push(e(
        "sourcegraph token under its bare name",
        format!("src search: sourcegraph: {body} rejected (401)"),
        body,
    ));
    let id = r.dashed(b"0123456789ABCDEF", &[8, 4, 4, 4, 12]);
    v.push(e(
        "messagebird client id",
        format!("sms hook: MessageBirdClientID={id} refused"),
        id,
    ));
}

fn chat_tokens(r: &mut Rng, v: &mut Vec<Entry>) {
    // Chat webhooks and bot tokens.
    let body = format!(
        "T{}/A{}/{}/{}",
        r.pick(UPPER_DIGITS, 10),
        r.pick(UPPER_DIGITS, 10),
        r.pick(DIGITS, 18),
        r.b62(24)
    );
    v.push(e(
        "slack workflow webhook",
        format!("notify: POST https://hooks.slack.com/workflows/{body} -> 403"),
        body,
    ));
    let body = format!("{}/{}", r.pick(DIGITS, 19), r.b62(68));
    v.push(e(
        "discord webhook",
        format!("hook: https://discord.com/api/webhooks/{body} 404"),
        body,
    ));
    let body = format!("AA{}", r.b62(33));
    let bot = r.pick(DIGITS, 10);
    v.push(e(
        "telegram bot token",
        format!("notify: GET https://api.telegram.org/bot{bot}:{body}/sendMessage 401"),
        body,
    ));
    let body = format!("AA{}", r.b62(33));
    v.push(e(
        "telegram bot token, bare",
        format!("telegram: bot {}:{body} revoked", r.pick(DIGITS, 9)),
        body,
    ));
}

fn command_line_credentials(r: &mut Rng, v: &mut Vec<Entry>) {
    // Credentials on a command line and in any URL scheme.
    let pw = r.b62(16);
    v.push(e(
        "curl -u user:pass",
        format!("agent ran: curl -sf -u deploy:{pw} https://artifacts.example.com/x.tgz -> 401"),
        pw,
    ));
    let pw = format!("{}~{}", r.b62(8), r.b62(6));
    v.push(e(
        "curl --user quoted",
        format!("agent ran: curl -X POST --user 'ci-bot:{pw}' https://api.example.com/v2/runs"),
        pw,
    ));
    let pw = format!("{}!{}", r.b62(10), r.b62(3));
    v.push(e(
        "curl -u with no user",
        format!("agent ran: curl -u \":{pw}\" https://localhost:9200/_cat"),
        pw,
    ));
    let pw = r.b62(24);
    v.push(e(
        "curl -u with a key as the user",
        format!("agent ran: curl -u \"{pw}:\" https://api.example.com/v1/charges"),
        pw,
    ));
    let pw = r.b62(16);
    v.push(e(
        "curl --user glued",
        format!("agent ran: curl --user=svc:{pw} https://nexus.example.com/repo"),
        pw,
    ));
    let pw = r.b62(16);
    v.push(e(
        "wget --password",
        format!("agent ran: wget --user=ops --password={pw} https://files.example.com/db.dump"),
        pw,
    ));
    more_command_line_credentials(r, v);
}

fn more_command_line_credentials(r: &mut Rng, v: &mut Vec<Entry>) {
    let pw = r.b62(16);
    v.push(e(
        "httpie --auth",
        format!("agent ran: http --auth ops:{pw} POST https://api.example.com/jobs"),
        pw,
    ));
    let pw = r.b62(16);
    v.push(e(
        "httpie -a",
        format!("agent ran: http -a ops:{pw} POST https://api.example.com/jobs -> 401"),
        pw,
    ));
    let pw = r.b62(16);
    v.push(e(
        "httpie -a glued, after the url",
        format!("agent ran: https api.example.com/jobs -aops:'{pw}' -> 401"),
        pw,
    ));
    let token = r.b62(32);
    v.push(e(
        "httpie bearer token",
        format!("agent ran: http -A bearer -a {token} api.example.com/v1/me -> 401"),
        token,
    ));
    let pw = r.b62(16);
    v.push(e(
        "redis-cli -a",
        format!("cache: redis-cli -h cache.internal -p 6379 -a {pw} ping -> NOAUTH"),
        pw,
    ));
}

fn kubernetes_secrets(r: &mut Rng, v: &mut Vec<Entry>) {
    // A Kubernetes Secret as a CLI prints it: every `data:` value is the
    // secret (base64), whatever its key; on one line as JSON (what fits a
    // failover detail), as YAML, and escaped in an annotation.
    let val = b64(r.b62(18).as_bytes());
    v.push(e(
        "kubernetes secret json",
        format!(
            "kubectl: {{\"apiVersion\":\"v1\",\"data\":{{\"extra\":\"{val}\"}},\"kind\":\"Secret\",\"metadata\":{{\"name\":\"db\"}}}} is invalid"
        ),
        val,
    ));
    let val = b64(r.b62(18).as_bytes());
    v.push(e(
        "kubernetes secret yaml",
        format!("kubectl get secret db -o yaml:\napiVersion: v1\ndata:\n  DB_HOST: {val}\nkind: Secret\nmetadata:\n  name: db\n"),
        val,
    ));
    let val = b64(r.b62(24).as_bytes());
    v.push(e(
        "kubernetes secret yaml block scalar",
        format!("apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockercfg\ndata:\n  .dockercfg: |\n    {val}\n"),
        val,
    ));
    let val = b64(r.b62(18).as_bytes());
    v.push(e(
        "kubernetes secret in last-applied-configuration",
        format!(
            "annotation: \"{{\\\"apiVersion\\\":\\\"v1\\\",\\\"data\\\":{{\\\"ca.pem\\\":\\\"{val}\\\"}},\\\"kind\\\":\\\"Secret\\\"}}\""
        ),
        val,
    ));
    let pw = r.b62(20);
    v.push(e(
        "imaps url",
        format!("fetchmail: imaps://jo:{pw}@mail.example.com/INBOX refused"),
        pw,
    ));
    let pw = r.b62(20);
    v.push(e(
        "amqp url",
        format!("queue: amqp://fleet:{pw}@rabbit.internal:5672/jobs unreachable"),
        pw,
    ));
}

fn cloud_and_ai_keys(r: &mut Rng, v: &mut Vec<Entry>) {
    // Cloud and AI keys.
    let key = r.pick(HEX, 32);
    v.push(e(
        "azure openai key near its endpoint",
        format!(
            "azure: https://fleet-eu.openai.azure.com/openai/deployments/gpt4o 401 with key {key}"
        ),
        key,
    ));
    let key = r.pick(HEX, 32);
    v.push(e(
        "azure openai api-key header",
        format!("azure openai: api-key: {key} (401)"),
        key,
    ));
    let body = format!(
        "{}{}",
        b64(b"BedrockAPIKey-").trim_end_matches('='),
        r.pick(B64, 120)
    );
    v.push(e(
        "aws bedrock long-term key",
        format!("bedrock: key ABSK{body} denied"),
        body[20..].to_string(),
    ));
    let body = format!(
        "{}{}",
        b64(b"bedrock.amazonaws.com/").trim_end_matches('='),
        r.b62(60)
    );
    v.push(e(
        "aws bedrock short-term key",
        format!("bedrock: token bedrock-api-key-{body} expired"),
        body[28..].to_string(),
    ));
    let body = format!("{}-{}", r.pick(HEX, 24), r.pick(HEX, 146));
    v.push(e(
        "cloudflare origin ca key",
        format!("cloudflare: v1.0-{body} rejected"),
        body,
    ));
    let body = r.b62(38);
    v.push(e(
        "clickhouse cloud key",
        format!("clickhouse: key 4b1d{body} rejected"),
        body,
    ));
}

fn code_hosts_and_ops(r: &mut Rng, v: &mut Vec<Entry>) {
    // Code hosts and registries.
    // Code hosts and registries; payment, identity and ops.
    let rows = [
        (
            "bitbucket app password",
            "git: bitbucket said 401 for ATBB{}",
            r.b62(32),
        ),
        (
            "npm legacy token beside _authToken",
            "npm ERR! //registry.npmjs.org/:_authToken={} is not valid",
            r.uuid4(),
        ),
        (
            "gitlab token glued to a url",
            "git: remote glpat-{}https://gitlab.com/fleet/x.git denied",
            r.b62(20),
        ),
    ];
    v.extend(rows.into_iter().map(|(f, t, body)| slot(f, t, body)));
    for prefix in ["rk_live_", "rk_prod_", "rk_test_"] {
        let body = r.b62(99);
        v.push(tok("stripe restricted key", prefix, body));
    }
    let rows = [
        (
            "age secret key",
            "sops: AGE-SECRET-KEY-1{} could not decrypt",
            r.pick(UPPER_DIGITS, 58),
        ),
        (
            "1password secret key",
            "op: sign-in with A3-{} failed",
            r.dashed(UPPER_DIGITS, &[6, 11, 5, 5, 5]),
        ),
    ];
    v.extend(rows.into_iter().map(|(f, t, body)| slot(f, t, body)));
    identity_and_ops_keys(r, v);
}

fn identity_and_ops_keys(r: &mut Rng, v: &mut Vec<Entry>) {
    let body = r.b62(120);
    v.push(e(
        "facebook access token",
        format!("graph api: EAAC{body} expired"),
        body,
    ));
    let secret = format!("{}_{}", r.b62(14), r.b62(12));
    v.push(e(
        "facebook app id and secret",
        format!("graph api: access {}|{secret} refused", r.pick(DIGITS, 16)),
        secret,
    ));
    let id = format!("su{}", r.b62(12));
    v.push(e(
        "sumo logic access id",
        format!("collector: SUMO_ACCESS_ID={id} unknown"),
        id,
    ));
    let key = r.b62(64);
    v.push(e(
        "sumo logic access key",
        format!("collector: SUMO_ACCESS_KEY={key}"),
        key,
    ));
    let body = r.pick(HEX, 40);
    v.push(tok("sonarqube token", "sqp_", body));
    let body = format!("{}{}", r.pick(HEX, 20), r.pick(UPPER_DIGITS, 20));
    v.push(e(
        "sonarqube login",
        format!("scanner: sonar.login={body} not authorized"),
        body,
    ));
    let cred = format!("{}:{}", r.pick(HEX, 8), r.pick(HEX, 8));
    v.push(e(
        "sidekiq enterprise credentials",
        format!("bundler: BUNDLE_ENTERPRISE__CONTRIBSYS__COM={cred} 401"),
        cred,
    ));
}

fn example_like_bodies(r: &mut Rng, v: &mut Vec<Entry>) {
    // A provider's prefix is a secret whatever follows: bodies that read
    // like an example, of a key's length.
    let body = format!(
        "abc123xyz-456def789ghij-klmnopqrstuvwx-{}-{}AA",
        r.b62(30),
        r.b62(28)
    );
    v.push(e(
        "anthropic key that reads like an example",
        format!("claude: key sk-ant-api03-{body} rejected"),
        body,
    ));
    let body = format!("{}-fake-{}-example-{}AA", r.b62(30), r.b62(30), r.b62(24));
    v.push(e(
        "anthropic admin key that says fake",
        format!("claude: key sk-ant-admin01-{body} rejected"),
        body,
    ));
}

fn glued_names(r: &mut Rng, v: &mut Vec<Entry>) {
    // Issue 29: names that are secrets, in free text.
    let body = r.b62(20);
    v.push(e(
        "token glued to its name",
        format!("worker token_{body} not registered"),
        body,
    ));
    let body = r.b62(20);
    v.push(e(
        "secret glued to its name",
        format!("host secret-{body} unreachable"),
        body,
    ));
    let body = r.b62(12);
    v.push(e(
        "password glued to its name",
        format!("failover db-pass-{body} recorded"),
        body,
    ));
    let acct = r.pick(DIGITS, 12);
    v.push(e(
        "account number glued to its name",
        format!("worker account-{acct} over quota"),
        acct,
    ));
    let amount = format!("{}.{}", r.pick(DIGITS, 4), r.pick(DIGITS, 2));
    v.push(e(
        "balance glued to its name",
        format!("agent balance-{amount} reported"),
        amount,
    ));
    let amount = format!("{}.{}", r.pick(DIGITS, 4), r.pick(DIGITS, 2));
    v.push(e(
        "credit left glued to its name",
        format!("agent credit-left-{amount}-USD reported"),
        amount,
    ));
}

/// Text that looks a little like a secret and must come back unchanged.
pub fn lookalikes() -> Vec<String> {
    let mut r = Rng(0x5EED_CAFE_F00D_0002);
    vec![
        "sk-learn".into(),
        "pip install scikit-learn==1.5.2 (sk-learn)".into(),
        "locale sk_SK and sk-SK".into(),
        "task-key rotation".into(),
        "disk-0123456789abcdefghij".into(),
        "npm_config_registry is unset".into(),
        "npm_package_version=1.2.3".into(),
        "hf_hub_download failed".into(),
        "ghp_short".into(),
        "the glpat- prefix marks GitLab tokens".into(),
        "xoxo from the team".into(),
        "msg.len() > SG.max".into(),
        "pypi-simple index".into(),
        "ya29 is an OAuth prefix".into(),
        "Basic Authentication required".into(),
        "WWW-Authenticate: Basic realm=\"registry\"".into(),
        "Bearer token missing".into(),
        "OPENAI_API_KEY is not set".into(),
        "ANTHROPIC_API_KEY: ${ANTHROPIC_API_KEY}".into(),
        "api_key: OPENAI_API_KEY".into(),
        "token: expired".into(),
        "no_token: claude has no credentials".into(),
        "max_tokens=4096, input_tokens: 1200".into(),
        "claude-sonnet-4-5-20250929".into(),
        "gpt-4o-mini via openrouter".into(),
        "429 Too Many Requests from upstream anthropic".into(),
        "upstream 502 from route opencode".into(),
        format!("worker {}", "3f2a9c1e-7b4d-4e8a-9f0c-1d2e3f4a5b6c"),
        format!("commit {}", r.pick(HEX, 40)),
        format!("sha256:{}", r.pick(HEX, 64)),
        "https://api.anthropic.com/v1/messages returned 529".into(),
        "AKIAshort".into(),
        "eyJhbGciOi".into(),
        "the Q~ sign".into(),
        "org-wide rollout".into(),
        "Your credit balance is too low".into(),
        "café, naïve, 日本語, ＡＢＣ full width, emoji 🚀".into(),
        "rate_limited 429 (hub_router) 7s ago".into(),
        "sk-ant-…abcd (masked in logs)".into(),
        "xapp-config missing".into(),
        "50% of quota used".into(),
        "retry in 30 seconds".into(),
        "opencode v2.3.1: HTTP 429".into(),
        "credits renew on 1 Dec".into(),
        "3 retries left, 2 workers available".into(),
        "git@github.com:macfleet/macfleet.git: exit 128".into(),
        "npm i react@18.2.0 failed".into(),
        "user-agent curl/8.5; user-defined route".into(),
        "@scope/pkg and user@localhost".into(),
        "account over its monthly limit".into(),
        "worker token-refresher-3 on secret-store-1 (account-service-2, balance-worker-1)".into(),
        "w-00042 on node-0005: opencode -> claude-code".into(),
        "curl -sf https://api.example.com/health -> 200".into(),
        "curl -u \"$USER:$PASS\" https://x and curl -u user:pass https://y".into(),
        "docker run -u 1000:1000 fleet/worker".into(),
        "msg.len() 3|4 rows, en-us locale, --use-color".into(),
        "ls -a; rsync -avz src/ host:dst; tar -a -cf x.tgz d; git commit -a -m \"fix: y\"".into(),
        "http -a user:pass example.org; http -a \"$USER:$PASS\" x; http -A basic -a ops x".into(),
        "http --auth user:pass x; http --auth=\"$USER:$PASS\" x; http --auth ops x".into(),
        format!(
            "deploy {} beside AKIAshort, commit {}",
            r.pick(HEX, 40),
            r.pick(HEX, 40)
        ),
        "sourcegraph: source map not found; MessageBirdClientID missing; favicon.ico-v2".into(),
        "{\"kind\":\"ExternalSecret\",\"spec\":{\"data\":[{\"secretKey\":\"x\"}]}}".into(),
        format!(
            "kind: ConfigMap\ndata:\n  app.url: {}\n---\nkind: Secret\ndata:\n  extra: YmFyCg==\n  csrf: \"\"\n  pw: {{{{ .Values.pw }}}}\n",
            b64(b"https://api.example.com/v1")
        ),
    ]
}

/// Whether any piece of `needle` (10 characters or more) is in `out`, once
/// `out` is read as a person would: `<U+XXXX>` escapes, invisible and
/// control characters dropped, full-width forms as ASCII.
pub fn leaked(out: &str, needle: &str) -> bool {
    leaked_in(&Shown::of(out), needle)
}

/// Text as [`leaked`] reads it (escapes and invisible characters dropped,
/// full-width forms mapped), made once to look for many needles.
pub struct Shown(String);

impl Shown {
    pub fn of(out: &str) -> Shown {
        let mut seen = String::with_capacity(out.len());
        let mut rest = out;
        while let Some(c) = rest.chars().next() {
            if rest.starts_with("<U+") {
                if let Some(end) = rest.find('>').filter(|&e| e <= 10) {
                    rest = &rest[end + 1..];
                    continue;
                }
            }
            rest = &rest[c.len_utf8()..];
            match c {
                '\u{FF01}'..='\u{FF5E}' => {
                    seen.push(char::from_u32(c as u32 - 0xFEE0).unwrap_or(c));
                }
                c if super::is_unsafe(c) => {}
                c => seen.push(c),
            }
        }
        Shown(seen)
    }
}

/// [`leaked`] on text already read by [`Shown::of`].
pub fn leaked_in(seen: &Shown, needle: &str) -> bool {
    let seen = &seen.0;
    pieces(needle).any(|p| seen.contains(p))
}

/// The pieces [`leaked`] looks for: every run of 10 characters (bytes,
/// from a character boundary) of `needle`, or `needle` whole when shorter.
fn pieces(needle: &str) -> impl Iterator<Item = &str> {
    const W: usize = 10;
    let last = needle.len().saturating_sub(W);
    (0..=last)
        .filter(move |&i| needle.is_char_boundary(i))
        .map(move |i| &needle[i..needle.len().min(i + W)])
}

/// The families of the `entries` that [`leaked`] in `out`, in one pass over
/// it (an automaton over every entry's pieces): the same answer as
/// [`leaked`] for each entry, on megabytes of readers' output.
pub fn leaked_families<'e>(out: &str, entries: &'e [Entry]) -> Vec<&'e str> {
    let mut owner = Vec::new();
    let mut pats = Vec::new();
    for (k, e) in entries.iter().enumerate() {
        for p in pieces(&e.needle) {
            pats.push(p);
            owner.push(k);
        }
    }
    let Ok(ac) = aho_corasick::AhoCorasick::new(&pats) else {
        // Too many pieces for an automaton: one entry at a time.
        let seen = Shown::of(out);
        return entries
            .iter()
            .filter(|e| leaked_in(&seen, &e.needle))
            .map(|e| e.family)
            .collect();
    };
    let seen = Shown::of(out);
    let mut hit = vec![false; entries.len()];
    for m in ac.find_overlapping_iter(&seen.0) {
        hit[owner[m.pattern().as_usize()]] = true;
    }
    entries
        .iter()
        .zip(hit)
        .filter(|(_, h)| *h)
        .map(|(e, _)| e.family)
        .collect()
}
