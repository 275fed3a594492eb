//! `ws`, the command-line client, end to end: the real binary against the real local server
//! process (`workspace-local` with a small `maxFileBytes`, so large files take the two-step
//! upload), judged by its exit codes, standard output and what the server then holds.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use workspace_tests::local::{binaries, LocalServer};

/// Bound to `local/default`.
const KEY: &str = "ws-cli-key-aaaaaaaaaaaaaaaa";
/// Another writer of the same workspace.
const OTHER_KEY: &str = "ws-cli-other-bbbbbbbbbbbbbbbb";
/// Tenant-wide: names its workspace in `X-Workspace-Id`.
const TENANT_KEY: &str = "ws-cli-tenant-cccccccccccccccc";
const MAX_FILE_BYTES: usize = 4096;
/// How long a test waits for a line of `ws watch` before failing.
const WAIT: Duration = Duration::from_secs(30);

struct Server {
    _process: LocalServer,
    url: String,
}

fn server() -> Server {
    let keys = format!("{KEY}=local/default,{OTHER_KEY}=local/default,{TENANT_KEY}=local");
    let max = MAX_FILE_BYTES.to_string();
    let process = LocalServer::start(
        &binaries().server,
        &[
            ("WORKSPACE_API_KEYS", keys.as_str()),
            ("WORKSPACE_MAX_FILE_BYTES", max.as_str()),
        ],
    );
    let url = format!("http://{}", process.addr);
    Server {
        _process: process,
        url,
    }
}

/// A directory removed on drop, pass or fail.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ws-cli-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One machine running `ws`: its own config directory, so its own stored credential and its
/// own memory of what it read and wrote.
struct Machine {
    home: TempDir,
    env: Vec<(&'static str, String)>,
}

impl Machine {
    /// Credentials from the environment (`WS_URL`, `WS_KEY`), nothing stored.
    fn new(url: &str, key: &str) -> Machine {
        Machine {
            home: TempDir::new("machine"),
            env: vec![("WS_URL", url.to_owned()), ("WS_KEY", key.to_owned())],
        }
    }

    /// No credential anywhere until `ws login`.
    fn bare() -> Machine {
        Machine {
            home: TempDir::new("machine"),
            env: Vec::new(),
        }
    }

    fn config(&self) -> PathBuf {
        self.home.path().join("ws").join("config.json")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&binaries().ws);
        cmd.args(args)
            .env_remove("WS_URL")
            .env_remove("WS_KEY")
            .env_remove("WS_WORKSPACE")
            .env("WS_CONFIG", self.config())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("xdg"))
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())));
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, b"")
    }

    fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ws");
        let mut input = child.stdin.take().expect("stdin");
        // ws may not read stdin at all (then the write fails with a broken pipe: fine).
        let _ = input.write_all(stdin);
        drop(input);
        let out = child.wait_with_output().expect("ws output");
        Run {
            args: args.iter().map(|a| a.to_string()).collect(),
            code: out.status.code().expect("ws exited, not killed"),
            out: out.stdout,
            err: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `ws args` as a child whose stdout lines arrive on the channel.
    fn spawn_lines(&self, args: &[&str]) -> (ChildGuard, mpsc::Receiver<String>) {
        let mut child = self
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ws");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (ChildGuard(child), rx)
    }

    /// Writes `bytes` to `path` in the workspace (from standard input), succeeding.
    fn put(&self, path: &str, bytes: &[u8]) -> Value {
        self.run_with_stdin(&["put", "--json", path, "-"], bytes)
            .ok()
            .json()
    }

    fn cat(&self, path: &str) -> Vec<u8> {
        self.run(&["cat", path]).ok().out
    }

    /// path → (version, etag) of every live file under `prefix`.
    fn listing(&self, prefix: &str) -> BTreeMap<String, (u64, String)> {
        let list = self.run(&["ls", "--json", prefix]).ok().json();
        list["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_owned(),
                    (
                        f["version"].as_u64().unwrap(),
                        f["etag"].as_str().unwrap().to_owned(),
                    ),
                )
            })
            .collect()
    }
}

/// Kills the child on drop, pass or fail.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Run {
    args: Vec<String>,
    code: i32,
    out: Vec<u8>,
    err: String,
}

impl Run {
    fn ok(self) -> Run {
        assert_eq!(
            self.code,
            0,
            "ws {:?} failed: {}{}",
            self.args,
            self.err,
            self.text()
        );
        self
    }

