//! The `:` command line, as in k9s: `:workers`, `:failovers`, `:ladder`,
//! `:history`, `:<worker id>` (its detail), and `:ctx`, the context
//! switcher. Bad input says what was wrong and keeps what was typed.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::App;
use super::lists::{Detail, View};
use super::msg::Effect;

/// The commands `:` knows besides a worker id, for the error and the help.
pub const COMMANDS: &[&str] = &["workers", "failovers", "ladder", "history", "ctx"];

/// The `:` prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CmdLine {
    pub editing: bool,
    pub text: String,
    /// What was wrong with the last command run (the text is kept).
    pub error: Option<String>,
}

/// The contexts `:ctx` offers, and where the session is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contexts {
    /// Names in `$XDG_CONFIG_HOME/macfleet/config.toml`, sorted.
    pub names: Vec<String>,
    /// The context this session is on, if it came from one.
    pub current: Option<String>,
    /// The switcher is open, its cursor here.
    pub picker: Option<usize>,
    /// A pending edit would be dropped by switching to this one: asking.
    pub confirm: Option<String>,
    /// Asked the runner to switch to this one; until it answers.
    pub switching: Option<String>,
}

impl App {
    /// `:` opens the prompt.
    pub(super) fn open_command(&mut self) {
        self.cmd = CmdLine {
            editing: true,
            ..CmdLine::default()
        };
    }

    /// True when the command line or the switcher took the key.
    pub(super) fn command_key(&mut self, k: KeyEvent, fx: &mut Vec<Effect>) -> bool {
        if self.contexts.confirm.is_some() {
            self.dirty = true;
            let name = self.contexts.confirm.take().unwrap_or_default();
            if k.code == KeyCode::Char('y') {
                self.switch_to(name, fx);
            } else {
                self.say("still here: the pending edit is kept");
            }
            return true;
        }
        if let Some(sel) = self.contexts.picker {
            self.dirty = true;
            let n = self.contexts.names.len();
            match k.code {
                KeyCode::Esc | KeyCode::Char('q') => self.contexts.picker = None,
                KeyCode::Down | KeyCode::Char('j') => {
                    self.contexts.picker = Some((sel + 1).min(n.saturating_sub(1)))
                }
                KeyCode::Up | KeyCode::Char('k') => {
                    self.contexts.picker = Some(sel.saturating_sub(1))
                }
                KeyCode::Enter => {
                    self.contexts.picker = None;
                    if let Some(name) = self.contexts.names.get(sel).cloned() {
                        self.choose_context(name, fx);
                    }
                }
                _ => {}
            }
            return true;
        }
        if !self.cmd.editing {
            return false;
        }
        self.dirty = true;
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Char('c') if ctrl => self.quit = true,
            KeyCode::Char('u') if ctrl => self.cmd.text.clear(),
            KeyCode::Esc => self.cmd = CmdLine::default(),
            KeyCode::Backspace => {
                self.cmd.text.pop();
                self.cmd.error = None;
            }
            KeyCode::Enter => self.run_command(),
            KeyCode::Char(c) if !ctrl && !k.modifiers.contains(KeyModifiers::ALT) => {
                self.cmd.text.push(c);
                self.cmd.error = None;
            }
            _ => {}
        }
        true
    }

    fn run_command(&mut self) {
        let text = self.cmd.text.trim().to_string();
        let view = match text.as_str() {
            "workers" => Some(View::Workers),
            "failovers" => Some(View::Failovers),
            "ladder" => Some(View::Ladder),
            "history" => Some(View::History),
            _ => None,
        };
        if let Some(v) = view {
            self.cmd = CmdLine::default();
            self.switch(v);
            return;
        }
        if text == "ctx" {
            if self.contexts.names.is_empty() {
                self.cmd.error = Some(
                    "no contexts in $XDG_CONFIG_HOME/macfleet/config.toml (macfleet context add NAME --hub URL)"
                        .into(),
                );
                return;
            }
            self.cmd = CmdLine::default();
            let at = self
                .contexts
                .current
                .as_ref()
                .and_then(|c| self.contexts.names.iter().position(|n| n == c))
                .unwrap_or(0);
            self.contexts.picker = Some(at);
            return;
        }
        if let Some(slot) = self.fleet.slot_of(&text) {
            self.cmd = CmdLine::default();
            self.switch(View::Workers);
            // Put the cursor on it when the filter shows it; its detail
            // opens either way.
            if let Some(pos) = self
                .lists
                .workers
                .rows
                .slots
                .iter()
                .position(|s| *s == slot)
            {
                let rows = self.body_rows();
                self.lists
                    .workers
                    .sel
                    .set(&self.lists.workers.rows.slots, pos);
                self.lists
                    .workers
                    .sel
                    .scroll(self.lists.workers.len(), rows);
            }
            self.screen.detail = Some(Detail::Worker(text));
            self.screen.detail_scroll = 0;
            return;
        }
        self.cmd.error = Some(if text.is_empty() {
            format!("type a command: {}, or a worker id", commands())
        } else if text.starts_with(|c: char| c.is_ascii_alphanumeric())
            && text.contains(|c: char| c.is_ascii_digit())
        {
            format!(
                "no worker {} reports to this hub",
                crate::textsafe::for_terminal(&text)
            )
        } else {
            format!(
                "unknown command {}: try {}, or a worker id",
                crate::textsafe::for_terminal(&text),
                commands()
            )
        });
    }

    fn choose_context(&mut self, name: String, fx: &mut Vec<Effect>) {
        if self.contexts.current.as_deref() == Some(name.as_str()) {
            self.say(format!("already on {name}"));
        } else if self.edit.is_pending() {
            self.contexts.confirm = Some(name);
        } else {
            self.switch_to(name, fx);
        }
    }

    fn switch_to(&mut self, name: String, fx: &mut Vec<Effect>) {
        self.say(format!("connecting to {name}"));
        self.contexts.switching = Some(name.clone());
        fx.push(Effect::SwitchContext(name));
    }

    /// The runner could not switch: say why; this session goes on.
    pub fn switch_failed(&mut self, error: &str) {
        self.contexts.switching = None;
        self.say(format!(
            "cannot switch: {}",
            crate::textsafe::for_terminal(error)
        ));
        self.dirty = true;
    }
}

fn commands() -> String {
    COMMANDS
        .iter()
        .map(|c| format!(":{c}"))
        .collect::<Vec<_>>()
        .join(" ")
}
