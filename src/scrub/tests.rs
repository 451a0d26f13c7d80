//! Unit tests of the detectors. Secret-shaped strings are built at run
//! time; none is written out whole in this file.

use std::borrow::Cow;

use super::*;

/// Deterministic base62, never all one character class.
fn b62(seed: u64, n: usize) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut s: String = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ABC[(x % 62) as usize] as char
        })
        .collect();
    s.replace_range(0..3.min(n), &"aZ7"[..3.min(n)]);
    s
}

fn one(text: &str) -> (String, Vec<Kind>) {
    let out = scrub(text).into_owned();
    let kinds = find_secrets(text).into_iter().map(|f| f.kind).collect();
    (out, kinds)
}

#[test]
fn clean_text_is_borrowed() {
    for t in [
        "",
        "429 Too Many Requests",
        "upstream 502 from route opencode",
        "monkey keyboard signal author tokens: 1234",
        "https://api.anthropic.com/v1/messages returned 529",
        "token: expired",
    ] {
        assert!(matches!(scrub(t), Cow::Borrowed(_)), "{t}");
    }
}

#[test]
fn prefix_kinds() {
    let cases = [
        (format!("sk-ant-api03-{}AA", b62(1, 93)), Kind::AnthropicKey),
        (format!("sk-proj-{}", b62(2, 60)), Kind::OpenaiKey),
        (format!("sk-{}", b62(3, 48)), Kind::OpenaiKey),
        (format!("sk-or-v1-{}", b62(4, 64)), Kind::OpenrouterKey),
        (format!("ghp_{}", b62(5, 36)), Kind::GithubToken),
        (
            format!("github_pat_{}_{}", b62(6, 22), b62(7, 59)),
            Kind::GithubToken,
        ),
        (format!("AKIA{}", "Q7XH2MZ4WP9RKD3L"), Kind::AwsAccessKeyId),
        (format!("mft_{}", b62(8, 43)), Kind::MacfleetToken),
        (format!("AIza{}", b62(9, 35)), Kind::GoogleApiKey),
        (format!("org-{}", b62(10, 24)), Kind::AccountId),
    ];
    for (secret, kind) in cases {
        let text = format!("route x: key {secret} rejected");
        let (out, kinds) = one(&text);
        assert_eq!(kinds, vec![kind], "{text}");
        assert_eq!(out, format!("route x: key {} rejected", kind.placeholder()));
    }
}

#[test]
fn short_prefixes_stay() {
    for t in [
        "sk-SK",
        "sk_SK",
        "sk-learn",
        "task-key",
        "sk-learn-compat-v2-2024-01-01-build",
        "ghp_short",
        "AKIAshort",
        "mft_worker_registration_timeout_exceeded_x",
        "eyJhbGciOi",
    ] {
        assert!(matches!(scrub(t), Cow::Borrowed(_)), "{t}");
    }
}

