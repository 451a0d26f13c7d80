//! Scenarios are data (`assets/scenarios/*.toml`), not code.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::wire::CauseKind;

/// A simulated fleet's weather.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Workers per host.
    #[serde(default = "default_per_host")]
    pub workers_per_host: usize,
    /// The whole timeline repeats after this many seconds (0: never).
    #[serde(default)]
    pub cycle_s: u64,
    /// The list the demo's owner puts in place through `PUT /v1/config`
    /// before the fleet starts (so History has an entry); empty: keep the
    /// config's own.
    #[serde(default)]
    pub agents: Vec<String>,
    #[serde(default)]
    pub hosts: HostTraits,
    /// Per-heartbeat chance that the active route fails on its own.
    #[serde(default)]
    pub background: Vec<Background>,
    /// Timed, fleet-wide route failures.
    #[serde(default)]
    pub phases: Vec<Phase>,
    /// Workers work in turns (a new list takes effect at a turn's end);
    /// `None`: every heartbeat is a boundary, as a worker that does not
    /// report turns.
    #[serde(default)]
    pub turns: Option<Turns>,
    /// A candidate the demo starts as a staged rollout once its fleet is
    /// live (`bad-order`); `None`: none.
    #[serde(default)]
    pub rollout: Option<ScenarioRollout>,
}

/// `[rollout]`: the candidate list and the rollout's cohort and bake, as
/// `--cohort` and `--bake` take them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRollout {
    pub agents: Vec<String>,
    #[serde(default = "default_cohort")]
    pub cohort: String,
    #[serde(default = "default_bake")]
    pub bake: String,
}

fn default_cohort() -> String {
    "10%".into()
}

fn default_bake() -> String {
    "10m".into()
}

impl ScenarioRollout {
    /// The query of its `POST /v1/rollouts` (`promote=auto`).
    pub fn query(&self) -> Result<crate::rollout::RolloutQuery, crate::rollout::QueryError> {
        Ok(crate::rollout::RolloutQuery {
            cohort: self.cohort.parse()?,
            bake: self.bake.parse()?,
            promote: crate::rollout::Promote::Auto,
        })
    }
}

/// How long a simulated worker's turns last: each turn's length is drawn
/// between `min_s` and `max_s`, and the pause after it up to `idle_s`,
/// deterministically from the seed, the worker and the turn's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turns {
    pub min_s: u64,
    pub max_s: u64,
    #[serde(default)]
    pub idle_s: u64,
}

fn default_per_host() -> usize {
    4
}

/// Fractions of workers that lack something, per agent.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostTraits {
    #[serde(default)]
    pub missing_binary: BTreeMap<String, f64>,
    #[serde(default)]
    pub no_token: BTreeMap<String, f64>,
    #[serde(default)]
    pub preflight_failed: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Background {
    pub kind: CauseKind,
    #[serde(default)]
    pub status: Option<u16>,
    /// Chance per heartbeat.
    pub rate: f64,
    /// How long the route stays down for that worker.
    #[serde(default = "default_cooldown")]
    pub cooldown_s: u64,
    /// Which agents (empty: any).
    #[serde(default)]
    pub agents: Vec<String>,
    #[serde(default)]
    pub detail: Option<String>,
}

fn default_cooldown() -> u64 {
    60
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Seconds after start (within the cycle).
    pub at_s: u64,
    pub until_s: u64,
    /// Agents whose route fails (`"*"`: all).
    pub agents: Vec<String>,
    pub kind: CauseKind,
    #[serde(default)]
    pub status: Option<u16>,
    /// Fraction of the fleet hit when fully spread.
    #[serde(default = "one")]
    pub fraction: f64,
    /// Seconds over which the failure spreads from 0 to `fraction`.
    #[serde(default)]
    pub spread_s: u64,
    #[serde(default)]
    pub detail: Option<String>,
}

fn one() -> f64 {
    1.0
}

