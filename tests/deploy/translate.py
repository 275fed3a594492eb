#!/usr/bin/env python3
"""Gate 1: the SAM transform, run here offline exactly as CloudFormation runs it at deploy.

`sam validate --lint` never runs the translator (aws-sam-translator); CloudFormation does,
and it is what refuses a bad template. This runs `samtranslator.translator.transform.transform`
on template.yaml after the CodeUri rewrite `sam package` makes (every function's local
CodeUri becomes `s3://<bucket>/<key>`, see samcli/lib/package/artifact_exporter.py and
`upload_local_artifacts` in samcli/lib/package/utils.py), once per parameter combination
that selects different resources, with the parameter values CloudFormation would hand the
transform. No AWS account: the managed-policy map (which the transform would read from IAM)
is a static one below, and the region comes from the environment (us-east-1 by default).

    python tests/deploy/translate.py [--template template.yaml] [--out target/deploy]

Writes <out>/translated-<combo>.json per combination; exits 1 printing every translator
error of every combination that fails.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_REGION", os.environ["AWS_DEFAULT_REGION"])

import logging

# samtranslator warns "There are unpublished metrics" on every run: noise here.
logging.getLogger("samtranslator.metrics").setLevel(logging.ERROR)

ROOT = Path(__file__).resolve().parents[2]

# Where the rewritten CodeUris point. stack.py uploads a dummy zip at each of these keys.
ARTIFACT_BUCKET = "agent-workspace-deploy-artifacts"


def artifact_key(logical_id: str) -> str:
    """`sam package` names the object by the MD5 of the zip; any fixed key serves here."""
    return f"code/{logical_id}.zip"


# Parameters without a default: sample values, as a deployer would give them.
REQUIRED_PARAMS = {
    "JwtIssuer": "https://issuer.example.com/pool",
    "JwtAudience": "workspace-client,workspace-cli",
}

# A customer managed key's ARN for the translation and lint (check.py deploys with a key it
# creates in moto instead).
SAMPLE_KMS_KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/0b2c1f9e-3d4a-4e55-9a7b-1c2d3e4f5a6b"


def samconfig_environments(path: Path | None = None) -> dict[str, dict[str, str]]:
    """{environment: its deploy parameter_overrides} of samconfig.toml (sections
    [<env>.deploy.parameters] with parameter_overrides, `K=V K2="V 2"` as SAM reads them)."""
    import shlex
    import tomllib

    conf = tomllib.loads((path or ROOT / "samconfig.toml").read_text())
    out = {}
    for env, section in conf.items():
        if not isinstance(section, dict):
            continue
        overrides = section.get("deploy", {}).get("parameters", {}).get("parameter_overrides")
        if overrides is None:
            continue
        items = shlex.split(overrides) if isinstance(overrides, str) else list(overrides)
        out[env] = dict(item.split("=", 1) for item in items)
    return out


# The parameter sets each gate runs: every Authorizer × IndexSubscriber (the conditions
# that select resources), then with a customer managed key and active tracing (which the
# SAM transform reads), then each samconfig.toml environment's parameter_overrides.
COMBOS: list[dict[str, str]] = [
    {"Authorizer": auth, "IndexSubscriber": index}
    for auth in ("JwtAuthorizer", "ApiKeyAuthorizer")
    for index in ("Enabled", "Disabled")
] + [
    {"Authorizer": "JwtAuthorizer", "IndexSubscriber": "Enabled", "KmsKeyArn": SAMPLE_KMS_KEY_ARN, "Tracing": "Active"},
    {"Authorizer": "ApiKeyAuthorizer", "IndexSubscriber": "Disabled", "KmsKeyArn": SAMPLE_KMS_KEY_ARN},
] + [
    {"Authorizer": "JwtAuthorizer", "IndexSubscriber": "Disabled", **overrides, "_env": env}
    for env, overrides in samconfig_environments().items()
]


def combo_name(params: dict[str, str]) -> str:
    name = f"{params.get('Authorizer', 'JwtAuthorizer')}-Index{params.get('IndexSubscriber', 'Disabled')}"
    if params.get("KmsKeyArn"):
        name += "-Kms"
    if params.get("Tracing") == "Active":
        name += "-Tracing"
    if params.get("_env"):
        name = f"samconfig-{params['_env']}-{name}"
    return name


# The AWS managed policies a `Policies:` entry may name, by name (the transform looks such
# names up in IAM). Only names this template could use; an unknown name is an error of the
# translator, as it would be on AWS for a policy that does not exist.
MANAGED_POLICIES = {
    name: f"arn:aws:iam::aws:policy/{path}{name}"
    for name, path in {
        "AWSLambdaBasicExecutionRole": "service-role/",
        "AWSLambdaDynamoDBExecutionRole": "service-role/",
        "AWSLambdaSQSQueueExecutionRole": "service-role/",
        "AWSLambdaVPCAccessExecutionRole": "service-role/",
        "AWSXRayDaemonWriteAccess": "",
        "AWSXrayWriteOnlyAccess": "",
    }.items()
}


class StaticManagedPolicyLoader:
    """Stands in for samtranslator's ManagedPolicyLoader (which calls iam:ListPolicies)."""

    def load(self) -> dict[str, str]:
        return dict(MANAGED_POLICIES)


