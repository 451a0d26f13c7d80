//! The problems the hub knows of now, each with its kind and the file it
//! is about: `/v1/health` says their sentences (`problems`), and each new
//! subscriber of `GET /v1/events` is sent every one as an
//! `event: problem` when it connects (a problem found at start, before
//! anyone subscribed, reaches every TUI that connects later).

use chrono::{DateTime, Utc};

use super::{Current, Hub};
use crate::wire::ProblemEvent;

/// One problem, built as health says it.
fn problem(at: DateTime<Utc>, kind: &str, path: String, message: String) -> ProblemEvent {
    ProblemEvent {
        at,
        kind: kind.into(),
        path,
        message,
    }
}

impl Hub {
    /// Every problem the hub knows of now, in the order health says them.
    pub fn problems_now(&self, c: &Current) -> Vec<ProblemEvent> {
        let now = Utc::now();
        let config = self.opts.config.display().to_string();
        let mut out: Vec<ProblemEvent> = self
            .config_place
            .problems(&self.opts.config, c)
            .into_iter()
            .map(|m| problem(now, "config", config.clone(), m))
            .collect();
        out.extend(self.database_problems(now));
        if let Some(m) = self.kept_problem() {
            let path = self.kept_aside.lock().ok().and_then(|k| k.last().cloned());
            let path = path.map_or(config.clone(), |p| p.display().to_string());
            out.push(problem(now, "hand_edit_kept", path, m));
        }
        let damaged = self.db.quick_check_problems();
        let (_, damage) = self.db.damage();
        // Found at start, the damaged file was set aside (said above).
        if damaged > 0 && !damage.as_ref().is_some_and(|d| d.at_start) {
            let db = self.db.path().display();
            out.push(problem(now, "database_quick_check", db.to_string(), format!(
                "the database {db} failed SQLite's quick_check at start ({damaged} problems): some history or failovers may be unreadable or gone"
            )));
        }
        out
    }

    /// The database's problems: cannot be written, made afresh, damaged
    /// and set aside, statements that met damage, its place.
    fn database_problems(&self, now: DateTime<Utc>) -> Vec<ProblemEvent> {
        let db = self.db.path().display();
        let mut out = Vec::new();
        let (_, recreated_at) = self.db.recreated();
        let (_, damage) = self.db.damage();
        // Said instead of the sentence for a removed file, when the damage
        // was the last reason the file was made afresh.
        let damage_remade = damage.as_ref().is_some_and(|d| {
            recreated_at.is_some_and(|r| r <= d.at + chrono::Duration::seconds(1))
        });
        if let Some(why) = self.db.unavailable() {
            out.push(problem(now, "database_unavailable", db.to_string(), format!(
                "{why}; heartbeats with failovers and config writes are refused (503 database_unavailable) until it can be"
            )));
        } else if let Some(at) = recreated_at.filter(|_| !damage_remade) {
            let then = if self.db.recreated_kept() {
                "with every row the removed file held (the hub still had it open)"
            } else {
                "the history and the failover log began afresh then"
            };
            out.push(problem(at, "database_recreated", db.to_string(), format!(
                "the database {db} was removed or replaced while the hub ran; it was made afresh at its path at {}: {then}",
                crate::wire::fmt_time(at)
            )));
        }
        if let Some(d) = &damage {
            let (moved, kept, why) = (d.moved_to.display(), d.kept.sentence(), &d.why);
            let message = if d.at_start {
                format!(
                    "the database {db} was damaged when the hub started ({why}): it was moved aside to {moved} (nothing of it deleted) and the hub started on a fresh one: {kept}"
                )
            } else {
                format!(
                    "the database {db} was found damaged under the running hub at {} ({why}): it was moved aside to {moved} (nothing of it deleted) and made afresh at its path: {kept}; what was acknowledged since is in the fresh file",
                    crate::wire::fmt_time(d.at)
                )
            };
            out.push(problem(
                d.at,
                "database_damaged",
                moved.to_string(),
                message,
            ));
        }
        let corrupt = self.db.corrupt_statements();
        if corrupt > 0 && damage.is_none() {
            out.push(problem(now, "database_corrupt", db.to_string(), format!(
                "{corrupt} statements met damage in the database {db} since the hub started (SQLITE_CORRUPT): some history or failovers cannot be read"
            )));
        }
        if let Some(p) = self.db.place_problem() {
            out.push(problem(now, "database_place", db.to_string(), p));
        }
        out
    }
}
