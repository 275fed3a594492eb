//! `sam build` for real, offline, with the tools `tests/run.sh` installs into `.venv`: one
//! function that calls S3 and DynamoDB and one that calls DynamoDB alone, each an arm64
//! `bootstrap` ready to zip. (`template_routes.rs` checks every function's
//! `BuildProperties.Binary` against the workspace's binaries; `lambda_invoke.rs` runs them.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// ELF machine AArch64, as in the header of an arm64 Linux executable.
fn is_arm64_elf(bytes: &[u8]) -> bool {
    bytes.len() > 20
        && bytes.starts_with(b"\x7fELF")
        && u16::from_le_bytes([bytes[18], bytes[19]]) == 183
}

#[test]
fn sam_build_makes_arm64_bootstraps_for_an_s3_and_dynamodb_function_and_a_dynamodb_only_one() {
    let venv = root().join(".venv/bin");
    let build_dir = root().join("target/sam/build");
    let path = format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for function in ["GetFunction", "ListFunction"] {
        let out = Command::new(venv.join("sam"))
            .current_dir(root())
            .env("PATH", &path)
            .env("SAM_CLI_TELEMETRY", "0")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            // Not --cached (see samconfig.toml): cargo's incremental build is the cache.
            .args(["build", function])
            .arg("--build-dir")
            .arg(&build_dir)
            .output()
            .expect("tests/run.sh installs SAM CLI into .venv");
        assert!(
            out.status.success(),
            "sam build {function}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let bootstrap = build_dir.join(function).join("bootstrap");
        let bytes =
            std::fs::read(&bootstrap).unwrap_or_else(|e| panic!("{}: {e}", bootstrap.display()));
        assert!(
            is_arm64_elf(&bytes),
            "{} is an arm64 executable",
            bootstrap.display()
        );
    }
}
