//! Cutting a file's text into the passages that are embedded one by one: a query about one
//! section of a long note should match that section, not the note's average meaning.
//!
//! - Markdown (`.md`, `.markdown`, `.mdx`): every ATX heading (`#` … `######`, outside a
//!   fenced code block) starts a passage, and each passage after the first carries its
//!   heading trail (`# Billing › ## Retries`) so a section is embedded with what it is about.
//! - Anything else (code, plain text): blank lines separate blocks.
//! - Blocks are packed into passages of at most [`PASSAGE_CHARS`] characters; a block
//!   longer than that is cut by lines (a line longer than that, by characters). When a
//!   section or block is cut, the next piece repeats up to [`OVERLAP_CHARS`] characters of
//!   whole lines before the cut, so a sentence spanning the cut is whole in one of them.
//! - A file yields at most [`MAX_PASSAGES_PER_FILE`] passages (its first ~200 KB): the
//!   bound on what one write costs to embed.

/// Longest passage, in characters: about 200 WordPiece tokens of English, under the model's
/// 256-token window with room for the heading trail.
pub const PASSAGE_CHARS: usize = 800;
/// Characters of whole lines repeated after a cut.
pub const OVERLAP_CHARS: usize = 160;
/// Most passages embedded per file.
pub const MAX_PASSAGES_PER_FILE: usize = 256;

/// A run of lines of a file, and the text that is embedded for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// First and last line, from 1, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    /// What the model reads: the heading trail, then the lines.
    pub text: String,
}

/// Whether `path` is read as Markdown.
pub fn is_markdown(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".md", ".markdown", ".mdx"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// A heading line's level (1-6), if it is an ATX heading.
fn heading_level(line: &str) -> Option<usize> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let hashes = trimmed.bytes().take_while(|&b| b == b'#').count();
    let rest = &trimmed[hashes..];
    ((1..=6).contains(&hashes) && (rest.is_empty() || rest.starts_with([' ', '\t'])))
        .then_some(hashes)
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// One section (Markdown) or block (otherwise): its first line number and its lines, and
/// the heading trail it sits under.
struct Section<'a> {
    first: u32,
    lines: Vec<&'a str>,
    /// The headings above the section (Markdown), and with its own heading: what a piece
    /// cut from its middle is prefixed with.
    trail: String,
    inner_trail: String,
}

fn sections<'a>(text: &'a str, markdown: bool) -> Vec<Section<'a>> {
    let mut out: Vec<Section<'a>> = Vec::new();
    let mut trail: Vec<(usize, &'a str)> = Vec::new();
    let mut in_fence = false;
    let mut current = Section {
        first: 1,
        lines: Vec::new(),
        trail: String::new(),
        inner_trail: String::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let number = i as u32 + 1;
        let starts_new = if markdown {
            if is_fence(line) {
                in_fence = !in_fence;
            }
            let level = (!in_fence).then(|| heading_level(line)).flatten();
            if let Some(level) = level {
                trail.retain(|(l, _)| *l < level);
                trail.push((level, line.trim()));
            }
            level.is_some()
        } else {
            line.trim().is_empty()
        };
        if starts_new {
            if current.lines.iter().any(|l| !l.trim().is_empty()) {
                out.push(current);
            }
            // A heading's trail is the headings above it: the heading itself is its
            // section's first line.
            let above = trail.len().saturating_sub(usize::from(markdown));
            let join =
                |t: &[(usize, &str)]| t.iter().map(|(_, h)| *h).collect::<Vec<_>>().join(" › ");
            current = Section {
                first: number,
                lines: Vec::new(),
                trail: join(&trail[..above]),
                inner_trail: join(&trail),
            };
            if !markdown {
                current.first = number + 1;
                continue;
            }
        }
        current.lines.push(line);
    }
    if current.lines.iter().any(|l| !l.trim().is_empty()) {
        out.push(current);
    }
    out
}

