//! Each Lambda function depends on the AWS SDKs its IAM policy lets it call, and on nothing
//! it does not serve: no SDK without a grant (`fn-delete` has no S3, `fn-console` none at
//! all), no embedded store, no MCP outside `fn-mcp`. Read from `cargo tree` (what the function's own features pull
//! in) and template.yaml (what the function's role may do).

use std::collections::{BTreeMap, BTreeSet};
use workspace_tests::{cargo, root};
use yaml_rust2::{Yaml, YamlLoader};

/// The crates in `package`'s normal dependency tree.
fn tree(package: &str) -> BTreeSet<String> {
    let out = cargo(&["tree", "-p", package, "-e", "normal", "--prefix", "none"]);
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect()
}

/// Actions a function's role holds for Lambda itself, not for the code: reading its
/// stream (the event source mapping) and sending failures to its dead-letter queue.
fn for_lambda_itself(action: &str) -> bool {
    action.starts_with("sqs:")
        || [
            "dynamodb:GetRecords",
            "dynamodb:GetShardIterator",
            "dynamodb:DescribeStream",
            "dynamodb:ListStreams",
        ]
        .contains(&action)
}

/// Binary → the SDK crates its IAM statements call for.
fn granted() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    let t = YamlLoader::load_from_str(&text)
        .expect("template parses")
        .remove(0);
    let mut out = BTreeMap::new();
    for (_, res) in t["Resources"].as_hash().expect("Resources") {
        if res["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let binary = res["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .expect("Binary")
            .to_owned();
        let mut sdks = BTreeSet::new();
        // Inline SAM policies, or the policies of a role of its own (`Role: !GetAtt R.Arn`).
        let mut documents: Vec<Yaml> = res["Properties"]["Policies"]
            .as_vec()
            .cloned()
            .unwrap_or_default();
        if let Some(role) = res["Properties"]["Role"].as_str() {
            let role = &t["Resources"][role.trim_end_matches(".Arn")];
            for p in role["Properties"]["Policies"]
                .as_vec()
                .cloned()
                .unwrap_or_default()
            {
                documents.push(p["PolicyDocument"].clone());
            }
        }
        for policy in &documents {
            for st in policy["Statement"].as_vec().cloned().unwrap_or_default() {
                let actions: Vec<Yaml> = match &st["Action"] {
                    Yaml::Array(a) => a.clone(),
                    one => vec![one.clone()],
                };
                for a in actions.iter().filter_map(Yaml::as_str) {
                    if for_lambda_itself(a) {
                        continue;
                    }
                    let sdk = match a.split(':').next() {
                        Some("dynamodb") => "aws-sdk-dynamodb",
                        Some("s3") => "aws-sdk-s3",
                        Some("events") => "aws-sdk-eventbridge",
                        other => panic!("{binary}: no SDK known for {other:?} ({a})"),
                    };
                    sdks.insert(sdk.to_owned());
                }
            }
        }
        out.insert(binary, sdks);
    }
    out
}

#[test]
fn each_function_carries_only_the_sdks_its_role_may_call() {
    let granted = granted();
    assert!(granted.len() >= 14, "{granted:?}");
    for (binary, sdks) in &granted {
        let crates = tree(binary);
        // aws-sdk-sts and -sso(oidc) come with aws-config's credential providers.
        let in_tree: BTreeSet<String> = crates
            .iter()
            .filter(|c| c.starts_with("aws-sdk-"))
            .filter(|c| {
                !matches!(
                    c.as_str(),
                    "aws-sdk-sts" | "aws-sdk-sso" | "aws-sdk-ssooidc"
                )
            })
            .cloned()
            .collect();
        assert_eq!(
            &in_tree, sdks,
            "{binary}: SDKs in its tree vs. its IAM grants"
        );
        for never in ["workspace-store-embedded", "redb", "axum"] {
            assert!(!crates.contains(never), "{binary} depends on {never}");
        }
        assert_eq!(
            crates.contains("workspace-mcp"),
            binary == "fn-mcp",
            "{binary}: MCP only in fn-mcp"
        );
        // The search engine (SQLite, about 1 MB) only where searches are answered.
        assert_eq!(
            crates.contains("workspace-search"),
            matches!(binary.as_str(), "fn-search" | "fn-mcp" | "fn-indexer"),
            "{binary}: the search engine only in fn-search, fn-indexer and fn-mcp"
        );
    }
    // A function whose role holds no S3 right links no S3 client.
    assert!(!tree("fn-delete").contains("aws-sdk-s3"));
}

