//! Which key names hold secrets: `api_key`, `X-Api-Key`, `accessToken`,
//! `AWS_SECRET_ACCESS_KEY`, `account_id`, `Password`, …
//!
//! A name is split into words at `_`, `-`, `.` and camel-case humps, and
//! judged on its last words, so `max_tokens`, `token_count`, `cache_key` and
//! `task-key` are not secret names while `next_page_token` and
//! `client_secret` are. Nothing here allocates.

use super::Kind;

/// How the value after a secret name is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// One value: up to a quote, whitespace, `,`, `;`, `&`, ….
    Value,
    /// An `Authorization` header: an optional scheme word is kept.
    Authorization,
    /// A `Cookie`/`Set-Cookie` header: everything to the end of the line.
    Cookie,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct KeyClass {
    pub kind: Kind,
    pub mode: Mode,
    /// The name says "secret": a bare 40-char base64 run shortly after it
    /// is taken as a secret even without `=`/`:` (AWS's console wording).
    pub near_secret: bool,
    /// Only a secret as a URL query or fragment parameter (`?code=`,
    /// `&session_id=`, `&pat=`): elsewhere the name is ordinary prose.
    pub url_only: bool,
}

/// The last three words of a name, and a few flags over all of them.
struct Words<'a> {
    last: [&'a str; 3],
    n: usize,
    aws: bool,
    secret: bool,
    access: bool,
}

impl<'a> Words<'a> {
    fn push(&mut self, w: &'a str) {
        self.last = [self.last[1], self.last[2], w];
        self.n += 1;
        self.aws |= w.eq_ignore_ascii_case("aws");
        self.secret |= ends(w, "secret");
        self.access |= w.eq_ignore_ascii_case("access");
    }
}

fn split(ident: &str) -> Words<'_> {
    let b = ident.as_bytes();
    let mut words = Words {
        last: [""; 3],
        n: 0,
        aws: false,
        secret: false,
        access: false,
    };
    let mut start: Option<usize> = None;
    for i in 0..=b.len() {
        let sep = i == b.len() || !b[i].is_ascii_alphanumeric();
        let hump = !sep && i > 0 && start.is_some() && camel_hump(b, i);
        if sep || hump {
            if let Some(s) = start.take() {
                words.push(&ident[s..i]);
            }
        }
        if !sep && start.is_none() {
            start = Some(i);
        }
    }
    words
}

/// A word boundary inside `accessToken`, `XApiKey`, `APIKey`.
fn camel_hump(b: &[u8], i: usize) -> bool {
    let (p, c) = (b[i - 1], b[i]);
    if !c.is_ascii_uppercase() {
        return false;
    }
    if p.is_ascii_lowercase() || p.is_ascii_digit() {
        return true;
    }
    p.is_ascii_uppercase() && b.get(i + 1).is_some_and(|n| n.is_ascii_lowercase())
}

