//! Compiles the console's assets (`assets/`) into the crate: one table of name, bytes,
//! content type and ETag, and a build id (a hash of every asset) that names the folder the
//! assets are served from, so their URLs change whenever any of them does and can be cached
//! for a year. `index.html` names that folder through `{{BUILD}}`, filled in here.
//! Written by hand because it is a few lines: no crate embeds files and hashes them into a
//! versioned URL prefix the way this needs.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("console/assets")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("txt") | Some("md") => "text/plain; charset=utf-8",
        _ => panic!("console asset {name}: no content type known for its extension"),
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut all = Sha256::new();
    let mut rows = Vec::new();
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f
            .strip_prefix(&root)
            .expect("under assets")
            .to_str()
            .expect("UTF-8 asset name")
            .replace('\\', "/");
        let bytes = std::fs::read(f).expect("read asset");
        all.update(name.as_bytes());
        all.update([0]);
        all.update(&bytes);
        all.update([0]);
        rows.push((name, f.clone(), bytes));
    }
    let build = hex::encode(&all.finalize()[..6]);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let mut code = String::new();
    writeln!(
        code,
        "/// The build id: names the folder every asset is served from."
    )
    .unwrap();
    writeln!(code, "pub const BUILD: &str = {build:?};").unwrap();
    writeln!(code, "pub static ASSETS: &[Asset] = &[").unwrap();
    for (name, path, bytes) in rows {
        let (path, bytes) = if name == "index.html" {
            let text = String::from_utf8(bytes).expect("index.html is UTF-8");
            let filled = text.replace("{{BUILD}}", &build);
            let p = out.join("index.html");
            std::fs::write(&p, &filled).expect("write index.html");
            (p, filled.into_bytes())
        } else {
            (path, bytes)
        };
        let etag = format!("\"{}\"", hex::encode(&Sha256::digest(&bytes)[..12]));
        writeln!(
            code,
            "    Asset {{ name: {name:?}, bytes: include_bytes!({:?}), content_type: {:?}, etag: {etag:?} }},",
            path.display().to_string(),
            content_type(&name)
        )
        .unwrap();
    }
    writeln!(code, "];").unwrap();
    std::fs::write(out.join("assets.rs"), code).expect("write assets.rs");
}
