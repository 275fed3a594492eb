//! Three-way merge of text, line by line (`diffy`, a maintained implementation of the
//! diff3 merge).

/// Text content, or `None` for bytes that are not UTF-8 (never merged as text).
pub fn as_text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

/// The merge of `parent`'s and `fork`'s changes to `base`: `Ok` with the merged text when
/// the changes do not overlap, else `Err` with the text and conflict markers
/// (`<<<<<<< parent` … `=======` … `>>>>>>> fork`) for a person or program to edit.
pub fn merge(base: &str, parent: &str, fork: &str) -> Result<String, String> {
    let mut options = diffy::MergeOptions::new();
    options.set_conflict_style(diffy::ConflictStyle::Merge);
    let labelled = |text: String| {
        text.replace("<<<<<<< ours", "<<<<<<< parent")
            .replace(">>>>>>> theirs", ">>>>>>> fork")
    };
    options.merge(base, parent, fork).map_err(labelled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separate_changes_merge_cleanly() {
        let base = "a\nb\nc\nd\n";
        let parent = "A\nb\nc\nd\n";
        let fork = "a\nb\nc\nD\n";
        assert_eq!(merge(base, parent, fork), Ok("A\nb\nc\nD\n".to_owned()));
    }

    #[test]
    fn overlapping_changes_come_back_with_markers() {
        let base = "a\nb\n";
        let parent = "a\nparent\n";
        let fork = "a\nfork\n";
        let err = merge(base, parent, fork).unwrap_err();
        assert!(
            err.contains("<<<<<<< parent\nparent\n=======\nfork\n>>>>>>> fork\n"),
            "{err}"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_not_text() {
        assert_eq!(as_text(b"ok"), Some("ok"));
        assert_eq!(as_text(&[0xff, 0xfe, 0x00]), None);
    }
}
