//! The lines a hit shows: each line holding a match, with the byte ranges that matched.

use super::{MAX_LINES_PER_HIT, MAX_LINE_CHARS};
use serde::Serialize;

/// One matching line: its number (from 1), its text (cut at [`MAX_LINE_CHARS`]
/// characters), and the matches in it as UTF-8 byte ranges `[start, end)` into `text`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineMatch {
    pub line: usize,
    pub text: String,
    pub ranges: Vec<[usize; 2]>,
}

/// The matching lines of `text` for byte `ranges` (sorted by start, within `text`): at most
/// [`MAX_LINES_PER_HIT`] lines; a match that runs past its line's end is cut there.
pub fn matching_lines(text: &str, ranges: &[(usize, usize)]) -> Vec<LineMatch> {
    let mut out: Vec<LineMatch> = Vec::new();
    let mut line_no = 1usize;
    let mut line_start = 0usize;
    let mut scanned = 0usize;
    for &(start, end) in ranges {
        if start > text.len() || start < line_start {
            continue;
        }
        // Advance to the line holding `start`.
        line_no += text.as_bytes()[scanned..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        scanned = start;
        if let Some(nl) = text[..start].rfind('\n') {
            line_start = nl + 1;
        }
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        let line = text[line_start..line_end].trim_end_matches('\r');
        let shown: &str = match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => &line[..cut],
            None => line,
        };
        let (s, e) = (start - line_start, end.min(line_end) - line_start);
        if out.last().is_none_or(|l| l.line != line_no) {
            if out.len() == MAX_LINES_PER_HIT {
                break;
            }
            out.push(LineMatch {
                line: line_no,
                text: shown.to_owned(),
                ranges: Vec::new(),
            });
        }
        if s < shown.len() && e > s {
            if let Some(last) = out.last_mut() {
                last.ranges.push([s, e.min(shown.len())]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_relative_to_their_line() {
        let text = "alpha beta\r\ngamma beta beta\nend";
        let b1 = text.find("beta").unwrap();
        let g = text.find("gamma").unwrap();
        let b2 = g + 6;
        let b3 = g + 11;
        let lines = matching_lines(text, &[(b1, b1 + 4), (b2, b2 + 4), (b3, b3 + 4)]);
        assert_eq!(
            lines,
            vec![
                LineMatch {
                    line: 1,
                    text: "alpha beta".into(),
                    ranges: vec![[6, 10]]
                },
                LineMatch {
                    line: 2,
                    text: "gamma beta beta".into(),
                    ranges: vec![[6, 10], [11, 15]]
                },
            ]
        );
    }

    #[test]
    fn a_match_across_lines_is_cut_at_its_line_end_and_lines_are_capped() {
        let text = "ab\ncd";
        assert_eq!(matching_lines(text, &[(1, 4)])[0].ranges, vec![[1, 2]]);
        let many = "x\n".repeat(20);
        let ranges: Vec<(usize, usize)> = (0..20).map(|i| (2 * i, 2 * i + 1)).collect();
        let lines = matching_lines(&many, &ranges);
        assert_eq!(lines.len(), MAX_LINES_PER_HIT);
        assert_eq!(lines[4].line, 5);
    }
}
