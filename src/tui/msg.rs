//! Everything that can happen to the TUI, as data: keys, ticks, hub answers.
//! The hub I/O tasks translate client results into these, so `app` never
//! touches the network and every state is reachable from a test.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use crossterm::event::{KeyEvent, MouseEvent};

use crate::client::ClientError;
use crate::tui::model::large::WindowAsk;
use crate::wire::{
    ConfigAccepted, ConfigEvent, FailoverRecord, FailoversPage, History, RecoveriesPage,
    RecoveryRecord, Whoami, WorkerView, WorkersPage,
};

#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// Time passed. `wall` anchors the clock only until the hub's `now` is known.
    Tick {
        mono: Instant,
        wall: DateTime<Utc>,
    },
    Whoami(Whoami),
    /// `GET /v1/health` (JSON), asked with every worker poll.
    Health(crate::wire::Health),
    /// `GET /v1/workers`; `at` is when the answer arrived (monotonic), which
    /// pins the hub's `now` to the local clock.
    Workers {
        page: WorkersPage,
        at: Instant,
    },
    /// `GET /v1/summary` (`polled`: by the poller, whose answers alone
    /// move the session into or out of large-fleet mode), or the
    /// `summary` event.
    Summary {
        summary: Box<crate::wire::Summary>,
        at: Instant,
        polled: bool,
    },
    /// A window of `GET /v1/workers` (large-fleet mode) answering `ask`,
    /// asked of the hub `instance` (whoami's, as the net task last knew
    /// it): one from another instance than the screen's is dropped.
    Window {
        ask: WindowAsk,
        page: WorkersPage,
        at: Instant,
        instance: Option<String>,
    },
    /// `GET /v1/failovers`. `fresh`: the first page of a full refetch, which
    /// replaces what we held.
    Failovers {
        page: FailoversPage,
        fresh: bool,
    },
    /// A failover from the event stream.
    Failover(FailoverRecord),
    /// `GET /v1/recoveries`; `fresh` as for [`Msg::Failovers`].
    Recoveries {
        page: RecoveriesPage,
        fresh: bool,
    },
    /// A recovery from the event stream.
    Recovery(RecoveryRecord),
    /// A new revision from the event stream.
    Config(ConfigEvent),
    /// A problem the hub sent on the event stream (`event: problem`):
    /// shown on the status line as `hub: <sentence>`, scrubbed.
    HubProblem(crate::wire::ProblemEvent),
    /// Workers the hub changed on its own, from the event stream in its
    /// order: a sweeper move (`state`: stale, lost) or an `in_sync` flip
    /// (`sync`). A burst comes as one message.
    WorkerEvents(Vec<WorkerView>),
    /// The list as `GET /v1/config` holds it, and the whole document (the
    /// base of an edit).
    Agents {
        revision: String,
        agents: Vec<String>,
        text: String,
    },
    /// `GET /v1/config` answered the document on disk that does not
    /// validate: its text, its own revision and why. The list in force is
    /// not in it.
    DiskInvalid(crate::tui::model::config::OnDisk),
    /// `$EDITOR` closed ([`Effect::OpenEditor`]): the text it was given and
    /// what it left in the file, or why it did not run or failed.
    Edited {
        sent: String,
        back: Result<String, String>,
    },
    /// The answer to an [`Effect::KeepDraft`]: where the draft was kept,
    /// or why it could not be.
    DraftKept(Result<String, String>),
    /// The answer to an [`Effect::Write`].
    Written(Result<ConfigAccepted, ClientError>),
    /// The answer to a write (or [`Effect::Recheck`]) was lost after its
    /// request went out (`why`): it may not have been written, and the
    /// runner is asking the hub again with the same Idempotency-Key.
    WriteLost {
        why: String,
    },
    /// A write whose answer was lost, asked again by its key: the hub's
    /// answer (`Ok`: the write is on the hub, written once; `Err`: not
    /// written).
    WriteChecked(Result<ConfigAccepted, ClientError>),
    /// A write whose answer was lost and whose hub could not be asked
    /// (`error` says both): it may be on the hub. `key` asks again, with
    /// the same `text` and `if_match`, once the hub answers.
    WriteUnknown {
        text: String,
        if_match: String,
        key: String,
        error: String,
    },
    /// The answer to an [`Effect::StartRollout`].
    RolloutStarted(Result<crate::rollout::wire::RolloutView, ClientError>),
    /// The answer to an [`Effect::RolloutStep`].
    RolloutStepped {
        promote: bool,
        result: Result<crate::rollout::wire::RolloutView, ClientError>,
    },
    History(History),
    /// What the hub said of its staged rollout (`GET /v1/rollouts/current`,
    /// the SSE `rollout` event, History's steps), at `at`.
    Rollout {
        feed: crate::tui::model::staged::RolloutFeed,
        at: Instant,
    },
    StreamUp,
    StreamDown {
        error: String,
        retry_in: Duration,
    },
    /// The hub no longer holds our resume point: refetch everything.
    Reset,
    FetchFailed {
        what: Fetch,
        error: String,
        at: Instant,
    },
    /// The hub's answer to `what` broke a bound of the API (`error` names
    /// the request and the bound): it answers, out of the contract.
    OutOfBounds {
        what: Fetch,
        error: String,
        at: Instant,
    },
    /// The hub answered 401 to `what`: it does not know this token.
    Refused {
        what: Fetch,
        at: Instant,
    },
    /// The hub answered 403 to `what`: it knows this token and does not
    /// let it read.
    Forbidden {
        what: Fetch,
        at: Instant,
    },
    /// The requests of a refetch (`r`, or a `reset`) are done; `ok` when
    /// all of them were answered.
    Refetched {
        ok: bool,
    },
    /// The runner could not connect to the context `:ctx` chose.
    SwitchFailed {
        error: String,
    },
}

