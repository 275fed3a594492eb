//! The mount's namespace: the workspace's flat paths seen as folders, the folders that exist
//! only as markers or only in this mount, and inode numbers for all of them. Knows no FUSE
//! and no HTTP, so its rules are unit-tested on their own.
//!
//! A folder exists when a live file is under it, when it holds a marker file
//! ([`MARKER`]: how `mkdir` makes an empty folder survive a remount), or when this mount made
//! or emptied it since it started (kept in memory only).

use super::remote::Meta;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The file `mkdir DIR` writes (`DIR/.wsdir`, empty); hidden in the mount, refused as a name.
pub const MARKER: &str = ".wsdir";
/// The read-only history folder at the mount's root (no workspace path can start with `.`).
pub const HISTORY: &str = ".workspace";

pub const ROOT_INO: u64 = 1;

/// What the mount knows of one live file.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    /// The server's version and etag; `None` for a file created here and not yet committed.
    pub stamp: Option<(u64, String)>,
    pub size: u64,
    /// Whether `size` is known (a snapshot's listing names versions, not sizes).
    pub sized: bool,
    /// The server's time of this version (RFC 3339), the order the change log is applied in.
    pub updated_at: String,
    pub content_type: Option<String>,
}

impl File {
    pub fn from_meta(m: &Meta) -> File {
        File {
            stamp: Some((m.version, m.etag.clone())),
            size: m.size.unwrap_or(0),
            sized: m.size.is_some(),
            updated_at: m.updated_at.clone(),
            content_type: m.content_type.clone(),
        }
    }

    pub fn etag(&self) -> Option<&str> {
        self.stamp.as_ref().map(|(_, e)| e.as_str())
    }

    /// The executable bit, carried as the content type's `x-mode` parameter.
    pub fn executable(&self) -> bool {
        self.content_type.as_deref().is_some_and(is_executable_type)
    }
}

pub fn is_executable_type(ct: &str) -> bool {
    ct.split(';')
        .skip(1)
        .any(|p| p.trim().eq_ignore_ascii_case("x-mode=755"))
}

/// `ct` with the `x-mode=755` parameter set or removed.
pub fn with_executable(ct: &str, exec: bool) -> String {
    let mut parts: Vec<&str> = ct
        .split(';')
        .map(str::trim)
        .filter(|p| !p.eq_ignore_ascii_case("x-mode=755"))
        .collect();
    if exec {
        parts.push("x-mode=755");
    }
    parts.join("; ")
}

/// `a/b` under `a`; everything under the root `""`.
pub fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}/{name}")
    }
}

pub fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map(|(p, _)| p).unwrap_or("")
}

pub fn name_of(path: &str) -> &str {
    path.rsplit_once('/').map(|(_, n)| n).unwrap_or(path)
}

pub fn is_marker(path: &str) -> bool {
    name_of(path) == MARKER
}

#[derive(Debug, Default)]
pub struct Tree {
    pub files: BTreeMap<String, File>,
    /// Folders with a marker file on the server.
    pub marked: BTreeSet<String>,
    /// Folders this mount made or emptied, without a marker (gone at unmount).
    pub local: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
}

impl Tree {
    /// Loads a full listing (markers become marked folders).
    pub fn from_listing(metas: &[Meta]) -> Tree {
        let mut t = Tree::default();
        for m in metas {
            t.apply(&m.path, Some(m));
        }
        t
    }

    /// Records that `path` is now `meta` (`None`: deleted).
    pub fn apply(&mut self, path: &str, meta: Option<&Meta>) {
        if is_marker(path) {
            let dir = parent_of(path).to_owned();
            match meta {
                Some(_) => {
                    self.marked.insert(dir);
                }
                None => {
                    self.marked.remove(&dir);
                }
            }
            return;
        }
        match meta {
            Some(m) => {
                self.files.insert(path.to_owned(), File::from_meta(m));
            }
            None => {
                self.files.remove(path);
            }
        }
    }

    /// Merges a full listing read while this mount kept committing: an entry newer than
    /// everything listed is this mount's own later commit and stays; an older one the
    /// listing lacks was deleted; a listed one newer than ours replaces it, unless it is a
    /// version this mount itself removed (`gone`: path → etag). Answers each changed path
    /// with what it was before.
    pub fn merge_listing(
        &mut self,
        metas: &[Meta],
        gone: &HashMap<String, String>,
    ) -> Vec<(String, Option<File>)> {
        let listed = Tree::from_listing(metas);
        let newest = metas
            .iter()
            .map(|m| m.updated_at.as_str())
            .max()
            .unwrap_or("");
        let mut changed = Vec::new();
        let stale: Vec<String> = self
            .files
            .iter()
            .filter(|(p, f)| {
                f.stamp.is_some()
                    && f.updated_at.as_str() <= newest
                    && !listed.files.contains_key(*p)
            })
            .map(|(p, _)| p.clone())
            .collect();
        for p in stale {
            let before = self.files.remove(&p);
            changed.push((p, before));
        }
        for (p, f) in listed.files {
            let newer = match self.files.get(&p) {
                Some(mine) => {
                    mine.stamp.is_some()
                        && mine.updated_at < f.updated_at
                        && mine.etag() != f.etag()
                }
                None => gone.get(&p).map(String::as_str) != f.etag(),
            };
            if newer {
                let before = self.files.insert(p.clone(), f);
                changed.push((p, before));
            }
        }
        self.marked.extend(listed.marked);
        changed
    }

