//! The filesystem: one implementation of `fuser::Filesystem` over [`Remote`], the way
//! fuser's own examples are built. `docs/mount.md` states what each POSIX call does here.
//!
//! Writes are buffered per inode in a file of the cache folder and committed when the file
//! is closed (`flush`), `fsync`ed or released: one new version, conditional on the version
//! the buffer was opened at. A refused condition keeps both sides: the workspace's version
//! stays, the mount's bytes go to a conflict copy next to it, and `close` answers `EIO`.
//!
//! One lock guards the state; FUSE requests come from one thread (fuser's default), the
//! change poller is the only other one, and it applies changes under the lock but calls the
//! kernel (invalidations) only after releasing it.

use super::cache::BodyCache;
use super::journal::{Journal, What};
use super::remote::{Meta, Remote, VersionRow};
use super::tree::{self, Inodes, Kind, Tree, HISTORY, MARKER};
use crate::error::{Error, Kind as ErrorKind};
use crate::write::{quote_etag, Precondition};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
    WriteFlags,
};
use serde_json::{json, Value};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use workspace_core::FilePath;

/// How long the kernel may keep an entry or its attributes: the freshness bound's share.
const TTL: Duration = Duration::from_secs(1);
/// Open folders whose listing is kept for their readdir pages.
const MAX_OPEN_DIRS: usize = 4096;

pub struct Options {
    pub read_only: bool,
    /// A short id of this mount process, in conflict copies' names.
    pub mount_id: String,
    pub buffers: PathBuf,
    pub unsaved: PathBuf,
}

/// What the buffer was opened at: the commit's precondition.
#[derive(Debug, Clone)]
enum Base {
    Absent,
    Etag(String),
}

struct Buffer {
    file: File,
    disk: PathBuf,
    base: Base,
    dirty: bool,
    /// Bytes were written (or the size or mode set) since the last commit. A close commits
    /// only then: a shell's `> f` opens, duplicates and closes the first descriptor before
    /// writing, and that close must not commit an empty version. Release commits the rest.
    written: bool,
    opens: usize,
    exec: bool,
}

enum Handle {
    /// A read-only handle on one version's cached body: it keeps reading what it opened.
    Body(File),
    /// A handle on the inode's write buffer.
    Buffer { ino: u64, write: bool, append: bool },
}

#[derive(Default)]
pub struct State {
    pub tree: Tree,
    pub inodes: Inodes,
    buffers: HashMap<u64, Buffer>,
    handles: HashMap<u64, Handle>,
    next_fh: u64,
    mtimes: HashMap<u64, SystemTime>,
    snapshots: HashMap<String, Tree>,
    versions: HashMap<String, Vec<VersionRow>>,
    /// The newest change-log time applied (RFC 3339).
    pub high_water: String,
    /// Each open folder's listing, taken at `opendir`.
    dirs: HashMap<u64, Vec<(u64, FileType, String)>>,
    /// Versions this mount deleted or moved away (path → etag): their rows in the change
    /// log are not news.
    gone: HashMap<String, String>,
    /// Inodes replaced by a newer version from elsewhere, with the file as they opened it.
    detached: HashMap<u64, tree::File>,
    /// The version whose bytes the kernel may hold in its page cache for each inode (it was
    /// last opened at, or committed from, that etag): an open at the same etag keeps the
    /// pages, any other drops them.
    paged: HashMap<u64, String>,
}

pub struct Fs {
    state: Mutex<State>,
    pub remote: Remote,
    cache: BodyCache,
    pub journal: Journal,
    opts: Options,
    uid: u32,
    gid: u32,
    buffer_seq: std::sync::atomic::AtomicU64,
    /// Folders have no time of their own in the workspace: they show the mount's start.
    started: SystemTime,
}

/// The read-only history folder's nodes.
#[derive(Debug, Clone, PartialEq)]
enum Hist {
    Root,
    Snapshots,
    /// `path` inside snapshot `id` (`""`: its root).
    Snapshot {
        id: String,
        path: String,
    },
    /// `.workspace/versions/<path>`: a folder of the live tree, or a file's versions.
    Versions {
        path: String,
    },
}

fn hist_of(key: &str) -> Option<Hist> {
    if key == HISTORY {
        return Some(Hist::Root);
    }
    let rest = key.strip_prefix(HISTORY)?.strip_prefix('/')?;
    if rest == "snapshots" {
        return Some(Hist::Snapshots);
    }
    if let Some(s) = rest.strip_prefix("snapshots/") {
        let (id, path) = s.split_once('/').unwrap_or((s, ""));
        return Some(Hist::Snapshot {
            id: id.to_owned(),
            path: path.to_owned(),
        });
    }
    if rest == "versions" {
        return Some(Hist::Versions {
            path: String::new(),
        });
    }
    rest.strip_prefix("versions/")
        .map(|p| Hist::Versions { path: p.to_owned() })
}