impl Phase {
    /// The fraction of the fleet this phase hits at `t` seconds.
    pub fn reach(&self, t: u64) -> f64 {
        if t < self.at_s || t >= self.until_s {
            return 0.0;
        }
        if self.spread_s == 0 {
            return self.fraction;
        }
        let done = (t - self.at_s) as f64 / self.spread_s as f64;
        self.fraction * done.min(1.0)
    }

    pub fn hits(&self, agent: &str) -> bool {
        self.agents.iter().any(|a| a == "*" || a == agent)
    }
}

/// Scenario errors.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("no scenario named {name:?} (known: {known})")]
    Unknown { name: String, known: String },
    #[error("scenario {name}: {message}")]
    Invalid { name: String, message: String },
}

/// The scenarios shipped in `assets/scenarios/`, compiled in.
pub const BUILTIN: &[(&str, &str)] = &[
    ("steady", include_str!("../../assets/scenarios/steady.toml")),
    (
        "quota-cap",
        include_str!("../../assets/scenarios/quota-cap.toml"),
    ),
    ("aug19", include_str!("../../assets/scenarios/aug19.toml")),
    (
        "bad-order",
        include_str!("../../assets/scenarios/bad-order.toml"),
    ),
    (
        "good-order",
        include_str!("../../assets/scenarios/good-order.toml"),
    ),
];

impl Scenario {
    pub fn parse(name: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Invalid {
            name: name.into(),
            message: e.to_string(),
        })?;
        let bad = |m: String| ScenarioError::Invalid {
            name: name.into(),
            message: m,
        };
        for p in &s.phases {
            if p.until_s <= p.at_s {
                return Err(bad(format!(
                    "a phase ends ({}) before it starts ({})",
                    p.until_s, p.at_s
                )));
            }
            if p.kind.takes_status() != p.status.is_some() {
                return Err(bad(format!(
                    "a {} phase needs a status, other kinds none",
                    p.kind
                )));
            }
            if !(0.0..=1.0).contains(&p.fraction) {
                return Err(bad("fraction is 0 to 1".into()));
            }
        }
        for b in &s.background {
            if b.kind.takes_status() != b.status.is_some() {
                return Err(bad(format!(
                    "a {} background failure needs a status, other kinds none",
                    b.kind
                )));
            }
            if !(0.0..=1.0).contains(&b.rate) {
                return Err(bad("rate is 0 to 1".into()));
            }
        }
        if !s.agents.is_empty() {
            crate::agents_doc::validate_list(&s.agents).map_err(|e| bad(format!("agents: {e}")))?;
        }
        if let Some(r) = &s.rollout {
            crate::agents_doc::validate_list(&r.agents)
                .map_err(|e| bad(format!("rollout.agents: {e}")))?;
            r.query().map_err(|e| bad(format!("rollout: {e}")))?;
        }
        if let Some(t) = s.turns {
            if t.min_s == 0 || t.max_s < t.min_s {
                return Err(bad(format!(
                    "turns last 1 s or more, min_s ({}) at most max_s ({})",
                    t.min_s, t.max_s
                )));
            }
        }
        if s.workers_per_host == 0 {
            return Err(bad("workers_per_host is at least 1".into()));
        }
        Ok(s)
    }

    /// A built-in scenario by name, or a scenario file by path.
    pub fn load(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Scenario::parse(name_or_path, text);
        }
        let path = Path::new(name_or_path);
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Invalid {
                name: name_or_path.into(),
                message: e.to_string(),
            })?;
            return Scenario::parse(name_or_path, &text);
        }
        Err(ScenarioError::Unknown {
            name: name_or_path.into(),
            known: BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_scenarios_parse() {
        for (name, _) in BUILTIN {
            let s = Scenario::load(name).expect("built-in parses");
            assert_eq!(&s.name, name);
        }
        assert!(Scenario::load("nope").is_err());
    }

    #[test]
    fn phases_spread() {
        let s = Scenario::load("quota-cap").expect("parses");
        let p = &s.phases[0];
        assert_eq!(p.reach(0), 0.0);
        assert!(p.reach(p.at_s + p.spread_s) > 0.0);
        assert_eq!(p.reach(p.until_s), 0.0);
    }
}