fn ends(w: &str, suffix: &str) -> bool {
    w.len() >= suffix.len()
        && w.as_bytes()[w.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

fn is(w: &str, s: &str) -> bool {
    w.eq_ignore_ascii_case(s)
}

fn any(w: &str, set: &[&str]) -> bool {
    set.iter().any(|s| is(w, s))
}

/// Qualifiers that make `…_key` a secret key (`private_key`, `client-key`).
const SECRET_KEY_QUALIFIERS: &[&str] = &[
    "secret",
    "private",
    "signing",
    "encryption",
    "master",
    "client",
    "access",
    "session",
    "license",
    "app",
    "auth",
    "service",
    "account",
    "admin",
    "webhook",
    "ssh",
    "deploy",
    // Vendors whose keys gitleaks knows by the name they sit under
    // (`HEROKU_KEY`, `hubspotKey`, `SNYK_KEY`, `sumo_key`, …).
    "heroku",
    "hubspot",
    "snyk",
    "mailchimp",
    "sumo",
    "sumologic",
    "bitbucket",
    "discord",
    "telegram",
    "cloudflare",
    "clickhouse",
    "sonar",
    "bedrock",
];

/// Words that turn a secret's name into the name of its absence.
const NEGATIONS: &[&str] = &[
    "no", "missing", "invalid", "expired", "bad", "wrong", "revoked", "unknown", "empty", "without",
];

/// Classify a key name, or `None` when its value is not a secret. The
/// steps below are tried in order, the first that names the value wins.
pub(super) fn classify(ident: &str) -> Option<KeyClass> {
    let w = split(ident);
    if w.n == 0 || names_no_secret(&w) {
        return None;
    }
    token_or_header(&w)
        .or_else(|| secret_or_password(&w))
        .or_else(|| key_names(&w))
        .or_else(|| account_names(&w))
        .or_else(|| other_names(&w))
        .or_else(|| vendor_names(&w))
}

/// A class for a value: its kind, read as a plain value.
fn value(kind: Kind) -> Option<KeyClass> {
    class(kind, Mode::Value, false)
}

fn class(kind: Kind, mode: Mode, near_secret: bool) -> Option<KeyClass> {
    Some(KeyClass {
        kind,
        mode,
        near_secret,
        url_only: false,
    })
}

impl Words<'_> {
    /// The last word, the one before it and the one before that (`""`
    /// when the name is shorter).
    fn l_p_pp(&self) -> (&str, &str, &str) {
        let p = if self.n >= 2 { self.last[1] } else { "" };
        let pp = if self.n >= 3 { self.last[0] } else { "" };
        (self.last[2], p, pp)
    }
}

/// `no_token`, `missing_api_key`, `invalid_password`: the name of a
/// problem (a cause kind, an error code), not of a secret. `public_key`,
/// `publicToken`, `publishable_key`: meant to be seen.
fn names_no_secret(w: &Words<'_>) -> bool {
    let (l, p, pp) = w.l_p_pp();
    any(p, NEGATIONS)
        || any(pp, NEGATIONS)
        || [l, p].iter().any(|w| any(w, &["public", "publishable"]))
}

/// `…token`, `authorization`, `cookie`.
fn token_or_header(w: &Words<'_>) -> Option<KeyClass> {
    let (l, _, _) = w.l_p_pp();
    if ends(l, "token") {
        return value(Kind::Token);
    }
    if is(l, "authorization") {
        return class(Kind::Authorization, Mode::Authorization, false);
    }
    if is(l, "cookie") {
        return class(Kind::Cookie, Mode::Cookie, false);
    }
    None
}

/// `…secret`, `…secretkey`, `…secretaccesskey`, the password names,
/// `secret_key_base` (Rails), `private_key_id` (a Google service
/// account's key id), `jwt`, `…authkey`.
fn secret_or_password(w: &Words<'_>) -> Option<KeyClass> {
    let (l, p, pp) = w.l_p_pp();
    if ends(l, "secret") || ends(l, "secretkey") || ends(l, "secretaccesskey") {
        let aws_secret = w.aws || (w.secret && w.access);
        let kind = if aws_secret || ends(l, "secretaccesskey") {
            Kind::AwsSecretKey
        } else {
            Kind::Secret
        };
        return class(kind, Mode::Value, true);
    }
    if ends(l, "password")
        || any(
            l,
            &["passwd", "pwd", "passphrase", "pw", "pass", "passwort"],
        )
    {
        return value(Kind::Password);
    }
    if (is(l, "base") && is(p, "key") && ends(pp, "secret"))
        || (is(l, "id") && is(p, "key") && any(pp, &["private", "secret"]))
    {
        return value(Kind::Secret);
    }
    if is(l, "jwt") {
        return value(Kind::Token);
    }
    if ends(l, "authkey") {
        return value(Kind::ApiKey);
    }
    None
}

/// OAuth codes and session ids (secret in a URL, prose elsewhere), `key`
/// and its qualified forms, `…apikey`, `…accesskey`, `…privatekey`.
fn key_names(w: &Words<'_>) -> Option<KeyClass> {
    let (l, p, _) = w.l_p_pp();
    if (w.n == 1 && any(l, &["code", "pat", "sid", "session", "sessionid"]))
        || (is(l, "id") && is(p, "session") && w.n == 2)
    {
        return Some(KeyClass {
            kind: Kind::UrlQuery,
            mode: Mode::Value,
            near_secret: false,
            url_only: true,
        });
    }
    if is(l, "key") {
        if w.n == 1 || is(p, "api") {
            return value(Kind::ApiKey);
        }
        if w.secret && (w.aws || w.access) {
            return class(Kind::AwsSecretKey, Mode::Value, true);
        }
        if any(p, SECRET_KEY_QUALIFIERS) {
            return value(Kind::Secret);
        }
        // A `key` qualified by anything else names no secret (no later
        // step takes a last word `key`).
        return None;
    }
    if ends(l, "apikey") {
        return value(Kind::ApiKey);
    }
    if ends(l, "accesskey") || ends(l, "privatekey") {
        return value(Kind::Secret);
    }
    None
}

/// Account ids and numbers, balances.
fn account_names(w: &Words<'_>) -> Option<KeyClass> {
    let (l, p, _) = w.l_p_pp();
    let account = (is(l, "id") && (ends(p, "account") || any(p, &["organization", "org"])))
        || ends(l, "accountid")
        || any(l, &["orgid", "organizationid", "organization"])
        || ends(l, "account")
        || (any(l, &["number", "no", "num"]) && ends(p, "account"));
    if account {
        return value(Kind::AccountId);
    }
    if ends(l, "balance") {
        return value(Kind::Balance);
    }
    None
}

/// Credentials, signatures, `auth`.
fn other_names(w: &Words<'_>) -> Option<KeyClass> {
    let (l, _, _) = w.l_p_pp();
    if any(l, &["credential", "credentials", "creds", "cred"]) {
        return value(Kind::Secret);
    }
    if ends(l, "signature") || is(l, "sig") {
        return value(Kind::Signature);
    }
    if is(l, "auth") {
        return value(Kind::Authorization);
    }
    None
}

/// Vendors' own names: Sumo Logic's access ids (`SUMO_ACCESS_ID`,
/// `sumologic.accessId`, `SUMOLOGIC_ACCESSID`; a `report_access_id` is
/// not one), SonarQube's `sonar.login` (a token), MessageBird's client id
/// (a UUID) under `MessageBirdClientID`, `messagebird_client_id` (a
/// `ClientID` alone is not a secret), Sidekiq Pro/Enterprise's
/// `BUNDLE_ENTERPRISE__CONTRIBSYS__COM` (`user:password` for its gem
/// server).
fn vendor_names(w: &Words<'_>) -> Option<KeyClass> {
    let (l, p, pp) = w.l_p_pp();
    let sumo = |w: &str| w.len() >= 4 && w.as_bytes()[..4].eq_ignore_ascii_case(b"sumo");
    if (is(l, "id") && is(p, "access") && sumo(pp)) || (is(l, "accessid") && sumo(p)) {
        return value(Kind::Secret);
    }
    if is(l, "login") && ends(p, "sonar") {
        return value(Kind::Token);
    }
    if (is(l, "id") && is(p, "client") && (ends(pp, "messagebird") || is(pp, "bird")))
        || (is(l, "clientid") && ends(p, "bird"))
    {
        return value(Kind::Secret);
    }
    if is(l, "com") && is(p, "contribsys") {
        return value(Kind::Secret);
    }
    None
}

/// A vendor's bare name used as a key (`cloudflare: "…"`,
/// `CLOUDFLARE=…`, `sourcegraph: …`): its value is a secret only when it
/// is random (see `detect::is_random`), as gitleaks' rules read such a
/// name.
pub(super) fn is_vendor(ident: &str) -> bool {
    // Each a trigger word in `detect` too (`sourcegraph` as `cegraph`,
    // which prose has less often than `source`): the fast path has room
    // for a few more (see `detect::FAST_AC`).
    let w = split(ident);
    w.n >= 1 && any(w.last[2], &["cloudflare", "sourcegraph"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ident: &str) -> Option<Kind> {
        classify(ident).map(|c| c.kind)
    }

    #[test]
    fn secret_names() {
        let cases = [
            ("token", Kind::Token),
            ("access_token", Kind::Token),
            ("accessToken", Kind::Token),
            ("X-Auth-Token", Kind::Token),
            ("MAC_HUB_TOKEN", Kind::Token),
            ("client_secret", Kind::Secret),
            ("clientSecret", Kind::Secret),
            ("password", Kind::Password),
            ("Password", Kind::Password),
            ("db.password", Kind::Password),
            ("passwd", Kind::Password),
            ("Pwd", Kind::Password),
            ("api_key", Kind::ApiKey),
            ("apikey", Kind::ApiKey),
            ("apiKey", Kind::ApiKey),
            ("XApiKey", Kind::ApiKey),
            ("x-api-key", Kind::ApiKey),
            ("OPENAI_API_KEY", Kind::ApiKey),
            ("key", Kind::ApiKey),
            ("access_key", Kind::Secret),
            ("private_key", Kind::Secret),
            ("aws_secret_access_key", Kind::AwsSecretKey),
            ("AWS_SECRET_ACCESS_KEY", Kind::AwsSecretKey),
            ("SecretAccessKey", Kind::AwsSecretKey),
            ("secret_key", Kind::Secret),
            ("account_id", Kind::AccountId),
            ("accountId", Kind::AccountId),
            ("account", Kind::AccountId),
            ("anthropic-organization-id", Kind::AccountId),
            ("balance", Kind::Balance),
            ("credit_balance", Kind::Balance),
            ("credentials", Kind::Secret),
            ("X-Amz-Signature", Kind::Signature),
            ("sig", Kind::Signature),
            ("Authorization", Kind::Authorization),
            ("Proxy-Authorization", Kind::Authorization),
            ("auth", Kind::Authorization),
            ("Set-Cookie", Kind::Cookie),
            ("SUMO_ACCESS_ID", Kind::Secret),
            ("sumologic.accessId", Kind::Secret),
            ("SUMOLOGIC_ACCESSID", Kind::Secret),
            ("SONAR_LOGIN", Kind::Token),
            ("sonar.login", Kind::Token),
            ("BUNDLE_ENTERPRISE__CONTRIBSYS__COM", Kind::Secret),
            ("HEROKU_KEY", Kind::Secret),
            ("hubspotKey", Kind::Secret),
        ];
        for (ident, want) in cases {
            assert_eq!(kind(ident), Some(want), "{ident}");
        }
    }

    #[test]
    fn plain_names() {
        for ident in [
            "tokens",
            "max_tokens",
            "input_tokens",
            "token_count",
            "cache_key",
            "task-key",
            "sort_key",
            "secrets",
            "accounts",
            "signal",
            "author",
            "oauth2",
            "keyboard",
            "monkey",
            "model",
            "redacted",
            "no_token",
            "invalid_api_key",
            "missing-password",
            "login",
            "user_login",
            "request_id",
            "report_access_id",
            "",
            "---",
        ] {
            assert_eq!(kind(ident), None, "{ident}");
        }
    }

    #[test]
    fn modes() {
        assert_eq!(classify("authorization").unwrap().mode, Mode::Authorization);
        assert_eq!(classify("cookie").unwrap().mode, Mode::Cookie);
        assert!(classify("aws_secret_access_key").unwrap().near_secret);
        assert!(!classify("token").unwrap().near_secret);
    }
}