/// Cuts a line longer than [`PASSAGE_CHARS`] into pieces of at most that many characters.
fn pieces(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while rest.chars().count() > PASSAGE_CHARS {
        let cut = rest
            .char_indices()
            .nth(PASSAGE_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

/// The passages of `text` (a file at `path`), in order.
pub fn passages(path: &str, text: &str) -> Vec<Passage> {
    let markdown = is_markdown(path);
    let mut out: Vec<Passage> = Vec::new();
    // Blocks (non-Markdown) are packed together up to the size; Markdown sections each
    // start a passage of their own.
    let mut open: Option<(u32, u32, String)> = None;
    let flush = |open: &mut Option<(u32, u32, String)>, out: &mut Vec<Passage>| {
        if let Some((start, end, text)) = open.take() {
            if !text.trim().is_empty() {
                out.push(Passage {
                    start_line: start,
                    end_line: end,
                    text,
                });
            }
        }
    };
    for section in sections(text, markdown) {
        if markdown {
            flush(&mut open, &mut out);
        }
        let with_newline = |t: &str| {
            if t.is_empty() {
                String::new()
            } else {
                format!("{t}\n")
            }
        };
        let mut prefix = with_newline(&section.trail);
        // Lines of the section, long lines already cut, with their line numbers.
        let lines: Vec<(u32, &str)> = section
            .lines
            .iter()
            .enumerate()
            .flat_map(|(i, l)| {
                pieces(l)
                    .into_iter()
                    .map(move |p| (section.first + i as u32, p))
            })
            .collect();
        let section_chars: usize = lines.iter().map(|(_, l)| l.chars().count() + 1).sum();
        if let Some((_, end, text)) = &mut open {
            if text.chars().count() + section_chars <= PASSAGE_CHARS {
                // A blank line kept between packed blocks.
                text.push('\n');
                for (_, l) in &lines {
                    text.push_str(l);
                    text.push('\n');
                }
                *end = lines.last().map_or(*end, |(n, _)| *n);
                continue;
            }
            flush(&mut open, &mut out);
        }
        let mut i = 0;
        while i < lines.len() {
            let mut text = prefix.clone();
            let start = i;
            let mut chars = prefix.chars().count();
            while i < lines.len() {
                let len = lines[i].1.chars().count() + 1;
                if i > start && chars + len > PASSAGE_CHARS {
                    break;
                }
                text.push_str(lines[i].1);
                text.push('\n');
                chars += len;
                i += 1;
            }
            let piece = (lines[start].0, lines[i - 1].0, text);
            if i < lines.len() {
                out.push(Passage {
                    start_line: piece.0,
                    end_line: piece.1,
                    text: piece.2,
                });
                prefix = with_newline(&section.inner_trail);
                // Step back over whole lines worth at most the overlap, never to the start.
                let mut back = 0;
                let mut j = i;
                while j > start + 1 && back + lines[j - 1].1.chars().count() < OVERLAP_CHARS {
                    back += lines[j - 1].1.chars().count() + 1;
                    j -= 1;
                }
                i = j;
            } else {
                open = Some(piece);
            }
        }
        if markdown {
            flush(&mut open, &mut out);
        }
        if out.len() >= MAX_PASSAGES_PER_FILE {
            break;
        }
    }
    flush(&mut open, &mut out);
    out.truncate(MAX_PASSAGES_PER_FILE);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(ps: &[Passage]) -> Vec<(u32, u32)> {
        ps.iter().map(|p| (p.start_line, p.end_line)).collect()
    }

    #[test]
    fn markdown_headings_start_passages_and_carry_their_trail() {
        let text = "intro line\n# Billing\nwe bill monthly\n## Retries\nback off 3 times\n\n```\n# not a heading\n```\n# Other\nx\n";
        let ps = passages("memory/billing.md", text);
        assert_eq!(ranges(&ps), [(1, 1), (2, 3), (4, 9), (10, 11)]);
        assert_eq!(ps[1].text, "# Billing\nwe bill monthly\n");
        assert!(
            ps[2].text.starts_with("# Billing\n## Retries\n"),
            "{:?}",
            ps[2].text
        );
        assert!(ps[2].text.contains("# not a heading"));
        assert_eq!(
            ps[3].text, "# Other\nx\n",
            "a new top heading drops the old trail"
        );
    }

    #[test]
    fn code_is_cut_at_blank_lines_and_small_blocks_are_packed() {
        let text = "fn a() {}\n\nfn b() {}\n\n\nfn c() {}\n";
        let ps = passages("src/lib.rs", text);
        assert_eq!(ranges(&ps), [(1, 6)], "small blocks share one passage");
        let big: String = (0..40)
            .map(|i| format!("let v{i} = compute_the_value({i});\n"))
            .collect();
        let text = format!("fn a() {{}}\n\n{big}\nfn z() {{}}\n");
        let ps = passages("src/lib.rs", &text);
        assert!(ps.len() >= 3, "{:?}", ranges(&ps));
        assert_eq!(ps[0].start_line, 1);
        assert_eq!(ps.last().unwrap().end_line, 44);
        for p in &ps {
            assert!(p.text.chars().count() <= PASSAGE_CHARS, "{}", p.text.len());
        }
    }

    #[test]
    fn a_long_section_is_cut_with_overlap_and_nothing_is_lost() {
        let body: String = (1..=60)
            .map(|i| format!("sentence number {i} of the note.\n"))
            .collect();
        let text = format!("# Long\n{body}");
        let ps = passages("a.md", &text);
        assert!(ps.len() >= 3);
        for w in ps.windows(2) {
            assert!(
                w[1].start_line <= w[0].end_line,
                "overlap: {:?}",
                ranges(&ps)
            );
            assert!(w[1].start_line > w[0].start_line, "progress");
            assert!(w[1].text.starts_with("# Long\n"), "the trail is kept");
        }
        for i in 1..=60 {
            let line = format!("sentence number {i} of the note.");
            assert!(ps.iter().any(|p| p.text.contains(&line)), "line {i} lost");
        }
        assert_eq!(ps.last().unwrap().end_line, 61);
    }

    #[test]
    fn a_very_long_line_and_a_huge_file_stay_bounded() {
        let line = "x".repeat(5 * PASSAGE_CHARS);
        let ps = passages("a.txt", &line);
        assert_eq!(ps.len(), 5);
        assert!(ps.iter().all(|p| (p.start_line, p.end_line) == (1, 1)));
        let huge: String = (0..5000).map(|i| format!("# H{i}\ntext {i}\n")).collect();
        assert_eq!(passages("a.md", &huge).len(), MAX_PASSAGES_PER_FILE);
        assert!(passages("a.md", "").is_empty());
        assert!(passages("a.md", "\n\n  \n").is_empty());
    }
}
