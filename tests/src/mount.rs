//! `ws mount` as a process of the tests: started in the foreground on a temporary folder,
//! waited for until it answers, and on drop (pass or fail) unmounted lazily and killed.

use crate::local::binaries;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a mount may take to appear, or to exit after `ws unmount`.
const WAIT: Duration = Duration::from_secs(30);

/// A folder removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ws-mount-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `ws mount` process in the foreground, and its folder.
pub struct Mount {
    pub dir: PathBuf,
    pub cache: PathBuf,
    pub child: Option<Child>,
    log: Arc<Mutex<String>>,
    /// The temporary folders this mount made (removed after it is unmounted).
    _owned: Vec<TempDir>,
}

impl Mount {
    pub fn start(url: &str, key: &str, args: &[&str]) -> Mount {
        let (dir, cache) = (TempDir::new("dir"), TempDir::new("cache"));
        let (d, c) = (dir.0.clone(), cache.0.clone());
        let mut m = Mount::start_at(&d, &c, url, key, args);
        m._owned = vec![dir, cache];
        m
    }

    /// A mount on `dir` with its cache in `cache` (both left in place afterwards).
    pub fn start_at(dir: &Path, cache: &Path, url: &str, key: &str, args: &[&str]) -> Mount {
        let refresh: &[&str] = if args.contains(&"--refresh-ms") {
            &[]
        } else {
            &["--refresh-ms", "200"]
        };
        let mut child = Command::new(&binaries().ws)
            .env_remove("WS_URL")
            .env_remove("WS_KEY")
            .env_remove("WS_WORKSPACE")
            .env("HOME", cache)
            .env("WS_CONFIG", cache.join("ws.json"))
            .args(["--url", url, "--key", key, "mount"])
            .arg(dir)
            .arg("--foreground")
            .args(refresh)
            .arg("--cache-dir")
            .arg(cache)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ws mount");
        let log = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().expect("stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut m = Mount {
            dir: dir.to_owned(),
            cache: cache.to_owned(),
            child: Some(child),
            log,
            _owned: Vec::new(),
        };
        let deadline = Instant::now() + WAIT;
        // Mounted, and answering (a stale mount of a killed process is listed too).
        while !(m.is_mounted() && std::fs::metadata(&m.dir).is_ok()) {
            if let Some(Ok(Some(status))) = m.child.as_mut().map(|c| c.try_wait()) {
                panic!("ws mount exited ({status}) without mounting:\n{}", m.log());
            }
            assert!(
                Instant::now() < deadline,
                "not mounted after {WAIT:?}:\n{}",
                m.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }

    pub fn is_mounted(&self) -> bool {
        let want = self.dir.to_str().expect("utf-8");
        std::fs::read_to_string("/proc/self/mounts")
            .unwrap_or_default()
            .lines()
            .any(|l| l.split(' ').nth(1) == Some(want))
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// `ws unmount DIR`; the mount process must then exit by itself, successfully.
    pub fn unmount(&mut self) -> ExitStatus {
        let out = Command::new(&binaries().ws)
            .arg("unmount")
            .arg(&self.dir)
            .output()
            .expect("ws unmount");
        assert!(
            out.status.success(),
            "ws unmount: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut child = self.child.take().expect("a running mount");
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the mount did not exit:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: no chance to commit or unmount.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.is_mounted() {
            let _ = Command::new("fusermount3")
                .arg("-u")
                .arg("-z")
                .arg(&self.dir)
                .status();
        }
        self.kill9();
    }
}
