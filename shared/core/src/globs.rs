//! Path globs, the one way every part of the domain matches paths against globs (path-scoped
//! keys, rollback selections, search's `glob` filter). `globset` parses each glob and
//! renders it as a regular expression (`Glob::regex`); `regex-lite` matches that.
//!
//! Why not `globset`'s own matcher: it compiles into the full `regex` engine (regex-automata,
//! aho-corasick, regex-syntax: about 500 KiB of code), which every Lambda function checking a
//! path-scoped key would then link, most of them for nothing else. Paths are ASCII (see
//! `crate::path`), where globset's byte-oriented expression (`(?-u)`) means the same under
//! regex-lite, which matches by character and is already in every function through the AWS
//! SDK. `tests/globs.rs` holds the two matchers equal on random globs and paths.

use globset::GlobBuilder;
use regex_lite::Regex;

/// How a glob reads: globset's options of the same names.
#[derive(Debug, Clone, Copy)]
pub struct GlobSyntax {
    /// `*` and `?` stay within a path segment (only `**` crosses `/`).
    pub literal_separator: bool,
    /// `\` escapes the next character.
    pub backslash_escape: bool,
}

impl GlobSyntax {
    /// `*` within a segment, `**` across segments, no escapes: path scopes, search.
    pub const PATHS: Self = Self {
        literal_separator: true,
        backslash_escape: false,
    };
    /// globset's defaults (`Glob::new`): `*` crosses `/`, `\` escapes.
    pub const DEFAULT: Self = Self {
        literal_separator: false,
        backslash_escape: true,
    };
}

/// Why a glob was refused: the glob, and what is wrong with it.
#[derive(Debug)]
pub struct GlobError {
    pub glob: String,
    pub reason: String,
}

/// A set of globs; a path matches the set when it matches any of them.
#[derive(Clone, Debug)]
pub struct Globs {
    /// Each glob's literal start and its expression.
    each: Vec<(String, Regex)>,
}

impl Globs {
    pub fn new<'a>(
        globs: impl IntoIterator<Item = &'a str>,
        syntax: GlobSyntax,
    ) -> Result<Self, GlobError> {
        let mut each = Vec::new();
        for g in globs {
            let refuse = |reason: String| GlobError {
                glob: g.to_owned(),
                reason,
            };
            let glob = GlobBuilder::new(g)
                .literal_separator(syntax.literal_separator)
                .backslash_escape(syntax.backslash_escape)
                .build()
                .map_err(|e| refuse(e.kind().to_string()))?;
            let re = Regex::new(glob.regex())
                .map_err(|e| refuse(format!("too complex to match ({e})")))?;
            each.push((literal_start(g).to_owned(), re));
        }
        Ok(Self { each })
    }

    /// Whether `path` matches any glob. A glob's expression runs only on a path that begins
    /// with the glob's literal start (regex-lite has no literal prefilter of its own, and a
    /// key's globs mostly name different folders: 32 of them cost about what one does).
    pub fn is_match(&self, path: &str) -> bool {
        self.each
            .iter()
            .any(|(start, re)| path.starts_with(start.as_str()) && re.is_match(path))
    }
}

/// The characters a glob begins with that can only match themselves: everything before its
/// first character with a meaning in either syntax (a shorter start than possible is safe,
/// it only filters less).
fn literal_start(glob: &str) -> &str {
    let end = glob
        .find(|c: char| "*?[]{},!\\".contains(c))
        .unwrap_or(glob.len());
    &glob[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(globs: &[&str]) -> Globs {
        Globs::new(globs.iter().copied(), GlobSyntax::PATHS).unwrap()
    }

    #[test]
    fn a_star_stays_in_its_segment_and_two_cross_them() {
        let g = paths(&["memory/*", "docs/**", "**/x.md", "a/**/b", "{c,d}/[!e]?"]);
        for yes in [
            "memory/a",
            "docs/a/b/c",
            "x.md",
            "deep/er/x.md",
            "a/b",
            "a/z/y/b",
            "c/fg",
            "d/xy",
        ] {
            assert!(g.is_match(yes), "{yes}");
        }
        for no in [
            "memory/a/b",
            "memory",
            "docs",
            "a/bb",
            "c/eg",
            "e/fg",
            "c/f",
        ] {
            assert!(!g.is_match(no), "{no}");
        }
    }

    #[test]
    fn a_literal_start_ends_at_the_first_special_character() {
        assert_eq!(literal_start("memory/notes/*.md"), "memory/notes/");
        assert_eq!(literal_start("**/x"), "");
        assert_eq!(literal_start("a\\*b"), "a");
        assert_eq!(literal_start("plain/path"), "plain/path");
    }

    #[test]
    fn default_syntax_lets_a_star_cross_segments() {
        let g = Globs::new(["memory/*"], GlobSyntax::DEFAULT).unwrap();
        assert!(g.is_match("memory/a/b"));
    }

    #[test]
    fn no_glob_matches_nothing_and_a_bad_one_is_named() {
        assert!(!paths(&[]).is_match(""));
        assert!(!paths(&[]).is_match("a"));
        let e = Globs::new(["ok/*", "a/[b"], GlobSyntax::PATHS).unwrap_err();
        assert_eq!(e.glob, "a/[b");
        assert!(e.reason.contains("unclosed"), "{}", e.reason);
    }
}