/// A node as `getattr` describes it.
enum Node {
    Dir {
        writable: bool,
    },
    File {
        size: u64,
        updated_at: String,
        exec: bool,
        writable: bool,
    },
    /// One version's bytes in the history folder (`query`: how to read it).
    Past {
        path: String,
        query: (&'static str, String),
        etag: String,
        size: Option<u64>,
        updated_at: String,
    },
}

pub fn errno_of(e: &Error) -> Errno {
    match e.status {
        Some(400) if e.detail.contains("the limit is") => Errno::ENAMETOOLONG,
        Some(400) | Some(422) => Errno::EINVAL,
        // A read-only key (it lacks workspace:write) or a read-only path scope.
        Some(403) if e.detail.contains("workspace:write") || e.detail.contains("read-only") => {
            Errno::EROFS
        }
        Some(401) | Some(403) => Errno::EACCES,
        Some(404) | Some(410) => Errno::ENOENT,
        Some(413) => Errno::EDQUOT,
        _ => Errno::EIO,
    }
}

fn is_conflict(e: &Error) -> bool {
    e.kind == ErrorKind::Conflict
}

fn time_of(rfc3339: &str) -> SystemTime {
    workspace_core::model::parse_time(rfc3339)
        .and_then(|ms| u64::try_from(ms).ok())
        .map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
        .unwrap_or(UNIX_EPOCH)
}

/// A name the workspace accepts at `path`: its rule (one implementation, the domain's),
/// plus the mount's reserved names.
fn check_new_path(path: &str) -> Result<(), Errno> {
    if tree::name_of(path) == MARKER || path == HISTORY || path.starts_with(".workspace/") {
        return Err(Errno::EINVAL);
    }
    if tree::name_of(path).len() > 255 {
        return Err(Errno::ENAMETOOLONG);
    }
    match FilePath::parse(path) {
        Ok(_) => Ok(()),
        Err(e) if e.to_string().contains("the limit is") => Err(Errno::ENAMETOOLONG),
        Err(_) => Err(Errno::EINVAL),
    }
}

fn utf8(name: &OsStr) -> Result<&str, Errno> {
    name.to_str().ok_or(Errno::EINVAL)
}

impl Fs {
    pub fn new(
        remote: Remote,
        cache: BodyCache,
        journal: Journal,
        opts: Options,
        tree: Tree,
        high_water: String,
    ) -> Fs {
        // SAFETY: getuid/getgid have no preconditions and cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Fs {
            state: Mutex::new(State {
                tree,
                high_water,
                ..State::default()
            }),
            remote,
            cache,
            journal,
            opts,
            uid,
            gid,
            buffer_seq: Default::default(),
            started: SystemTime::now(),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn attr(&self, ino: u64, node: &Node, st: &State) -> FileAttr {
        let (kind, size, mtime, perm) = match node {
            Node::Dir { writable } => (
                FileType::Directory,
                0,
                self.started,
                if *writable { 0o755 } else { 0o555 },
            ),
            Node::File {
                size,
                updated_at,
                exec,
                writable,
            } => {
                let w = if *writable { 0o200 } else { 0 };
                let x = if *exec { 0o111 } else { 0 };
                (
                    FileType::RegularFile,
                    *size,
                    time_of(updated_at),
                    0o444 | w | x,
                )
            }
            Node::Past {
                size, updated_at, ..
            } => (
                FileType::RegularFile,
                size.unwrap_or(0),
                time_of(updated_at),
                0o444,
            ),
        };
        let mtime = st.mtimes.get(&ino).copied().unwrap_or(mtime);
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: mtime,
            mtime,
            ctime: mtime,
            crtime: mtime,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    /// What inode `ino` (at `key`) is: a detached one as it was opened, else what is at
    /// `key` now.
    fn node_of(&self, st: &mut State, ino: u64, key: &str) -> Option<Node> {
        if let Some(f) = st.detached.get(&ino) {
            if !st.buffers.contains_key(&ino) {
                return Some(Node::File {
                    size: f.size,
                    updated_at: f.updated_at.clone(),
                    exec: f.executable(),
                    writable: !self.opts.read_only,
                });
            }
        }
        self.node(st, key)
    }

    /// What is at `key` now (`None`: nothing).
    fn node(&self, st: &mut State, key: &str) -> Option<Node> {
        if let Some(h) = hist_of(key) {
            return self.hist_node(st, h);
        }
        let writable = !self.opts.read_only;
        match st.tree.kind(key)? {
            Kind::Dir => Some(Node::Dir { writable }),
            Kind::File => {
                self.learn_size(st, key);
                let f = st.tree.files.get(key)?;
                let ino = st.inodes.existing(key);
                let buffer = ino.and_then(|i| st.buffers.get(&i));
                let size = buffer
                    .and_then(|b| b.file.metadata().ok())
                    .map(|m| m.len())
                    .unwrap_or(f.size);
                let exec = buffer.map(|b| b.exec).unwrap_or_else(|| f.executable());
                Some(Node::File {
                    size,
                    updated_at: f.updated_at.clone(),
                    exec,
                    writable,
                })
            }
        }
    }

    /// A file of a snapshot mount has no size until its bytes are here: fetched on first
    /// sight, then served from the cache.
    fn learn_size(&self, st: &mut State, key: &str) {
        let Some(f) = st.tree.files.get(key) else {
            return;
        };
        if f.sized {
            return;
        }
        let Some(etag) = f.etag().map(str::to_owned) else {
            return;
        };
        if let Ok(body) = self.body(key, None, &etag) {
            if let (Ok(m), Some(f)) = (body.metadata(), st.tree.files.get_mut(key)) {
                f.size = m.len();
                f.sized = true;
            }
        }
    }

    fn hist_node(&self, st: &mut State, h: Hist) -> Option<Node> {
        let dir = Some(Node::Dir { writable: false });
        match h {
            Hist::Root | Hist::Snapshots => dir,
            Hist::Snapshot { id, path } => {
                let snap = self.snapshot_tree(st, &id)?;
                match snap.kind(&path)? {
                    Kind::Dir => dir,
                    Kind::File => {
                        let f = snap.files.get(&path)?;
                        let etag = f.etag()?.to_owned();
                        Some(Node::Past {
                            query: ("snapshot", id.clone()),
                            path,
                            etag,
                            size: None,
                            updated_at: f.updated_at.clone(),
                        })
                    }
                }
            }
            Hist::Versions { path } => match st.tree.kind(&path) {
                Some(_) if path.is_empty() => dir,
                Some(_) => dir,
                None => {
                    let (file, n) = path.rsplit_once('/')?;
                    let n: u64 = n.parse().ok()?;
                    if st.tree.kind(file) != Some(Kind::File) {
                        return None;
                    }
                    let rows = self.version_rows(st, file, false)?;
                    let row = rows.iter().find(|r| r.version == n)?;
                    Some(Node::Past {
                        path: file.to_owned(),
                        query: ("version", n.to_string()),
                        etag: row.etag.clone(),
                        size: row.size,
                        updated_at: row.updated_at.clone(),
                    })
                }
            },
        }
    }

    fn snapshot_tree<'a>(&self, st: &'a mut State, id: &str) -> Option<&'a Tree> {
        if !st.snapshots.contains_key(id) {
            if st.snapshots.len() >= 64 {
                st.snapshots.clear();
            }
            let files = self.remote.snapshot_files(id).ok()?;
            st.snapshots
                .insert(id.to_owned(), Tree::from_listing(&files));
        }
        st.snapshots.get(id)
    }