    /// Asserts the exit code; returns standard error.
    fn fails(self, code: i32) -> String {
        assert_eq!(
            self.code,
            code,
            "ws {:?}: stdout {:?}, stderr {}",
            self.args,
            self.text(),
            self.err
        );
        assert!(
            self.err.starts_with("ws: ") || self.err.starts_with("error: "),
            "errors go to stderr as `ws: ...`: {}",
            self.err
        );
        self.err
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.out)
            .unwrap_or_else(|e| panic!("ws {:?}: not JSON ({e}): {}", self.args, self.text()))
    }
}

/// Bytes that are not UTF-8 (so they travel as base64 or raw), `len` long.
fn binary(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 0x80)
        .collect()
}

/// Waits for a line of `rx` that satisfies `want`; fails the test after [`WAIT`].
fn line_where(rx: &mpsc::Receiver<String>, what: &str, want: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if want(&line) => return line,
            Ok(_) => continue,
            Err(_) => panic!("no line with {what} within {WAIT:?}"),
        }
    }
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[test]
fn login_stores_the_credential_0600_and_later_commands_use_it() {
    let server = server();
    let m = Machine::bare();

    let err = m.run(&["ls"]).fails(3);
    assert!(err.contains("ws login"), "{err}");

    // A refused key is not stored.
    let err = m
        .run(&[
            "login",
            "--url",
            &server.url,
            "--key",
            "ws-cli-wrong-key-000000",
        ])
        .fails(3);
    assert!(err.contains("401"), "{err}");
    assert!(!m.config().exists(), "a refused key must not be stored");

    let login = m.run(&["login", "--url", &server.url, "--key", KEY]).ok();
    assert!(!login.text().contains(KEY) && !login.err.contains(KEY));
    assert!(login.text().contains("logged in"), "{}", login.text());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(m.config()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "config mode {mode:o}");
    }
    let stored: Value = serde_json::from_slice(&std::fs::read(m.config()).unwrap()).unwrap();
    assert_eq!(stored["url"], server.url.as_str());

    // No URL or key given any more: the stored ones are used.
    m.run_with_stdin(&["put", "notes/a.md"], b"hello\n").ok();
    assert_eq!(m.cat("notes/a.md"), b"hello\n");

    // A tenant-wide key, read from stdin, with its workspace: stored and sent as
    // X-Workspace-Id (without it the server refuses the request).
    let login = m
        .run_with_stdin(
            &[
                "login",
                "--json",
                "--url",
                &server.url,
                "--workspace",
                "default",
            ],
            format!("{TENANT_KEY}\n").as_bytes(),
        )
        .ok();
    assert!(!login.text().contains(TENANT_KEY));
    assert_eq!(login.json()["workspace"], "default");
    assert_eq!(m.cat("notes/a.md"), b"hello\n");

    // Without the workspace that key is bad input, and the stored credential is kept.
    let err = m
        .run(&["login", "--url", &server.url, "--key", TENANT_KEY])
        .fails(4);
    assert!(err.contains("X-Workspace-Id"), "{err}");
    let stored: Value = serde_json::from_slice(&std::fs::read(m.config()).unwrap()).unwrap();
    assert_eq!(stored["workspace"], "default");
}