/// One TLS stack: every AWS client sends through `workspace_store_aws::https_client`
/// (rustls with ring). The SDK's default HTTPS client would bring aws-lc as well, about
/// 160 KB of every zip (docs/performance.md).
#[test]
fn no_function_links_the_sdks_default_tls_stack() {
    for function in granted().keys() {
        let crates = tree(function);
        let lc: Vec<&String> = crates.iter().filter(|c| c.starts_with("aws-lc")).collect();
        assert!(lc.is_empty(), "{function} depends on {lc:?}");
        if crates.contains("aws-smithy-http-client") {
            assert!(crates.contains("ring"), "{function} sends without ring");
        }
    }
}

/// The console's function serves compiled-in assets on public routes: no grant, and no AWS
/// SDK at all, not even the credential providers (`aws-sdk-sts`) aws-config brings, nor
/// the settings and adapters (`workspace-lambda` without its `aws` feature).
#[test]
fn the_console_function_links_no_aws_sdk() {
    assert_eq!(
        granted().get("fn-console"),
        Some(&BTreeSet::new()),
        "ConsoleFunction's role grants nothing but logs"
    );
    let crates = tree("fn-console");
    let aws: Vec<&String> = crates
        .iter()
        .filter(|c| {
            c.starts_with("aws-sdk-")
                || c.starts_with("aws-config")
                || c.starts_with("aws-smithy-")
                || ["workspace-wiring", "workspace-store-aws"].contains(&c.as_str())
        })
        .collect();
    assert!(aws.is_empty(), "fn-console depends on {aws:?}");
    assert!(crates.contains("workspace-console"));
}

/// `sam build` runs `cargo lambda build --bin <Binary>` in each function's `CodeUri`, the
/// workspace root: SAM's `--cached` and `sam sync --watch` see only what is under
/// `CodeUri`, and every function is built from `shared/` too. Every package under
/// `functions/` is a function of the template, and every function's binary is one of them
/// (`bench/lambda_size.py` builds and checks them the same way).
#[test]
fn sam_builds_every_function_package_from_the_workspace_root() {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    let t = YamlLoader::load_from_str(&text)
        .expect("template parses")
        .remove(0);
    let mut code_uri = BTreeMap::new();
    for (_, res) in t["Resources"].as_hash().expect("Resources") {
        if res["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let binary = res["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .expect("Binary");
        let uri = res["Properties"]["CodeUri"].as_str().expect("CodeUri");
        code_uri.insert(binary.to_owned(), uri.trim_end_matches('/').to_owned());
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&cargo(&["metadata", "--no-deps", "--format-version", "1"]))
            .expect("cargo metadata is JSON");
    let root = root().canonicalize().expect("the repository root");
    let mut packages = BTreeMap::new();
    for p in meta["packages"].as_array().expect("packages") {
        let manifest = std::path::Path::new(p["manifest_path"].as_str().expect("manifest_path"));
        let folder = manifest.parent().expect("a folder");
        let Ok(rel) = folder.strip_prefix(&root) else {
            continue;
        };
        let rel = rel.to_string_lossy().into_owned();
        for target in p["targets"].as_array().expect("targets") {
            if target["kind"]
                .as_array()
                .expect("kind")
                .iter()
                .any(|k| k == "bin")
            {
                packages.insert(
                    target["name"].as_str().expect("name").to_owned(),
                    rel.clone(),
                );
            }
        }
    }
    for (binary, uri) in &code_uri {
        assert_eq!(uri, ".", "{binary}: CodeUri is the workspace root");
        assert!(
            packages
                .get(binary)
                .is_some_and(|f| f.starts_with("functions/")),
            "{binary} is defined by a package under functions/"
        );
    }
    for (binary, folder) in &packages {
        if folder.starts_with("functions/") {
            assert!(
                code_uri.contains_key(binary),
                "{binary} ({folder}) is a function of template.yaml"
            );
        }
    }
}
