//! Streamed uploads in the embedded store: the bytes go to a file of the staging folder
//! piece by piece, a key holds one object wherever it lives (a value or a file), a body
//! that fails stages nothing, and no file outlives the row that names it (deleted, pruned,
//! erased, or left by a process that stopped half way).

use std::collections::VecDeque;
use std::path::Path;
use workspace_core::ports::{BodyPieces, Staging};
use workspace_core::sessions::ports::BodyEraser;
use workspace_core::{Result, WorkspaceError};
use workspace_store_embedded::{EmbeddedStore, STAGING_DIR};

const KEY: &str = "t/acme/w/main/uploads/up-1/bytes";

/// Pieces as a test scripts them: bytes, or a failure.
struct Script(VecDeque<Result<Vec<u8>>>);

#[async_trait::async_trait]
impl BodyPieces for Script {
    async fn next_piece(&mut self) -> Result<Option<Vec<u8>>> {
        self.0.pop_front().transpose()
    }
}

fn pieces(sizes: &[usize], fill: u8) -> (Script, Vec<u8>) {
    let parts: Vec<Vec<u8>> = sizes.iter().map(|n| vec![fill; *n]).collect();
    let whole = parts.concat();
    (Script(parts.into_iter().map(Ok).collect()), whole)
}

fn files(dir: &Path) -> Vec<u64> {
    std::fs::read_dir(dir.join(STAGING_DIR))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .collect()
}

#[tokio::test]
async fn pieces_go_to_one_file_that_replaces_what_the_key_held() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    // A value first; the streamed object replaces it.
    store.put_staged(KEY, b"small".to_vec(), 1).await.unwrap();
    // Pieces smaller and larger than the store's buffer (1 MiB).
    let (mut p, first) = pieces(&[700 * 1024, 700 * 1024, 3 * 1024 * 1024, 5], b'a');
    store.put_staged_pieces(KEY, &mut p, 2).await.unwrap();
    let got = store.get_staged(KEY, u64::MAX).await.unwrap().unwrap();
    assert_eq!((got.size, got.stored_at), (first.len() as u64, 2));
    assert!(got.bytes.as_deref() == Some(&first[..]));
    assert_eq!(files(dir.path()), vec![first.len() as u64]);
    // Over the reader's limit: its size, not its bytes.
    let over = store.get_staged(KEY, 10).await.unwrap().unwrap();
    assert_eq!((over.size, over.bytes), (first.len() as u64, None));

    // Another streamed object replaces the first, and its file goes.
    let (mut p, second) = pieces(&[10, 20], b'b');
    store.put_staged_pieces(KEY, &mut p, 3).await.unwrap();
    let got = store.get_staged(KEY, u64::MAX).await.unwrap().unwrap();
    assert_eq!(got.bytes, Some(second.clone()));
    assert_eq!(files(dir.path()), vec![second.len() as u64]);

    // A value replaces the file.
    store.put_staged(KEY, b"value".to_vec(), 4).await.unwrap();
    let got = store.get_staged(KEY, u64::MAX).await.unwrap().unwrap();
    assert_eq!(got.bytes, Some(b"value".to_vec()));
    assert!(files(dir.path()).is_empty());

    // Deleting a streamed object removes its file.
    let (mut p, _) = pieces(&[100], b'c');
    store.put_staged_pieces(KEY, &mut p, 5).await.unwrap();
    store.delete_staged(KEY).await.unwrap();
    assert_eq!(store.get_staged(KEY, u64::MAX).await.unwrap(), None);
    assert!(files(dir.path()).is_empty());
}

#[tokio::test]
async fn a_body_that_fails_stages_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let (mut p, kept) = pieces(&[64], b'k');
    store.put_staged_pieces(KEY, &mut p, 1).await.unwrap();
    // Two pieces, then the transport fails (a connection cut mid-body).
    let mut failing = Script(VecDeque::from([
        Ok(vec![b'x'; 2 * 1024 * 1024]),
        Ok(vec![b'x'; 10]),
        Err(WorkspaceError::validation(
            "the request body could not be read",
        )),
    ]));
    let e = store
        .put_staged_pieces(KEY, &mut failing, 2)
        .await
        .unwrap_err();
    assert!(matches!(e, WorkspaceError::Validation(_)), "{e:?}");
    let got = store.get_staged(KEY, u64::MAX).await.unwrap().unwrap();
    assert_eq!(
        (got.bytes, got.stored_at),
        (Some(kept.clone()), 1),
        "what was staged stays"
    );
    assert_eq!(
        files(dir.path()),
        vec![kept.len() as u64],
        "no partial file"
    );
}

#[tokio::test]
async fn pruning_and_erasing_remove_files_and_a_restart_removes_strays() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = EmbeddedStore::open(dir.path()).unwrap();
        for (key, at) in [
            ("t/acme/w/main/uploads/old/bytes", 10),
            ("t/acme/w/main/uploads/new/bytes", 1000),
            ("t/acme/w/other/uploads/x/bytes", 10),
            ("t/beta/w/main/uploads/y/bytes", 10),
        ] {
            let (mut p, _) = pieces(&[8], b'p');
            store.put_staged_pieces(key, &mut p, at).await.unwrap();
        }
        assert_eq!(files(dir.path()).len(), 4);
        let pruned = store
            .prune_staged("t/acme/w/main/uploads/", 500)
            .await
            .unwrap();
        assert_eq!(pruned, 1);
        assert_eq!(files(dir.path()).len(), 3);
        assert!(store
            .get_staged("t/acme/w/main/uploads/new/bytes", 64)
            .await
            .unwrap()
            .is_some());
        assert_eq!(store.count_prefix("t/acme/w/other/").await.unwrap(), 1);
        assert_eq!(store.erase_prefix("t/acme/w/other/").await.unwrap(), 1);
        assert_eq!(files(dir.path()).len(), 2);
    }
    // What a process stopped half way leaves: files no row names.
    let staging = dir.path().join(STAGING_DIR);
    std::fs::write(staging.join("0123abcd"), b"partial").unwrap();
    std::fs::write(staging.join("README"), b"not the store's").unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    assert!(
        !staging.join("0123abcd").exists(),
        "a stray file is removed"
    );
    assert!(
        staging.join("README").exists(),
        "only names the store gives"
    );
    for key in [
        "t/acme/w/main/uploads/new/bytes",
        "t/beta/w/main/uploads/y/bytes",
    ] {
        let got = store.get_staged(key, 64).await.unwrap().unwrap();
        assert_eq!(got.bytes, Some(vec![b'p'; 8]), "{key} survives the restart");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn staged_files_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let (mut p, _) = pieces(&[8], b'o');
    store.put_staged_pieces(KEY, &mut p, 1).await.unwrap();
    let staging = dir.path().join(STAGING_DIR);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&staging), 0o700);
    for e in std::fs::read_dir(&staging).unwrap() {
        assert_eq!(mode(&e.unwrap().path()), 0o600);
    }
}