#[test]
fn put_cat_ls_and_rm_in_text_and_json() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    let dir = TempDir::new("files");

    // From a file, from stdin (`-` and nothing), text and bytes that are not UTF-8.
    let text_file = dir.path().join("plan.md");
    std::fs::write(&text_file, "step 1\nstep 2\n").unwrap();
    let put = m
        .run(&["put", "--json", "docs/plan.md", text_file.to_str().unwrap()])
        .ok()
        .json();
    assert_eq!(
        (&put["path"], &put["version"], &put["via"]),
        (&"docs/plan.md".into(), &1.into(), &"direct".into())
    );
    assert!(
        put.get("content").is_none(),
        "the summary leaves content out"
    );
    let bytes = binary(300, 7);
    m.run_with_stdin(&["put", "docs/logo.bin", "-"], &bytes)
        .ok();
    let human = m
        .run_with_stdin(
            &["put", "notes/n.txt", "--content-type", "text/x-note"],
            b"note",
        )
        .ok()
        .text();
    assert!(human.starts_with("notes/n.txt: version 1"), "{human}");

    assert_eq!(m.cat("docs/plan.md"), b"step 1\nstep 2\n");
    assert_eq!(m.cat("docs/logo.bin"), bytes);
    let read = m.run(&["cat", "--json", "notes/n.txt"]).ok().json();
    assert_eq!(
        (&read["content"], &read["contentType"]),
        (&"note".into(), &"text/x-note".into())
    );

    // ls: a table for people, every page for scripts.
    let table = m.run(&["ls"]).ok().text();
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("PATH") && lines[0].contains("VERSION"),
        "{table}"
    );
    assert!(
        lines[1].starts_with("docs/logo.bin") && lines[1].contains("300 B"),
        "{table}"
    );
    assert_eq!(lines.len(), 4, "{table}");
    let all = m.run(&["ls", "--json", "--page-size", "1"]).ok().json();
    let paths: Vec<&str> = all["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["docs/logo.bin", "docs/plan.md", "notes/n.txt"]);
    assert_eq!(m.listing("docs/").len(), 2);

    // rm, then the file is gone (2 for both the read and a second rm).
    assert_eq!(
        m.run(&["rm", "docs/plan.md"]).ok().text(),
        "removed docs/plan.md\n"
    );
    m.run(&["cat", "docs/plan.md"]).fails(2);
    m.run(&["rm", "docs/plan.md"]).fails(2);
    let rm = m.run(&["rm", "--json", "notes/n.txt"]).ok().json();
    assert_eq!(rm["deleted"], true);
    assert_eq!(m.listing("").len(), 1);
}

#[test]
fn a_write_after_someone_else_wrote_is_a_conflict_exit_1() {
    let server = server();
    let me = Machine::new(&server.url, KEY);
    let other = Machine::new(&server.url, OTHER_KEY);

    let v1 = me.put("shared.md", b"mine\n");
    let v1_etag = v1["etag"].as_str().unwrap().to_owned();
    other.cat("shared.md");
    other.put("shared.md", b"theirs\n");

    // --safe: this machine last wrote v1; the file is at v2 now.
    let err = me
        .run_with_stdin(&["put", "--safe", "shared.md"], b"lost update\n")
        .fails(1);
    assert!(err.contains("409"), "{err}");
    assert!(
        err.contains("ws cat shared.md"),
        "the hint says what to do: {err}"
    );
    // --if-match, as typed in a shell (the quotes eaten).
    let bare = v1_etag.trim_matches('"');
    me.run_with_stdin(&["put", "--if-match", bare, "shared.md"], b"lost too\n")
        .fails(1);
    me.run(&["rm", "--if-match", &v1_etag, "shared.md"])
        .fails(1);
    assert_eq!(me.cat("shared.md"), b"theirs\n", "nothing was overwritten");

    // Having read v2 (the cat above), --safe goes through; now the other machine is stale.
    let v3 = me
        .run_with_stdin(&["put", "--safe", "--json", "shared.md"], b"merged\n")
        .ok()
        .json();
    assert_eq!(v3["version"], 3);
    other
        .run_with_stdin(&["put", "--safe", "shared.md"], b"stale\n")
        .fails(1);
    other.run(&["rm", "--safe", "shared.md"]).fails(1);

    // A machine that never saw the file may not overwrite it, but may create a new one.
    let fresh = Machine::new(&server.url, KEY);
    let err = fresh
        .run_with_stdin(&["put", "--safe", "shared.md"], b"blind\n")
        .fails(1);
    assert!(err.contains("has not read it"), "{err}");
    fresh
        .run_with_stdin(&["put", "--safe", "new.md"], b"new\n")
        .ok();

    me.run(&["rm", "--safe", "shared.md"]).ok();
    me.run(&["cat", "shared.md"]).fails(2);
}