#[test]
fn key_values() {
    let v = b62(11, 24);
    let cases = [
        (format!("token={v}"), "token=[redacted:token]".to_string()),
        (
            format!("password: {v} "),
            "password: [redacted:password] ".into(),
        ),
        (
            format!("{{\"api_key\": \"{v}\"}}"),
            "{\"api_key\": \"[redacted:api-key]\"}".into(),
        ),
        (
            format!("account_id={v}"),
            "account_id=[redacted:account-id]".into(),
        ),
        (
            "balance: 12.34 USD".to_string(),
            "balance: [redacted:balance]".into(),
        ),
        (
            format!("GET /x?token={v}&x=1"),
            "GET /x?token=[redacted:url-query]&x=1".into(),
        ),
        (
            format!("Server=db;User Id=sa;Password={v};"),
            "Server=db;User Id=sa;Password=[redacted:password];".into(),
        ),
        (
            format!("--api-key {v} --model m"),
            "--api-key [redacted:api-key] --model m".into(),
        ),
        (
            format!("Authorization: Bearer {v}"),
            "Authorization: Bearer [redacted:authorization]".into(),
        ),
        (
            format!("{{\\\"token\\\":\\\"{v}\\\"}}"),
            "{\\\"token\\\":\\\"[redacted:token]\\\"}".into(),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(scrub(&text), want, "{text}");
    }
}

#[test]
fn references_stay() {
    for t in [
        "token=$MAC_HUB_TOKEN",
        "token=${MAC_HUB_TOKEN}",
        "api_key: OPENAI_API_KEY",
        "password: \"{{ secrets.DB }}\"",
        "ANTHROPIC_API_KEY is not set",
        "token: not set",
        "\"token\": true",
        "password=\"\"",
        "Authorization: Bearer",
        "cursor-agent: --api-key flag missing",
    ] {
        assert!(matches!(scrub(t), Cow::Borrowed(_)), "{t}");
    }
}

#[test]
fn urls() {
    let p = b62(12, 16);
    assert_eq!(
        scrub(&format!(
            "fetch https://bob:{p}@git.example.com/x.git failed"
        )),
        "fetch https://bob:[redacted:password]@git.example.com/x.git failed"
    );
    assert_eq!(
        scrub(&format!("postgres://app:{p}@db:5432/fleet")),
        "postgres://app:[redacted:password]@db:5432/fleet"
    );
    let u = b62(13, 32);
    assert_eq!(
        scrub(&format!("dsn https://{u}@o1.ingest.example.io/2")),
        "dsn https://[redacted:token]@o1.ingest.example.io/2"
    );
    assert!(matches!(
        scrub("clone https://git@github.com/a/b and https://host:8080/@scope/pkg"),
        Cow::Borrowed(_)
    ));
}

#[test]
fn aws_secret_near_name() {
    let k = format!("{}/{}", b62(14, 20), b62(15, 19));
    assert_eq!(k.len(), 40);
    let (out, kinds) = one(&format!("AWS secret access key {k} was rejected"));
    assert_eq!(kinds, vec![Kind::AwsSecretKey]);
    assert!(!out.contains(&k));
    let (_, kinds) = one(&format!("aws_secret_access_key = {k}"));
    assert_eq!(kinds, vec![Kind::AwsSecretKey]);
}

#[test]
fn jwt_and_pem() {
    let jwt = format!("eyJ{}.eyJ{}.{}", b62(16, 30), b62(17, 40), b62(18, 43));
    assert_eq!(scrub(&format!("jwt {jwt}.")), "jwt [redacted:jwt].");
    let pem = format!(
        "-----BEGIN {}-----\n{}\n-----END {}-----",
        "PRIVATE KEY",
        b62(19, 64),
        "PRIVATE KEY"
    );
    assert_eq!(
        scrub(&format!("key:\n{pem}\nok")),
        "key:\n[redacted:private-key]\nok"
    );
}

#[test]
fn arn_account() {
    assert_eq!(
        scrub(&format!("arn:aws:iam::{}:role/worker", "1234".repeat(3))),
        "arn:aws:iam::[redacted:account-id]:role/worker"
    );
    assert!(matches!(scrub("arn:aws:s3:::bucket"), Cow::Borrowed(_)));
}

#[test]
fn specific_kind_wins_under_a_key() {
    let key = format!("sk-ant-api03-{}", b62(20, 93));
    assert_eq!(
        scrub(&format!("x-api-key: {key}")),
        "x-api-key: [redacted:anthropic-key]"
    );
    assert_eq!(
        scrub(&format!("Authorization: Bearer {key}")),
        "Authorization: Bearer [redacted:anthropic-key]"
    );
}

#[test]
fn idempotent_on_examples() {
    let v = b62(21, 30);
    for t in [
        format!("Cookie: a={v}; b=2"),
        format!("password: \"{v}"),
        format!("\"api_key\": \"{v}\": x"),
        format!("https://{v}@h and https://u:{v}@h"),
        format!("Authorization: Digest username=\"u\", response=\"{v}\""),
    ] {
        let once = scrub(&t).into_owned();
        assert_ne!(once, t);
        assert_eq!(scrub(&once), once, "{t}");
    }
}

#[test]
fn findings_are_on_char_boundaries() {
    let t = format!("token=é{}ü password=\"ß{}", b62(22, 10), b62(23, 10));
    for f in find_secrets(&t) {
        assert!(t.is_char_boundary(f.range.start) && t.is_char_boundary(f.range.end));
    }
    assert!(!scrub(&t).contains(&b62(22, 10)));
}

#[test]
fn kinds_are_distinct_and_placeholder_safe() {
    let mut names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), Kind::ALL.len());
    for k in Kind::ALL {
        let p = k.placeholder();
        assert!(matches!(scrub(&p), Cow::Borrowed(_)), "{p}");
        assert!(
            k.as_str()
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c == b'-')
        );
    }
}

