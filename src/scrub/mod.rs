//! Secret scrubbing: replaces secret-shaped text with a typed placeholder
//! such as `[redacted:anthropic-key]`. Used by the hub at ingest and by every
//! client that prints hub text.
//!
//! The common case — text with nothing secret in it — is one pass of a
//! case-insensitive Aho-Corasick automaton over a few dozen trigger words
//! (`sk-`, `eyJ`, `://`, `token`, `key`, ...), no allocation, and
//! [`Cow::Borrowed`] back. Only text that holds a trigger is looked at
//! closely, by the detectors in `detect` (token shapes with a known prefix,
//! URLs, `key=value` pairs, headers). See `docs/scrubbing.md` for what is
//! caught and what is deliberately left alone.
//!
//! Guarantees, all tested:
//! - `scrub(scrub(x)) == scrub(x)`: placeholders are never scrubbed again;
//! - nothing of a detected secret survives: the whole run is replaced;
//! - no panic on any input, and time linear in the input's length.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

#[doc(hidden)]
pub mod corpus;
mod detect;
mod invisible;
mod keys;
mod normal;

pub use invisible::is_unsafe;
#[cfg(test)]
mod tests;

/// Every placeholder starts with this, then the kind, then `]`.
pub const PLACEHOLDER_PREFIX: &str = "[redacted:";

/// What a redacted run was. Its [`Kind::as_str`] is what the placeholder
/// shows: `[redacted:<kind>]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Kind {
    /// `sk-ant-api03-…`, `sk-ant-admin01-…`, `sk-ant-oat01-…`, `sk-ant-ort01-…`.
    AnthropicKey,
    /// `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`.
    OpenaiKey,
    /// `sk-or-v1-…`.
    OpenrouterKey,
    /// `ghp_ gho_ ghu_ ghs_ ghr_ github_pat_`.
    GithubToken,
    /// `AKIA…`/`ASIA…`/`ABIA…`/`ACCA…` followed by 16 upper-case alphanumerics.
    AwsAccessKeyId,
    /// A 40-character AWS secret access key next to a name that says so.
    AwsSecretKey,
    /// `AIza…` Google API keys (Gemini).
    GoogleApiKey,
    /// `xai-…`.
    XaiKey,
    /// `gsk_…` (Groq).
    GroqKey,
    /// `hf_…`, `api_org_…` (Hugging Face).
    HuggingfaceToken,
    /// `GOCSPX-…` OAuth client secrets and `ya29.…` access tokens (Google).
    GoogleOauth,
    /// `pplx-…` (Perplexity).
    PerplexityKey,
    /// `glpat-`, `glptt-`, `gldt-`, `glrt-`, `gloas-` (GitLab).
    GitlabToken,
    /// `xoxb- xoxp- xoxa- xoxe- xoxo- xoxr- xoxs- xapp-` (Slack).
    SlackToken,
    /// `sk_live_ sk_test_ rk_live_ rk_test_` (Stripe).
    StripeKey,
    /// `npm_…` (npm).
    NpmToken,
    /// `pypi-…` (PyPI upload tokens).
    PypiToken,
    /// `SG.<id>.<secret>` (SendGrid).
    SendgridKey,
    /// Azure AD client secrets (`…8Q~…`).
    AzureSecret,
    /// macfleet's own hub tokens: `mft_` and 43 base64url characters.
    MacfleetToken,
    /// `eyJ….eyJ….sig`.
    Jwt,
    /// A PEM `-----BEGIN … PRIVATE KEY-----` block.
    PrivateKey,
    /// The credentials of an `Authorization:` header, a `Bearer …` token,
    /// or an `auth=` value.
    Authorization,
    /// The value of `x-api-key:`, `api_key=`, `apiKey:`, `key=`, ….
    ApiKey,
    /// The value of a `Cookie:` or `Set-Cookie:` header.
    Cookie,
    /// URL passwords, connection-string passwords, `password=` values.
    Password,
    /// A secret-named query parameter's value in a URL (`?token=…`).
    UrlQuery,
    /// The value of a `…token` key.
    Token,
    /// The value of a `…secret`, `credentials`, `private_key`, … key.
    Secret,
    /// The value of a `signature`/`sig` key.
    Signature,
    /// Account and organisation identifiers (`account_id=`, `org-…`, the
    /// account field of an AWS ARN).
    AccountId,
    /// The value of a `…balance` key.
    Balance,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 32] = [
        Kind::AnthropicKey,
        Kind::OpenaiKey,
        Kind::OpenrouterKey,
        Kind::GithubToken,
        Kind::AwsAccessKeyId,
        Kind::AwsSecretKey,
        Kind::GoogleApiKey,
        Kind::XaiKey,
        Kind::GroqKey,
        Kind::HuggingfaceToken,
        Kind::GoogleOauth,
        Kind::PerplexityKey,
        Kind::GitlabToken,
        Kind::SlackToken,
        Kind::StripeKey,
        Kind::NpmToken,
        Kind::PypiToken,
        Kind::SendgridKey,
        Kind::AzureSecret,
        Kind::MacfleetToken,
        Kind::Jwt,
        Kind::PrivateKey,
        Kind::Authorization,
        Kind::ApiKey,
        Kind::Cookie,
        Kind::Password,
        Kind::UrlQuery,
        Kind::Token,
        Kind::Secret,
        Kind::Signature,
        Kind::AccountId,
        Kind::Balance,
    ];

    /// The name shown in the placeholder, e.g. `anthropic-key`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::AnthropicKey => "anthropic-key",
            Kind::OpenaiKey => "openai-key",
            Kind::OpenrouterKey => "openrouter-key",
            Kind::GithubToken => "github-token",
            Kind::AwsAccessKeyId => "aws-access-key-id",
            Kind::AwsSecretKey => "aws-secret-key",
            Kind::GoogleApiKey => "google-api-key",
            Kind::XaiKey => "xai-key",
            Kind::GroqKey => "groq-key",
            Kind::HuggingfaceToken => "huggingface-token",
            Kind::GoogleOauth => "google-oauth",
            Kind::PerplexityKey => "perplexity-key",
            Kind::GitlabToken => "gitlab-token",
            Kind::SlackToken => "slack-token",
            Kind::StripeKey => "stripe-key",
            Kind::NpmToken => "npm-token",
            Kind::PypiToken => "pypi-token",
            Kind::SendgridKey => "sendgrid-key",
            Kind::AzureSecret => "azure-secret",
            Kind::MacfleetToken => "macfleet-token",
            Kind::Jwt => "jwt",
            Kind::PrivateKey => "private-key",
            Kind::Authorization => "authorization",
            Kind::ApiKey => "api-key",
            Kind::Cookie => "cookie",
            Kind::Password => "password",
            Kind::UrlQuery => "url-query",
            Kind::Token => "token",
            Kind::Secret => "secret",
            Kind::Signature => "signature",
            Kind::AccountId => "account-id",
            Kind::Balance => "balance",
        }
    }

    /// The placeholder that replaces a run of this kind.
    pub fn placeholder(self) -> String {
        format!("{PLACEHOLDER_PREFIX}{}]", self.as_str())
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run of `text` that [`scrub`] replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Byte range in the input (always on `char` boundaries).
    pub range: Range<usize>,
    pub kind: Kind,
}

