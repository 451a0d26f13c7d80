//! What opens over a pane, each a type implementing [`Overlay`] in a file
//! of its own: the `:` command line and the context switcher (`command`),
//! the owner's edit screens and a kept draft's offer (`edit`: the add
//! prompt, the diff under review, the conflict, the quit question), the
//! help (`help`) and a row's detail (`detail`). `overlays![…]` below lists
//! them, top first: a key goes to each open one in that order until one
//! takes it, then to the pane, then to the keys every pane shares (which
//! may open one: [`Overlay::open_on`]). An overlay changes what it owns
//! and asks the app for the rest through [`Ask`]s, which `App` runs in
//! order after it returns (as gitui's components push internal events on
//! a queue). A new overlay is its file and its line in `overlays![…]`.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::ids::PaneId;
use super::keys::{Action, Hints};
use super::model::Model;
use super::msg::Effect;
use super::pane::{Cx, Detail, Pane};
use super::ui::geom::Areas;

/// What an overlay asks the app to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// A message on the status line.
    Say(String),
    /// The current pane's rows are out of date (its list or the edit
    /// changed): rebuild them now.
    Reorder,
    /// Put the current pane's cursor on this row, if it shows it.
    Select(Detail),
    /// Show this pane, as its key does.
    Show(PaneId),
    /// Land on this pane with nothing open over it (after an edit taken
    /// from `$EDITOR` or a revert).
    Land(PaneId),
    /// Open this detail.
    Open(Detail),
    Quit,
}

/// What an overlay's keys act on: the model, the pane under it, and
/// where effects and asks go.
pub struct Ctx<'a> {
    pub model: &'a mut Model,
    /// The pane on screen.
    pub pane: &'a mut dyn Pane,
    /// Every pane's name, in tab order.
    pub names: &'a [&'static str],
    /// The pane a session opens on.
    pub first: &'static str,
    /// Rows the pane's table shows.
    pub rows: usize,
    /// Lines a page of a detail scrolls.
    pub page: usize,
    pub fx: &'a mut Vec<Effect>,
    pub asks: &'a mut Vec<Ask>,
}

/// What an overlay is drawn from: the frame, the pane under it, and the
/// panes' names and titles in tab order.
pub struct Frame<'a> {
    pub cx: &'a Cx<'a>,
    pub pane: &'a dyn Pane,
    pub names: &'a [&'static str],
    pub titles: &'a [&'static str],
    /// The pane a session opens on.
    pub first: &'static str,
}

/// Why overlays are told to give way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Yield {
    /// Another pane is shown (a digit, `Tab`, an [`Ask::Show`]).
    Switch,
    /// The filter prompt opens (`/`).
    Filter,
    /// The quit question takes the status line and the keys.
    Question,
    /// An [`Ask::Land`]: nothing stays open over the pane.
    Land,
}

/// One thing that opens over a pane.
pub trait Overlay {
    /// A key, while this and every overlay above it are given it
    /// (`action`: what the key table's panes' scopes read it as): true when
    /// it took the key, false to hand it on.
    fn key(&mut self, k: &KeyEvent, action: Option<Action>, cx: &mut Ctx) -> bool;
    /// A key every pane shares that opens this (`?`, `:`, `Enter`, `v`):
    /// true when it opened (or said why not).
    fn open_on(&mut self, _a: Action, _cx: &mut Ctx) -> bool {
        false
    }
    /// Give way (see [`Yield`]).
    fn give_way(&mut self, _why: Yield) {}
    /// The row it shows (a detail), for the keys that act on what is in
    /// view (`f`).
    fn shows(&self) -> Option<&Detail> {
        None
    }
    /// A click on the table does nothing while it is open.
    fn holds_clicks(&self) -> bool {
        false
    }
    /// The hints of the status line, when it has its own.
    fn hints(&self, _m: &Model) -> Option<Hints> {
        None
    }
    /// A message for the status line when nothing else is said.
    fn note(&self, _m: &Model) -> Option<String> {
        None
    }
    /// Draw the body, when it holds it (true); the pane draws it else.
    fn draw_body(&self, _f: &Frame, _area: Rect, _buf: &mut Buffer) -> bool {
        false
    }
    /// Draw the status line, when it holds it (true).
    fn draw_status(&self, _f: &Frame, _area: Rect, _buf: &mut Buffer) -> bool {
        false
    }
    /// Draw over everything else (a box, the help), last.
    fn draw_over(&self, _f: &Frame, _a: &Areas, _screen: Rect, _buf: &mut Buffer) {}
}

