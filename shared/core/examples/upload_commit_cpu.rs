//! The CPU a two-step upload commit spends on its bytes: the SHA-256 check and WSR-1
//! redaction of `maxUploadBytes` of text (the S3 reads and writes come on top). Run with
//! `cargo run --release -p workspace-core --example upload_commit_cpu [bytes]`; a Lambda
//! function at 1024 MB gets about 0.58 of a vCPU, so scale the times by about 1.7.

use std::time::Instant;
use workspace_core::model::sha256_hex;
use workspace_core::redact::Redactor;

fn main() {
    let bytes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(104_857_600);
    // Markdown-like text with a secret-shaped token every 64 KiB.
    let line = "- step: call the tool, read the answer, write the note (token=abc)\n";
    let mut text = String::with_capacity(bytes + line.len());
    while text.len() < bytes {
        text.push_str(line);
        if text.len() % 65_536 < line.len() {
            text.push_str("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n");
        }
    }
    text.truncate(bytes);
    let t = Instant::now();
    let sha = sha256_hex(text.as_bytes());
    let hashed = t.elapsed();
    let t = Instant::now();
    let out = Redactor::new(true).redact(&text, &[]);
    let redacted = t.elapsed();
    println!(
        "{bytes} bytes: sha256 {:.2} s, redaction {:.2} s ({} bytes out, sha {}...)",
        hashed.as_secs_f64(),
        redacted.as_secs_f64(),
        out.text.len(),
        &sha[..8]
    );
}