#[test]
fn exit_codes_for_missing_auth_bad_input_and_a_server_that_is_down() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    m.put("a.md", b"one\n");
    let dir = TempDir::new("codes");

    // 2: not found.
    let err = m.run(&["cat", "missing.md"]).fails(2);
    assert!(
        err.contains("missing.md") && err.contains("hint: "),
        "{err}"
    );
    m.run(&["cat", "a.md", "--version", "9"]).fails(2);
    m.run(&["log", "missing.md"]).fails(2);
    m.run(&["diff", "missing.md", "1"]).fails(2);
    m.run(&["restore", "a.md", "9"]).fails(2);
    m.run(&["snapshot", "show", "s0-nonexistent"]).fails(2);

    // 3: the flag's key overrides the environment's, and the server refuses it.
    let wrong = "ws-cli-revoked-key-1111111111";
    let err = m.run(&["--key", wrong, "ls"]).fails(3);
    assert!(err.contains("401") && err.contains("ws login"), "{err}");
    assert!(!err.contains(wrong), "the key is never printed: {err}");

    // 4: the server's 400 (a path it refuses), a local file that cannot be read, a bad
    // command line (clap's own exit code would be 2, which means "not found" here).
    let err = m.run_with_stdin(&["put", "bad path.md"], b"x").fails(4);
    assert!(err.contains("400"), "{err}");
    let missing = dir.path().join("nope.txt");
    let err = m.run(&["put", "a.md", missing.to_str().unwrap()]).fails(4);
    assert!(err.contains("nope.txt"), "{err}");
    m.run(&["sync", missing.to_str().unwrap()]).fails(4);
    m.run(&["cat"]).fails(4);
    m.run(&["diff", "a.md", "one"]).fails(4);
    m.run(&["frobnicate"]).fails(4);
    m.run(&["--url", "ftp://x", "ls"]).fails(4);

    // 5: nothing listens there.
    let down = format!("http://127.0.0.1:{}", closed_port());
    let err = m.run(&["--url", &down, "ls"]).fails(5);
    assert!(err.contains("cannot connect"), "{err}");
    m.run(&["--url", &down, "cat", "a.md"]).fails(5);
    Machine::bare()
        .run(&["login", "--url", &down, "--key", KEY])
        .fails(5);

    // Help is an answer, not an error.
    let help = m.run(&["--help"]).ok().text();
    assert!(help.contains("Exit codes"), "{help}");
    assert!(!help.contains(KEY), "WS_KEY's value stays out of --help");
}

#[test]
fn a_file_over_max_file_bytes_goes_through_the_upload() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    let dir = TempDir::new("large");
    let big = binary(3 * MAX_FILE_BYTES + 123, 1);
    let file = dir.path().join("big.bin");
    std::fs::write(&file, &big).unwrap();

    let put = m
        .run(&["put", "--json", "data/big.bin", file.to_str().unwrap()])
        .ok();
    assert_eq!(put.err, "", "no progress bar when stderr is not a terminal");
    let put = put.json();
    assert_eq!(
        (&put["via"], &put["version"], &put["size"]),
        (&"upload".into(), &1.into(), &big.len().into())
    );
    assert_eq!(m.cat("data/big.bin"), big);
    // Stored as a large file: a read answers a download URL, not the content.
    let read = m.run(&["cat", "--json", "data/big.bin"]).ok().json();
    assert!(read["download"]["url"].is_string(), "{read}");
    assert!(read.get("content").is_none() && read.get("contentBase64").is_none());

    // From stdin too, and the commit honours If-Match.
    let bigger = binary(2 * MAX_FILE_BYTES + 1, 2);
    let etag = put["etag"].as_str().unwrap();
    m.run_with_stdin(
        &["put", "--if-match", "\"1-stale\"", "data/big.bin"],
        &bigger,
    )
    .fails(1);
    assert_eq!(m.cat("data/big.bin"), big);
    let human = m
        .run_with_stdin(&["put", "--if-match", etag, "data/big.bin", "-"], &bigger)
        .ok()
        .text();
    assert!(
        human.starts_with("data/big.bin: version 2") && human.contains("two steps"),
        "{human}"
    );
    assert_eq!(m.cat("data/big.bin"), bigger);
    assert_eq!(m.cat("data/big.bin").len(), bigger.len());
    let v1 = m.run(&["cat", "data/big.bin", "--version", "1"]).ok().out;
    assert_eq!(v1, big);
}