    pub fn kind(&self, path: &str) -> Option<Kind> {
        if path.is_empty() {
            return Some(Kind::Dir);
        }
        if self.files.contains_key(path) {
            return Some(Kind::File);
        }
        if self.marked.contains(path) || self.local.contains(path) || self.has_children(path) {
            return Some(Kind::Dir);
        }
        None
    }

    fn has_children(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        let under = |k: &String| k.starts_with(&prefix);
        self.files
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(k, _)| under(k))
            || self
                .marked
                .range(prefix.clone()..)
                .next()
                .is_some_and(under)
            || self.local.range(prefix.clone()..).next().is_some_and(under)
    }

    /// The names directly inside `dir`, each with its kind, in name order.
    pub fn children(&self, dir: &str) -> Vec<(String, Kind)> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out: BTreeMap<String, Kind> = BTreeMap::new();
        let mut note = |key: &str, leaf_kind: Kind| {
            if let Some(rest) = key.strip_prefix(&prefix) {
                if rest.is_empty() {
                    return;
                }
                match rest.split_once('/') {
                    Some((first, _)) => {
                        out.insert(first.to_owned(), Kind::Dir);
                    }
                    None => {
                        out.entry(rest.to_owned()).or_insert(leaf_kind);
                    }
                }
            }
        };
        for k in self.files.range(prefix.clone()..).map(|(k, _)| k) {
            if !k.starts_with(&prefix) {
                break;
            }
            note(k, Kind::File);
        }
        for set in [&self.marked, &self.local] {
            for k in set.range(prefix.clone()..) {
                if !k.starts_with(&prefix) {
                    break;
                }
                note(k, Kind::Dir);
            }
        }
        out.into_iter().collect()
    }

    /// Every live file at or under `dir` (for a folder rename), and whether it has a marker.
    pub fn files_under(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{dir}/");
        self.files
            .range(prefix.clone()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&prefix))
            .cloned()
            .collect()
    }
}

/// Inode numbers: one per path seen, never reused while the mount lives; a rename moves the
/// number with the file (what the kernel expects), a folder's rename moves its contents'.
#[derive(Debug)]
pub struct Inodes {
    by_path: HashMap<String, u64>,
    by_ino: HashMap<u64, String>,
    next: u64,
}

impl Default for Inodes {
    fn default() -> Self {
        let mut i = Inodes {
            by_path: HashMap::new(),
            by_ino: HashMap::new(),
            next: ROOT_INO + 1,
        };
        i.by_path.insert(String::new(), ROOT_INO);
        i.by_ino.insert(ROOT_INO, String::new());
        i
    }
}

impl Inodes {
    pub fn ino(&mut self, path: &str) -> u64 {
        if let Some(i) = self.by_path.get(path) {
            return *i;
        }
        let i = self.next;
        self.next += 1;
        self.by_path.insert(path.to_owned(), i);
        self.by_ino.insert(i, path.to_owned());
        i
    }

    pub fn path(&self, ino: u64) -> Option<&str> {
        self.by_ino.get(&ino).map(String::as_str)
    }

    pub fn existing(&self, path: &str) -> Option<u64> {
        self.by_path.get(path).copied()
    }

    /// `from` (and everything under it) is now at `to`; the inode that was at `to` is
    /// detached (its open handles keep working, its path is gone).
    pub fn rename(&mut self, from: &str, to: &str) {
        if let Some(old) = self.by_path.remove(to) {
            self.by_ino.remove(&old);
        }
        let prefix = format!("{from}/");
        let moved: Vec<(String, u64)> = self
            .by_path
            .iter()
            .filter(|(p, _)| *p == from || p.starts_with(&prefix))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        for (p, i) in moved {
            self.by_path.remove(&p);
            let new = format!("{to}{}", &p[from.len()..]);
            if let Some(stale) = self.by_path.insert(new.clone(), i) {
                self.by_ino.remove(&stale);
            }
            self.by_ino.insert(i, new);
        }
    }

    /// `path` gets a new number at its next lookup; the old one still answers its path (for
    /// the handles open on it) until the kernel forgets it.
    pub fn detach(&mut self, path: &str) {
        self.by_path.remove(path);
    }