macro_rules! overlays {
    ($($file:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $file;)*

        /// Every overlay, top first (each field named by its file).
        #[derive(Default)]
        pub struct Overlays {
            $(pub(crate) $file: $file::$ty,)*
        }

        impl Overlays {
            /// Every overlay, top first.
            pub fn all_mut(&mut self) -> Vec<&mut dyn Overlay> {
                vec![$(&mut self.$file as &mut dyn Overlay),*]
            }

            /// Every overlay, top first.
            pub fn all(&self) -> Vec<&dyn Overlay> {
                vec![$(&self.$file as &dyn Overlay),*]
            }
        }
    };
}

overlays![command::Command, edit::Edit, help::Help, detail::DetailView,];

/// The staged rollout's prompt, question and answers, for `edit`.
pub mod staged;

impl Overlays {
    /// A key: to each overlay, top first, until one takes it.
    pub fn key(&mut self, k: &KeyEvent, action: Option<Action>, cx: &mut Ctx) -> bool {
        self.all_mut().into_iter().any(|o| o.key(k, action, cx))
    }

    /// A shared key that opens one of them.
    pub fn open_on(&mut self, a: Action, cx: &mut Ctx) -> bool {
        self.all_mut().into_iter().any(|o| o.open_on(a, cx))
    }

    pub fn give_way(&mut self, why: Yield) {
        for o in self.all_mut() {
            o.give_way(why);
        }
    }

    /// The row in view, the top overlay's that shows one.
    pub fn shows(&self) -> Option<&Detail> {
        self.all().into_iter().find_map(|o| o.shows())
    }

    pub fn holds_clicks(&self) -> bool {
        self.all().into_iter().any(|o| o.holds_clicks())
    }

    pub fn hints(&self, m: &Model) -> Option<Hints> {
        self.all().into_iter().find_map(|o| o.hints(m))
    }

    pub fn note(&self, m: &Model) -> Option<String> {
        self.all().into_iter().find_map(|o| o.note(m))
    }

    pub fn draw_body(&self, f: &Frame, area: Rect, buf: &mut Buffer) -> bool {
        self.all().into_iter().any(|o| o.draw_body(f, area, buf))
    }

    pub fn draw_status(&self, f: &Frame, area: Rect, buf: &mut Buffer) -> bool {
        self.all().into_iter().any(|o| o.draw_status(f, area, buf))
    }

    /// Bottom first, so the top one is drawn last.
    pub fn draw_over(&self, f: &Frame, a: &Areas, screen: Rect, buf: &mut Buffer) {
        for o in self.all().into_iter().rev() {
            o.draw_over(f, a, screen, buf);
        }
    }
}

/// What is open over the pane, as tests and the runner read it.
#[derive(Debug)]
pub struct Open<'a> {
    pub help: bool,
    pub detail: Option<Detail>,
    /// `v`: the detail's target as the hub's own JSON record.
    pub raw: bool,
    /// The `:` command line.
    pub cmd: &'a command::CmdLine,
    /// The contexts `:ctx` switches between, and the current one.
    pub contexts: &'a command::Contexts,
}

impl Overlays {
    pub fn open(&self) -> Open<'_> {
        Open {
            help: self.help.is_open(),
            detail: self.detail.detail().cloned(),
            raw: self.detail.is_raw(),
            cmd: &self.command.cmd,
            contexts: &self.command.contexts,
        }
    }
}
