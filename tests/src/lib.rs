//! Cross-crate tests live in `tests/`; this library holds what several of them share:
//! the functions under the Runtime Interface Emulator ([`rie`]), API Gateway HTTP API
//! payload-2.0 events built from HTTP requests ([`apigw`]), the local server as a
//! process ([`local`]), `ws mount` as a process ([`mount`]), and the linearizability
//! checker of the file API's histories ([`linearizability`]).

pub mod apigw;
pub mod b64;
pub mod linearizability;
pub mod local;
pub mod mount;
pub mod rie;

use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Standard output of `cargo <args>` at the root (offline), which must succeed.
pub fn cargo(args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(env!("CARGO"))
        .current_dir(root())
        .args(args)
        .arg("--offline")
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Where `cargo build` puts this profile's binaries: the directory above the running test
/// binary (`<target>/debug/deps`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/debug")
        .to_owned()
}
