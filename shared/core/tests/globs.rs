//! `workspace_core::globs` against globset's own matcher: on random globs over the path
//! alphabet (literals, `*`, `**`, `?`, classes, alternations, escapes) and random paths, in
//! both syntaxes, a path matches our set exactly when it matches globset's `GlobSet` of the
//! same globs. A key's scope, a rollback's selection and a search filter mean what globset
//! says they mean.

use globset::{GlobBuilder, GlobSetBuilder};
use proptest::prelude::*;
use workspace_core::globs::{GlobSyntax, Globs};

fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a", "b", "ab", ".", "-", "_", "1", "/", "*", "**", "?", "[ab]", "[!a]", "[a-c]", "{a,b}",
        "{a,b/c}", "{,x}", "/**/", "**/", "/**", "[", "{", "]", "}", ",", "!", "\\", "\\*", "\\a",
    ])
}

fn glob() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 1..6).prop_map(|p| p.concat())
}

fn path() -> impl Strategy<Value = String> {
    let segment = prop::sample::select(vec!["a", "b", "ab", "c", "ba", ".x", "-", "a.b", "1"]);
    prop::collection::vec(segment, 1..5).prop_map(|s| s.join("/"))
}

fn both_agree(globs: &[String], paths: &[String], syntax: GlobSyntax) -> Result<(), TestCaseError> {
    let theirs = globs
        .iter()
        .map(|g| {
            GlobBuilder::new(g)
                .literal_separator(syntax.literal_separator)
                .backslash_escape(syntax.backslash_escape)
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map(|gs| {
            let mut b = GlobSetBuilder::new();
            gs.into_iter().for_each(|g| {
                b.add(g);
            });
            b.build().expect("a set of parsed globs builds")
        });
    let ours = Globs::new(globs.iter().map(String::as_str), syntax);
    match (theirs, ours) {
        (Ok(theirs), Ok(ours)) => {
            for p in paths {
                prop_assert_eq!(theirs.is_match(p), ours.is_match(p), "{:?} on {}", globs, p);
            }
        }
        (Err(_), Err(_)) => {}
        (theirs, ours) => prop_assert!(
            false,
            "{globs:?}: globset {:?}, ours {:?}",
            theirs.map(|_| ()),
            ours.map(|_| ())
        ),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_same_paths_match_as_under_globset(
        globs in prop::collection::vec(glob(), 0..4),
        paths in prop::collection::vec(path(), 1..12),
    ) {
        both_agree(&globs, &paths, GlobSyntax::PATHS)?;
        both_agree(&globs, &paths, GlobSyntax::DEFAULT)?;
    }
}
