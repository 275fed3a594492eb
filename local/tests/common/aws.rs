//! The local server on the AWS adapters, against the moto emulator `tests/run.sh` starts.

use super::run_args;
use workspace_store_aws::testing;

/// The standard AWS environment pointed at the emulator, and the resource names.
pub fn aws_env(names: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("AWS_ENDPOINT_URL", testing::moto_url()),
        ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    env.extend(
        names
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    env
}

pub fn refs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

pub fn provision(dir: &std::path::Path, env: &[(String, String)]) -> String {
    let (status, out, err) = run_args(dir, &refs(env), &["provision"]);
    assert!(status.success(), "provision failed: {err}");
    out
}