/// Shapes that a fuzzer found to break idempotence at one time (random
/// parts regenerated here). Each is about a rescan seeing a different
/// structure than the first scan did.
#[test]
fn idempotent_on_fuzz_findings() {
    let r = |n| b62(40 + n as u64, 36);
    let pem = format!("-----BEGIN {} KEY-----", "PRIVATE");
    let cases = [
        // A key name that ran into a token: the name must end where the
        // token starts, as it ends at a placeholder's `]`.
        format!(
            "github_pat_{}-zcFH{}null--api-key .sigauthsk-ant-",
            r(1),
            r(2)
        ),
        // A `:` inside a placeholder in a URL's user part.
        format!(
            "https://{}password-hf_{}[redacted:${{S--api-key@/",
            r(3),
            r(4)
        ),
        // A value that swallowed a URL's `://`.
        format!(
            "https://arn:aws:iam::github_pat_balance://[redacted:{{{{&@{}",
            r(5)
        ),
        // A PEM block cut mid-word.
        format!(
            "{pem}{}${{.6x-----ENDAWS_SECRET_ACCESS_KEYmft_{}://token:auth",
            r(6),
            r(7)
        ),
        // `{{ … }}` spanning a PEM block.
        format!(
            "arn:aws:iam::secretbalance:{{{{{pem}}}}}https://{}sig",
            r(8)
        ),
        // A value eating an authority's `/` or `@`.
        format!(
            "https://,key:é/Cookie{}{{{{}}}}sig{}@account_id@\\Bearer x",
            r(9),
            r(10)
        ),
        format!(
            "://{}key$VARpassword:/password[redacted:token]{}Authorization@https://C",
            r(11),
            r(12)
        ),
        format!(
            "https://_;://{}x-api-key:eyJ[redacted:token]sk-mft_sig/e",
            r(13)
        ),
        format!("x://access,_{}account_id=://token:balance", r(14)),
        format!(
            "secret:$VAR.https://secret{}Cookie:$VAR\\arn:aws:iam::@<H",
            r(15)
        ),
        // Values inside a quoted value that end past its closing quote.
        format!(
            "#access_token='AuthorizationAWS4-HMAC-SHA256 ;Password=\"'{}%VAR%",
            r(16)
        ),
        // A family trigger whose prefix reaches past the earlier run.
        format!("\"ghp_{}ghp_org-org-{}Skey", r(17), r(18)),
        // A flag value that starts with a secret.
        format!("Bearer --api-key @{pem}{}<-----END;", r(19)),
        // A cookie value running into a PEM block that ends past the line.
        format!(
            "Cookie:{}]{pem}aws\n{{Cookie-----END-----END{}}}",
            r(20),
            r(21)
        ),
    ];
    for t in &cases {
        let once = scrub(t).into_owned();
        assert_eq!(scrub(&once), once, "{t:?}");
    }
}

/// Found by fuzzing: with ESC dropped from the shadow copy, `ESC` before a
/// placeholder must not make its `[` part of a control sequence on a rescan.
#[test]
fn esc_before_a_placeholder_keeps_it_whole() {
    let t = "1\u{19}Y \0:key:\u{1b}gggggggggggg\0\0\0{`";
    let once = scrub(t).into_owned();
    assert!(once.contains("\u{1b}[redacted:api-key]"), "{once:?}");
    assert_eq!(scrub(&once), once);
}

