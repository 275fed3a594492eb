//! The functions of template.yaml as `sam local invoke` runs them, without Docker: each
//! function's bootstrap (this host's debug build of its `fn-*` binary) under the Lambda
//! Runtime Interface Emulator that ships inside aws-sam-cli, with the environment SAM's own
//! code computes from template.yaml and an `env.json` (`tests/sam_local_env.py`).

use crate::root;
use serde_json::Value;
use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use workspace_store_aws::testing;

/// One function under the Runtime Interface Emulator, stopped (with its bootstrap) on drop.
pub struct Emulated {
    child: Child,
    pub port: u16,
}

impl Drop for Emulated {
    fn drop(&mut self) {
        let pgid = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &pgid]).status();
        let _ = self.child.wait();
    }
}

/// The functions of template.yaml as `sam local invoke` would run them with an env.json.
pub struct Sam {
    /// The emulator binary from aws-sam-cli.
    pub rie: PathBuf,
    /// Logical id → (BuildProperties.Binary, environment).
    pub functions: HashMap<String, (String, HashMap<String, String>)>,
}

/// `events/env.json` as committed, its `Parameters` changed by `overrides` (the emulator's
/// endpoint, fresh resource names), written under `target/` for `sam_local`. Asserts that
/// env.json names the emulator.
pub fn env_json_with(tag: &str, overrides: &[(&str, String)]) -> PathBuf {
    let mut env: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("events/env.json")).unwrap())
            .expect("events/env.json");
    let p = &mut env["Parameters"];
    assert!(
        p["AWS_ENDPOINT_URL"].is_string(),
        "env.json names the emulator"
    );
    for (k, v) in overrides {
        p[*k] = Value::String(v.clone());
    }
    let path = root()
        .join("target")
        .join(format!("env-{tag}-{}.json", std::process::id()));
    std::fs::write(&path, env.to_string()).unwrap();
    path
}

/// Fresh moto resources for the functions, and `events/env.json` pointed at them.
pub struct MotoStack {
    pub env: testing::Env,
    pub caps: testing::CapabilityEnv,
    pub observed: testing::Observed,
    pub env_json: PathBuf,
}

pub async fn fresh_stack(tag: &str) -> MotoStack {
    let env = testing::fresh(None).await;
    let caps = testing::fresh_capabilities().await;
    let observed = testing::observed_bus().await;
    let env_json = env_json_with(
        tag,
        &[
            ("AWS_ENDPOINT_URL", testing::moto_url()),
            ("WORKSPACE_TABLE", env.table.clone()),
            ("WORKSPACE_BUCKET", env.bucket.clone()),
            ("WORKSPACE_CACHE_TABLE", caps.cache_table.clone()),
            ("WORKSPACE_BLOB_S3_BUCKET", caps.blob_bucket.clone()),
            ("WORKSPACE_EVENT_BUS", observed.bus.clone()),
        ],
    );
    MotoStack {
        env,
        caps,
        observed,
        env_json,
    }
}

/// What SAM gives each function of template.yaml with `env_json` (sam_local_env.py).
pub fn sam_local(env_json: &Path) -> Sam {
    let python = root().join(".venv/bin/python");
    let out = Command::new(&python)
        .current_dir(root())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", std::env::temp_dir())
        .env("SAM_CLI_TELEMETRY", "0")
        .args(["tests/sam_local_env.py", "template.yaml"])
        .arg(env_json)
        .output()
        .expect("tests/run.sh installs aws-sam-cli into .venv");
    assert!(
        out.status.success(),
        "sam_local_env.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON from sam_local_env.py");
    let functions = v["functions"]
        .as_object()
        .expect("functions")
        .iter()
        .map(|(id, f)| {
            let env = f["env"]
                .as_object()
                .expect("env")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect();
            let binary = f["binary"].as_str().expect("BuildProperties.Binary");
            (id.clone(), (binary.to_owned(), env))
        })
        .collect();
    Sam {
        rie: PathBuf::from(v["rie"].as_str().expect("rie")),
        functions,
    }
}

/// Builds every function's bootstrap for this host (the test's own target directory) and
/// answers the directory they are in.
pub fn build_bootstraps(sam: &Sam) -> PathBuf {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root()).args(["build", "--quiet"]);
    let mut binaries: Vec<&String> = sam.functions.values().map(|(b, _)| b).collect();
    binaries.sort();
    for binary in binaries {
        cmd.args(["--bin", binary]);
    }
    assert!(cmd.status().expect("cargo build").success(), "cargo build");
    crate::bin_dir()
}

/// Two distinct free loopback ports (both held while the second is chosen, so they never
/// coincide; another process may still take one before the emulator binds it: see
/// [`emulate`]).
fn two_free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    let b = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    let port = |l: &TcpListener| l.local_addr().expect("an address").port();
    (port(&a), port(&b))
}

/// Starts `logical_id` under the emulator and waits until it listens. An emulator that
/// exits before it listens (a port taken between choosing and binding it) is started again
/// on other ports, up to three times.
pub fn emulate(sam: &Sam, logical_id: &str, bin_dir: &Path) -> Emulated {
    use std::os::unix::process::CommandExt;
    let (binary, env) = sam
        .functions
        .get(logical_id)
        .unwrap_or_else(|| panic!("template.yaml has no function {logical_id}"));
    for _ in 0..3 {
        let (port, runtime_port) = two_free_ports();
        // Each emulator also serves its bootstrap a Runtime API, on a port of its own.
        let child = Command::new(&sam.rie)
            .args([
                "--runtime-interface-emulator-address",
                &format!("127.0.0.1:{port}"),
                "--runtime-api-address",
                &format!("127.0.0.1:{runtime_port}"),
            ])
            .arg(bin_dir.join(binary))
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("the emulator from aws-sam-cli");
        let mut emulated = Emulated { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return emulated;
            }
            if matches!(emulated.child.try_wait(), Ok(Some(_))) {
                break; // it exited: try other ports
            }
            assert!(Instant::now() < deadline, "the emulator never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    panic!("the emulator exited before listening, three times");
}

/// Invokes the emulated function with `event`; its answer as JSON.
pub async fn invoke_event(e: &Emulated, event: &Value) -> Value {
    try_invoke_event(e, event)
        .await
        .unwrap_or_else(|err| panic!("{err}"))
}

/// Invokes the emulated function with `event`: its answer as JSON, or why there is none.
pub async fn try_invoke_event(e: &Emulated, event: &Value) -> Result<Value, String> {
    let url = format!(
        "http://127.0.0.1:{}/2015-03-31/functions/function/invocations",
        e.port
    );
    let resp = reqwest::Client::new()
        .post(url)
        .timeout(Duration::from_secs(120))
        .body(event.to_string())
        .send()
        .await
        .map_err(|err| format!("the emulator did not answer: {err}"))?;
    let text = resp
        .text()
        .await
        .map_err(|err| format!("the emulator's answer broke off: {err}"))?;
    serde_json::from_str(&text).map_err(|err| format!("{err}: {text:.500}"))
}
