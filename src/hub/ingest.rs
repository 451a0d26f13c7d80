//! The hub's parse of a `POST /v1/heartbeats` body: the same language as
//! [`wire::Heartbeat`], read without copying. Text borrows from the request
//! body (a JSON string with escapes is the only one copied), so a heartbeat
//! that repeats what its worker said last time allocates nothing here and the
//! fleet reuses the stored copy (see `worker::Profile`).
//!
//! Validation is the wire module's own [`wire::validate_heartbeat`]; a test
//! below feeds both parsers the same bodies and checks they agree.
//!
//! [`wire::Heartbeat`]: crate::wire::Heartbeat
//! [`wire::validate_heartbeat`]: crate::wire::validate_heartbeat

use std::borrow::Cow;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::wire::{
    Capability, Failover, Heartbeat, HeartbeatFields, Invalid, MAX_AGENTS, check_heartbeat_times,
    validate_heartbeat,
};

/// A JSON string, borrowed from the body when it holds no escape.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Text<'a>(pub Cow<'a, str>);

impl Text<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The `capabilities` object in the order sent, a repeated key keeping its
/// last value (as a map would).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caps<'a>(pub Vec<(Text<'a>, Capability)>);

impl<'de: 'a, 'a> Deserialize<'de> for Caps<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Caps<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
                let mut out: Vec<(Text<'de>, Capability)> = Vec::new();
                while let Some((k, v)) = m.next_entry::<Text<'de>, Capability>()? {
                    if let Some(slot) = out.iter_mut().find(|(seen, _)| seen == &k) {
                        slot.1 = v;
                    } else {
                        // More than the limit is refused by validation; this
                        // bound only keeps the quadratic search short.
                        if out.len() > MAX_AGENTS * 4 {
                            return Err(de::Error::custom("too many capabilities"));
                        }
                        out.push((k, v));
                    }
                }
                Ok(Caps(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// `POST /v1/heartbeats` body, borrowed. Field for field the wire type.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatIn<'a> {
    #[serde(borrow)]
    pub worker: Text<'a>,
    #[serde(borrow)]
    pub host: Text<'a>,
    pub sent_at: DateTime<Utc>,
    #[serde(default, borrow)]
    pub config_revision: Option<Text<'a>>,
    #[serde(borrow)]
    pub agents: Vec<Text<'a>>,
    #[serde(borrow)]
    pub active_agent: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub capabilities: Caps<'a>,
    #[serde(default)]
    pub failovers: Vec<Failover>,
    /// `None`: left out; `Some(None)`: `null`, between turns.
    #[serde(default, borrow, deserialize_with = "crate::wire::present")]
    pub turn: Option<Option<TurnIn<'a>>>,
    #[serde(default, borrow)]
    pub next_turn_agent: Option<Text<'a>>,
}

/// A heartbeat's `turn`, borrowed: [`crate::wire::Turn`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnIn<'a> {
    #[serde(borrow)]
    pub agent: Text<'a>,
    pub since: DateTime<Utc>,
}

impl<'a> HeartbeatIn<'a> {
    /// The turn it is in, if it says it is in one: its agent and start.
    pub fn in_turn(&self) -> Option<(&str, DateTime<Utc>)> {
        self.turn
            .as_ref()
            .and_then(Option::as_ref)
            .map(|t| (t.agent.as_str(), t.since))
    }

    /// Parse a request body. The body is checked as UTF-8 once, whole, so
    /// that the parser need not check each string again (a third of its
    /// time); a body that is not UTF-8 gets the byte parser's own error.
    pub fn parse(body: &'a [u8]) -> serde_json::Result<HeartbeatIn<'a>> {
        match std::str::from_utf8(body) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => serde_json::from_slice(body),
        }
    }

    /// The wire module's checks, on borrowed text.
    pub fn validate(&self) -> Result<(), Invalid> {
        validate_heartbeat(HeartbeatFields {
            worker: self.worker.as_str(),
            host: self.host.as_str(),
            config_revision: self.config_revision.as_ref().map(Text::as_str),
            agents: self.agents.iter().map(Text::as_str),
            active_agent: self.active_agent.as_ref().map(Text::as_str),
            capabilities: self.capabilities.0.iter().map(|(k, _)| k.as_str()),
            failovers: &self.failovers,
            turn: self.in_turn(),
            sent_at: self.sent_at,
            next_turn_agent: self.next_turn_agent.as_ref().map(Text::as_str),
        })
    }

