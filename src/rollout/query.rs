//! `POST /v1/rollouts?cohort=10%&bake=10m&promote=auto`: the query, and the
//! same values as the CLI's `--cohort` and `--bake` take them.
//!
//! The raw query string is parsed here, not by a form decoder: `cohort=10%`
//! is not valid percent-encoding (a bare `%`), yet the contract takes it as
//! well as `cohort=10%25`. So `%` followed by two hex digits is decoded and
//! any other `%` is kept as it is. Every error's `Display` is the sentence
//! the hub sends with `400 invalid_query`: what was wrong, and what is
//! allowed. Nothing here echoes more than [`MAX_ECHO`] characters of the
//! input, quoted and escaped.

use super::cohort::{Cohort, CohortError, MAX_SHARE_PERCENT, MIN_SHARE_PERCENT};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use thiserror::Error;

/// The bake's bounds and default, in seconds.
pub const MIN_BAKE_S: u64 = 10;
pub const MAX_BAKE_S: u64 = 24 * 60 * 60;
pub const DEFAULT_BAKE_S: u64 = 10 * 60;
/// The default cohort: 10% of the live workers.
pub const DEFAULT_SHARE_PERCENT: u8 = 10;
/// At most this many characters of a value are quoted back in an error.
pub const MAX_ECHO: usize = 32;

/// What the owner asked for: a share of the live workers, or a count of
/// them (turned into a share at the start, see [`super::Cohort::count`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CohortSpec {
    /// Percent, 1–50.
    Share(u8),
    /// Workers, ≥ 1.
    Count(u64),
}

/// How long the candidate bakes (counted while the hub runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bake(u64);

/// Whether the end of a quiet bake promotes by itself or waits for the
/// owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Promote {
    #[default]
    Auto,
    Manual,
}

/// The query of `POST /v1/rollouts`, defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RolloutQuery {
    pub cohort: CohortSpec,
    pub bake: Bake,
    pub promote: Promote,
}

/// What is wrong with the query; the sentence of `400 invalid_query`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QueryError {
    #[error(
        "cohort={0}: give a share from {MIN_SHARE_PERCENT}% to {MAX_SHARE_PERCENT}% \
         (a whole number, e.g. 10% or 10%25) or a count of workers (a whole number, 1 or more)"
    )]
    Cohort(Echo),
    #[error(
        "bake={0}: give a whole number of seconds, minutes or hours (10s, 10m, 2h) \
         from 10s to 24h"
    )]
    Bake(Echo),
    #[error("promote={0}: give auto or manual")]
    Promote(Echo),
    #[error("unknown query parameter {0}: allowed are cohort, bake and promote")]
    Unknown(Echo),
    #[error("{0} is given twice: give it once")]
    Twice(&'static str),
}

/// A piece of the input as an error quotes it: at most [`MAX_ECHO`]
/// characters, `{:?}`-escaped, `…` when cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echo(String);

impl Echo {
    fn of(s: &str) -> Echo {
        let mut cut: String = s.chars().take(MAX_ECHO).collect();
        let more = cut.len() < s.len();
        cut = format!("{cut:?}");
        if more {
            cut.push('…');
        }
        Echo(cut)
    }
}

impl fmt::Display for Echo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Default for CohortSpec {
    fn default() -> Self {
        CohortSpec::Share(DEFAULT_SHARE_PERCENT)
    }
}

impl CohortSpec {
    /// The cohort asked for, drawn over the live workers now (a share
    /// ignores them; see [`Cohort::count`]).
    pub fn draw<'a>(
        self,
        salt: impl Into<String>,
        live: impl IntoIterator<Item = &'a str>,
    ) -> Result<Cohort, CohortError> {
        match self {
            CohortSpec::Share(p) => Cohort::share(salt, p),
            CohortSpec::Count(n) => Cohort::count(salt, n, live),
        }
    }
}

impl Default for Bake {
    fn default() -> Self {
        Bake(DEFAULT_BAKE_S)
    }
}

impl Bake {
    /// A bake of `s` seconds, within 10 s – 24 h.
    pub fn from_secs(s: u64) -> Option<Bake> {
        (MIN_BAKE_S..=MAX_BAKE_S).contains(&s).then_some(Bake(s))
    }

    pub fn secs(self) -> u64 {
        self.0
    }

    pub fn duration(self) -> Duration {
        Duration::from_secs(self.0)
    }
}

