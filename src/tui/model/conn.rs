//! The connection as the top line tells it, and the hub's clock.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

/// What the top line says when the hub answers 401.
pub const REFUSED: &str = "unauthorized: the hub refused this token";

/// What the top line says when the hub answers 403.
pub const FORBIDDEN: &str = "forbidden: the hub does not let this token read";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stream {
    Connecting,
    Up,
    Down { error: String, retry_in: Duration },
}

/// Connection as the top line tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnLabel {
    /// The hub answered 401: it does not know our token.
    Refused,
    /// The hub answered 403: it knows the token and does not let it read.
    Forbidden,
    Connecting,
    Live,
    Polling,
    Disconnected(Duration),
    /// The hub answers and broke a bound of the API (an endless body, an
    /// entry past its size), for this long: not down, and not to be
    /// trusted either.
    BrokeBound(Duration),
}

#[derive(Debug, Clone)]
pub struct Conn {
    pub stream: Stream,
    /// Last good answer from the hub.
    pub last_ok: Option<Instant>,
    /// First failure of the current run of failures.
    pub failing_since: Option<Instant>,
    pub last_error: Option<String>,
    /// The last answer was 401: the token, not the network, is the trouble.
    pub refused: bool,
    /// The last answer was 403.
    pub forbidden: bool,
    /// The last failure of the worker poll (or whoami) was an answer that
    /// broke a bound of the API: `HUB ERROR`, not `HUB DOWN`.
    pub broke_bound: bool,
    /// A request whose answer broke a bound of the API, since when, and
    /// the words naming the request and the bound: `HUB ERROR` until that
    /// request answers within them, even while the others answer (one
    /// broken endpoint does not blank the rest, nor hide that it broke).
    pub broken: Option<Broken>,
}

/// See [`Conn::broken`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub what: Fetch,
    pub since: Instant,
    pub error: String,
}

/// The hub's clock: its `now` at a local monotonic instant.
#[derive(Debug, Clone, Copy)]
pub struct HubClock {
    pub hub: DateTime<Utc>,
    pub mono: Instant,
    /// From the hub (true) or the local wall clock until the hub answers.
    pub from_hub: bool,
}

/// Which request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    Whoami,
    /// `GET /v1/summary` (the poller's, which decides the mode).
    Summary,
    Workers,
    Failovers,
    Recoveries,
    Config,
    History,
}
