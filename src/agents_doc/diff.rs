//! Unified diffs of whole documents, for previews.

/// A unified diff (3 lines of context) from `old` to `new`; empty when they
/// are equal. Line endings are kept; a missing final newline is marked.
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
}