    fn version_rows<'a>(
        &self,
        st: &'a mut State,
        path: &str,
        fresh: bool,
    ) -> Option<&'a Vec<VersionRow>> {
        if fresh || !st.versions.contains_key(path) {
            if st.versions.len() >= 1024 {
                st.versions.clear();
            }
            let rows = self.remote.versions(path).ok()?;
            st.versions.insert(path.to_owned(), rows);
        }
        st.versions.get(path)
    }

    /// A past version's size is known only once its bytes are here (a snapshot names
    /// versions, not sizes): fetched on lookup, then served from the cache.
    fn past_size(&self, node: &mut Node) {
        if let Node::Past {
            path,
            query,
            etag,
            size,
            ..
        } = node
        {
            if size.is_none() {
                if let Ok(f) = self.body(path, Some(query.clone()), etag) {
                    *size = f.metadata().ok().map(|m| m.len());
                }
            }
        }
    }

    /// The bytes of `etag` (cached, or fetched into the cache).
    fn body(
        &self,
        path: &str,
        query: Option<(&'static str, String)>,
        etag: &str,
    ) -> Result<File, Errno> {
        if let Some(f) = self.cache.open(etag) {
            return Ok(f);
        }
        let tmp = self.cache.tmp_path();
        let meta = self
            .remote
            .fetch(path, query, &tmp)
            .map_err(|e| errno_of(&e))?;
        self.cache.insert(&meta.etag, &tmp).map_err(|_| Errno::EIO)
    }

    fn reply_node(&self, st: &mut State, key: &str, reply: ReplyEntry) {
        match self.node(st, key) {
            Some(mut node) => {
                self.past_size(&mut node);
                let ino = st.inodes.ino(key);
                let attr = self.attr(ino, &node, st);
                reply.entry(&TTL, &attr, Generation(0));
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    /// The key of `name` in folder `parent`; `bad_name` for a name that is not UTF-8.
    fn child(st: &State, parent: INodeNo, name: &OsStr, bad_name: Errno) -> Result<String, Errno> {
        let dir = Fs::path_of(st, parent)?;
        let name = utf8(name).map_err(|_| bad_name)?;
        Ok(tree::join(&dir, name))
    }

    fn path_of(st: &State, ino: INodeNo) -> Result<String, Errno> {
        st.inodes
            .path(ino.0)
            .map(str::to_owned)
            .ok_or(Errno::ENOENT)
    }

    fn writable(&self, key: &str) -> Result<(), Errno> {
        if self.opts.read_only || hist_of(key).is_some() {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }

    fn new_buffer(&self, base: Base, exec: bool, from: Option<&mut File>) -> Result<Buffer, Errno> {
        let n = self
            .buffer_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let disk = self.opts.buffers.join(format!("b{n}"));
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&disk)
            .map_err(|_| Errno::EIO)?;
        if let Some(src) = from {
            std::io::copy(src, &mut file).map_err(|_| Errno::EIO)?;
        }
        Ok(Buffer {
            file,
            disk,
            base,
            dirty: false,
            written: false,
            opens: 0,
            exec,
        })
    }

    /// The content type a commit of `path` sends: the file's own (so a type set through the
    /// API survives an edit here), with the executable bit as its `x-mode` parameter; none for
    /// a new plain file (the server guesses from the name).
    fn content_type_for(st: &State, path: &str, exec: bool) -> Option<String> {
        let known = st.tree.files.get(path).and_then(|f| f.content_type.clone());
        match known {
            Some(ct) => Some(tree::with_executable(&ct, exec)),
            None if exec => {
                let guess = mime_guess::from_path(path)
                    .first()
                    .map(|m| m.essence_str().to_owned())
                    .unwrap_or_else(|| "text/plain".to_owned());
                Some(tree::with_executable(&guess, true))
            }
            None => None,
        }
    }

    /// Commits the inode's buffer if it holds unsaved bytes.
    fn commit(&self, st: &mut State, ino: u64) -> Result<(), Errno> {
        let Some(path) = st.inodes.path(ino).map(str::to_owned) else {
            // Unlinked while open: its bytes belong to no path.
            if let Some(b) = st.buffers.get_mut(&ino) {
                b.dirty = false;
            }
            return Ok(());
        };
        let Some(b) = st.buffers.get(&ino) else {
            return Ok(());
        };
        if !b.dirty {
            return Ok(());
        }
        let size = b.file.metadata().map(|m| m.len()).unwrap_or(0);
        if size > self.remote.limits.max_upload_bytes {
            return Err(Errno::EFBIG);
        }
        let precondition = match &b.base {
            Base::Absent => Precondition::IfAbsent,
            Base::Etag(e) => Precondition::IfMatch(quote_etag(e)),
        };
        let ct = Self::content_type_for(st, &path, b.exec);
        let disk = b.disk.clone();
        match self.remote.put(&path, &disk, ct.as_deref(), &precondition) {
            Ok(mut meta) => {
                meta.size = Some(size);
                Self::landed(st, &path, &meta);
                if let Some(b) = st.buffers.get_mut(&ino) {
                    b.base = Base::Etag(meta.etag.clone());
                    b.dirty = false;
                    b.written = false;
                }
                st.paged.insert(ino, meta.etag.clone());
                Ok(())
            }
            Err(e) if is_conflict(&e) => {
                let current = e.current_version();
                let copy = self.conflict_copy(st, &path, &disk, current);
                let message = match &copy {
                    Some(c) => format!("the workspace has a newer version; this mount's bytes are in {c}"),
                    None => "the workspace has a newer version; this mount's bytes could not be kept in the workspace".to_owned(),
                };
                let local = if copy.is_none() {
                    self.keep_unsaved(&path, &disk)
                } else {
                    None
                };
                self.journal.record(
                    What::Write,
                    &path,
                    copy.as_deref().or(local.as_deref()),
                    current,
                    &message,
                );
                self.refresh(st, &path);
                // The bytes are kept (the copy); the base stays the version they were written
                // on, so a further write through this handle conflicts again rather than
                // overwriting a version its writer never saw.
                if let Some(b) = st.buffers.get_mut(&ino) {
                    b.dirty = false;
                    b.written = false;
                }
                Err(Errno::EIO)
            }
            Err(e) => {
                eprintln!("ws mount: {e}");
                Err(errno_of(&e))
            }
        }
    }

    /// Writes the losing bytes next to `path` under a name no file has:
    /// `<path>.conflict-<the workspace's version>-<mount id>[-n]`.
    fn conflict_copy(
        &self,
        st: &mut State,
        path: &str,
        disk: &std::path::Path,
        current: Option<u64>,
    ) -> Option<String> {
        let v = current
            .map(|v| v.to_string())
            .unwrap_or_else(|| "deleted".into());
        let base = format!("{path}.conflict-{v}-{}", self.opts.mount_id);
        for n in 0..16 {
            let candidate = if n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            if check_new_path(&candidate).is_err() {
                return None;
            }
            match self
                .remote
                .put(&candidate, disk, None, &Precondition::IfAbsent)
            {
                Ok(meta) => {
                    // Shown in the mount at once, not at the next read of the change log.
                    Self::landed(st, &candidate, &meta);
                    return Some(candidate);
                }
                Err(e) if is_conflict(&e) => continue,
                Err(e) => {
                    eprintln!("ws mount: {e}");
                    return None;
                }
            }
        }
        None
    }

    /// Keeps bytes the workspace would not take in the cache folder's `unsaved/`.
    fn keep_unsaved(&self, path: &str, disk: &std::path::Path) -> Option<String> {
        let name = format!("{}-{}", path.replace('/', "%2F"), journal_stamp());
        let dest = self.opts.unsaved.join(name);
        std::fs::create_dir_all(&self.opts.unsaved).ok()?;
        std::fs::copy(disk, &dest).ok()?;
        Some(dest.display().to_string())
    }

    /// The tree learns a version this mount committed.
    fn landed(st: &mut State, path: &str, meta: &Meta) {
        st.tree.apply(path, Some(meta));
        st.tree.local.remove(tree::parent_of(path));
    }

    /// Asks the server for `path` again (after a refused precondition).
    fn refresh(&self, st: &mut State, path: &str) {
        if let Ok(meta) = self.remote.stat(path) {
            st.tree.apply(path, meta.as_ref());
        }
    }

    /// A folder the mount just emptied stays until `rmdir` (as on a disk).
    fn keep_parent(st: &mut State, path: &str) {
        let parent = tree::parent_of(path);
        if !parent.is_empty() && st.tree.kind(parent).is_none() {
            st.tree.local.insert(parent.to_owned());
        }
    }

    /// The open flags for `ino` opened at `etag`: the kernel keeps the pages it holds when
    /// they are that version's (a change made elsewhere gets a new inode, a write here goes
    /// through the kernel, a conflict leaves `paged` at the losing bytes' base).
    fn cache_flags(st: &mut State, ino: u64, etag: Option<&str>, read_only: bool) -> FopenFlags {
        let mut flags = FopenFlags::empty();
        if read_only {
            // Closing a read-only handle has nothing to commit: no FLUSH round trip.
            flags |= FopenFlags::FOPEN_NOFLUSH;
        }
        let detached = st.detached.contains_key(&ino);
        match etag {
            Some(e) if !detached => {
                if st.paged.get(&ino).map(String::as_str) == Some(e) {
                    flags |= FopenFlags::FOPEN_KEEP_CACHE;
                }
                st.paged.insert(ino, e.to_owned());
            }
            _ => {
                st.paged.remove(&ino);
            }
        }
        flags
    }

    /// A folder's entries (`.` and `..` first) with their inodes and types.
    fn listing(&self, st: &mut State, ino: INodeNo) -> Result<Vec<(u64, FileType, String)>, Errno> {
        let key = Fs::path_of(st, ino)?;
        let children: Vec<(String, Kind)> = match hist_of(&key) {
            Some(Hist::Root) => vec![
                ("snapshots".into(), Kind::Dir),
                ("versions".into(), Kind::Dir),
            ],
            Some(Hist::Snapshots) => match self.remote.snapshots() {
                Ok(ids) => ids.into_iter().map(|i| (i, Kind::Dir)).collect(),
                Err(e) => return Err(errno_of(&e)),
            },
            Some(Hist::Snapshot { id, path }) => match self.snapshot_tree(st, &id) {
                Some(t) => t.children(&path),
                None => return Err(Errno::ENOENT),
            },
            Some(Hist::Versions { path }) => match st.tree.kind(&path) {
                Some(Kind::Dir) => st
                    .tree
                    .children(&path)
                    .into_iter()
                    .map(|(n, _)| (n, Kind::Dir))
                    .collect(),
                Some(Kind::File) => match self.version_rows(st, &path, true) {
                    Some(rows) => rows
                        .iter()
                        .map(|r| (r.version.to_string(), Kind::File))
                        .collect(),
                    None => return Err(Errno::EIO),
                },
                None => return Err(Errno::ENOENT),
            },
            None => {
                if st.tree.kind(&key) != Some(Kind::Dir) {
                    return Err(Errno::ENOTDIR);
                }
                let mut c = st.tree.children(&key);
                if key.is_empty() {
                    c.insert(0, (HISTORY.to_owned(), Kind::Dir));
                }
                c
            }
        };
        let parent_ino = st.inodes.ino(tree::parent_of(&key));
        let mut entries: Vec<(u64, FileType, String)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (parent_ino, FileType::Directory, "..".into()),
        ];
        for (name, kind) in children {
            let child = st.inodes.ino(&tree::join(&key, &name));
            let t = if kind == Kind::Dir {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            entries.push((child, t, name));
        }
        Ok(entries)
    }

    fn open_handle(&self, st: &mut State, handle: Handle) -> u64 {
        st.next_fh += 1;
        let fh = st.next_fh;
        st.handles.insert(fh, handle);
        fh
    }

    /// Commits the buffer behind write handle `fh` (`only_written`: only if bytes were
    /// written since the last commit); a read handle has nothing to commit.
    fn commit_handle(&self, fh: FileHandle, only_written: bool) -> Result<(), Errno> {
        let mut st = self.lock();
        let ino = match st.handles.get(&fh.0) {
            Some(Handle::Buffer {
                ino, write: true, ..
            }) => *ino,
            _ => return Ok(()),
        };
        if only_written && !st.buffers.get(&ino).is_some_and(|b| b.written) {
            return Ok(());
        }
        self.commit(&mut st, ino)
    }

    /// Commits every unsaved buffer (SIGTERM, SIGINT, unmount).
    pub fn flush_all(&self) {
        let mut st = self.lock();
        let inos: Vec<u64> = st
            .buffers
            .iter()
            .filter(|(_, b)| b.dirty)
            .map(|(i, _)| *i)
            .collect();
        for ino in inos {
            if self.commit(&mut st, ino).is_err() {
                self.save_unsaved(&mut st, ino);
            }
        }
    }

    /// A buffer that could not be committed (the server is gone, or refused it) is kept on
    /// this machine rather than dropped, and reported.
    fn save_unsaved(&self, st: &mut State, ino: u64) {
        let Some(b) = st.buffers.get_mut(&ino) else {
            return;
        };
        if !b.dirty {
            return;
        }
        b.dirty = false;
        let disk = b.disk.clone();
        let path = st.inodes.path(ino).unwrap_or("unlinked").to_owned();
        let kept = self.keep_unsaved(&path, &disk);
        self.journal.record(
            What::Unsaved,
            &path,
            kept.as_deref(),
            None,
            "these bytes could not be committed; they are kept on this machine",
        );
    }

    /// Applies the change log's rows (newest first: a path's first row is its state now);
    /// answers the kernel caches to drop. Only a changed file's own entry is dropped, never
    /// a folder's (a folder's entry may be a process's working directory, which
    /// invalidating would detach).
    pub fn apply_changes(
        &self,
        st: &mut State,
        rows: &[super::remote::Change],
    ) -> Vec<Invalidation> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for c in rows {
            if c.time > st.high_water {
                st.high_water.clone_from(&c.time);
            }
            let key = c.path.as_str();
            if !seen.insert(key) {
                continue;
            }
            let ours = c
                .meta
                .as_ref()
                .is_some_and(|m| st.gone.get(key) == Some(&m.etag));
            if ours {
                // A version this mount itself moved away or deleted.
                continue;
            }
            if tree::is_marker(key) {
                st.tree.apply(key, c.meta.as_ref());
                continue;
            }
            match st.tree.files.get(key) {
                Some(f) if f.stamp.is_none() || f.updated_at >= c.time => continue,
                Some(f) if c.meta.as_ref().map(|m| m.etag.as_str()) == f.etag() => continue,
                None if c.meta.is_none() => continue,
                _ => {}
            }
            let before = st.tree.files.get(key).cloned();
            st.tree.apply(key, c.meta.as_ref());
            // New bytes, new inode: a handle open on the old one keeps reading what it
            // opened (the kernel caches pages per inode); new opens get the new version.
            if let (Some(old), Some(b)) = (st.inodes.existing(key), before) {
                st.detached.insert(old, b);
            }
            Self::detach_changed(st, key, &mut out);
        }
        out
    }

    /// Merges a full listing (when the change log had too much to read). The listing was
    /// read outside the lock, so what this mount committed meanwhile is newer than it: an
    /// entry newer than everything listed is kept, an older one the listing lacks was deleted.
    pub fn reload(&self, st: &mut State, metas: &[Meta]) -> Vec<Invalidation> {
        let mut out = Vec::new();
        let State { tree, gone, .. } = st;
        for (path, before) in tree.merge_listing(metas, gone) {
            if let (Some(old), Some(b)) = (st.inodes.existing(&path), before) {
                st.detached.insert(old, b);
            }
            Self::detach_changed(st, &path, &mut out);
        }
        out
    }

    /// `path` changed elsewhere: its next lookup gets a new inode, its entry is dropped.
    fn detach_changed(st: &mut State, path: &str, out: &mut Vec<Invalidation>) {
        if st.inodes.existing(path).is_some() {
            st.inodes.detach(path);
            if let Some(p) = st.inodes.existing(tree::parent_of(path)) {
                out.push(Invalidation::Entry(p, tree::name_of(path).to_owned()));
            }
        }
    }

    fn rename_inner(
        &self,
        st: &mut State,
        from: &str,
        to: &str,
        flags: RenameFlags,
    ) -> Result<(), Errno> {
        self.writable(from)?;
        self.writable(to)?;
        check_new_path(to)?;
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            return Err(Errno::EINVAL);
        }
        let from_kind = st.tree.kind(from).ok_or(Errno::ENOENT)?;
        let to_kind = st.tree.kind(to);
        if flags.contains(RenameFlags::RENAME_NOREPLACE) && to_kind.is_some() {
            return Err(Errno::EEXIST);
        }
        if from == to {
            return Ok(());
        }
        match from_kind {
            Kind::File => self.rename_file(st, from, to, to_kind),
            Kind::Dir => self.rename_dir(st, from, to, to_kind),
        }
    }

    fn rename_file(
        &self,
        st: &mut State,
        from: &str,
        to: &str,
        to_kind: Option<Kind>,
    ) -> Result<(), Errno> {
        if to_kind == Some(Kind::Dir) {
            return Err(Errno::EISDIR);
        }
        if let Some(ino) = st.inodes.existing(from) {
            self.commit(st, ino)?;
        }
        let source = st.tree.files.get(from).cloned().ok_or(Errno::ENOENT)?;
        let Some(etag) = source.etag().map(str::to_owned) else {
            // Created here and never committed (its commit failed): renamed in the tree only.
            st.tree.files.remove(from);
            st.tree.files.insert(to.to_owned(), source);
            st.inodes.rename(from, to);
            return Ok(());
        };
        let mut op = json!({ "op": "move", "from": from, "to": to, "ifMatch": quote_etag(&etag) });
        match st.tree.files.get(to) {
            None => op["ifNoneMatch"] = json!("*"),
            Some(target) if target.stamp.is_none() => op["ifNoneMatch"] = json!("*"),
            Some(_) => {}
        }
        let results = match self.remote.commit(vec![op]) {
            Ok(r) => r,
            Err(e) if is_conflict(&e) => {
                let current = e.current_version();
                self.journal.record(
                    What::Rename,
                    from,
                    None,
                    current,
                    &format!("{from} or {to} changed in the workspace since this mount saw them; nothing was moved"),
                );
                self.refresh(st, from);
                self.refresh(st, to);
                return Err(Errno::EIO);
            }
            Err(e) => return Err(errno_of(&e)),
        };
        let moved = results
            .iter()
            .find(|r| r["op"] == "move")
            .and_then(|r| Meta::from_json(&r["to"]))
            .ok_or(Errno::EIO)?;
        self.moved(st, from, to, &moved, source.size);
        Self::keep_parent(st, from);
        Ok(())
    }

    /// Remembers a version this mount removed (bounded: an old entry only saves a reread).
    fn note_gone(st: &mut State, path: &str, etag: &str) {
        if st.gone.len() >= 10_000 {
            st.gone.clear();
        }
        st.gone.insert(path.to_owned(), etag.to_owned());
    }

    /// The tree, the inodes and open buffers after `from` moved to `to` (now `meta`).
    fn moved(&self, st: &mut State, from: &str, to: &str, meta: &Meta, size: u64) {
        if let Some(e) = st
            .tree
            .files
            .get(from)
            .and_then(|f| f.etag().map(str::to_owned))
        {
            Fs::note_gone(st, from, &e);
        }
        let mut meta = meta.clone();
        if meta.size.is_none() {
            meta.size = Some(size);
        }
        if let Some(old) = st.inodes.existing(to) {
            if let Some(b) = st.buffers.get_mut(&old) {
                b.dirty = false;
            }
        }
        st.tree.apply(from, None);
        Self::landed(st, to, &meta);
        st.inodes.rename(from, to);
        if let Some(ino) = st.inodes.existing(to) {
            if let Some(b) = st.buffers.get_mut(&ino) {
                b.base = Base::Etag(meta.etag.clone());
            }
        }
    }

    fn rename_dir(
        &self,
        st: &mut State,
        from: &str,
        to: &str,
        to_kind: Option<Kind>,
    ) -> Result<(), Errno> {
        if to.starts_with(&format!("{from}/")) {
            return Err(Errno::EINVAL);
        }
        match to_kind {
            Some(Kind::File) => return Err(Errno::ENOTDIR),
            Some(Kind::Dir) if !st.tree.children(to).is_empty() => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        // Unsaved buffers under the folder land first, so the move carries them.
        let open: Vec<u64> = st
            .buffers
            .keys()
            .copied()
            .filter(|i| {
                st.inodes
                    .path(*i)
                    .is_some_and(|p| p.starts_with(&format!("{from}/")))
            })
            .collect();
        for ino in open {
            self.commit(st, ino)?;
        }
        let files = st.tree.files_under(from);
        let mut ops: Vec<Value> = Vec::new();
        for f in &files {
            let entry = &st.tree.files[f];
            let Some(etag) = entry.etag() else {
                return Err(Errno::EBUSY);
            };
            let dest = format!("{to}{}", &f[from.len()..]);
            ops.push(json!({ "op": "move", "from": f, "to": dest, "ifMatch": quote_etag(etag), "ifNoneMatch": "*" }));
        }
        let marked: Vec<String> = st
            .tree
            .marked
            .iter()
            .filter(|d| *d == from || d.starts_with(&format!("{from}/")))
            .cloned()
            .collect();
        for d in &marked {
            let dest = format!("{to}{}", &d[from.len()..]);
            ops.push(json!({ "op": "move", "from": format!("{d}/{MARKER}"), "to": format!("{dest}/{MARKER}") }));
        }
        if st.tree.marked.contains(to) && !marked.iter().any(|d| d == from) {
            ops.push(json!({ "op": "delete", "path": format!("{to}/{MARKER}") }));
        }
        if ops.len() as u64 > self.remote.limits.max_commit_operations {
            // More than one commit may carry: `mv` then copies and deletes, file by file.
            return Err(Errno::EXDEV);
        }
        let results = if ops.is_empty() {
            Vec::new()
        } else {
            match self.remote.commit(ops) {
                Ok(r) => r,
                Err(e) if is_conflict(&e) => {
                    self.journal.record(
                        What::Rename,
                        from,
                        None,
                        e.current_version(),
                        &format!("a file under {from} changed in the workspace since this mount saw it; nothing was moved"),
                    );
                    for f in &files {
                        self.refresh(st, f);
                    }
                    return Err(Errno::EIO);
                }
                Err(e) => return Err(errno_of(&e)),
            }
        };
        for r in results.iter().filter(|r| r["op"] == "move") {
            let (Some(src), Some(meta)) = (r["from"].as_str(), Meta::from_json(&r["to"])) else {
                continue;
            };
            if tree::is_marker(src) {
                st.tree.apply(src, None);
                st.tree.apply(&meta.path, Some(&meta));
            } else {
                if let Some(e) = st
                    .tree
                    .files
                    .get(src)
                    .and_then(|f| f.etag().map(str::to_owned))
                {
                    Fs::note_gone(st, src, &e);
                }
                let size = st.tree.files.get(src).map(|f| f.size).unwrap_or(0);
                let mut meta = meta;
                meta.size.get_or_insert(size);
                st.tree.apply(src, None);
                st.tree.apply(&meta.path.clone(), Some(&meta));
            }
        }
        if st.tree.marked.contains(to) && !marked.iter().any(|d| d == from) {
            st.tree.marked.remove(to);
        }
        let locals: Vec<String> = st
            .tree
            .local
            .iter()
            .filter(|d| *d == from || d.starts_with(&format!("{from}/")))
            .cloned()
            .collect();
        for d in locals {
            st.tree.local.remove(&d);
            st.tree.local.insert(format!("{to}{}", &d[from.len()..]));
        }
        if st.tree.kind(to).is_none() {
            st.tree.local.insert(to.to_owned());
        }
        st.inodes.rename(from, to);
        Self::keep_parent(st, from);
        Ok(())
    }

    /// A file rewritten in place outside any handle (truncate(2), chmod): its bytes go
    /// through a one-off buffer and commit at once.
    fn rewrite(
        &self,
        st: &mut State,
        ino: u64,
        size: Option<u64>,
        exec: Option<bool>,
    ) -> Result<(), Errno> {
        let path = st.inodes.path(ino).ok_or(Errno::ENOENT)?.to_owned();
        let f = st.tree.files.get(&path).cloned().ok_or(Errno::ENOENT)?;
        let etag = f.etag().ok_or(Errno::EBUSY)?.to_owned();
        let mut body = self.body(&path, None, &etag)?;
        let mut b = self.new_buffer(
            Base::Etag(etag),
            exec.unwrap_or_else(|| f.executable()),
            Some(&mut body),
        )?;
        if let Some(n) = size {
            b.file.set_len(n).map_err(|_| Errno::EIO)?;
        }
        b.dirty = true;
        let disk = b.disk.clone();
        st.buffers.insert(ino, b);
        let result = self.commit(st, ino);
        st.buffers.remove(&ino);
        let _ = std::fs::remove_file(disk);
        result
    }
}

fn journal_stamp() -> String {
    super::journal::now_ms().to_string()
}

/// A kernel cache to drop after a change made elsewhere.
pub enum Invalidation {
    /// The name in the folder (its inode number) now means another inode.
    Entry(u64, String),
}

/// The type fuser mounts: the filesystem shared with the poller and the signal handler.
pub struct Mounted(pub Arc<Fs>);

impl Filesystem for Mounted {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // O_TRUNC arrives with open() instead of as a separate truncate first, so
        // `echo x > f` is one new version, not an empty one and then another.
        let _ = config.add_capabilities(fuser::InitFlags::FUSE_ATOMIC_O_TRUNC);
        Ok(())
    }

    fn destroy(&mut self) {
        self.0.flush_all();
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let fs = &self.0;
        let mut st = fs.lock();
        let key = match Fs::child(&st, parent, name, Errno::ENOENT) {
            Ok(k) if tree::name_of(&k) != MARKER => k,
            Ok(_) => return reply.error(Errno::ENOENT),
            Err(e) => return reply.error(e),
        };
        fs.reply_node(&mut st, &key, reply);
    }

    fn forget(&self, _req: &Request, ino: INodeNo, _nlookup: u64) {
        let mut st = self.0.lock();
        if st.inodes.forget_detached(ino.0) {
            st.detached.remove(&ino.0);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let fs = &self.0;
        let mut st = fs.lock();
        let Ok(key) = Fs::path_of(&st, ino) else {
            return reply.error(Errno::ENOENT);
        };
        match fs.node_of(&mut st, ino.0, &key) {
            Some(mut node) => {
                fs.past_size(&mut node);
                let attr = fs.attr(ino.0, &node, &st);
                reply.attr(&TTL, &attr);
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let fs = &self.0;
        let mut st = fs.lock();
        let Ok(key) = Fs::path_of(&st, ino) else {
            return reply.error(Errno::ENOENT);
        };
        let Some(node) = fs.node_of(&mut st, ino.0, &key) else {
            return reply.error(Errno::ENOENT);
        };
        let is_file = matches!(node, Node::File { .. });
        let exec = mode.map(|m| m & 0o100 != 0);
        let exec_change = match (&node, exec) {
            (Node::File { exec: now, .. }, Some(want)) => *now != want,
            _ => false,
        };
        if (size.is_some() || exec_change) && is_file {
            if let Err(e) = fs.writable(&key) {
                return reply.error(e);
            }
            let result = match st.buffers.get_mut(&ino.0) {
                Some(b) => {
                    let mut r = Ok(());
                    if let Some(n) = size {
                        r = b.file.set_len(n).map_err(|_| Errno::EIO);
                        b.dirty = true;
                        b.written = true;
                    }
                    if exec_change {
                        b.exec = exec.unwrap_or(b.exec);
                        b.dirty = true;
                        b.written = true;
                    }
                    r
                }
                None => {
                    let unchanged =
                        size.is_none_or(|n| Some(n) == st.tree.files.get(&key).map(|f| f.size));
                    if unchanged && !exec_change {
                        Ok(())
                    } else {
                        fs.rewrite(
                            &mut st,
                            ino.0,
                            size,
                            exec_change.then_some(exec.unwrap_or(false)),
                        )
                    }
                }
            };
            if let Err(e) = result {
                return reply.error(e);
            }
        } else if size.is_some() && !is_file {
            return reply.error(if hist_of(&key).is_some() {
                Errno::EROFS
            } else {
                Errno::EISDIR
            });
        }
        if let Some(t) = mtime {
            let t = match t {
                TimeOrNow::SpecificTime(t) => t,
                TimeOrNow::Now => SystemTime::now(),
            };
            st.mtimes.insert(ino.0, t);
        }
        match fs.node_of(&mut st, ino.0, &key) {
            Some(node) => {
                let attr = fs.attr(ino.0, &node, &st);
                reply.attr(&TTL, &attr);
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        // Devices, pipes and sockets have no place in a file store.
        reply.error(Errno::EPERM);
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let fs = &self.0;
        let mut st = fs.lock();
        let key = match Fs::child(&st, parent, name, Errno::EINVAL) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        if let Err(e) = fs.writable(&key) {
            return reply.error(e);
        }
        if st.tree.kind(&key).is_some() {
            return reply.error(Errno::EEXIST);
        }
        let marker = tree::join(&key, MARKER);
        if let Err(e) = check_new_path(&key).and_then(|_| {
            FilePath::parse(&marker)
                .map(|_| ())
                .map_err(|_| Errno::ENAMETOOLONG)
        }) {
            return reply.error(e);
        }
        let empty = fs.opts.buffers.join("empty");
        if std::fs::write(&empty, b"").is_err() {
            return reply.error(Errno::EIO);
        }
        match fs.remote.put(
            &marker,
            &empty,
            Some("application/x-directory"),
            &Precondition::IfAbsent,
        ) {
            Ok(_) => {}
            Err(e) if is_conflict(&e) => {}
            Err(e) => return reply.error(errno_of(&e)),
        }
        st.tree.marked.insert(key.clone());
        st.tree.local.remove(tree::parent_of(&key));
        fs.reply_node(&mut st, &key, reply);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let fs = &self.0;
        let mut st = fs.lock();
        let key = match Fs::child(&st, parent, name, Errno::ENOENT) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        if let Err(e) = fs.writable(&key) {
            return reply.error(e);
        }
        match st.tree.kind(&key) {
            None => return reply.error(Errno::ENOENT),
            Some(Kind::Dir) => return reply.error(Errno::EISDIR),
            Some(Kind::File) => {}
        }
        let f = st.tree.files[&key].clone();
        if let Some(etag) = f.etag() {
            match fs.remote.delete(&key, &quote_etag(etag)) {
                Ok(()) => {}
                Err(e) if e.status == Some(404) => {}
                Err(e) if is_conflict(&e) => {
                    fs.journal.record(
                        What::Unlink,
                        &key,
                        None,
                        e.current_version(),
                        "the file changed in the workspace since this mount saw it; it was not deleted",
                    );
                    fs.refresh(&mut st, &key);
                    return reply.error(Errno::EIO);
                }
                Err(e) => return reply.error(errno_of(&e)),
            }
        }
        if let Some(etag) = f.etag() {
            Fs::note_gone(&mut st, &key, etag);
        }
        st.tree.files.remove(&key);
        st.inodes.forget_path(&key);
        Fs::keep_parent(&mut st, &key);
        reply.ok();
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let fs = &self.0;
        let mut st = fs.lock();
        let key = match Fs::child(&st, parent, name, Errno::ENOENT) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        if let Err(e) = fs.writable(&key) {
            return reply.error(e);
        }
        match st.tree.kind(&key) {
            None => return reply.error(Errno::ENOENT),
            Some(Kind::File) => return reply.error(Errno::ENOTDIR),
            Some(Kind::Dir) => {}
        }
        if !st.tree.children(&key).is_empty() {
            return reply.error(Errno::ENOTEMPTY);
        }
        if st.tree.marked.contains(&key) {
            let marker = tree::join(&key, MARKER);
            match fs
                .remote
                .commit(vec![json!({ "op": "delete", "path": marker })])
            {
                Ok(_) => {}
                Err(e) if e.status == Some(404) => {}
                Err(e) => return reply.error(errno_of(&e)),
            }
            st.tree.marked.remove(&key);
        }
        st.tree.local.remove(&key);
        st.inodes.forget_path(&key);
        Fs::keep_parent(&mut st, &key);
        reply.ok();
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let fs = &self.0;
        let mut st = fs.lock();
        let moved = Fs::child(&st, parent, name, Errno::EINVAL).and_then(|from| {
            let to = Fs::child(&st, newparent, newname, Errno::EINVAL)?;
            fs.rename_inner(&mut st, &from, &to, flags)
        });
        match moved {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let fs = &self.0;
        let mut st = fs.lock();
        let Ok(key) = Fs::path_of(&st, ino) else {
            return reply.error(Errno::ENOENT);
        };
        let write = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
        let trunc = flags.0 & libc::O_TRUNC != 0;
        let append = flags.0 & libc::O_APPEND != 0;
        let node = match fs.node_of(&mut st, ino.0, &key) {
            Some(n) => n,
            None => return reply.error(Errno::ENOENT),
        };
        match node {
            Node::Dir { .. } => reply.error(Errno::EISDIR),
            Node::Past {
                path, query, etag, ..
            } => {
                if write {
                    return reply.error(Errno::EROFS);
                }
                match fs.body(&path, Some(query), &etag) {
                    Ok(f) => {
                        let fh = fs.open_handle(&mut st, Handle::Body(f));
                        // A past version's inode is that version forever: its pages stay.
                        let flags = FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_NOFLUSH;
                        reply.opened(FileHandle(fh), flags);
                    }
                    Err(e) => reply.error(e),
                }
            }
            Node::File { .. } => {
                if write {
                    if let Err(e) = fs.writable(&key) {
                        return reply.error(e);
                    }
                }
                let f = st.tree.files[&key].clone();
                if !write && !st.buffers.contains_key(&ino.0) {
                    let Some(etag) = f.etag() else {
                        return reply.error(Errno::EIO);
                    };
                    return match fs.body(&key, None, etag) {
                        Ok(file) => {
                            let fh = fs.open_handle(&mut st, Handle::Body(file));
                            let flags = Fs::cache_flags(&mut st, ino.0, Some(etag), true);
                            reply.opened(FileHandle(fh), flags);
                        }
                        Err(e) => reply.error(e),
                    };
                }
                let b = match st.buffers.entry(ino.0) {
                    Entry::Occupied(o) => o.into_mut(),
                    Entry::Vacant(slot) => {
                        let base = f
                            .etag()
                            .map(|e| Base::Etag(e.to_owned()))
                            .unwrap_or(Base::Absent);
                        let mut body = match f.etag() {
                            Some(etag) if !trunc => match fs.body(&key, None, etag) {
                                Ok(b) => Some(b),
                                Err(e) => return reply.error(e),
                            },
                            _ => None,
                        };
                        match fs.new_buffer(base, f.executable(), body.as_mut()) {
                            Ok(b) => slot.insert(b),
                            Err(e) => return reply.error(e),
                        }
                    }
                };
                if write && trunc {
                    if b.file.set_len(0).is_err() {
                        return reply.error(Errno::EIO);
                    }
                    b.dirty = true;
                }
                b.opens += 1;
                let paged = match (&b.base, b.dirty) {
                    (Base::Etag(e), false) => Some(e.clone()),
                    _ => None,
                };
                let fh = fs.open_handle(
                    &mut st,
                    Handle::Buffer {
                        ino: ino.0,
                        write,
                        append,
                    },
                );
                let flags = Fs::cache_flags(&mut st, ino.0, paged.as_deref(), !write);
                reply.opened(FileHandle(fh), flags);
            }
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let fs = &self.0;
        let mut st = fs.lock();
        let key = match Fs::child(&st, parent, name, Errno::EINVAL) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        if let Err(e) = fs.writable(&key).and_then(|_| check_new_path(&key)) {
            return reply.error(e);
        }
        if st.tree.kind(&key).is_some() {
            if flags & libc::O_EXCL != 0 {
                return reply.error(Errno::EEXIST);
            }
            if st.tree.kind(&key) == Some(Kind::Dir) {
                return reply.error(Errno::EISDIR);
            }
        } else {
            st.tree.files.insert(
                key.clone(),
                tree::File {
                    stamp: None,
                    size: 0,
                    sized: true,
                    updated_at: workspace_core::model::format_time(super::journal::now_ms()),
                    content_type: None,
                },
            );
        }
        let ino = st.inodes.ino(&key);
        let known = st.tree.files[&key].clone();
        let b = match st.buffers.entry(ino) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(slot) => {
                let base = known
                    .etag()
                    .map(|e| Base::Etag(e.to_owned()))
                    .unwrap_or(Base::Absent);
                match fs.new_buffer(base, mode & 0o100 != 0, None) {
                    Ok(b) => slot.insert(b),
                    Err(e) => return reply.error(e),
                }
            }
        };
        let _ = b.file.set_len(0);
        b.dirty = true;
        b.opens += 1;
        let append = flags & libc::O_APPEND != 0;
        let fh = fs.open_handle(
            &mut st,
            Handle::Buffer {
                ino,
                write: true,
                append,
            },
        );
        let Some(node) = fs.node(&mut st, &key) else {
            return reply.error(Errno::EIO);
        };
        let attr = fs.attr(ino, &node, &st);
        reply.created(
            &TTL,
            &attr,
            Generation(0),
            FileHandle(fh),
            FopenFlags::empty(),
        );
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let fs = &self.0;
        let st = fs.lock();
        let file = match st.handles.get(&fh.0) {
            Some(Handle::Body(f)) => f,
            Some(Handle::Buffer { ino, .. }) => match st.buffers.get(ino) {
                Some(b) => &b.file,
                None => return reply.error(Errno::EBADF),
            },
            None => return reply.error(Errno::EBADF),
        };
        let mut buf = vec![0u8; size as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match file.read_at(&mut buf[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(_) => return reply.error(Errno::EIO),
            }
        }
        reply.data(&buf[..filled]);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let fs = &self.0;
        let mut st = fs.lock();
        let (ino, append) = match st.handles.get(&fh.0) {
            Some(Handle::Buffer {
                ino,
                write: true,
                append,
            }) => (*ino, *append),
            _ => return reply.error(Errno::EBADF),
        };
        let Some(b) = st.buffers.get_mut(&ino) else {
            return reply.error(Errno::EBADF);
        };
        let at = if append {
            b.file.metadata().map(|m| m.len()).unwrap_or(offset)
        } else {
            offset
        };
        if at + data.len() as u64 > fs.remote.limits.max_upload_bytes {
            return reply.error(Errno::EFBIG);
        }
        match b.file.write_all_at(data, at) {
            Ok(()) => {
                b.dirty = true;
                b.written = true;
                reply.written(data.len() as u32);
            }
            Err(_) => reply.error(Errno::EIO),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Only once bytes were written: a shell's `> f` closes a duplicate first.
        match self.0.commit_handle(fh, true) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.0.commit_handle(fh, false) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let fs = &self.0;
        let mut st = fs.lock();
        let Some(handle) = st.handles.remove(&fh.0) else {
            return reply.ok();
        };
        if let Handle::Buffer { ino, .. } = handle {
            // A commit that failed at close is tried once more; bytes that still cannot
            // land are kept on this machine, never dropped.
            if fs.commit(&mut st, ino).is_err() {
                fs.save_unsaved(&mut st, ino);
            }
            let last = st.buffers.get_mut(&ino).map(|b| {
                b.opens = b.opens.saturating_sub(1);
                b.opens == 0
            });
            if last == Some(true) {
                if let Some(b) = st.buffers.remove(&ino) {
                    // Committed bytes are that version's body: kept in the cache, so reading
                    // back what was just written costs no request.
                    let current = st
                        .inodes
                        .path(ino)
                        .and_then(|p| st.tree.files.get(p))
                        .and_then(|f| f.etag());
                    match (&b.base, b.dirty) {
                        (Base::Etag(e), false) if current == Some(e.as_str()) => {
                            if fs.cache.insert(e, &b.disk).is_err() {
                                let _ = std::fs::remove_file(&b.disk);
                            }
                        }
                        _ => {
                            let _ = std::fs::remove_file(&b.disk);
                        }
                    }
                }
                // A file created here whose commit never landed has no version to show.
                if let Some(path) = st.inodes.path(ino).map(str::to_owned) {
                    if st.tree.files.get(&path).is_some_and(|f| f.stamp.is_none()) {
                        st.tree.files.remove(&path);
                        st.inodes.forget_path(&path);
                    }
                }
            }
        }
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let fs = &self.0;
        let mut st = fs.lock();
        let entries = match fs.listing(&mut st, ino) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        // One listing per open: readdir pages through it (stable, and a large folder is
        // listed once, not once per page). Past the bound, pages are listed afresh.
        st.next_fh += 1;
        let fh = st.next_fh;
        if st.dirs.len() < MAX_OPEN_DIRS {
            st.dirs.insert(fh, entries);
        }
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.0.lock().dirs.remove(&fh.0);
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let fs = &self.0;
        let mut st = fs.lock();
        let fresh;
        let entries = match st.dirs.get(&fh.0) {
            Some(e) => e,
            None => {
                fresh = match fs.listing(&mut st, ino) {
                    Ok(e) => e,
                    Err(e) => return reply.error(e),
                };
                &fresh
            }
        };
        for (i, (child, t, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*child), (i + 1) as u64, *t, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let files = self.0.lock().tree.files.len() as u64;
        // The workspace's quotas are per file and per count, not per block: say "plenty".
        reply.statfs(1 << 30, 1 << 29, 1 << 29, files, 1 << 20, 4096, 255, 4096);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_paths_parse() {
        assert_eq!(hist_of(".workspace"), Some(Hist::Root));
        assert_eq!(hist_of(".workspace/snapshots"), Some(Hist::Snapshots));
        assert_eq!(
            hist_of(".workspace/snapshots/s1/a/b.md"),
            Some(Hist::Snapshot {
                id: "s1".into(),
                path: "a/b.md".into()
            })
        );
        assert_eq!(
            hist_of(".workspace/versions/a/b.md/3"),
            Some(Hist::Versions {
                path: "a/b.md/3".into()
            })
        );
        assert_eq!(hist_of("a/.workspace"), None);
        assert_eq!(hist_of(".workspacex"), None);
    }

    #[test]
    fn names_the_workspace_refuses_are_refused_before_any_write() {
        assert_eq!(check_new_path("a/b.md"), Ok(()));
        assert_eq!(check_new_path("a/.git"), Ok(()));
        assert_eq!(
            check_new_path(".git"),
            Err(Errno::EINVAL),
            "a path starts with a letter or digit"
        );
        assert_eq!(check_new_path("a b"), Err(Errno::EINVAL));
        assert_eq!(check_new_path("d/.wsdir"), Err(Errno::EINVAL));
        assert_eq!(check_new_path(&"a".repeat(256)), Err(Errno::ENAMETOOLONG));
        assert_eq!(
            check_new_path(&format!("a/{}", "b".repeat(255))),
            Err(Errno::ENAMETOOLONG)
        );
    }

    #[test]
    fn refusals_map_to_errno() {
        let refused = |status: u16, detail: &str| {
            let mut e = Error::new(ErrorKind::from_status(status), "x", detail);
            e.status = Some(status);
            errno_of(&e)
        };
        assert_eq!(refused(400, "path contains ' '"), Errno::EINVAL);
        assert_eq!(
            refused(400, "path is 300 bytes; the limit is 256"),
            Errno::ENAMETOOLONG
        );
        assert_eq!(
            refused(
                403,
                "this credential may not change files: it needs the workspace:write scope"
            ),
            Errno::EROFS
        );
        assert_eq!(
            refused(
                403,
                "this key may write only paths matching a/**; b is outside them"
            ),
            Errno::EACCES
        );
        assert_eq!(
            refused(413, "the workspace holds 1000 files"),
            Errno::EDQUOT
        );
        assert_eq!(refused(404, "no such file"), Errno::ENOENT);
        assert_eq!(refused(503, "down"), Errno::EIO);
    }
}