#[test]
fn log_diff_and_restore() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    m.put("plan.md", b"one\ntwo\n");
    m.put("plan.md", b"one\n2\nthree\n");

    let log = m.run(&["log", "plan.md"]).ok().text();
    let rows: Vec<&str> = log.lines().collect();
    assert!(rows[0].starts_with("VERSION"), "{log}");
    assert!(
        rows[1].starts_with('2') && rows[2].starts_with('1'),
        "newest first: {log}"
    );
    let versions = m.run(&["log", "--json", "plan.md"]).ok().json();
    let numbers: Vec<u64> = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [2, 1]);

    let diff = m.run(&["diff", "plan.md", "1", "2"]).ok().text();
    assert!(diff.starts_with("--- "), "{diff}");
    for line in ["-two", "+2", "+three", " one"] {
        assert!(diff.lines().any(|l| l == line), "{line:?} in {diff}");
    }
    assert_eq!(
        m.run(&["diff", "plan.md", "1"]).ok().text(),
        diff,
        "B defaults to the latest"
    );
    let json = m.run(&["diff", "--json", "plan.md", "1", "2"]).ok().json();
    assert_eq!((&json["from"], &json["to"]), (&1.into(), &2.into()));
    assert_eq!(json["diff"].as_str().unwrap(), diff);

    let restored = m.run(&["restore", "plan.md", "1"]).ok().text();
    assert_eq!(restored, "plan.md: version 1 restored as version 3\n");
    assert_eq!(m.cat("plan.md"), b"one\ntwo\n");
    assert_eq!(
        m.run(&["cat", "plan.md", "--version", "2"]).ok().out,
        b"one\n2\nthree\n"
    );
    let again = m.run(&["restore", "--json", "plan.md", "2"]).ok().json();
    assert_eq!(again["version"], 4);
    // The restore is this machine's latest write: --safe builds on it.
    m.run_with_stdin(&["put", "--safe", "plan.md"], b"five\n")
        .ok();
    m.run(&["restore", "plan.md", "1", "--if-match", "\"1-stale\""])
        .fails(1);
}

#[test]
fn snapshots_create_list_show_and_read_through() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    m.put("state.md", b"before\n");

    let created = m
        .run(&["snapshot", "create", "--label", "before the run", "--keep"])
        .ok();
    let id = created.text().trim().to_owned();
    assert!(!id.is_empty() && !id.contains('\n'), "the id alone: {id:?}");
    assert!(created.err.contains("1 file held"), "{}", created.err);
    m.put("state.md", b"after\n");

    assert_eq!(
        m.run(&["cat", "state.md", "--snapshot", &id]).ok().out,
        b"before\n"
    );
    assert_eq!(m.cat("state.md"), b"after\n");

    let run = m.run(&["snapshot", "create", "--json"]).ok().json();
    assert!(run["expiresAt"].is_string(), "{run}");
    assert_eq!(run["files"][0]["version"], 2);

    let table = m.run(&["snapshot", "ls"]).ok().text();
    let row = table
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{id} in {table}"));
    assert!(
        row.contains("before the run") && row.ends_with("kept"),
        "{row}"
    );
    let list = m.run(&["snapshot", "ls", "--json"]).ok().json();
    let kept: Vec<&Value> = list["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["snapshotId"] == id.as_str())
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["keep"], true);

    let show = m.run(&["snapshot", "show", &id]).ok().text();
    assert!(
        show.contains("before the run") && show.contains("kept until deleted"),
        "{show}"
    );
    let file_row = show
        .lines()
        .find(|l| l.starts_with("state.md"))
        .expect(&show);
    assert!(
        file_row.split_whitespace().nth(1) == Some("1"),
        "{file_row}"
    );
    let json = m.run(&["snapshot", "show", "--json", &id]).ok().json();
    assert_eq!(json["files"][0]["path"], "state.md");

    let err = m
        .run(&["cat", "state.md", "--snapshot", "s0-nonexistent"])
        .fails(2);
    assert!(err.contains("ws snapshot ls"), "{err}");
}

