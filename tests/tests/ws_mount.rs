//! `ws mount`, for real: the `ws` binary mounts (FUSE, through fusermount3) a workspace of
//! the real local server (`workspace-local`, the embedded store) on a temporary folder, and
//! real programs (git, sed, cp, mv, rsync, tar, find, grep, python, make and cc) work in it.
//! Each test judges by what the workspace then holds, read through the API: the files, their
//! bytes, their versions and the change log. A machine that cannot mount fails these tests
//! with the mount's own message; none is skipped.
//!
//! Every mount is unmounted (lazily, if it is busy) and its process killed when the test
//! ends, pass or fail; every server is stopped and its data folder removed.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use workspace_tests::local::binaries;
use workspace_tests::mount::{Mount, TempDir};

/// Read-write, `local/default`.
const KEY: &str = "ws-mount-key-aaaaaaaaaaaaaaaa";
/// Another writer of the same workspace (a second mount, or the API).
const OTHER: &str = "ws-mount-other-bbbbbbbbbbbbbbb";
/// How long a test waits for a mount, or for a change to show, before failing.
const WAIT: Duration = Duration::from_secs(30);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The local server on a fixed port and data folder, so it can be killed and started again
/// where a mount expects it.
struct Server {
    data: TempDir,
    port: u16,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl Server {
    fn start(env: &[(&str, &str)]) -> Server {
        let mut s = Server {
            data: TempDir::new("data"),
            port: free_port(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            child: None,
        };
        s.run();
        s
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn run(&mut self) {
        let keys = format!("{KEY}=local/default,{OTHER}=local/default");
        let mut child = Command::new(&binaries().server)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("WORKSPACE_ADDR", format!("127.0.0.1:{}", self.port))
            .env("WORKSPACE_DATA_DIR", &self.data.0)
            .env("WORKSPACE_API_KEYS", keys)
            .env("RUST_LOG", "warn")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn workspace-local");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if line.starts_with("workspace-local listening on") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("workspace-local did not start");
        self.child = Some(child);
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// A managed key made by `workspace-local keys create ARGS` in this server's data folder.
    fn key(&self, args: &[&str]) -> String {
        let out = Command::new(&binaries().server)
            .env("WORKSPACE_DATA_DIR", &self.data.0)
            .args([
                "keys",
                "create",
                "--tenant",
                "local",
                "--workspace",
                "default",
            ])
            .args(args)
            .output()
            .expect("keys create");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .expect("a key")
            .trim()
            .to_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The API, blocking, for the tests' own reads and writes.
struct Api {
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
    url: String,
    key: String,
}

impl Api {
    fn new(url: &str, key: &str) -> Api {
        Api {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
            http: reqwest::Client::new(),
            url: url.to_owned(),
            key: key.to_owned(),
        }
    }

    fn call(&self, method: &str, route: &str, body: Option<Value>) -> (u16, Value) {
        self.rt.block_on(async {
            let m = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
            let mut rb = self
                .http
                .request(m, format!("{}{route}", self.url))
                .bearer_auth(&self.key);
            if let Some(b) = body {
                rb = rb.json(&b);
            }
            let resp = rb.send().await.expect("the server answers");
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        })
    }

    fn put(&self, path: &str, content: &str) -> Value {
        let (s, v) = self.call(
            "PUT",
            &format!("/v1/host/workspace/files/{path}"),
            Some(serde_json::json!({ "content": content })),
        );
        assert_eq!(s, 200, "PUT {path}: {v}");
        v
    }

    /// The file's bytes, or `None` when there is no live file.
    fn bytes(&self, path: &str) -> Option<Vec<u8>> {
        let (s, v) = self.call("GET", &format!("/v1/host/workspace/files/{path}"), None);
        match s {
            200 => Some(match v["content"].as_str() {
                Some(t) => t.as_bytes().to_vec(),
                None => {
                    use base64::Engine;
                    base64::engine::general_purpose::STANDARD
                        .decode(v["contentBase64"].as_str().expect("content"))
                        .expect("base64")
                }
            }),
            404 => None,
            _ => panic!("GET {path}: {s} {v}"),
        }
    }

    fn text(&self, path: &str) -> Option<String> {
        self.bytes(path)
            .map(|b| String::from_utf8(b).expect("text"))
    }

    /// Every live path under `prefix`.
    fn paths(&self, prefix: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut route = format!("/v1/host/workspace/files?limit=1000&prefix={prefix}");
            if let Some(t) = &token {
                route.push_str(&format!("&nextToken={t}"));
            }
            let (s, v) = self.call("GET", &route, None);
            assert_eq!(s, 200, "{v}");
            out.extend(
                v["files"]
                    .as_array()
                    .expect("files")
                    .iter()
                    .map(|f| f["path"].as_str().expect("path").to_owned()),
            );
            match v["nextToken"].as_str() {
                Some(t) => token = Some(t.to_owned()),
                None => return out,
            }
        }
    }

    /// The file's version numbers, newest first.
    fn versions(&self, path: &str) -> Vec<u64> {
        let (s, v) = self.call("GET", &format!("/v1/host/workspace/versions/{path}"), None);
        assert_eq!(s, 200, "versions of {path}: {v}");
        v["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .map(|r| r["version"].as_u64().expect("version"))
            .collect()
    }

    /// How many changes the change log holds for `path` (every page).
    fn changes(&self, path: &str) -> usize {
        let (s, v) = self.call(
            "GET",
            &format!("/v1/host/workspace/changes?prefix={path}&limit=100"),
            None,
        );
        assert_eq!(s, 200, "{v}");
        v["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .filter(|c| c["path"] == path)
            .count()
    }
}

/// Runs `program args` in `cwd`; its stdout, or a panic with everything it said.
fn sh(cwd: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", cwd)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.test")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.test")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} in {}: {}\n{}",
        cwd.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until `check` holds (the change log is followed every 200 ms in these tests).
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}

#[test]
fn git_sed_mv_rsync_tar_python_and_make_work_and_each_write_is_one_version() {
    let server = Server::start(&[("WORKSPACE_MAX_FILES", "5000")]);
    let api = Api::new(&server.url(), KEY);
    let m = Mount::start(&server.url(), KEY, &[]);

    // A shell's `>` and `>>`: one version each (the first close of a duplicated descriptor
    // commits nothing), and the bytes exactly.
    sh(
        &m.dir,
        "sh",
        &["-c", "echo one > notes.txt && echo two >> notes.txt"],
    );
    assert_eq!(api.text("notes.txt").as_deref(), Some("one\ntwo\n"));
    assert_eq!(api.versions("notes.txt"), [2, 1]);
    assert_eq!(api.changes("notes.txt"), 2);

    // sed -i writes a temporary file and renames it over: one more version.
    sh(&m.dir, "sed", &["-i", "s/two/three/", "notes.txt"]);
    assert_eq!(api.text("notes.txt").as_deref(), Some("one\nthree\n"));
    assert_eq!(api.versions("notes.txt"), [3, 2, 1]);
    assert!(
        api.paths("").iter().all(|p| !p.starts_with("sed")),
        "{:?}",
        api.paths("")
    );

    // mv over an existing file: its bytes, as a new version of the target; the source gone.
    std::fs::write(m.path("a.txt"), "A").unwrap();
    std::fs::write(m.path("b.txt"), "B").unwrap();
    sh(&m.dir, "mv", &["b.txt", "a.txt"]);
    assert_eq!(api.text("a.txt").as_deref(), Some("B"));
    assert_eq!(api.text("b.txt"), None);
    assert_eq!(api.versions("a.txt"), [2, 1]);
    assert_eq!(std::fs::read_to_string(m.path("a.txt")).unwrap(), "B");

    // git in a folder of the mount (a workspace path cannot start with '.', so `.git` at the
    // mount's root is refused: docs/mount.md).
    let repo = m.path("repo");
    std::fs::create_dir(&repo).unwrap();
    sh(&repo, "git", &["init", "-q", "-b", "main", "."]);
    std::fs::write(repo.join("hello.txt"), "hello\n").unwrap();
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(repo.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    sh(&repo, "git", &["add", "-A"]);
    sh(&repo, "git", &["commit", "-q", "-m", "first"]);
    assert_eq!(
        sh(&repo, "git", &["status", "--porcelain"]),
        "",
        "a clean tree after commit"
    );
    sh(&repo, "git", &["checkout", "-q", "-b", "other"]);
    std::fs::write(repo.join("hello.txt"), "changed\n").unwrap();
    sh(&repo, "git", &["commit", "-q", "-am", "second"]);
    sh(&repo, "git", &["checkout", "-q", "main"]);
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(api.text("repo/hello.txt").as_deref(), Some("hello\n"));
    let log = sh(&repo, "git", &["log", "--oneline", "other"]);
    assert_eq!(log.lines().count(), 2, "{log}");
    assert_eq!(sh(&repo, "git", &["status", "--porcelain"]), "");
    assert_eq!(
        sh(&repo, "./run.sh", &[]),
        "ran\n",
        "the executable bit is kept"
    );
    assert!(api
        .paths("repo/.git/")
        .iter()
        .any(|p| p == "repo/.git/HEAD"));

    // cp -r and rsync -a of a folder: every byte.
    let src = TempDir::new("src");
    for i in 0..20 {
        std::fs::create_dir_all(src.0.join(format!("d{}", i % 3))).unwrap();
        std::fs::write(
            src.0.join(format!("d{}/f{i}.txt", i % 3)),
            format!("file {i}\n").repeat(i + 1),
        )
        .unwrap();
    }
    let src_arg = format!("{}/", src.0.display());
    sh(&m.dir, "cp", &["-r", src.0.to_str().unwrap(), "copied"]);
    sh(&m.dir, "rsync", &["-a", &src_arg, "synced/"]);
    for i in 0..20 {
        let rel = format!("d{}/f{i}.txt", i % 3);
        let want = std::fs::read(src.0.join(&rel)).unwrap();
        assert_eq!(
            api.bytes(&format!("copied/{rel}")).as_deref(),
            Some(&want[..]),
            "copied/{rel}"
        );
        assert_eq!(
            api.bytes(&format!("synced/{rel}")).as_deref(),
            Some(&want[..]),
            "synced/{rel}"
        );
        assert_eq!(
            api.versions(&format!("synced/{rel}")),
            [1],
            "rsync's temporary file is renamed: one version"
        );
    }

    // tar x of 1,000 files, then find and grep -r over them.
    let tree = TempDir::new("tree");
    for d in 0..10 {
        std::fs::create_dir_all(tree.0.join(format!("t/d{d}"))).unwrap();
        for i in 0..100 {
            std::fs::write(
                tree.0.join(format!("t/d{d}/f{i}.txt")),
                format!("tar {d} {i}\n").repeat(10),
            )
            .unwrap();
        }
    }
    let archive = tree.0.join("t.tar");
    sh(&tree.0, "tar", &["cf", archive.to_str().unwrap(), "t"]);
    sh(&m.dir, "tar", &["xf", archive.to_str().unwrap()]);
    let listed: Vec<String> = api
        .paths("t/")
        .into_iter()
        .filter(|p| !p.ends_with(".wsdir"))
        .collect();
    assert_eq!(listed.len(), 1000);
    for p in &listed {
        assert_eq!(
            std::fs::read(m.path(p)).unwrap(),
            std::fs::read(tree.0.join(p)).unwrap(),
            "{p}"
        );
    }
    assert_eq!(
        sh(&m.dir, "find", &["t", "-type", "f"]).lines().count(),
        1000
    );
    assert_eq!(
        sh(&m.dir, "grep", &["-rl", "tar 7 42", "t"]).trim(),
        "t/d7/f42.txt"
    );

    // A program saving atomically (write a temporary, rename over), three times.
    let py = "import os\nfor n in range(3):\n    with open('state.json.tmp', 'w') as f:\n        f.write('{\"n\": %d}' % n)\n    os.replace('state.json.tmp', 'state.json')\n";
    sh(&m.dir, "python3", &["-c", py]);
    assert_eq!(api.text("state.json").as_deref(), Some("{\"n\": 2}"));
    assert_eq!(api.versions("state.json"), [3, 2, 1]);
    assert_eq!(api.text("state.json.tmp"), None);

    // A small build: make of a two-file C program, and python -m compileall.
    let build = m.path("build");
    std::fs::create_dir(&build).unwrap();
    std::fs::write(build.join("main.c"), "int twice(int);\n#include <stdio.h>\nint main(void){printf(\"%d\\n\", twice(21));return 0;}\n").unwrap();
    std::fs::write(build.join("twice.c"), "int twice(int x){return 2*x;}\n").unwrap();
    std::fs::write(
        build.join("Makefile"),
        "prog: main.o twice.o\n\tcc -o prog main.o twice.o\n%.o: %.c\n\tcc -c -o $@ $<\n",
    )
    .unwrap();
    sh(&build, "make", &["-s"]);
    assert_eq!(sh(&build, "./prog", &[]), "42\n");
    let pkg = m.path("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(pkg.join("mod.py"), "X = 1\n").unwrap();
    sh(&m.dir, "python3", &["-m", "compileall", "-q", "pkg"]);
    assert!(
        api.paths("pkg/__pycache__/")
            .iter()
            .any(|p| p.ends_with(".pyc")),
        "{:?}",
        api.paths("pkg/")
    );
    assert!(
        m.log().lines().all(|l| !l.contains("conflict")),
        "{}",
        m.log()
    );
}

#[test]
fn empty_folders_and_the_executable_bit_survive_a_remount_and_links_are_refused() {
    let server = Server::start(&[]);
    let api = Api::new(&server.url(), KEY);
    let mut m = Mount::start(&server.url(), KEY, &[]);
    std::fs::create_dir_all(m.path("empty/inner")).unwrap();
    std::fs::write(m.path("tool.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(m.path("tool.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(m.path("plain.txt"), "x").unwrap();
    let link = std::os::unix::fs::symlink("plain.txt", m.path("link"));
    assert_eq!(errno(&link.unwrap_err()), libc::EPERM);
    let hard = std::fs::hard_link(m.path("plain.txt"), m.path("hard"));
    assert_eq!(errno(&hard.unwrap_err()), libc::EPERM);
    assert!(m.unmount().success());
    assert_eq!(
        api.versions("tool.sh"),
        [2, 1],
        "chmod +x of a closed file is one version"
    );

    // A folder larger than one readdir page lists whole, in name order.
    for i in 0..600 {
        api.put(&format!("many/file-with-a-longish-name-{i:04}.txt"), "m");
    }
    let m = Mount::start(&server.url(), KEY, &[]);
    let names: Vec<String> = std::fs::read_dir(m.path("many"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let want: Vec<String> = (0..600)
        .map(|i| format!("file-with-a-longish-name-{i:04}.txt"))
        .collect();
    assert_eq!(names, want);
    assert!(
        m.path("empty/inner").is_dir(),
        "an empty folder survives a remount"
    );
    let mode = std::fs::metadata(m.path("tool.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "{mode:o}");
    let mode = std::fs::metadata(m.path("plain.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "{mode:o}");
    let names: Vec<String> = std::fs::read_dir(m.path("empty"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["inner"], "the marker file is not shown");
    std::fs::remove_dir(m.path("empty/inner")).unwrap();
    assert!(!api
        .paths("empty/")
        .iter()
        .any(|p| p.starts_with("empty/inner")));
    assert_eq!(
        errno(&std::fs::remove_dir(m.path("plain.txt")).unwrap_err()),
        libc::ENOTDIR
    );
}

#[test]
fn a_write_rename_or_unlink_of_a_file_changed_elsewhere_keeps_both_sides() {
    let server = Server::start(&[]);
    let api = Api::new(&server.url(), KEY);
    let other = Api::new(&server.url(), OTHER);
    let m = Mount::start(&server.url(), KEY, &[]);
    std::fs::write(m.path("c.txt"), "base\n").unwrap();

    // Write: the API's version stays, the mount's bytes go to a conflict copy, close says EIO.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(m.path("c.txt"))
        .unwrap();
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    other.put("c.txt", "from the API\n");
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(b"from the mount\n").unwrap();
    let e = f.sync_all().unwrap_err();
    assert_eq!(errno(&e), libc::EIO);
    drop(f);
    assert_eq!(api.text("c.txt").as_deref(), Some("from the API\n"));
    let copies: Vec<String> = api.paths("c.txt.conflict-").into_iter().collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert!(copies[0].starts_with("c.txt.conflict-2-"), "{copies:?}");
    assert_eq!(api.text(&copies[0]).as_deref(), Some("from the mount\n"));
    assert_eq!(
        std::fs::read_to_string(m.path(&copies[0])).unwrap(),
        "from the mount\n",
        "the copy shows in the mount at once"
    );
    assert_eq!(api.versions("c.txt"), [2, 1], "nothing else changed");
    assert_eq!(
        std::fs::read_to_string(m.path("c.txt")).unwrap(),
        "from the API\n",
        "the mount shows the version that won, not the pages of its own losing bytes"
    );
    assert!(
        m.log().contains("conflict on c.txt") && m.log().contains(&copies[0]),
        "{}",
        m.log()
    );

    // --status lists it while the copy is there.
    let status = Command::new(&binaries().ws)
        .args(["--url", &server.url(), "--key", KEY, "mount", "--status"])
        .arg(&m.dir)
        .arg("--cache-dir")
        .arg(&m.cache)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&status.stdout);
    assert!(out.contains(&copies[0]), "{out}");

    // Rename and unlink of a file that changed since the mount saw it: refused, recorded.
    std::fs::write(m.path("r.txt"), "r1").unwrap();
    std::fs::write(m.path("u.txt"), "u1").unwrap();
    // The mount learns both versions, then another writer changes them before the mount
    // follows the log (a longer refresh would widen this window; here the write lands
    // between the mount's stat and its rename).
    let rs = std::fs::metadata(m.path("r.txt")).unwrap();
    assert_eq!(rs.len(), 2);
    let mut quiet = Mount::start(&server.url(), KEY, &["--refresh-ms", "600000"]);
    assert_eq!(std::fs::read_to_string(quiet.path("r.txt")).unwrap(), "r1");
    other.put("r.txt", "r2");
    other.put("u.txt", "u2");
    let e = std::fs::rename(quiet.path("r.txt"), quiet.path("moved.txt")).unwrap_err();
    assert_eq!(errno(&e), libc::EIO);
    let e = std::fs::remove_file(quiet.path("u.txt")).unwrap_err();
    assert_eq!(errno(&e), libc::EIO);
    assert_eq!(api.text("r.txt").as_deref(), Some("r2"));
    assert_eq!(api.text("moved.txt"), None);
    assert_eq!(api.text("u.txt").as_deref(), Some("u2"));
    assert!(
        quiet.log().contains("rename conflict on r.txt"),
        "{}",
        quiet.log()
    );
    assert!(
        quiet.log().contains("unlink conflict on u.txt"),
        "{}",
        quiet.log()
    );
    // After the refusal the mount knows the new versions: the same calls now work.
    std::fs::rename(quiet.path("r.txt"), quiet.path("moved.txt")).unwrap();
    assert_eq!(api.text("moved.txt").as_deref(), Some("r2"));
    assert!(quiet.unmount().success());
}

#[test]
fn two_mounts_writing_one_file_lose_no_acknowledged_byte() {
    let server = Server::start(&[]);
    let api = Api::new(&server.url(), KEY);
    let a = Mount::start(&server.url(), KEY, &[]);
    let b = Mount::start(&server.url(), OTHER, &[]);
    for round in 0..5 {
        let name = format!("shared-{round}.txt");
        if round % 2 == 1 {
            api.put(&name, "v1\n");
            eventually("both mounts see the file", || {
                a.path(&name).exists() && b.path(&name).exists()
            });
        }
        let mut fa = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(a.path(&name))
            .unwrap();
        let mut fb = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(b.path(&name))
            .unwrap();
        let bytes_a = format!("mount A round {round}\n").repeat(100);
        let bytes_b = format!("mount B round {round}\n").repeat(50);
        fa.write_all(bytes_a.as_bytes()).unwrap();
        fb.write_all(bytes_b.as_bytes()).unwrap();
        let ra = fa.sync_all();
        let rb = fb.sync_all();
        assert!(ra.is_ok(), "the first to commit wins: {ra:?}");
        assert_eq!(errno(&rb.unwrap_err()), libc::EIO, "the second is told");
        assert_eq!(api.text(&name).as_deref(), Some(bytes_a.as_str()));
        let copies = api.paths(&format!("{name}.conflict-"));
        assert_eq!(copies.len(), 1, "{copies:?}");
        assert_eq!(
            api.text(&copies[0]).as_deref(),
            Some(bytes_b.as_str()),
            "every byte of the loser"
        );
    }
}

#[test]
fn changes_made_elsewhere_show_and_an_open_handle_keeps_its_version() {
    let server = Server::start(&[]);
    let api = Api::new(&server.url(), KEY);
    let m = Mount::start(&server.url(), KEY, &[]);
    api.put("live/a.md", "first");
    eventually("a file written through the API shows in the mount", || {
        std::fs::read_to_string(m.path("live/a.md")).ok().as_deref() == Some("first")
    });
    let mut held = std::fs::File::open(m.path("live/a.md")).unwrap();
    api.put("live/a.md", "second, longer");
    eventually("the new version shows to a new open", || {
        std::fs::read_to_string(m.path("live/a.md")).ok().as_deref() == Some("second, longer")
    });
    let mut s = String::new();
    held.read_to_string(&mut s).unwrap();
    assert_eq!(s, "first", "a handle reads the version it opened");
    let (st, _) = api.call("DELETE", "/v1/host/workspace/files/live/a.md", None);
    assert_eq!(st, 204);
    eventually("a delete shows", || !m.path("live/a.md").exists());
}

#[test]
fn history_is_read_only_folders_and_snapshot_mounts_refuse_writes() {
    let server = Server::start(&[]);
    let api = Api::new(&server.url(), KEY);
    api.put("h/f.md", "v1");
    api.put("h/f.md", "v2");
    let (s, snap) = api.call(
        "POST",
        "/v1/host/workspace/snapshots",
        Some(serde_json::json!({})),
    );
    assert_eq!(s, 201, "{snap}");
    let id = snap["snapshotId"].as_str().unwrap().to_owned();
    api.put("h/f.md", "v3");
    let m = Mount::start(&server.url(), KEY, &[]);
    assert_eq!(
        std::fs::read_to_string(m.path(".workspace/versions/h/f.md/1")).unwrap(),
        "v1"
    );
    let mut versions: Vec<String> = std::fs::read_dir(m.path(".workspace/versions/h/f.md"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    versions.sort();
    assert_eq!(versions, ["1", "2", "3"]);
    assert_eq!(
        std::fs::read_to_string(m.path(format!(".workspace/snapshots/{id}/h/f.md"))).unwrap(),
        "v2"
    );
    let e = std::fs::write(m.path(".workspace/versions/h/f.md/1"), "x").unwrap_err();
    assert_eq!(errno(&e), libc::EROFS);
    let e = std::fs::write(m.path(format!(".workspace/snapshots/{id}/h/new.md")), "x").unwrap_err();
    assert_eq!(errno(&e), libc::EROFS);

    let snap_mount = Mount::start(&server.url(), KEY, &["--snapshot", &id]);
    assert_eq!(
        std::fs::read_to_string(snap_mount.path("h/f.md")).unwrap(),
        "v2"
    );
    let e = std::fs::write(snap_mount.path("h/f.md"), "x").unwrap_err();
    assert_eq!(errno(&e), libc::EROFS);
    let ro = Mount::start(&server.url(), KEY, &["--read-only"]);
    assert_eq!(std::fs::read_to_string(ro.path("h/f.md")).unwrap(), "v3");
    assert_eq!(
        errno(&std::fs::write(ro.path("n.md"), "x").unwrap_err()),
        libc::EROFS
    );
    assert_eq!(
        errno(&std::fs::remove_file(ro.path("h/f.md")).unwrap_err()),
        libc::EROFS
    );
    assert_eq!(api.versions("h/f.md"), [3, 2, 1], "nothing was written");
}

#[test]
fn refusals_map_to_errno_and_change_nothing() {
    let server = Server::start(&[("WORKSPACE_MAX_FILES", "4")]);
    let api = Api::new(&server.url(), KEY);
    let read_only = server.key(&["--read-only"]);
    let scoped = server.key(&["--allow", "mine/**"]);
    let m = Mount::start(&server.url(), KEY, &[]);

    let bad = |name: &str| errno(&std::fs::write(m.path(name), "x").unwrap_err());
    assert_eq!(bad("with space.txt"), libc::EINVAL);
    assert_eq!(
        bad(".hidden"),
        libc::EINVAL,
        "a path starts with a letter or digit"
    );
    assert_eq!(bad(&"n".repeat(300)), libc::ENAMETOOLONG);
    assert_eq!(
        errno(&std::fs::create_dir(m.path("bad dir")).unwrap_err()),
        libc::EINVAL
    );

    for i in 0..4 {
        std::fs::write(m.path(format!("q{i}.txt")), "q").unwrap();
    }
    let mut f = std::fs::File::create(m.path("q4.txt")).unwrap();
    f.write_all(b"over the quota").unwrap();
    assert_eq!(errno(&f.sync_all().unwrap_err()), libc::EDQUOT);
    drop(f);
    assert_eq!(api.text("q4.txt"), None);

    let ro = Mount::start(&server.url(), &read_only, &[]);
    let e = std::fs::OpenOptions::new()
        .write(true)
        .open(ro.path("q0.txt"))
        .and_then(|mut f| {
            f.write_all(b"y")?;
            f.sync_all()
        });
    assert_eq!(errno(&e.unwrap_err()), libc::EROFS);
    let sc = Mount::start(&server.url(), &scoped, &[]);
    std::fs::create_dir(sc.path("mine")).ok();
    let e = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(sc.path("other.txt"))
        .and_then(|mut f| {
            f.write_all(b"y")?;
            f.sync_all()
        });
    assert_eq!(errno(&e.unwrap_err()), libc::EACCES);
    assert_eq!(api.text("q0.txt").as_deref(), Some("q"), "nothing changed");
}

#[test]
fn an_unreachable_server_is_eio_and_the_bytes_land_on_the_next_fsync() {
    let mut server = Server::start(&[]);
    let api = Api::new(&server.url(), KEY);
    let m = Mount::start(&server.url(), KEY, &[]);
    std::fs::write(m.path("w.txt"), "before").unwrap();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(m.path("w.txt"))
        .unwrap();
    f.write_all(b"written while the server was down").unwrap();
    server.kill9();
    assert_eq!(errno(&f.sync_all().unwrap_err()), libc::EIO);
    server.run();
    f.sync_all()
        .expect("the buffered bytes are committed once the server is back");
    drop(f);
    assert_eq!(
        api.text("w.txt").as_deref(),
        Some("written while the server was down")
    );
    assert_eq!(api.versions("w.txt"), [2, 1]);
}

#[test]
fn sigkill_of_the_mount_mid_write_leaves_no_partial_version_and_a_remount_works() {
    let server = Server::start(&[]);
    let api = Api::new(&server.url(), KEY);
    let mut m = Mount::start(&server.url(), KEY, &[]);
    std::fs::write(m.path("k.txt"), "committed").unwrap();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(m.path("k.txt"))
        .unwrap();
    f.write_all(b"half of a write that is never closed")
        .unwrap();
    m.kill9();
    drop(f);
    assert_eq!(
        api.text("k.txt").as_deref(),
        Some("committed"),
        "no partial version"
    );
    assert_eq!(api.versions("k.txt"), [1]);

    // The same folder mounts again (the stale mount is cleaned up) and shows what was
    // committed. (`again` is dropped, so unmounted, before `m` removes the folders.)
    let cache = m.cache.clone();
    let again = Mount::start_at(&m.dir, &cache, &server.url(), KEY, &[]);
    assert_eq!(
        std::fs::read_to_string(again.path("k.txt")).unwrap(),
        "committed"
    );
    assert!(again.log().contains("left mounted"), "{}", again.log());
    // The bytes the killed mount held are kept on this machine, and reported.
    let kept: Vec<PathBuf> = std::fs::read_dir(cache.join("unsaved"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(
        kept.iter()
            .any(|p| std::fs::read(p).unwrap() == b"half of a write that is never closed"),
        "{kept:?}"
    );
}

#[test]
fn sigkill_of_the_server_mid_commit_leaves_the_old_or_the_whole_new_version() {
    let mut server = Server::start(&[("WORKSPACE_MAX_FILE_BYTES", "65536")]);
    let api = Api::new(&server.url(), KEY);
    let m = Mount::start(&server.url(), KEY, &[]);
    std::fs::write(m.path("big.bin"), vec![b'o'; 1000]).unwrap();
    let new: Vec<u8> = (0..3 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let writer = {
        let path = m.path("big.bin");
        let new = new.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)?;
            f.write_all(&new)?;
            f.sync_all()
        })
    };
    std::thread::sleep(Duration::from_millis(30));
    server.kill9();
    let result = writer.join().unwrap();
    server.run();
    let now = api.bytes("big.bin").expect("the file is there");
    match result {
        Ok(()) => assert_eq!(now, new, "acknowledged: the whole new version"),
        Err(_) => assert!(
            now == vec![b'o'; 1000] || now == new,
            "never a partial version ({} bytes)",
            now.len()
        ),
    }
    // Whole again, through the mount: over maxFileBytes, read by its download URL.
    std::fs::write(m.path("big2.bin"), &new).expect("written once the server is back");
    let fresh = Mount::start(&server.url(), KEY, &[]);
    assert_eq!(std::fs::read(fresh.path("big2.bin")).unwrap(), new);
}

#[test]
fn a_fork_mounts_as_its_own_workspace_and_sigterm_commits_what_is_open() {
    let server = Server::start(&[]);
    let api = Api::new(&server.url(), KEY);
    api.put("f/base.md", "parent");
    let (s, fork) = api.call(
        "POST",
        "/v1/host/workspace/forks",
        Some(serde_json::json!({})),
    );
    assert_eq!(s, 201, "{fork}");
    let id = fork["forkId"].as_str().unwrap().to_owned();
    let mut m = Mount::start(&server.url(), KEY, &["--fork", &id]);
    assert_eq!(
        std::fs::read_to_string(m.path("f/base.md")).unwrap(),
        "parent"
    );
    std::fs::write(m.path("f/base.md"), "in the fork").unwrap();
    assert_eq!(
        api.text("f/base.md").as_deref(),
        Some("parent"),
        "the parent is untouched"
    );
    let (s, diff) = api.call("GET", &format!("/v1/host/workspace/forks/{id}/diff"), None);
    assert_eq!(s, 200, "{diff}");
    assert!(diff.to_string().contains("f/base.md"), "{diff}");

    // SIGTERM with a file open and written: its bytes are committed, then the mount ends.
    let mut open = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(m.path("f/open.md"))
        .unwrap();
    open.write_all(b"never closed").unwrap();
    let pid = m.child.as_ref().unwrap().id();
    // SAFETY: kill(2) with a pid this test spawned and a valid signal number.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let mut child = m.child.take().unwrap();
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the mount did not stop on SIGTERM:\n{}",
            m.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}: {}", m.log());
    drop(open);
    let (s, file) = api.call("GET", "/v1/host/workspace/files/f/open.md", None);
    assert_eq!(s, 404, "not in the parent: {file}");
    let fork_api = Api::new(&server.url(), KEY);
    let (s, file) = fork_api.rt.block_on(async {
        let r = fork_api
            .http
            .get(format!(
                "{}/v1/host/workspace/files/f/open.md",
                server.url()
            ))
            .bearer_auth(KEY)
            .header("X-Workspace-Id", &id)
            .send()
            .await
            .unwrap();
        (
            r.status().as_u16(),
            r.json::<Value>().await.unwrap_or(Value::Null),
        )
    });
    assert_eq!(s, 200, "{file}");
    assert_eq!(file["content"], "never closed");
}
