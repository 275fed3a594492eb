//! Starts the real `workspace-local` binary on a free loopback port (it binds port 0 and
//! prints the address), waits until it answers, and stops it when dropped, pass or fail.

#![allow(dead_code)]

pub mod aws;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    pub base: String,
    pub dir: PathBuf,
    pub stdout: Arc<Mutex<Vec<String>>>,
    pub stderr: Arc<Mutex<String>>,
}

fn command(dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_workspace-local"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("WORKSPACE_ADDR", "127.0.0.1:0")
        .env("WORKSPACE_DATA_DIR", dir)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs the binary to completion (start-up failures, `keys …`): status, stdout, stderr.
pub fn run_to_exit(dir: &Path, env: &[(&str, &str)]) -> (ExitStatus, String, String) {
    run_args(dir, env, &[])
}

pub fn run_args(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (ExitStatus, String, String) {
    let out = command(dir, env)
        .args(args)
        .output()
        .expect("run workspace-local");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `workspace-local keys create` with `args` over the data directory `dir`: the new key
/// (its first line of output) and the whole output.
#[allow(dead_code)] // not every test binary creates keys
pub fn create_key(dir: &Path, args: &[&str]) -> (String, String) {
    let mut all = vec!["keys", "create"];
    all.extend_from_slice(args);
    let (status, out, err) = run_args(dir, &[], &all);
    assert!(status.success(), "keys create {args:?}: {err}");
    let key = out.lines().next().unwrap_or_default().trim().to_owned();
    (key, out)
}

/// Runs the binary with `input` on its standard input (`secrets set`).
pub fn run_with_input(
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    input: &str,
) -> (ExitStatus, String, String) {
    use std::io::Write;
    let mut child = command(dir, env)
        .args(args)
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn workspace-local");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write stdin");
    drop(stdin);
    let out = child.wait_with_output().expect("run workspace-local");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

impl Server {
    pub async fn start(dir: &Path, env: &[(&str, &str)]) -> Server {
        let mut child = command(dir, env).spawn().expect("spawn workspace-local");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        {
            let out = child.stdout.take().expect("stdout");
            let lines = stdout.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if let Some(addr) = line.strip_prefix("workspace-local listening on ") {
                        let _ = tx.send(addr.to_owned());
                    }
                    lines.lock().unwrap().push(line);
                }
            });
            let mut err = child.stderr.take().expect("stderr");
            let text = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    text.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        let mut server = Server {
            child,
            base: String::new(),
            dir: dir.to_owned(),
            stdout,
            stderr,
        };
        let base = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(b) => b,
            Err(_) => panic!(
                "workspace-local did not start; stderr:\n{}",
                server.stderr.lock().unwrap()
            ),
        };
        server.base = base;
        let deadline = Instant::now() + Duration::from_secs(30);
        let client = reqwest::Client::new();
        loop {
            if let Ok(r) = client.get(format!("{}/health", server.base)).send().await {
                if r.status().is_success() {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "workspace-local never answered /health"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server
    }

    /// The key the first start created and printed (the only place it appears).
    pub fn generated_key(&self) -> String {
        self.stdout
            .lock()
            .unwrap()
            .iter()
            .find_map(|l| l.trim().strip_prefix("wsk_").map(|k| format!("wsk_{k}")))
            .unwrap_or_else(|| panic!("no generated key in:\n{}", self.stdout_text()))
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn stdout_text(&self) -> String {
        self.stdout.lock().unwrap().join("\n")
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// SIGKILL: no chance to flush or clean up.
    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(Instant::now() < deadline, "server ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `PUT` of `{"content": ...}` to `url` with `key`.
pub async fn put_content(
    c: &reqwest::Client,
    url: String,
    key: &str,
    content: &str,
) -> reqwest::Response {
    c.put(url)
        .bearer_auth(key)
        .json(&serde_json::json!({ "content": content }))
        .send()
        .await
        .expect("PUT reaches the server")
}

/// `GET` of `url` with `key`.
pub async fn get_with(c: &reqwest::Client, url: String, key: &str) -> reqwest::Response {
    c.get(url)
        .bearer_auth(key)
        .send()
        .await
        .expect("GET reaches the server")
}