/// `10%` (also `10%25` once decoded, so the caller decodes) or `7`.
impl FromStr for CohortSpec {
    type Err = QueryError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || QueryError::Cohort(Echo::of(s));
        let digits =
            |d: &str| !d.is_empty() && d.len() <= 20 && d.bytes().all(|b| b.is_ascii_digit());
        if let Some(p) = s.strip_suffix('%') {
            if !digits(p) {
                return Err(bad());
            }
            let p: u64 = p.parse().map_err(|_| bad())?;
            match u8::try_from(p) {
                Ok(p) if (MIN_SHARE_PERCENT..=MAX_SHARE_PERCENT).contains(&p) => {
                    Ok(CohortSpec::Share(p))
                }
                _ => Err(bad()),
            }
        } else {
            if !digits(s) {
                return Err(bad());
            }
            match s.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(CohortSpec::Count(n)),
                _ => Err(bad()),
            }
        }
    }
}

/// `10s`, `10m`, `2h`.
impl FromStr for Bake {
    type Err = QueryError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || QueryError::Bake(Echo::of(s));
        let (n, unit) = match s.char_indices().last() {
            Some((i, u)) => (&s[..i], u),
            None => return Err(bad()),
        };
        if n.is_empty() || n.len() > 8 || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: u64 = n.parse().map_err(|_| bad())?;
        let scale = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(bad()),
        };
        Bake::from_secs(n * scale).ok_or_else(bad)
    }
}

impl FromStr for Promote {
    type Err = QueryError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Promote::Auto),
            "manual" => Ok(Promote::Manual),
            _ => Err(QueryError::Promote(Echo::of(s))),
        }
    }
}

impl fmt::Display for CohortSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CohortSpec::Share(p) => write!(f, "{p}%"),
            CohortSpec::Count(n) => write!(f, "{n}"),
        }
    }
}

/// In the largest unit that divides it: `600` s is `10m`.
impl fmt::Display for Bake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            s if s % 3600 == 0 => write!(f, "{}h", s / 3600),
            s if s % 60 == 0 => write!(f, "{}m", s / 60),
            s => write!(f, "{s}s"),
        }
    }
}

impl fmt::Display for Promote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Promote::Auto => "auto",
            Promote::Manual => "manual",
        })
    }
}

/// As a client sends it: `cohort=10%25&bake=10m&promote=auto`; parses
/// back to itself.
impl fmt::Display for RolloutQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cohort = self.cohort.to_string().replace('%', "%25");
        write!(
            f,
            "cohort={cohort}&bake={}&promote={}",
            self.bake, self.promote
        )
    }
}

impl RolloutQuery {
    /// The raw query string (after `?`, `None` when there is none).
    /// Empty pieces (`a=1&&b=2`) are skipped; a key without `=` is
    /// refused like a bad value.
    pub fn parse(raw: Option<&str>) -> Result<RolloutQuery, QueryError> {
        let mut q = RolloutQuery::default();
        let (mut cohort, mut bake, mut promote) = (false, false, false);
        for piece in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = piece.split_once('=').unwrap_or((piece, ""));
            let value = decode(value);
            match decode(key).as_str() {
                "cohort" => {
                    once(&mut cohort, "cohort")?;
                    q.cohort = value.parse()?;
                }
                "bake" => {
                    once(&mut bake, "bake")?;
                    q.bake = value.parse()?;
                }
                "promote" => {
                    once(&mut promote, "promote")?;
                    q.promote = value.parse()?;
                }
                other => return Err(QueryError::Unknown(Echo::of(other))),
            }
        }
        Ok(q)
    }
}

fn once(seen: &mut bool, name: &'static str) -> Result<(), QueryError> {
    if std::mem::replace(seen, true) {
        return Err(QueryError::Twice(name));
    }
    Ok(())
}