#[test]
fn a_token_after_a_colour_code_starts_a_word() {
    let key = format!("sk-{}", b62(41, 48));
    for t in [
        format!("codex: \u{1b}[31m{key}\u{1b}[0m invalid"),
        format!("codex: [1;31m{key}[0m invalid"),
    ] {
        let out = scrub(&t);
        assert!(!out.contains(&key[3..]), "{out:?}");
        assert!(out.contains("[redacted:openai-key]"), "{out:?}");
    }
}

/// Found by proptest: a balance's window once ran 256 bytes, so a key
/// between an amount and the word `balance` kept the amount out on the
/// first pass and, once a short placeholder, let it in on the second.
#[test]
fn a_balance_window_is_the_same_on_a_second_pass() {
    let key = format!("sk-ant-api03-{}", b62(30, 93));
    for t in [
        format!("0$ \"aAa\" {key} tokensk-balance"),
        format!("5 USD {key}{key} credit_balance"),
        format!("balance {key} $5"),
    ] {
        let once = scrub(&t).into_owned();
        assert!(!once.contains(&key[13..]), "{once}");
        assert_eq!(scrub(&once), once, "{t}");
    }
}

/// Found by proptest: a PEM header whose body is too short to hold a key
/// is not a key, and a placeholder after it does not make it one.
#[test]
fn a_pem_header_without_a_key_stays_on_a_second_pass() {
    let begin = format!("-----BEGIN {} KEY-----", "PRIVATE");
    let t = format!("{begin}token{begin}0aaAA++0AAa0a0Aa0AAA+A0aA/AAAaaa0AA+a/Aa");
    let once = scrub(&t).into_owned();
    assert_eq!(once, format!("{begin}token[redacted:private-key]"));
    assert_eq!(scrub(&once), once);
    assert!(matches!(
        scrub(&format!("{begin}\nanything\n-----END")),
        Cow::Borrowed(_)
    ));
}

#[test]
fn placeholders_and_names_in_a_key_s_place_stay() {
    let x = "x".repeat(36);
    for t in [
        format!("ghp_{x}"),
        format!("key = AKIA{}", "X".repeat(16)),
        format!("API_KEY=\"glc_{}=\"", "1".repeat(42)),
        "sk_abcdefghijklmnopqrstuvwxyz123".to_string(),
        "- (id)hf_requiredCharacteristicTypesForDisplayMetadata;".to_string(),
        "JFROG_SECRET = $(cat /run/secrets/jfrog_secret)".to_string(),
        "password = \"${aws_db_instance.default.password}\"".to_string(),
        "administrator_login_password = var.db_password".to_string(),
        "SUMO_ACCESS_KEY=${SUMO_ACCESS_KEY:=$2}".to_string(),
        "SUMO_ACCESS_KEY={SumoAccessKey}".to_string(),
        "    - key: MySecretManagerKey".to_string(),
        "      secretKey: api-key".to_string(),
        "<entry key=\"jetbrains.mps.v8_elimination\" value=\"executed\" />".to_string(),
        "publicToken = \"9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit\"".to_string(),
        "db-password: ENC[AES256_GCM,data:O+5l4g==,iv:c/dS4BC=,type:str]".to_string(),
    ] {
        assert!(matches!(scrub(&t), Cow::Borrowed(_)), "{t}");
    }
    // The value attribute a key attribute names is redacted.
    let v = b62(31, 14);
    assert_eq!(
        scrub(&format!("<add key=\"ClearTextPassword\" value=\"{v}\" />")),
        "<add key=\"ClearTextPassword\" value=\"[redacted:password]\" />"
    );
    // A random all-lower-case body is still a key.
    let lower = "batajbtbyfylstkveaekysvdgwcvitgrhxlt";
    assert_eq!(scrub(&format!("ghp_{lower}")), "[redacted:github-token]");
}
