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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diff_of_a_move() {
        let old = "a = 1\nMAC_CODING_AGENTS = [\n  \"pi\",\n  \"claude\",\n]\n";
        let new = "a = 1\nMAC_CODING_AGENTS = [\n  \"claude\",\n  \"pi\",\n]\n";
        assert_eq!(
            unified_diff(old, new, "hub r4", "edited"),
            "--- hub r4\n+++ edited\n@@ -1,5 +1,5 @@\n a = 1\n MAC_CODING_AGENTS = [\n+  \"claude\",\n   \"pi\",\n-  \"claude\",\n ]\n"
        );
        assert_eq!(unified_diff(old, old, "a", "b"), "");
    }

    #[test]
    fn marks_a_missing_final_newline() {
        let d = unified_diff("x = [\"pi\"]", "x = [\"claude\"]", "a", "b");
        assert!(d.contains("\\ No newline at end of file"), "{d}");
    }
}
