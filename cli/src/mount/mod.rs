//! `ws mount DIR`: the workspace as a folder (FUSE), over the same URL and credential as
//! every `ws` command. `docs/mount.md` says what each POSIX call does and does not do.
//!
//! fuser (the maintained, pure-Rust FUSE crate: no libfuse needed, mounts through
//! `fusermount3`) carries the kernel protocol; [`fs`] is our one `Filesystem` over
//! [`remote`], the API. A poller follows the change log (every `--refresh-ms`) so changes made
//! elsewhere show here within about a second, and drops the kernel's caches of what changed.

mod cache;
mod fs;
mod journal;
mod remote;
mod tree;

use crate::cli::MountArgs;
use crate::client::Client;
use crate::error::{Error, Kind, Result};
use crate::{discovery, route};
use fs::{Fs, Invalidation, Mounted, Options};
use fuser::{Config, INodeNo, MountOption, Notifier};
use reqwest::Method;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How far back each change-log read reaches before the newest change already applied: the
/// rows of one instant may arrive in more than one read.
const CHANGE_OVERLAP_MS: i64 = 2_000;
/// How long a stop by signal waits for programs to close the files they hold open.
const SIGNAL_GRACE: Duration = Duration::from_secs(5);

/// The cache folder of a mount point: `--cache-dir`, else one per mount point under the
/// user's cache folder (so `--status` finds it from the folder alone).
fn cache_dir(dir: &Path, given: Option<&PathBuf>) -> Result<PathBuf> {
    if let Some(d) = given {
        return Ok(d.clone());
    }
    let base = dirs::cache_dir()
        .ok_or_else(|| Error::bad_input("cannot mount", "no cache folder; pass --cache-dir"))?;
    let id = hex::encode(&sha2::Sha256::digest(dir.as_os_str().as_encoded_bytes())[..8]);
    Ok(base.join("ws").join("mounts").join(id))
}

use sha2::Digest;

fn absolute(dir: &Path) -> Result<PathBuf> {
    std::path::absolute(dir)
        .map_err(|e| Error::bad_input(format!("cannot mount {}", dir.display()), e))
}

/// Whether `dir` is a mount point now (`/proc/self/mounts`), and its filesystem type.
fn mounted_type(dir: &Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let want = dir.to_str()?;
    mounts.lines().find_map(|l| {
        let mut f = l.split(' ');
        let (_src, target, fstype) = (f.next()?, f.next()?, f.next()?);
        (target == want).then(|| fstype.to_owned())
    })
}

fn fusermount_unmount(dir: &Path, lazy: bool) -> bool {
    for tool in ["fusermount3", "fusermount"] {
        let mut cmd = std::process::Command::new(tool);
        cmd.arg("-u");
        if lazy {
            cmd.arg("-z");
        }
        if cmd.arg(dir).status().is_ok_and(|s| s.success()) {
            return true;
        }
    }
    false
}

/// A mount left by a killed `ws mount` answers ENOTCONN: unmount it so this one can start.
fn clean_stale(dir: &Path) -> Result<()> {
    let Some(fstype) = mounted_type(dir) else {
        return Ok(());
    };
    let stale =
        matches!(std::fs::metadata(dir), Err(e) if e.raw_os_error() == Some(libc::ENOTCONN));
    if stale && fstype.starts_with("fuse") {
        eprintln!(
            "ws mount: {} was left mounted by a mount that ended; unmounting it",
            dir.display()
        );
        if fusermount_unmount(dir, true) {
            return Ok(());
        }
    }
    Err(Error::bad_input(
        format!("cannot mount {}", dir.display()),
        format!("it is already a mount point ({fstype})"),
    )
    .with_hint(format!("run `ws unmount {}` first", dir.display())))
}