pub use crate::tui::model::conn::Fetch;

impl Msg {
    /// It can move the rows the Workers view wants (large-fleet mode
    /// settles and asks at once after these, not after every message: a
    /// million workers stream failovers by the thousand a second, and a
    /// settle rebuilds the Failovers view over its whole log).
    pub fn pages(&self) -> bool {
        matches!(
            self,
            Msg::Key(_)
                | Msg::Mouse(_)
                | Msg::Resize(..)
                | Msg::Summary { .. }
                | Msg::Window { .. }
                | Msg::Workers { .. }
                | Msg::WorkerEvents(_)
                | Msg::Reset
        )
    }
}

/// Work `update` asks the runner to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Refetch workers (full), failovers (from scratch), config and history.
    Refetch,
    FetchConfig,
    FetchHistory,
    /// Large-fleet mode: fetch this window (and ask it again with every
    /// poll until another is asked); answer [`Msg::Window`].
    Window(WindowAsk),
    /// Open `text` in `$EDITOR` (the runner suspends the screen around it)
    /// and answer [`Msg::Edited`].
    OpenEditor {
        text: String,
    },
    /// Keep a draft from `$EDITOR` that was cancelled as a private file
    /// (0600, under `$XDG_STATE_HOME/macfleet/drafts/`) and answer
    /// [`Msg::DraftKept`] with its path.
    KeepDraft {
        text: String,
    },
    /// `PUT /v1/config` of exactly `text` with `If-Match: if_match` (what
    /// the diff screen showed). The runner sends it through its `Writer`.
    Write {
        text: String,
        if_match: String,
    },
    /// The same `PUT /v1/config` again, with the Idempotency-Key `key` of
    /// a write whose outcome is unknown ([`Msg::WriteUnknown`]): the hub
    /// answers a key it holds with the first answer, before `If-Match`.
    /// Answers [`Msg::WriteChecked`] (or `WriteUnknown` again).
    Recheck {
        text: String,
        if_match: String,
        key: String,
    },
    /// `POST /v1/rollouts?<query>` of exactly `text` (the diff reviewed)
    /// with `If-Match: if_match`: to a cohort first. Through the `Writer`.
    StartRollout {
        text: String,
        if_match: String,
        query: crate::rollout::RolloutQuery,
    },
    /// Promote (`promote`) or abort the staged rollout baking. Through the
    /// `Writer`.
    RolloutStep {
        promote: bool,
    },
    /// `:ctx`: leave this hub for the named context's (the runner starts
    /// a new session on it, or answers `Msg::SwitchFailed`).
    SwitchContext(String),
}