#[test]
fn sync_uploads_what_changed_and_a_second_run_nothing() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    let dir = TempDir::new("sync");
    let root = dir.path();
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(root.join("a.md"), "a\n").unwrap();
    std::fs::write(root.join("sub/b.md"), "b\n").unwrap();
    std::fs::write(root.join("sub/deeper/empty.txt"), "").unwrap();
    let big = binary(MAX_FILE_BYTES + 500, 3);
    std::fs::write(root.join("sub/big.bin"), &big).unwrap();
    let dir_arg = root.to_str().unwrap();
    let all = [
        "mirror/a.md",
        "mirror/sub/b.md",
        "mirror/sub/big.bin",
        "mirror/sub/deeper/empty.txt",
    ];

    let first = m
        .run(&["sync", "--json", dir_arg, "--prefix", "mirror/"])
        .ok()
        .json();
    let mut uploaded: Vec<&str> = first["uploaded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    uploaded.sort();
    assert_eq!(uploaded, all, "{first}");
    assert_eq!(first["skipped"], serde_json::json!([]));
    assert_eq!(m.cat("mirror/sub/big.bin"), big);
    let versions = m.listing("mirror/");
    assert!(versions.values().all(|(v, _)| *v == 1), "{versions:?}");

    // What this machine now knows of each file sits beside its config.
    let state = std::fs::read_to_string(m.config().with_file_name("state.json")).unwrap();
    for path in all {
        assert!(state.contains(&format!("\"{path}\"")), "{path} in {state}");
    }
    assert_eq!(state.matches("\"sha256\"").count(), all.len(), "{state}");

    // Unchanged: nothing uploaded, nothing new in the workspace.
    let second = m.run(&["sync", dir_arg, "--prefix", "mirror"]).ok().text();
    assert!(
        second.ends_with("0 uploaded, 4 skipped, 0 failed\n"),
        "{second}"
    );
    assert!(!second.contains("uploaded  "), "{second}");
    assert_eq!(m.listing("mirror/"), versions);

    // Another machine with no state compares against the remote content: nothing either.
    let fresh = Machine::new(&server.url, KEY);
    let third = fresh
        .run(&["sync", "--json", dir_arg, "--prefix", "mirror"])
        .ok()
        .json();
    assert_eq!(third["uploaded"], serde_json::json!([]), "{third}");
    assert_eq!(third["skipped"].as_array().unwrap().len(), 4);
    assert_eq!(m.listing("mirror/"), versions);

    // One file changed: exactly that one goes up.
    std::fs::write(root.join("sub/b.md"), "b, revised\n").unwrap();
    let fourth = m
        .run(&["sync", "--json", dir_arg, "--prefix", "mirror"])
        .ok()
        .json();
    let uploaded: Vec<&str> = fourth["uploaded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(uploaded, ["mirror/sub/b.md"]);
    assert_eq!(m.cat("mirror/sub/b.md"), b"b, revised\n");
    let after = m.listing("mirror/");
    assert_eq!(after["mirror/sub/b.md"].0, 2);
    assert_eq!(after["mirror/a.md"], versions["mirror/a.md"]);
}

#[test]
fn watch_prints_the_event_of_a_write() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    m.put("first.md", b"1");

    // The stream starts with the retained events: the first line proves it is open.
    let (_watch, lines) = m.spawn_lines(&["watch"]);
    let first = line_where(&lines, "first.md", |l| l.contains("first.md"));
    m.put("live.md", b"2");
    let line = line_where(&lines, "live.md", |l| l.contains("live.md"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[2..5], ["put", "live.md", "v1"], "{line}");

    // --json: each envelope as one JSON line.
    let (_json_watch, json_lines) = m.spawn_lines(&["watch", "--json"]);
    line_where(&json_lines, "first.md", |l| l.contains("first.md"));
    m.run(&["rm", "live.md"]).ok();
    let line = line_where(&json_lines, "the delete", |l| {
        let v: Value = serde_json::from_str(l).expect("each line is JSON");
        v["detail"]["operation"] == "delete"
    });
    let envelope: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(envelope["detail-type"], "workspace.updated");
    assert_eq!(envelope["detail"]["path"], "live.md");

    // --after resumes: from the id of the first event, the next one comes first.
    let first_id = first.split_whitespace().next().unwrap();
    let (_resumed, resumed) = m.spawn_lines(&["watch", "--after", first_id]);
    let next = resumed.recv_timeout(WAIT).expect("a line");
    assert!(next.contains("live.md") && next.contains("put"), "{next}");
}

#[test]
fn watch_on_a_deployment_without_the_stream_exits_5() {
    // A Lambda deployment answers the route 501 (API Gateway cannot stream): a stub says so.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (heads, head_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap() == 1 {
            head.push(byte[0]);
        }
        let body = r#"{"error":"capability_not_provided","message":"this deployment announces changes on EventBridge (source agent-workspace, detail-type workspace.updated), not as a server-sent event stream"}"#;
        write!(
            conn,
            "HTTP/1.1 501 Not Implemented\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let _ = heads.send(String::from_utf8_lossy(&head).to_lowercase());
    });
    let m = Machine::new(&url, KEY);
    let err = m.run(&["watch", "--workspace", "w1"]).fails(5);
    assert!(err.contains("501") && err.contains("EventBridge"), "{err}");
    let head = head_rx.recv_timeout(WAIT).expect("ws asked the stub");
    assert!(head.starts_with("get /v1/host/workspace/events "), "{head}");
    assert!(
        head.contains(&format!("authorization: bearer {KEY}").to_lowercase()),
        "{head}"
    );
    assert!(head.contains("x-workspace-id: w1"), "{head}");
}