pub async fn run(client: Client, args: MountArgs) -> Result<()> {
    let dir = absolute(&args.dir)?;
    let cache = cache_dir(&dir, args.cache_dir.as_ref())?;
    if args.status {
        return status(&client, &cache).await;
    }
    clean_stale(&dir)?;
    if !dir.is_dir() {
        return Err(Error::bad_input(
            format!("cannot mount {}", dir.display()),
            "not a folder (create it first)",
        ));
    }
    std::fs::create_dir_all(&cache)
        .map_err(|e| Error::bad_input(format!("cannot use {}", cache.display()), e))?;
    if !args.foreground {
        return background(&dir, &cache);
    }
    foreground(client, args, dir, cache).await
}

/// Starts this same command with `--foreground` in its own session, its output in
/// `mount.log` of the cache folder, and returns once the folder is mounted.
fn background(dir: &Path, cache: &Path) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let log = cache.join("mount.log");
    let out = std::fs::File::create(&log)
        .map_err(|e| Error::bad_input(format!("cannot write {}", log.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| Error::new(Kind::Server, "cannot mount", e))?;
    let me = std::env::current_exe().map_err(|e| Error::new(Kind::Server, "cannot mount", e))?;
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.push("--foreground".into());
    let mut child = std::process::Command::new(me)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| Error::new(Kind::Server, "cannot start the mount", e))?;
    for _ in 0..300 {
        if mounted_type(dir).is_some_and(|t| t.starts_with("fuse")) {
            eprintln!("mounted {} (log: {})", dir.display(), log.display());
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(Error::new(
                Kind::Server,
                format!("cannot mount {}", dir.display()),
                format!("the mount exited ({status}): {}", text.trim()),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(Error::new(
        Kind::Server,
        format!("cannot mount {}", dir.display()),
        format!("not mounted after 15 s; see {}", log.display()),
    ))
}

async fn foreground(client: Client, args: MountArgs, dir: PathBuf, cache: PathBuf) -> Result<()> {
    let what = format!("cannot mount {}", dir.display());
    let client = match &args.fork {
        Some(id) => fork_client(client, id).await?,
        None => client,
    };
    let limits = discovery::limits(&client).await?;
    let mount_id = hex::encode(rand_bytes());
    let read_only = args.read_only || args.snapshot.is_some();
    let buffers = cache.join("buffers");
    let unsaved = cache.join("unsaved");
    keep_leftovers(&buffers, &unsaved);
    std::fs::create_dir_all(&buffers).map_err(|e| Error::new(Kind::Server, &what, e))?;
    let bodies = cache::BodyCache::new(cache.join("bodies"), args.cache_max_mb * 1024 * 1024)
        .map_err(|e| Error::new(Kind::Server, &what, e))?;
    let remote = remote::Remote::new(
        client,
        tokio::runtime::Handle::current(),
        limits,
        args.snapshot.clone(),
        &mount_id,
    );
    let journal = journal::Journal::new(cache.join("conflicts.jsonl"));
    let opts = Options {
        read_only,
        mount_id,
        buffers,
        unsaved,
    };
    // The starting listing and the change log's newest time, off the runtime's threads
    // (the remote blocks on the runtime).
    let (fs, remote_err) = tokio::task::spawn_blocking(move || {
        let high = if remote.snapshot.is_some() {
            String::new()
        } else {
            match remote.changes_since(None, Some(1)) {
                Ok(Some(rows)) => rows.first().map(|c| c.time.clone()).unwrap_or_default(),
                Ok(None) => String::new(),
                Err(e) => return (None, Some(e)),
            }
        };
        match remote.list_all() {
            Ok(metas) => {
                let t = tree::Tree::from_listing(&metas);
                (Some(Fs::new(remote, bodies, journal, opts, t, high)), None)
            }
            Err(e) => (None, Some(e)),
        }
    })
    .await
    .map_err(|e| Error::new(Kind::Server, &what, e))?;
    let fs = match (fs, remote_err) {
        (Some(fs), _) => Arc::new(fs),
        (None, Some(e)) => return Err(e),
        (None, None) => return Err(Error::new(Kind::Server, &what, "no listing")),
    };

    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("ws".into()),
        MountOption::Subtype("ws".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    if read_only {
        config.mount_options.push(MountOption::RO);
    }
    let mut session = fuser::Session::new(Mounted(fs.clone()), &dir, &config).map_err(|e| {
        Error::new(Kind::Server, &what, e).with_hint(
            "the machine needs /dev/fuse and fusermount3 (Debian: apt-get install fuse3)",
        )
    })?;
    let notifier = session.notifier();
    let mut unmounter = session.unmount_callable();
    let done = Arc::new(AtomicBool::new(false));
    let session_thread = std::thread::spawn(move || session.run());
    let poller = {
        let (fs, done) = (fs.clone(), done.clone());
        let every = Duration::from_millis(args.refresh_ms.max(100));
        std::thread::spawn(move || follow_changes(&fs, &notifier, &done, every))
    };
    eprintln!("ws mount: {} mounted", dir.display());

    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Error::new(Kind::Server, &what, e))?;
    let ended = {
        let done = done.clone();
        tokio::task::spawn_blocking(move || {
            let r = session_thread.join();
            done.store(true, Ordering::Relaxed);
            r
        })
    };
    tokio::pin!(ended);
    let by_signal = tokio::select! {
        _ = tokio::signal::ctrl_c() => true,
        _ = term.recv() => true,
        _ = &mut ended => false,
    };
    if by_signal {
        eprintln!("ws mount: stopping: committing open files, then unmounting");
        let flusher = fs.clone();
        let _ = tokio::task::spawn_blocking(move || flusher.flush_all()).await;
        if unmounter.unmount().is_err() && !fusermount_unmount(&dir, false) {
            // Files are still open in it: detach it from the tree now, and end once they are
            // closed, or after a grace period (their bytes so far are committed above; a
            // write after that gets ENOTCONN, never a silent loss).
            fusermount_unmount(&dir, true);
        }
        if tokio::time::timeout(SIGNAL_GRACE, &mut ended)
            .await
            .is_err()
        {
            let flusher = fs.clone();
            let _ = tokio::task::spawn_blocking(move || flusher.flush_all()).await;
            eprintln!(
                "ws mount: files were still open after {} s; stopping anyway",
                SIGNAL_GRACE.as_secs()
            );
            std::process::exit(0);
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = poller.join();
    eprintln!("ws mount: {} unmounted", dir.display());
    Ok(())
}

/// A fork is a workspace of its own: mount it by its workspace id.
async fn fork_client(client: Client, fork: &str) -> Result<Client> {
    let answer = client
        .json(
            client.api(Method::GET, &route::fork(fork, "")),
            &format!("cannot read fork {fork}"),
        )
        .await?;
    let Some(ws) = answer["workspaceId"].as_str() else {
        return Err(Error::new(
            Kind::Server,
            format!("cannot read fork {fork}"),
            "the answer has no workspaceId",
        ));
    };
    let mut settings = client.settings().clone();
    settings.workspace = Some(ws.to_owned());
    Client::new(settings)
}

fn rand_bytes() -> [u8; 3] {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
        ^ u128::from(std::process::id()) << 40;
    let h = sha2::Sha256::digest(n.to_le_bytes());
    [h[0], h[1], h[2]]
}

/// Buffers a killed mount left behind were never committed; they are moved to `unsaved/`
/// (listed by `--status`) rather than deleted or committed half-written.
fn keep_leftovers(buffers: &Path, unsaved: &Path) {
    let Ok(entries) = std::fs::read_dir(buffers) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if name == "empty" || e.metadata().is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(e.path());
            continue;
        }
        let _ = std::fs::create_dir_all(unsaved);
        let dest = unsaved.join(format!(
            "leftover-{}-{}",
            journal::now_ms(),
            name.to_string_lossy()
        ));
        if std::fs::rename(e.path(), &dest).is_ok() {
            eprintln!(
                "ws mount: kept bytes a previous mount never committed in {}",
                dest.display()
            );
        }
    }
}

/// The poller: reads the change log every `every`, applies it, then drops the kernel's
/// caches of what changed (outside the lock: the kernel may need the filesystem to answer).
fn follow_changes(fs: &Fs, notifier: &Notifier, done: &AtomicBool, every: Duration) {
    if fs.remote.snapshot.is_some() {
        return;
    }
    let mut warned = false;
    while !done.load(Ordering::Relaxed) {
        // In slices, so an unmount is not kept waiting for a long --refresh-ms.
        let slept = std::time::Instant::now();
        while slept.elapsed() < every && !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50).min(every));
        }
        if done.load(Ordering::Relaxed) {
            break;
        }
        let since = {
            let st = fs.lock();
            workspace_core::model::parse_time(&st.high_water)
                .map(|ms| workspace_core::model::format_time(ms - CHANGE_OVERLAP_MS))
        };
        let invalidations = match fs.remote.changes_since(since.as_deref(), None) {
            Ok(Some(rows)) => {
                let mut st = fs.lock();
                fs.apply_changes(&mut st, &rows)
            }
            Ok(None) => match fs.remote.list_all() {
                Ok(metas) => {
                    let mut st = fs.lock();
                    let newest = metas
                        .iter()
                        .map(|m| m.updated_at.clone())
                        .max()
                        .unwrap_or_default();
                    if newest > st.high_water {
                        st.high_water = newest;
                    }
                    fs.reload(&mut st, &metas)
                }
                Err(_) => continue,
            },
            Err(e) => {
                if !warned {
                    eprintln!("ws mount: cannot follow changes (retrying): {e}");
                    warned = true;
                }
                continue;
            }
        };
        warned = false;
        for inv in invalidations {
            let Invalidation::Entry(parent, name) = inv;
            let _ = notifier.inval_entry(INodeNo(parent), std::ffi::OsStr::new(&name));
        }
    }
}

/// `ws mount --status DIR`: whether it is mounted, and the conflicts still unresolved (a
/// conflict copy that is still in the workspace, or bytes kept on this machine).
async fn status(client: &Client, cache: &Path) -> Result<()> {
    let records = journal::read(&cache.join("conflicts.jsonl"));
    let mut open = 0;
    for r in &records {
        let kept = r["keptAt"].as_str();
        let still = match (r["kind"].as_str(), kept) {
            (Some("unsaved"), Some(k)) => Path::new(k).exists(),
            (_, Some(copy)) => {
                let q = route::with_query(route::FILES, &[("prefix", Some(copy.to_owned()))]);
                let page = client
                    .json(client.api(Method::GET, &q), "cannot list files")
                    .await?;
                page["files"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|f| f["path"] == copy)
            }
            // Rename and unlink conflicts changed nothing: they are news, not work.
            _ => false,
        };
        if still || kept.is_none() {
            open += usize::from(still);
            println!(
                "{}\t{}\t{}\t{}",
                r["time"].as_str().unwrap_or(""),
                r["kind"].as_str().unwrap_or(""),
                r["path"].as_str().unwrap_or(""),
                kept.map(|k| format!("kept at {k}"))
                    .unwrap_or_else(|| r["message"].as_str().unwrap_or("").to_owned()),
            );
        }
    }
    let leftovers = std::fs::read_dir(cache.join("unsaved"))
        .map(|d| d.count())
        .unwrap_or(0);
    eprintln!(
        "{open} unresolved conflict(s); {leftovers} file(s) in {}",
        cache.join("unsaved").display()
    );
    Ok(())
}

/// `ws unmount DIR`: the mount commits what is open and exits.
pub fn unmount(dir: &Path) -> Result<()> {
    let dir = absolute(dir)?;
    if mounted_type(&dir).is_none() {
        return Err(Error::new(
            Kind::NotFound,
            format!("cannot unmount {}", dir.display()),
            "it is not mounted",
        ));
    }
    if fusermount_unmount(&dir, false) {
        return Ok(());
    }
    Err(Error::new(
        Kind::Server,
        format!("cannot unmount {}", dir.display()),
        "it is busy (a program has a file or folder open in it)",
    )
    .with_hint("close what uses it, or stop the mount process (SIGTERM commits and detaches)"))
}
