//! The mount's disk cache of file bodies, one file per etag (an etag names one version's
//! bytes forever, so a cached body never needs revalidating: the listing and the change log
//! say which etag is current). Bounded: past `max_bytes` the least recently used bodies are
//! removed; a handle that has one open keeps reading it (Linux keeps an unlinked file's data
//! until its last descriptor closes).

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub struct BodyCache {
    dir: PathBuf,
    max_bytes: u64,
    tmp: AtomicU64,
    used: Mutex<Used>,
}

#[derive(Default)]
struct Used {
    /// etag's file name → (size, last use).
    entries: HashMap<String, (u64, u64)>,
    total: u64,
    clock: u64,
}

impl BodyCache {
    /// A cache in `dir` (emptied: what an earlier mount left is not trusted to be whole).
    pub fn new(dir: PathBuf, max_bytes: u64) -> std::io::Result<BodyCache> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        Ok(BodyCache {
            dir,
            max_bytes,
            tmp: AtomicU64::new(0),
            used: Mutex::new(Used::default()),
        })
    }

    fn name(etag: &str) -> String {
        hex::encode(&Sha256::digest(etag.as_bytes())[..16])
    }

    /// A fresh path to download into before [`Self::insert`].
    pub fn tmp_path(&self) -> PathBuf {
        let n = self.tmp.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("tmp-{n}"))
    }

    /// The body of `etag`, if cached.
    pub fn open(&self, etag: &str) -> Option<File> {
        let name = Self::name(etag);
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        used.clock += 1;
        let clock = used.clock;
        let entry = used.entries.get_mut(&name)?;
        entry.1 = clock;
        File::open(self.dir.join(&name)).ok()
    }

    /// Files the downloaded `tmp` as `etag`'s body and opens it; evicts past the bound.
    pub fn insert(&self, etag: &str, tmp: &Path) -> std::io::Result<File> {
        let name = Self::name(etag);
        let dest = self.dir.join(&name);
        std::fs::rename(tmp, &dest)?;
        let file = File::open(&dest)?;
        let size = file.metadata()?.len();
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        used.clock += 1;
        let clock = used.clock;
        if let Some((old, _)) = used.entries.insert(name.clone(), (size, clock)) {
            used.total -= old;
        }
        used.total += size;
        while used.total > self.max_bytes {
            let Some(victim) = used
                .entries
                .iter()
                .filter(|(n, _)| **n != name)
                .min_by_key(|(_, (_, t))| *t)
                .map(|(n, _)| n.clone())
            else {
                break;
            };
            if let Some((s, _)) = used.entries.remove(&victim) {
                used.total -= s;
            }
            let _ = std::fs::remove_file(self.dir.join(&victim));
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn least_recently_used_bodies_go_first_and_open_ones_stay_readable() {
        let dir = std::env::temp_dir().join(format!("ws-cache-test-{}", std::process::id()));
        let cache = BodyCache::new(dir.clone(), 10).unwrap();
        let put = |etag: &str, bytes: &[u8]| {
            let tmp = cache.tmp_path();
            std::fs::write(&tmp, bytes).unwrap();
            cache.insert(etag, &tmp).unwrap()
        };
        let mut a = put("a", b"aaaa");
        put("b", b"bbbb");
        assert!(cache.open("a").is_some(), "a is now the most recent");
        put("c", b"cccc");
        assert!(cache.open("b").is_none(), "b was the least recently used");
        assert!(cache.open("a").is_some() && cache.open("c").is_some());
        put("d", b"dddddddd");
        assert!(cache.open("a").is_none());
        let mut s = String::new();
        a.read_to_string(&mut s).unwrap();
        assert_eq!(s, "aaaa", "an open body survives its eviction");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