/// `%XX` decoded, any other `%` kept, `+` a space (so it is refused);
/// bytes that do not make UTF-8 are replaced (and so refused).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match b[i] {
            b'%' => {
                match (
                    b.get(i + 1).and_then(|c| hex(*c)),
                    b.get(i + 2).and_then(|c| hex(*c)),
                ) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                    }
                    _ => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<RolloutQuery, QueryError> {
        RolloutQuery::parse(Some(s))
    }

    #[test]
    fn defaults() {
        let d = RolloutQuery {
            cohort: CohortSpec::Share(10),
            bake: Bake(600),
            promote: Promote::Auto,
        };
        assert_eq!(RolloutQuery::parse(None), Ok(d));
        assert_eq!(parse(""), Ok(d));
        assert_eq!(parse("&"), Ok(d));
    }

    #[test]
    fn the_contracts_forms() {
        let q = parse("cohort=10%&bake=10m&promote=auto").unwrap();
        assert_eq!(q.cohort, CohortSpec::Share(10));
        assert_eq!(q.bake.secs(), 600);
        assert_eq!(q.promote, Promote::Auto);
        assert_eq!(parse("cohort=10%25").unwrap().cohort, CohortSpec::Share(10));
        assert_eq!(parse("cohort=7").unwrap().cohort, CohortSpec::Count(7));
        assert_eq!(parse("cohort=1%").unwrap().cohort, CohortSpec::Share(1));
        assert_eq!(parse("cohort=50%25").unwrap().cohort, CohortSpec::Share(50));
        assert_eq!(parse("promote=manual").unwrap().promote, Promote::Manual);
        for (s, secs) in [
            ("10s", 10),
            ("90s", 90),
            ("10m", 600),
            ("2h", 7200),
            ("24h", 86_400),
            ("1440m", 86_400),
        ] {
            assert_eq!(
                parse(&format!("bake={s}")).unwrap().bake.secs(),
                secs,
                "{s}"
            );
        }
    }

    #[test]
    fn refusals_say_what_is_allowed() {
        for bad in [
            "0%",
            "51%",
            "100%",
            "10.5%",
            "%",
            "-1",
            "0",
            "",
            "ten",
            " 10%",
            "10%%",
            "10 %",
            "256%",
            "99999999999999999999999%",
        ] {
            let err = parse(&format!("cohort={bad}")).unwrap_err();
            assert!(matches!(err, QueryError::Cohort(_)), "{bad}: {err:?}");
            assert!(err.to_string().contains("from 1% to 50%"), "{err}");
        }
        for bad in [
            "9s",
            "25h",
            "1441m",
            "10",
            "m",
            "",
            "10d",
            "1h30m",
            "-10s",
            "10S",
            "99999999999h",
        ] {
            let err = parse(&format!("bake={bad}")).unwrap_err();
            assert!(matches!(err, QueryError::Bake(_)), "{bad}: {err:?}");
            assert!(err.to_string().contains("from 10s to 24h"), "{err}");
        }
        let err = parse("promote=later").unwrap_err();
        assert_eq!(err.to_string(), "promote=\"later\": give auto or manual");
        let err = parse("cohort=10%&cohrot=5").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown query parameter \"cohrot\": allowed are cohort, bake and promote"
        );
        assert_eq!(
            parse("bake=10m&bake=20m").unwrap_err().to_string(),
            "bake is given twice: give it once"
        );
        assert!(matches!(
            parse("cohort").unwrap_err(),
            QueryError::Cohort(_)
        ));
    }

    #[test]
    fn a_long_or_odd_value_is_quoted_short_and_escaped() {
        let long = "x".repeat(10_000);
        let msg = parse(&format!("cohort={long}")).unwrap_err().to_string();
        assert!(msg.len() < 250, "{}", msg.len());
        assert!(msg.contains('…'));
        let msg = parse("cohort=%1b[31m").unwrap_err().to_string();
        assert!(!msg.contains('\u{1b}'), "{msg:?}");
    }

    #[test]
    fn display_parses_back() {
        for q in [
            RolloutQuery::default(),
            parse("cohort=7&bake=90s&promote=manual").unwrap(),
            parse("cohort=50%&bake=24h").unwrap(),
        ] {
            let s = q.to_string();
            assert_eq!(parse(&s), Ok(q), "{s}");
        }
        assert_eq!(
            RolloutQuery::default().to_string(),
            "cohort=10%25&bake=10m&promote=auto"
        );
    }

    #[test]
    fn draw_follows_the_spec() {
        let live: Vec<String> = (0..40).map(|i| format!("w-{i}")).collect();
        let live = || live.iter().map(String::as_str);
        let c = CohortSpec::Count(4).draw("s", live()).unwrap();
        assert_eq!(live().filter(|id| c.contains(id)).count(), 4);
        let c = CohortSpec::Share(10).draw("s", live()).unwrap();
        assert_eq!(c, Cohort::share("s", 10).unwrap());
    }

    #[test]
    fn decode_keeps_a_bare_percent() {
        assert_eq!(decode("10%"), "10%");
        assert_eq!(decode("10%25"), "10%");
        assert_eq!(decode("%2"), "%2");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("a+b"), "a b");
    }
}
