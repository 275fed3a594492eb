//! What `ws` prints: aligned tables and short lines for people, one JSON document per line
//! for scripts. A reader that goes away (`ws ls | head`) ends the run quietly.

use serde_json::Value;
use std::io::Write;

/// Writes `text` to standard output. A closed pipe means the reader has what it wanted, so
/// `ws` stops there with success rather than reporting an error nobody reads.
pub fn out(text: &str) {
    write_stdout(text.as_bytes());
}

pub fn write_stdout(bytes: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("ws: cannot write to standard output: {e}");
        std::process::exit(5);
    }
}

pub fn json(value: &Value) {
    out(&format!("{value}\n"));
}

/// Columns padded to their widest cell, the last one left ragged.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, cell) in cells.enumerate() {
            if i + 1 < widths.len() {
                s.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            } else {
                s.push_str(cell);
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut text = line(&mut headers.iter().copied());
    for row in rows {
        text.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    text
}

pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A field of a JSON row as table text ("" when absent).
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let t = table(
            &["PATH", "VERSION"],
            &[
                vec!["a/long/path.md".into(), "12".into()],
                vec!["b".into(), "1".into()],
            ],
        );
        assert_eq!(
            t,
            "PATH            VERSION\na/long/path.md  12\nb               1\n"
        );
    }

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(size(12), "12 B");
        assert_eq!(size(10_000), "9.8 KiB");
        assert_eq!(size(5 * 1024 * 1024), "5.0 MiB");
    }
}