/// Replace every secret-shaped run in `text` with `[redacted:<kind>]`.
/// Returns the input unchanged (borrowed, no allocation) when nothing was
/// found.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let Some(mut out) = scrub_once(text) else {
        return Cow::Borrowed(text);
    };
    // What a redaction leaves can read as a secret of another shape (a
    // value next to a placeholder): scan again until nothing changes, so
    // scrubbed text scrubs to itself. Clean text pays nothing for this.
    for _ in 0..4 {
        match scrub_once(&out) {
            Some(next) => out = next,
            None => break,
        }
    }
    Cow::Owned(out)
}

/// One scan: `None` when nothing is found.
fn scrub_once(text: &str) -> Option<String> {
    let found = find_secrets(text);
    if found.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 24 * found.len());
    let mut last = 0;
    for f in &found {
        out.push_str(&text[last..f.range.start]);
        out.push_str(PLACEHOLDER_PREFIX);
        out.push_str(f.kind.as_str());
        out.push(']');
        last = f.range.end;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Like [`scrub`], for an owned string: gives it back untouched when clean.
pub fn scrub_string(text: String) -> String {
    match scrub(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(s) => s,
    }
}

/// The runs [`scrub`] would replace: sorted, disjoint, on `char`
/// boundaries. Empty (and not allocated) for clean text.
pub fn find_secrets(text: &str) -> Vec<Finding> {
    match normal::shadow(text) {
        None => detect::scan(text),
        // Invisible characters, full-width forms or colour codes: scan a
        // cleaned copy and map what it finds back.
        Some(sh) => {
            let mut found = detect::scan(&sh.text);
            for f in &mut found {
                f.range = sh.original(f.range.clone());
            }
            found
        }
    }
}

/// Whether [`scrub`] would change `text`.
pub fn contains_secret(text: &str) -> bool {
    !find_secrets(text).is_empty()
}
