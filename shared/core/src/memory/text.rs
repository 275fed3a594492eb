//! The memory tool's text: what each command prints and how an edit changes a file's text,
//! as pure functions. Texts and numbering follow the reference implementation in the
//! Anthropic Python SDK (`BetaLocalFilesystemMemoryTool`); where ours differs it says so.

/// Longest file the tool shows (the SDK's `MAX_LINES`).
pub const MAX_LINES: usize = 999_999;
/// Line numbers are right-aligned to this width (the digits of `MAX_LINES`).
const LINE_NUMBER_WIDTH: usize = 6;

/// `1.5K`-style sizes, as the SDK prints them (`0B`, `512B`, `4K`, `1.5M`).
pub fn format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0B".to_owned();
    }
    const UNITS: [&str; 4] = ["B", "K", "M", "G"];
    let bit_length = 64 - bytes.leading_zeros();
    let i = ((bit_length - 1) / 10).min(3);
    let size = bytes as f64 / 1024f64.powi(i as i32);
    if size.fract() == 0.0 {
        format!("{}{}", size as u64, UNITS[i as usize])
    } else {
        format!("{size:.1}{}", UNITS[i as usize])
    }
}

fn numbered(n: usize, line: &str) -> String {
    format!("{n:>LINE_NUMBER_WIDTH$}\t{line}")
}

/// Python's `lines[start:end]` bounds for a list of `len` (negative counts from the end).
fn py_bound(i: i64, len: usize) -> usize {
    let len = len as i64;
    let i = if i < 0 { (len + i).max(0) } else { i.min(len) };
    i as usize
}

/// `view` of a file: every line numbered, or `view_range` `[start, end]` (1-based,
/// inclusive, `-1` = to the end). `Err` is the tool's error text.
pub fn view_file(shown: &str, content: &str, view_range: Option<&[i64]>) -> Result<String, String> {
    let lines: Vec<&str> = content.split('\n').collect();
    if lines.len() > MAX_LINES {
        return Err(format!(
            "File {shown} exceeds maximum line limit of 999,999 lines."
        ));
    }
    let (shown_lines, first) = match view_range {
        Some([start, end]) => {
            let from = (*start).max(1) - 1;
            let to = if *end == -1 { lines.len() as i64 } else { *end };
            let (a, b) = (py_bound(from, lines.len()), py_bound(to, lines.len()));
            (lines.get(a..b.max(a)).unwrap_or(&[]), a + 1)
        }
        _ => (&lines[..], 1),
    };
    let body: Vec<String> = shown_lines
        .iter()
        .enumerate()
        .map(|(i, l)| numbered(first + i, l))
        .collect();
    Ok(format!(
        "Here's the content of {shown} with line numbers:\n{}",
        body.join("\n")
    ))
}

/// `str_replace` on `content`: the new text and the answer, or the error text. `old` must
/// occur exactly once.
pub fn str_replace(
    shown: &str,
    content: &str,
    old: &str,
    new: &str,
) -> Result<(String, String), String> {
    let count = content.matches(old).count();
    if count == 0 {
        return Err(format!(
            "No replacement was performed, old_str `{old}` did not appear verbatim in {shown}."
        ));
    }
    if count > 1 {
        // Lines of every occurrence, overlapping ones included (as the SDK finds them).
        let mut lines = Vec::new();
        let mut start = 0;
        while let Some(pos) = content.get(start..).and_then(|rest| rest.find(old)) {
            let at = start + pos;
            lines.push((content[..at].matches('\n').count() + 1).to_string());
            start = at + content[at..].chars().next().map_or(1, char::len_utf8);
            if start > content.len() {
                break;
            }
        }
        return Err(format!(
            "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
            lines.join(", ")
        ));
    }
    let pos = content.find(old).unwrap_or(0);
    let changed = content[..pos].matches('\n').count();
    let updated = content.replacen(old, new, 1);
    let new_lines: Vec<&str> = updated.split('\n').collect();
    let from = changed.saturating_sub(2);
    let to = (changed + 3).min(new_lines.len());
    let snippet: Vec<String> = (from..to).map(|i| numbered(i + 1, new_lines[i])).collect();
    let answer = format!(
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{}",
        snippet.join("\n")
    );
    Ok((updated, answer))
}

