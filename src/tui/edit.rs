//! The owner's pending edit of the list (`J`/`K`/`a`/`d`/`u`/`C-r`/`w` on
//! the Ladder): a home of its own beside the views, filled by the next
//! issue. Today it holds nothing, and the edit keys only say that editing
//! arrives later (or `read-only`, in a session without a writer).
//!
//! What will live here: the list as edited so far and the revision it
//! started from (for `If-Match`), the undo/redo stacks, and the write
//! prompt (diff shown, `y` sends). `update` changes it; the Ladder view
//! draws it; `net` sends it through the session's `Writer`.

/// The pending edit of the list; empty until editing arrives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LadderEdit {}

impl LadderEdit {
    /// An edit is waiting to be written.
    pub fn is_pending(&self) -> bool {
        false
    }
}