    /// The kernel forgot `ino`: a detached number is dropped (a live one is kept: its path
    /// still names it).
    pub fn forget_detached(&mut self, ino: u64) -> bool {
        match self.by_ino.get(&ino) {
            Some(p) if self.by_path.get(p) != Some(&ino) => {
                self.by_ino.remove(&ino);
                true
            }
            _ => false,
        }
    }

    /// `path`'s inode is detached (after an unlink): a new file there gets a new number.
    pub fn forget_path(&mut self, path: &str) {
        if let Some(i) = self.by_path.remove(path) {
            self.by_ino.remove(&i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(path: &str, v: u64) -> Meta {
        Meta {
            path: path.into(),
            version: v,
            etag: format!("{v}-x"),
            size: Some(3),
            updated_at: "2026-01-01T00:00:00.000Z".into(),
            content_type: None,
        }
    }

    #[test]
    fn folders_come_from_files_markers_and_this_mount() {
        let mut t =
            Tree::from_listing(&[meta("a/b/c.md", 1), meta("a/x.md", 1), meta("e/.wsdir", 1)]);
        t.local.insert("n".into());
        assert_eq!(t.kind("a"), Some(Kind::Dir));
        assert_eq!(t.kind("a/b"), Some(Kind::Dir));
        assert_eq!(t.kind("a/x.md"), Some(Kind::File));
        assert_eq!(t.kind("e"), Some(Kind::Dir));
        assert_eq!(
            t.kind("e/.wsdir"),
            None,
            "a marker is not a file in the mount"
        );
        assert_eq!(t.kind("ab"), None);
        assert_eq!(
            t.children(""),
            vec![
                ("a".into(), Kind::Dir),
                ("e".into(), Kind::Dir),
                ("n".into(), Kind::Dir)
            ]
        );
        assert_eq!(
            t.children("a"),
            vec![("b".into(), Kind::Dir), ("x.md".into(), Kind::File)]
        );
        assert!(t.children("e").is_empty());
        t.apply("e/.wsdir", None);
        assert_eq!(t.kind("e"), None);
    }

    #[test]
    fn a_listing_read_while_this_mount_committed_loses_none_of_its_commits() {
        let at = |path: &str, v: u64, t: &str| Meta {
            updated_at: t.into(),
            ..meta(path, v)
        };
        let mut t = Tree::from_listing(&[
            at("old.md", 1, "2026-01-01T00:00:01.000Z"),
            at("deleted.md", 1, "2026-01-01T00:00:01.000Z"),
            at("mine.md", 2, "2026-01-01T00:00:09.000Z"),
        ]);
        // Committed here after the listing was read: newer than anything listed.
        t.apply(
            "late.md",
            Some(&at("late.md", 1, "2026-01-01T00:00:09.500Z")),
        );
        let listing = [
            at("old.md", 2, "2026-01-01T00:00:05.000Z"),
            at("mine.md", 1, "2026-01-01T00:00:02.000Z"),
            at("moved.md", 3, "2026-01-01T00:00:03.000Z"),
            at("new.md", 1, "2026-01-01T00:00:06.000Z"),
        ];
        let gone: HashMap<String, String> = [("moved.md".to_owned(), "3-x".to_owned())].into();
        let mut changed: Vec<String> = t
            .merge_listing(&listing, &gone)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        changed.sort();
        assert_eq!(changed, ["deleted.md", "new.md", "old.md"]);
        assert!(
            t.files.contains_key("late.md"),
            "a commit newer than the listing stays"
        );
        assert_eq!(
            t.files["mine.md"].stamp,
            Some((2, "2-x".into())),
            "ours is newer"
        );
        assert_eq!(t.files["old.md"].stamp, Some((2, "2-x".into())));
        assert!(
            !t.files.contains_key("moved.md"),
            "a version this mount moved away stays away"
        );
        assert!(!t.files.contains_key("deleted.md"));
    }

    #[test]
    fn a_rename_moves_inodes_and_detaches_the_target() {
        let mut i = Inodes::default();
        let d = i.ino("d");
        let f = i.ino("d/f");
        let t = i.ino("e/f");
        i.rename("d", "e");
        assert_eq!(i.existing("e"), Some(d));
        assert_eq!(i.existing("e/f"), Some(f));
        assert_eq!(i.path(t), None);
        assert_eq!(i.existing("d/f"), None);
        assert_ne!(
            i.ino("d"),
            d,
            "a new file at the old path gets a new number"
        );
    }

    #[test]
    fn the_executable_bit_rides_on_the_content_type() {
        let ct = with_executable("text/x-sh", true);
        assert_eq!(ct, "text/x-sh; x-mode=755");
        assert!(is_executable_type(&ct));
        assert_eq!(with_executable(&ct, false), "text/x-sh");
        assert!(!is_executable_type("text/plain"));
    }
}