def load_template(path: Path) -> dict[str, Any]:
    """YAML with CloudFormation's short tags (!Ref, !Sub, ...), as SAM CLI reads it."""
    from samcli.yamlhelper import yaml_parse

    return yaml_parse(path.read_text())


def package(template: dict[str, Any]) -> dict[str, Any]:
    """What `sam package` does to this template: every function's local CodeUri and every
    layer's local ContentUri → S3 URL."""
    t = copy.deepcopy(template)
    for logical_id, res in (t.get("Resources") or {}).items():
        if res.get("Type") == "AWS::Serverless::LayerVersion":
            props = res.setdefault("Properties", {})
            if isinstance(props.get("ContentUri"), str) and not props["ContentUri"].startswith("s3://"):
                props["ContentUri"] = f"s3://{ARTIFACT_BUCKET}/{artifact_key(logical_id)}"
            continue
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        props = res.setdefault("Properties", {})
        if "InlineCode" in props or props.get("PackageType") == "Image":
            continue
        uri = props.get("CodeUri", (t.get("Globals") or {}).get("Function", {}).get("CodeUri"))
        if isinstance(uri, dict) or (isinstance(uri, str) and uri.startswith("s3://")):
            continue  # already remote, left as is (as samcli does)
        props["CodeUri"] = f"s3://{ARTIFACT_BUCKET}/{artifact_key(logical_id)}"
    return t


def parameter_values(params: dict[str, str]) -> dict[str, str]:
    """The stack parameters of a combination (its keys starting with `_` are labels)."""
    return {**REQUIRED_PARAMS, **{k: v for k, v in params.items() if not k.startswith("_")}}


def translate(template: dict[str, Any], params: dict[str, str]) -> tuple[dict | None, list[str]]:
    """(translated template, []) or (None, every error the translator gives)."""
    from samtranslator.model.exceptions import InvalidDocumentException, InvalidTemplateException
    from samtranslator.translator.transform import transform

    try:
        out = transform(package(template), parameter_values(params), StaticManagedPolicyLoader())
        return json.loads(json.dumps(out)), []
    except InvalidDocumentException as e:
        return None, [c.message for c in e.causes] or [str(e)]
    except InvalidTemplateException as e:
        return None, [e.message]
    except Exception as e:  # noqa: BLE001 - any crash of the transform fails the deploy too
        return None, [f"{type(e).__name__}: {e}"]


def translate_all(template_path: Path, out_dir: Path) -> tuple[dict[str, dict], dict[str, list[str]]]:
    """Every combination: ({combo: translated}, {combo: errors}); writes the JSON files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("translated-*.json"):
        old.unlink()
    try:
        template = load_template(template_path)
    except Exception as e:  # noqa: BLE001
        return {}, {"(parse)": [f"{template_path} does not parse: {e}"]}
    done: dict[str, dict] = {}
    failed: dict[str, list[str]] = {}
    for params in COMBOS:
        name = combo_name(params)
        out, errors = translate(template, params)
        if errors:
            failed[name] = errors
            continue
        (out_dir / f"translated-{name}.json").write_text(json.dumps(out, indent=1, sort_keys=True))
        done[name] = out
    return done, failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "deploy")
    args = ap.parse_args()
    done, failed = translate_all(args.template, args.out)
    for name in done:
        print(f"translate {name}: ok ({len(done[name]['Resources'])} resources) "
              f"-> {args.out / f'translated-{name}.json'}")
    for name, errors in failed.items():
        for e in errors:
            print(f"translate {name}: ERROR {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
