//! The local server (`workspace-local`) as a process on a free loopback port over a fresh
//! data directory (the embedded store), stopped and its directory removed on drop, pass or
//! fail; and a raw HTTP/1.1 client that sends a request exactly as given (the target as
//! written, repeated headers kept, no normalisation of the path).

use crate::apigw::{HttpAnswer, HttpRequest};
use crate::root;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Builds `workspace-local` (debug, the shared target directory); its path.
pub fn build_local_server() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["build", "--quiet", "--bin", "workspace-local"])
        .status()
        .expect("cargo build");
    assert!(status.success(), "cargo build --bin workspace-local");
    crate::bin_dir().join("workspace-local")
}

/// The local server and the `ws` CLI, built once per test binary.
pub struct Binaries {
    pub server: PathBuf,
    pub ws: PathBuf,
}

/// Builds `workspace-local` and `ws` once (debug, the shared target directory).
pub fn binaries() -> &'static Binaries {
    static BINARIES: std::sync::OnceLock<Binaries> = std::sync::OnceLock::new();
    BINARIES.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .current_dir(root())
            .args([
                "build",
                "--quiet",
                "--bin",
                "workspace-local",
                "--bin",
                "ws",
            ])
            .status()
            .expect("cargo build");
        assert!(
            status.success(),
            "cargo build --bin workspace-local --bin ws"
        );
        Binaries {
            server: crate::bin_dir().join("workspace-local"),
            ws: crate::bin_dir().join("ws"),
        }
    })
}

pub struct LocalServer {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub addr: String,
    dir: PathBuf,
    stderr: Arc<Mutex<String>>,
}

impl LocalServer {
    /// Starts `binary` on a fresh data directory with `env` (`WORKSPACE_API_KEYS`, ...);
    /// returns once it prints its address.
    pub fn start(binary: &Path, env: &[(&str, &str)]) -> LocalServer {
        let dir = std::env::temp_dir().join(format!(
            "workspace-parity-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).expect("a data directory");
        let mut child = Command::new(binary)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("WORKSPACE_ADDR", "127.0.0.1:0")
            .env("WORKSPACE_DATA_DIR", &dir)
            .env("RUST_LOG", "warn")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn workspace-local");
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("workspace-local listening on http://") {
                    let _ = tx.send(addr.to_owned());
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
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
        let mut server = LocalServer {
            child,
            addr: String::new(),
            dir,
            stderr,
        };
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => server.addr = addr,
            Err(_) => panic!(
                "workspace-local did not start; stderr:\n{}",
                server.stderr()
            ),
        }
        server
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends `req` to the server as given.
    pub async fn send(&self, req: &HttpRequest) -> HttpAnswer {
        send_raw(&self.addr, req).await
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One HTTP/1.1 exchange with `addr` (`host:port`) over a fresh connection: the request
/// line carries `req.target` exactly, headers go in order (repeats kept), then `Host`,
/// `Content-Length` (for a body, or a PUT/POST) and `Connection: close`.
pub async fn send_raw(addr: &str, req: &HttpRequest) -> HttpAnswer {
    let mut head = format!("{} {} HTTP/1.1\r\nHost: {addr}\r\n", req.method, req.target);
    for (k, v) in &req.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let has_length = req
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
    if !has_length && (!req.body.is_empty() || matches!(req.method.as_str(), "PUT" | "POST")) {
        head.push_str(&format!("Content-Length: {}\r\n", req.body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&req.body);
    stream.write_all(&bytes).await.expect("send the request");
    let mut raw = Vec::new();
    // The server may answer (and close) before reading the whole body: keep what came.
    let _ = stream.read_to_end(&mut raw).await;
    parse_response(&raw)
        .unwrap_or_else(|| panic!("not an HTTP response: {}", String::from_utf8_lossy(&raw)))
}

fn parse_response(raw: &[u8]) -> Option<HttpAnswer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        let mut body = Vec::new();
        let mut at = rest;
        loop {
            let line_end = at.windows(2).position(|w| w == b"\r\n")?;
            let size_text = std::str::from_utf8(&at[..line_end]).ok()?;
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            at = &at[line_end + 2..];
            if size == 0 {
                break;
            }
            body.extend_from_slice(at.get(..size)?);
            at = at.get(size + 2..)?;
        }
        body
    } else {
        match headers.iter().find(|(k, _)| k == "content-length") {
            Some((_, n)) => rest.get(..n.parse::<usize>().ok()?)?.to_vec(),
            None => rest.to_vec(),
        }
    };
    Some(HttpAnswer {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_plain_and_chunked_answers() {
        let a = super::parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 3\r\n\r\nabc",
        )
        .unwrap();
        assert_eq!(
            (a.status, a.header("content-type").as_deref(), a.body),
            (200, Some("text/plain"), b"abc".to_vec())
        );
        let c = super::parse_response(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((c.status, c.body), (404, b"abc".to_vec()));
    }
}