#[test]
fn forks_create_diff_merge_with_a_resolution_and_rm() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    m.put("notes.md", b"one\n");
    let fork = m
        .run(&["fork", "create", "--label", "helper"])
        .ok()
        .text()
        .trim()
        .to_owned();
    assert!(fork.starts_with("default~"), "the id alone: {fork:?}");
    let table = m.run(&["fork", "ls"]).ok().text();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&fork) && l.contains("helper")),
        "{table}"
    );

    // The sub-agent writes in the fork, the workspace changes the same file.
    m.run_with_stdin(
        &["--workspace", &fork, "put", "notes.md", "-"],
        b"fork side\n",
    )
    .ok();
    m.run_with_stdin(&["--workspace", &fork, "put", "plan.md", "-"], b"plan\n")
        .ok();
    m.put("notes.md", b"workspace side\n");
    let diff = m.run(&["fork", "diff", &fork]).ok().text();
    let row = diff.lines().find(|l| l.contains("notes.md")).expect(&diff);
    assert!(row.starts_with('!'), "a conflict is marked: {diff}");

    // The conflict: exit 1, the merged text shown, nothing applied.
    let conflict = m.run(&["fork", "merge", &fork]);
    let shown = conflict.text();
    let err = conflict.fails(1);
    assert!(
        shown.contains("conflict notes.md") && shown.contains("<<<<<<< parent"),
        "{shown}"
    );
    assert!(err.contains("--resolve"), "{err}");
    assert!(m.run(&["cat", "plan.md"]).code != 0, "nothing applied");

    // A dry run, then the merge with the edited text as the resolution.
    let edited = TempDir::new("resolution");
    let file = edited.path().join("notes.md");
    std::fs::write(&file, "both sides\n").unwrap();
    let resolve = format!("notes.md=@{}", file.display());
    let dry = m
        .run(&["fork", "merge", &fork, "--resolve", &resolve, "--dry-run"])
        .ok();
    assert!(dry.err.contains("dry run"), "{}", dry.err);
    assert!(
        m.run(&["cat", "plan.md"]).code != 0,
        "a dry run applies nothing"
    );
    let merged = m
        .run(&["fork", "merge", &fork, "--resolve", &resolve, "--json"])
        .ok()
        .json();
    assert_eq!(
        merged["applied"].as_array().map(Vec::len),
        Some(2),
        "{merged}"
    );
    assert_eq!(m.cat("notes.md"), b"both sides\n");
    assert_eq!(m.cat("plan.md"), b"plan\n");
    assert!(
        m.run(&["fork", "merge", &fork, "--resolve", "x.md=sideways"])
            .code
            == 4
    );

    m.run(&["fork", "rm", &fork]).ok();
    let gone = m.run(&["fork", "diff", &fork]).fails(2);
    assert!(gone.contains("ws fork ls"), "{gone}");
}

#[test]
fn search_lists_the_best_files_with_their_versions_and_lines() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    m.put("kb/deploy.md", b"How to deploy\nDeploying twice is safe.\n");
    m.put("kb/other.md", b"one deploy note\n");
    m.put("kb/other.md", b"one deploy note, edited\n");
    let found = m.run(&["search", "deploying"]).ok();
    let text = found.text();
    let heads: Vec<&str> = text.lines().filter(|l| !l.starts_with("  ")).collect();
    assert_eq!(heads, ["kb/deploy.md@1", "kb/other.md@2"], "{text}");
    assert!(text.contains("  2: Deploying twice is safe."), "{text}");
    assert!(found.err.contains("2 file(s) found"), "{}", found.err);

    let json = m
        .run(&["search", "safe.", "--exact", "--prefix", "kb/", "--json"])
        .ok()
        .json();
    assert_eq!(json["hits"][0]["path"], "kb/deploy.md");
    assert_eq!(
        json["hits"][0]["lines"][0]["ranges"][0],
        serde_json::json!([19, 24])
    );
    // A bad regex is the server's 400: exit 4 with its message.
    let bad = m.run(&["search", "(", "--regex"]).fails(4);
    assert!(bad.contains("regular expression"), "{bad}");
}

