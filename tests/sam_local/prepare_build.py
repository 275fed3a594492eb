"""Makes what `sam build` would leave in .aws-sam/build, for `sam local` on this host,
without cross-compiling: a copy of template.yaml whose functions are x86_64 and whose
CodeUri is a folder holding that function's `bootstrap` (this host's cargo debug build).

    python tests/sam_local/prepare_build.py TEMPLATE OUT_DIR BIN_DIR FN_BINARY...

writes OUT_DIR/template.yaml and OUT_DIR/<LogicalId>/bootstrap for every function whose
`Metadata.BuildProperties.Binary` is among the FN_BINARY names (a hard link to
BIN_DIR/<binary>, a copy when linking fails). Every other function gets an empty folder:
SAM still lists its routes, and invoking it fails (no bootstrap). Read and written with
SAM's own YAML helper (samcli.yamlhelper), which keeps CloudFormation's short tags
(!Ref, !If, !Sub ...) as their long forms.

Nothing else changes: `sam local start-api` reads each authenticated route, with its
security and its function, from the HTTP API's OpenAPI body (see WorkspaceApi in
template.yaml), and the public ones from the functions' events.
Prints one line: which functions got a bootstrap.
"""

import os
import shutil
import sys

from samcli.yamlhelper import yaml_dump, yaml_parse


def place(src: str, dst: str) -> None:
    if os.path.lexists(dst):
        os.remove(dst)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def main(template: str, out_dir: str, bin_dir: str, wanted: list[str]) -> None:
    with open(template) as f:
        doc = yaml_parse(f.read())
    fn_globals = doc.setdefault("Globals", {}).setdefault("Function", {})
    fn_globals["Architectures"] = ["x86_64"]
    os.makedirs(out_dir, exist_ok=True)
    built, missing = [], set(wanted)
    template_dir = os.path.dirname(os.path.abspath(template))
    for logical_id, res in doc.get("Resources", {}).items():
        if res.get("Type") == "AWS::Serverless::LayerVersion":
            # Unbuilt (its Makefile's folder), where the copy can still find it; no function
            # this run invokes has a layer.
            res.pop("Metadata", None)
            props = res.setdefault("Properties", {})
            props["ContentUri"] = os.path.join(template_dir, props["ContentUri"])
            continue
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        props = res.setdefault("Properties", {})
        binary = ((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary")
        # Built already: nothing for `sam build` to do with this copy.
        res.pop("Metadata", None)
        if "Architectures" in props:
            props["Architectures"] = ["x86_64"]
        code_dir = os.path.join(out_dir, logical_id)
        os.makedirs(code_dir, exist_ok=True)
        bootstrap = os.path.join(code_dir, "bootstrap")
        if binary in wanted:
            src = os.path.join(bin_dir, binary)
            if not os.path.isfile(src):
                sys.exit(f"prepare_build: {src} is missing (cargo build --bin {binary})")
            place(src, bootstrap)
            built.append(f"{logical_id}={binary}")
            missing.discard(binary)
        elif os.path.lexists(bootstrap):
            os.remove(bootstrap)
        props["CodeUri"] = logical_id
    if missing:
        sys.exit(f"prepare_build: no function of {template} builds {sorted(missing)}")
    with open(os.path.join(out_dir, "template.yaml"), "w") as f:
        f.write(yaml_dump(doc))
    print(f"bootstraps: {' '.join(built)}")


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
