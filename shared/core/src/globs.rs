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
    any: Regex,
}

impl Globs {
    pub fn new<'a>(
        globs: impl IntoIterator<Item = &'a str>,
        syntax: GlobSyntax,
    ) -> Result<Self, GlobError> {
        let mut alternatives = Vec::new();
        for g in globs {
            let glob = GlobBuilder::new(g)
                .literal_separator(syntax.literal_separator)
                .backslash_escape(syntax.backslash_escape)
                .build()
                .map_err(|e| GlobError {
                    glob: g.to_owned(),
                    reason: e.kind().to_string(),
                })?;
            alternatives.push(format!("(?:{})", glob.regex()));
        }
        // No glob matches nothing (an empty alternation would match the empty path).
        let pattern = if alternatives.is_empty() {
            "[^\\s\\S]".to_owned()
        } else {
            alternatives.join("|")
        };
        let any = Regex::new(&pattern).map_err(|e| GlobError {
            glob: pattern.chars().take(80).collect(),
            reason: format!("the globs together are too complex ({e})"),
        })?;
        Ok(Self { any })
    }

    pub fn is_match(&self, path: &str) -> bool {
        self.any.is_match(path)
    }
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
