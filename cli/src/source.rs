//! Local content to write: its size and SHA-256 up front (a two-step upload declares both),
//! held in memory when small, read again from disk while it is sent when large.

use crate::error::{Error, Result};
use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

pub enum Data {
    Memory(Bytes),
    File(PathBuf),
}

pub struct Source {
    pub data: Data,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

impl Source {
    pub fn from_bytes(bytes: Vec<u8>) -> Source {
        Source {
            size: bytes.len() as u64,
            sha256: hex::encode(Sha256::digest(&bytes)),
            data: Data::Memory(Bytes::from(bytes)),
        }
    }

    /// Reads `path`: into memory when it is at most `inline_max` bytes, else only hashed
    /// (streamed) and left on disk.
    pub fn from_file(path: &Path, inline_max: u64) -> Result<Source> {
        let unreadable =
            |e: std::io::Error| Error::bad_input(format!("cannot read {}", path.display()), e);
        let mut file = std::fs::File::open(path).map_err(unreadable)?;
        let meta = file.metadata().map_err(unreadable)?;
        if !meta.is_file() {
            return Err(Error::bad_input(
                format!("cannot read {}", path.display()),
                "not a regular file",
            ));
        }
        if meta.len() <= inline_max {
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            file.read_to_end(&mut bytes).map_err(unreadable)?;
            return Ok(Source::from_bytes(bytes));
        }
        let mut hasher = Sha256::new();
        let size = std::io::copy(&mut file, &mut HashWriter(&mut hasher)).map_err(unreadable)?;
        Ok(Source {
            data: Data::File(path.to_owned()),
            size,
            sha256: hex::encode(hasher.finalize()),
        })
    }

    pub fn from_stdin() -> Result<Source> {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::bad_input("cannot read standard input", e))?;
        Ok(Source::from_bytes(bytes))
    }
}

/// Feeds whatever is written into a hasher.
pub struct HashWriter<'a>(pub &'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_are_held_and_large_ones_only_hashed() {
        let path = std::env::temp_dir().join(format!("ws-source-test-{}", std::process::id()));
        std::fs::write(&path, b"hello").unwrap();
        let small = Source::from_file(&path, 5).unwrap();
        let large = Source::from_file(&path, 4).unwrap();
        std::fs::remove_file(&path).unwrap();
        let hello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        assert!(matches!(small.data, Data::Memory(ref b) if b.as_ref() == b"hello"));
        assert!(matches!(large.data, Data::File(_)));
        assert_eq!((small.size, small.sha256.as_str()), (5, hello));
        assert_eq!((large.size, large.sha256.as_str()), (5, hello));
    }

    #[test]
    fn a_missing_file_is_bad_input() {
        let e = Source::from_file(Path::new("/nonexistent/ws-file"), 10)
            .err()
            .unwrap();
        assert_eq!(e.kind, crate::error::Kind::BadInput);
    }
}