    /// All of [`HeartbeatIn::validate`], and the times judged by the hub's
    /// clock `now` (see [`crate::wire::check_time`]).
    pub fn validate_at(&self, now: DateTime<Utc>) -> Result<(), Invalid> {
        self.validate()?;
        check_heartbeat_times(
            self.sent_at,
            &self.failovers,
            self.in_turn().map(|t| t.1),
            now,
        )
    }
}

impl<'a> From<&'a Heartbeat> for HeartbeatIn<'a> {
    fn from(h: &'a Heartbeat) -> Self {
        let t = |s: &'a String| Text(Cow::Borrowed(s.as_str()));
        HeartbeatIn {
            worker: t(&h.worker),
            host: t(&h.host),
            sent_at: h.sent_at,
            config_revision: h.config_revision.as_ref().map(t),
            agents: h.agents.iter().map(t).collect(),
            active_agent: h.active_agent.as_ref().map(t),
            capabilities: Caps(h.capabilities.iter().map(|(k, v)| (t(k), *v)).collect()),
            failovers: h.failovers.clone(),
            turn: h.turn.as_ref().map(|t| {
                t.as_ref().map(|t| TurnIn {
                    agent: Text(Cow::Borrowed(t.agent.as_str())),
                    since: t.since,
                })
            }),
            next_turn_agent: h.next_turn_agent.as_ref().map(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bodies both parsers must agree on, accepted or refused.
    fn bodies() -> Vec<Vec<u8>> {
        let base = r#""worker":"w-1","host":"h1","sent_at":"2026-11-29T15:04:05Z""#;
        let caps = r#""capabilities":{"pi":{"binary":true,"token":true,"preflight":"ok"}}"#;
        let fo = r#"{"id":"f-1","at":"2026-11-29T15:04:00Z","from":"pi","to":"claude","cause":{"kind":"rate_limited","status":429,"source":"hub_router","detail":"429 from upstream"}}"#;
        let mut v = vec![
            format!(r#"{{{base},"agents":["pi","claude"],"active_agent":"pi",{caps}}}"#),
            format!(r#"{{{base},"agents":[],"active_agent":null}}"#),
            format!(
                r#"{{{base},"config_revision":"0123456789ab","agents":["pi"],"active_agent":"pi","failovers":[{fo}]}}"#
            ),
            // Escapes are copied, not borrowed, and mean the same.
            format!(r#"{{{base},"agents":["p\u0069"],"active_agent":"\u0070i"}}"#),
            // A repeated capability keeps its last value.
            format!(
                r#"{{{base},"agents":["pi"],"active_agent":"pi","capabilities":{{"pi":{{"binary":true,"token":true,"preflight":"ok"}},"pi":{{"binary":false,"token":true,"preflight":"ok"}}}}}}"#
            ),
            // Turns: in one, between turns, and an older worker's silence.
            format!(
                r#"{{{base},"agents":["pi","claude"],"active_agent":"pi","turn":{{"agent":"pi","since":"2026-11-29T15:00:00Z"}},"next_turn_agent":"claude"}}"#
            ),
            format!(r#"{{{base},"agents":["pi"],"active_agent":"pi","turn":null,"next_turn_agent":null}}"#),
            // Refused: a turn on another agent than the active one, after
            // sent_at, of a bad shape, with a bad next agent.
            format!(
                r#"{{{base},"agents":["pi","claude"],"active_agent":"pi","turn":{{"agent":"claude","since":"2026-11-29T15:00:00Z"}}}}"#
            ),
            format!(
                r#"{{{base},"agents":[],"active_agent":null,"turn":{{"agent":"pi","since":"2026-11-29T15:00:00Z"}}}}"#
            ),
            format!(
                r#"{{{base},"agents":["pi"],"active_agent":"pi","turn":{{"agent":"pi","since":"2026-11-29T16:00:00Z"}}}}"#
            ),
            format!(r#"{{{base},"agents":["pi"],"active_agent":"pi","turn":"pi"}}"#),
            format!(
                r#"{{{base},"agents":["pi"],"active_agent":"pi","turn":{{"agent":"pi","since":"2026-11-29T15:00:00Z","x":1}}}}"#
            ),
            format!(
                r#"{{{base},"agents":["pi"],"active_agent":"pi","turn":{{"agent":"pi"}}}}"#
            ),
            format!(r#"{{{base},"agents":["pi"],"active_agent":"pi","next_turn_agent":"Pi"}}"#),
            format!(r#"{{{base},"agents":["pi"],"active_agent":"pi","next_turn_agent":7}}"#),
            // Refused: unknown field, missing field, wrong types, bad names.
            format!(r#"{{{base},"agents":["pi"],"active_agent":"pi","extra":1}}"#),
            format!(r#"{{{base},"active_agent":"pi"}}"#),
            format!(r#"{{{base},"agents":"pi","active_agent":"pi"}}"#),
            format!(r#"{{{base},"agents":[1],"active_agent":"pi"}}"#),
            format!(r#"{{{base},"agents":["Pi"],"active_agent":"pi"}}"#),
            format!(r#"{{{base},"agents":["pi"],"active_agent":"pi","capabilities":[]}}"#),
            format!(
                r#"{{{base},"agents":["pi"],"active_agent":"pi","capabilities":{{"pi":{{"binary":true}}}}}}"#
            ),
            format!(
                r#"{{{base},"agents":["pi"],"active_agent":"pi","failovers":[{}]}}"#,
                fo.replace("rate_limited", "vibes")
            ),
            format!(
                r#"{{{base},"agents":["pi"],"active_agent":"pi","failovers":[{}]}}"#,
                fo.replace(r#""status":429,"#, "")
            ),
            format!(r#"{{{base},"agents":["pi"],"active_agent":"pi","config_revision":"a b"}}"#),
            r#"{"worker":"","host":"h","sent_at":"2026-11-29T15:04:05Z","agents":[],"active_agent":null}"#.into(),
            r#"{"worker":"w","host":"h","sent_at":"yesterday","agents":[],"active_agent":null}"#.into(),
            r#"{"worker":"w","host":"h","sent_at":"2026-11-29T15:04:05Z","agents":[],"active_agent":null"#.into(),
            r#"[]"#.into(),
            String::new(),
        ];
        let many: Vec<String> = (0..=MAX_AGENTS).map(|i| format!(r#""a{i}""#)).collect();
        v.push(format!(
            r#"{{{base},"agents":[{}],"active_agent":null}}"#,
            many.join(",")
        ));
        let mut v: Vec<Vec<u8>> = v.into_iter().map(String::into_bytes).collect();
        // Not UTF-8: in a string, and outside one.
        let mut bad = format!(r#"{{{base},"agents":["pi"],"active_agent":"p"#).into_bytes();
        bad.extend_from_slice(&[0xff, b'"', b'}']);
        v.push(bad);
        let mut bad = format!(r#"{{{base},"agents":["pi"],"active_agent":"pi"}}"#).into_bytes();
        bad.push(0xc3);
        v.push(bad);
        v
    }

    #[test]
    fn agrees_with_the_wire_type() {
        for body in bodies() {
            let wire: Result<Heartbeat, _> = serde_json::from_slice(&body);
            let ours = HeartbeatIn::parse(&body);
            let body = String::from_utf8_lossy(&body);
            match (wire, ours) {
                (Ok(w), Ok(mut o)) => {
                    // The wire type's map is sorted; ours keeps the order sent.
                    o.capabilities.0.sort_by(|a, b| a.0.cmp(&b.0));
                    assert_eq!(HeartbeatIn::from(&w), o, "{body}");
                    assert_eq!(
                        w.validate().map_err(|e| e.to_string()),
                        o.validate().map_err(|e| e.to_string()),
                        "{body}"
                    );
                }
                (Err(w), Err(o)) => {
                    assert_eq!(w.classify(), o.classify(), "{body}: {w} / {o}");
                }
                (w, o) => panic!("parsers disagree on {body}: wire {w:?}, hub {o:?}"),
            }
        }
    }

    #[test]
    fn plain_text_is_borrowed() {
        let body = br#"{"worker":"w-1","host":"h1","sent_at":"2026-11-29T15:04:05Z","agents":["pi"],"active_agent":"pi"}"#;
        let hb = HeartbeatIn::parse(body).expect("parses");
        assert!(matches!(hb.worker.0, Cow::Borrowed(_)));
        assert!(matches!(hb.agents[0].0, Cow::Borrowed(_)));
    }
}
