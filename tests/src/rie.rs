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
    /// Logical id → what Lambda adds to SAM's environment: the credentials of the
    /// function's own execution role ([`MotoStack::roles`]; see [`Sam::under_roles`]).
    pub roles: HashMap<String, Vec<(String, String)>>,
}

impl Sam {
    /// Each function runs with the credentials of its own role, as on Lambda; a function
    /// without a role in `roles` cannot be started.
    pub fn under_roles(mut self, roles: HashMap<String, Vec<(String, String)>>) -> Self {
        self.roles = roles;
        self
    }

    /// The functions that carry the model layer (their template environment names its folder,
    /// `/opt/all-minilm-l6-v2`, in `WORKSPACE_MODEL_DIR`) load this host's installed model
    /// from `dir` instead, as they would load the layer on Lambda.
    pub fn with_model(mut self, dir: &str) -> Self {
        for (_, env) in self.functions.values_mut() {
            if let Some(folder) = env.get_mut("WORKSPACE_MODEL_DIR") {
                *folder = dir.to_owned();
            }
        }
        self
    }
}

/// The installed embedding model's folder (`WORKSPACE_MODEL_DIR`: tests/run.sh installs it).
pub fn installed_model() -> String {
    std::env::var("WORKSPACE_MODEL_DIR")
        .expect("WORKSPACE_MODEL_DIR names the installed model (tests/run.sh installs it)")
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

/// The stack the functions run in: template.yaml, translated by the SAM translator and
/// created by the emulator's CloudFormation (`tests/stack_roles.py`), `events/env.json`
/// pointed at its resources, and for each function the credentials of its own execution
/// role (STS `AssumeRole` of the role the stack created). The emulator decides every call
/// made with those credentials as AWS's IAM would (`tests/iam/`).
pub struct MotoStack {
    pub env: testing::Env,
    pub caps: testing::CapabilityEnv,
    pub observed: testing::Observed,
    pub env_json: PathBuf,
    /// Logical id of each function → its role's session credentials and the emulator's
    /// certificate, as environment variables.
    pub roles: HashMap<String, Vec<(String, String)>>,
}

/// The emulator's HTTPS endpoint (the same backends as [`testing::moto_url`]) and the file
/// of its self-signed certificate, which `tests/run.sh` exports. The functions reach it
/// over TLS: the stack's bucket policies deny every S3 call without it, as on AWS.
fn moto_https() -> (String, String) {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: run the tests with `bash tests/run.sh`, which starts the emulator")
        })
    };
    (
        var("WORKSPACE_TEST_MOTO_HTTPS_URL"),
        var("WORKSPACE_TEST_MOTO_CA_FILE"),
    )
}

/// The emulator's HTTPS base URL, where the functions' presigned URLs point.
pub fn moto_https_url() -> String {
    moto_https().0
}

/// An HTTP client for the presigned URLs the functions answer: it trusts the emulator's
/// certificate as a client on AWS trusts S3's.
pub fn presigned_url_client() -> reqwest::Client {
    let pem = std::fs::read(moto_https().1).expect("the emulator's certificate");
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("a PEM certificate"))
        .build()
        .expect("an HTTPS client")
}

pub async fn fresh_stack(tag: &str) -> MotoStack {
    let (https_url, ca_file) = moto_https();
    let name = format!("ws-{tag}-{}", std::process::id());
    let python = root().join(".venv/bin/python");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .current_dir(root())
            .args(["tests/stack_roles.py", "--endpoint", &testing::moto_url()])
            .args(["--stack-name", &name])
            .output()
            .expect("tests/run.sh installs the Python tools into .venv")
    })
    .await
    .expect("the stack deploys");
    assert!(
        out.status.success(),
        "tests/stack_roles.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stack: Value = serde_json::from_slice(&out.stdout).expect("JSON from stack_roles.py");
    let resource = |id: &str| {
        stack["resources"][id]
            .as_str()
            .unwrap_or_else(|| panic!("the stack has no {id}"))
            .to_owned()
    };
    let env = testing::of_stack(&resource("WorkspaceTable"), &resource("WorkspaceBucket")).await;
    let caps =
        testing::capabilities_of_stack(&resource("BlobBucket"), &resource("CacheTable")).await;
    let observed = testing::observe(&resource("WorkspaceEventBus")).await;
    let env_json = env_json_with(
        tag,
        &[
            ("AWS_ENDPOINT_URL", https_url),
            ("WORKSPACE_TABLE", env.table.clone()),
            ("WORKSPACE_BUCKET", env.bucket.clone()),
            ("WORKSPACE_CACHE_TABLE", caps.cache_table.clone()),
            ("WORKSPACE_BLOB_S3_BUCKET", caps.blob_bucket.clone()),
            ("WORKSPACE_EVENT_BUS", resource("WorkspaceEventBus")),
        ],
    );
    let roles = stack["functions"]
        .as_object()
        .expect("functions")
        .iter()
        .map(|(id, f)| {
            let c = &f["credentials"];
            let var = |k: &str| c[k].as_str().expect("credentials").to_owned();
            let vars = vec![
                ("AWS_ACCESS_KEY_ID".to_owned(), var("AccessKeyId")),
                ("AWS_SECRET_ACCESS_KEY".to_owned(), var("SecretAccessKey")),
                ("AWS_SESSION_TOKEN".to_owned(), var("SessionToken")),
                // The emulator's certificate stands in for AWS's public CA.
                ("SSL_CERT_FILE".to_owned(), ca_file.clone()),
            ];
            (id.clone(), vars)
        })
        .collect();
    MotoStack {
        env,
        caps,
        observed,
        env_json,
        roles,
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
        roles: HashMap::new(),
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

/// The variable naming the file emulated functions log to (their stdout and stderr,
/// appended), to read why a function answered 500; unset, their logs go nowhere.
pub const FUNCTION_LOG: &str = "WORKSPACE_TEST_FUNCTION_LOG";

/// The warning and error lines of the functions' log ([`FUNCTION_LOG`]), the last 40.
pub fn function_log_problems() -> String {
    let Some(path) = std::env::var_os(FUNCTION_LOG) else {
        return format!("({FUNCTION_LOG} is not set)");
    };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            [
                "\"level\":\"ERROR\"",
                "\"level\":\"WARN\"",
                "[ERROR]",
                "[WARN",
                "panicked",
            ]
            .iter()
            .any(|m| l.contains(m))
        })
        .collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Where an emulated function's log goes ([`FUNCTION_LOG`]).
fn function_log() -> Stdio {
    std::env::var_os(FUNCTION_LOG)
        .and_then(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
        })
        .map_or_else(Stdio::null, Stdio::from)
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
    let role = sam.roles.get(logical_id).unwrap_or_else(|| {
        panic!("{logical_id} has no role: Sam::under_roles with the stack's roles first")
    });
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
            .envs(role.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(function_log())
            .stderr(function_log())
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