/// `insert` of `text` as a line after line `at` (0 = before the first line). Lines are
/// counted as the SDK counts them, but only the inserted line's bytes are new: the other
/// lines keep their own endings (the SDK rejoins every line with `\n`).
pub fn insert(content: &str, at: i64, text: &str) -> Result<String, String> {
    // Each line with its own ending; a last line without one is a line too.
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    if at < 0 || at as usize > lines.len() {
        return Err(format!(
            "Invalid `insert_line` parameter: {at}. It should be within the range [0, {}].",
            lines.len()
        ));
    }
    let at = at as usize;
    let mut out = String::with_capacity(content.len() + text.len() + 2);
    for line in &lines[..at] {
        out.push_str(line);
    }
    // A last line without its newline gets one, so the new line starts a line.
    if at == lines.len() && !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(text.trim_end_matches('\n'));
    out.push('\n');
    for line in &lines[at..] {
        out.push_str(line);
    }
    Ok(out)
}

/// The `view` of a directory: the header, the directory itself, then its entries.
pub fn view_directory(shown: &str, own_size: u64, entries: &[(u64, String)]) -> String {
    let mut out = format!(
        "Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:\n{}\t{shown}",
        format_size(own_size)
    );
    for (size, rel) in entries {
        out.push_str(&format!("\n{}\t{shown}/{rel}", format_size(*size)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_the_sdk() {
        for (n, s) in [
            (0, "0B"),
            (1, "1B"),
            (1023, "1023B"),
            (1024, "1K"),
            (1536, "1.5K"),
            (4096, "4K"),
            (10_000, "9.8K"),
            (1024 * 1024, "1M"),
            (3 * 1024 * 1024 * 1024, "3G"),
            (5 * 1024u64.pow(4), "5120G"),
        ] {
            assert_eq!(format_size(n), s, "{n}");
        }
    }

    #[test]
    fn files_are_numbered_and_ranged() {
        let text = "a\nb\nc\n";
        assert_eq!(
            view_file("/memories/f", text, None).unwrap(),
            "Here's the content of /memories/f with line numbers:\n     1\ta\n     2\tb\n     3\tc\n     4\t"
        );
        assert_eq!(
            view_file("/memories/f", text, Some(&[2, -1])).unwrap(),
            "Here's the content of /memories/f with line numbers:\n     2\tb\n     3\tc\n     4\t"
        );
        assert_eq!(
            view_file("/memories/f", text, Some(&[0, 1])).unwrap(),
            "Here's the content of /memories/f with line numbers:\n     1\ta"
        );
        assert_eq!(
            view_file("/memories/f", text, Some(&[3, 2])).unwrap(),
            "Here's the content of /memories/f with line numbers:\n"
        );
    }

    #[test]
    fn str_replace_needs_exactly_one_occurrence() {
        let text = "one\ntwo\nthree\nfour\nfive\nsix\n";
        let (updated, answer) = str_replace("/memories/f", text, "four", "FOUR").unwrap();
        assert_eq!(updated, "one\ntwo\nthree\nFOUR\nfive\nsix\n");
        assert_eq!(
            answer,
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     2\ttwo\n     3\tthree\n     4\tFOUR\n     5\tfive\n     6\tsix"
        );
        assert_eq!(
            str_replace("/memories/f", text, "seven", "x").unwrap_err(),
            "No replacement was performed, old_str `seven` did not appear verbatim in /memories/f."
        );
        assert_eq!(
            str_replace("/memories/f", "ab\nab\nxab", "ab", "x").unwrap_err(),
            "No replacement was performed. Multiple occurrences of old_str `ab` in lines: 1, 2, 3. Please ensure it is unique"
        );
        // Exact bytes: CRLF lines stay CRLF.
        let (crlf, _) = str_replace("/memories/f", "a\r\nb\r\n", "b", "c").unwrap();
        assert_eq!(crlf, "a\r\nc\r\n");
    }

    #[test]
    fn insert_counts_lines_like_the_sdk_and_keeps_other_bytes() {
        assert_eq!(insert("a\nb\n", 0, "x").unwrap(), "x\na\nb\n");
        assert_eq!(insert("a\nb\n", 1, "x\n").unwrap(), "a\nx\nb\n");
        assert_eq!(insert("a\nb\n", 2, "x").unwrap(), "a\nb\nx\n");
        assert_eq!(insert("a\nb", 2, "x").unwrap(), "a\nb\nx\n");
        assert_eq!(insert("", 0, "x").unwrap(), "x\n");
        assert_eq!(insert("a\r\nb\r\n", 1, "x").unwrap(), "a\r\nx\nb\r\n");
        assert_eq!(
            insert("a\nb\n", 3, "x").unwrap_err(),
            "Invalid `insert_line` parameter: 3. It should be within the range [0, 2]."
        );
        assert!(insert("a\n", -1, "x").is_err());
    }
}
