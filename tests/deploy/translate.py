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

# The parameters that select different resources (conditions), and their values.
COMBOS: list[dict[str, str]] = [
    {"Authorizer": auth, "IndexSubscriber": index}
    for auth in ("JwtAuthorizer", "ApiKeyAuthorizer")
    for index in ("Enabled", "Disabled")
]


def combo_name(params: dict[str, str]) -> str:
    return f"{params['Authorizer']}-Index{params['IndexSubscriber']}"


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
    """What `sam package` does to this template: every function's local CodeUri → S3 URL."""
    t = copy.deepcopy(template)
    for logical_id, res in (t.get("Resources") or {}).items():
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
    return {**REQUIRED_PARAMS, **params}


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