#[test]
fn commit_applies_puts_deletes_and_moves_together_or_not_at_all() {
    let server = server();
    let m = Machine::new(&server.url, KEY);
    let a1 = m.put("c/a.md", b"a1\n");
    m.put("c/b.md", b"b\n");
    m.put("c/c.md", b"c\n");
    let local = TempDir::new("commit");
    let new_a = local.path().join("a.md");
    std::fs::write(&new_a, b"a2\n").unwrap();
    let bin = local.path().join("bin.dat");
    std::fs::write(&bin, binary(100, 7)).unwrap();
    let put_a = format!("c/a.md={}", new_a.display());
    let put_bin = format!("c/bin.dat={}", bin.display());
    let a1_etag = a1["etag"].as_str().unwrap().trim_matches('"').to_owned();
    let if_a = format!("c/a.md={a1_etag}");

    let text = m
        .run(&[
            "commit",
            "--put",
            &put_a,
            "--put",
            &put_bin,
            "--delete",
            "c/b.md",
            "--move",
            "c/c.md=c/d.md",
            "--if-match",
            &if_a,
            "--if-absent",
            "c/bin.dat",
            "--message",
            "one step",
        ])
        .ok()
        .text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], "committed 4 operation(s)");
    assert!(
        lines[1].starts_with("put c/a.md: version 2 (etag "),
        "{text}"
    );
    assert!(
        lines[2].starts_with("put c/bin.dat: version 1 (etag "),
        "{text}"
    );
    assert_eq!(lines[3], "deleted c/b.md");
    assert!(
        lines[4].starts_with("moved c/c.md to c/d.md: version 1 (etag "),
        "{text}"
    );
    assert_eq!(m.cat("c/a.md"), b"a2\n");
    assert_eq!(m.cat("c/bin.dat"), binary(100, 7));
    assert_eq!(m.cat("c/d.md"), b"c\n");
    let files: Vec<String> = m.listing("c/").into_keys().collect();
    assert_eq!(files, ["c/a.md", "c/bin.dat", "c/d.md"]);

    // A stale --if-match: exit 1, the server's message, and nothing applied.
    let stale = format!("c/a.md={a1_etag}");
    let err = m
        .run(&[
            "commit",
            "--delete",
            "c/d.md",
            "--put",
            &put_a,
            "--if-match",
            &stale,
        ])
        .fails(1);
    assert!(err.contains("409"), "{err}");
    assert!(err.contains("nothing was applied"), "the hint: {err}");
    assert_eq!(m.cat("c/d.md"), b"c\n", "the delete was not applied");

    // --file: the API's body as it is, with an Idempotency-Key; a retry replays.
    let ops = local.path().join("ops.json");
    std::fs::write(
        &ops,
        br#"{"operations": [{"op": "put", "path": "c/e.md", "content": "e\n", "ifNoneMatch": "*"}, {"op": "delete", "path": "c/bin.dat"}]}"#,
    )
    .unwrap();
    let ops = ops.display().to_string();
    let first = m
        .run(&[
            "commit",
            "--json",
            "--file",
            &ops,
            "--idempotency-key",
            "cli-commit-1",
        ])
        .ok()
        .json();
    assert_eq!(first["replayed"], false, "{first}");
    assert_eq!(first["results"][0]["op"], "put", "{first}");
    assert_eq!(first["results"][0]["version"], 1, "{first}");
    assert_eq!(first["results"][1]["op"], "delete", "{first}");
    let again = m
        .run(&[
            "commit",
            "--file",
            &ops,
            "--idempotency-key",
            "cli-commit-1",
        ])
        .ok()
        .text();
    assert!(
        again.starts_with("already committed with this Idempotency-Key"),
        "{again}"
    );
    assert_eq!(m.cat("c/e.md"), b"e\n");
    m.run(&["cat", "c/bin.dat"]).fails(2);

    // Bad input before any request: exit 4.
    m.run(&["commit"]).fails(4);
    m.run(&["commit", "--move", "c/d.md"]).fails(4);
    m.run(&["commit", "--delete", "c/d.md", "--if-match", "c/x.md=1-a"])
        .fails(4);
    // A commit the server refuses as a whole (a path named twice): exit 4.
    m.run(&["commit", "--delete", "c/d.md", "--move", "c/d.md=c/f.md"])
        .fails(4);
    assert_eq!(m.cat("c/d.md"), b"c\n");
}
