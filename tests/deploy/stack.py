#!/usr/bin/env python3
"""Deploys the translated template into moto's CloudFormation, as CloudFormation would.

    python tests/deploy/stack.py deploy --endpoint http://127.0.0.1:PORT --stack-name NAME \
        [--param Authorizer=ApiKeyAuthorizer] [--param IndexSubscriber=Enabled] [--param K=V ...] \
        [--template template.yaml | --translated target/deploy/translated-X.json]

Prints one JSON object on stdout:

    {"stack": NAME,
     "resources": {logicalId: physicalId},
     "functions": {logicalId: {"name", "role_arn", "role_name", "runtime", "handler",
                               "memory", "timeout", "env": {...}}},
     "outputs": {key: value}}

`deploy(endpoint, stack_name, params) -> dict` is the same, importable. Credentials are the
dummy `test`/`test`, region us-east-1. The template is translated here (translate.py, with
the Authorizer and IndexSubscriber of `params`), a small dummy zip is uploaded where every
rewritten CodeUri points (the bucket is created), and the stack is created with every
parameter of `params` (EndpointUrl defaults to the endpoint, JwtIssuer/JwtAudience to
translate.py's samples). Exits 1, printing the stack's events, unless it reaches
CREATE_COMPLETE.

Only the copy sent to moto is changed, and only to get past moto's own bugs (each marked
`MOTO BUG` below); check.py reads the translated template itself for everything else.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import secrets
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import translate  # noqa: E402

REGION = "us-east-1"
# Outputs dropped from the copy sent to moto (see _moto_workarounds); reported by deploy().
UNSUPPORTED_OUTPUT_TYPES = {
    "AWS::ApiGatewayV2::Api",
    "AWS::ApiGatewayV2::Stage",
    "AWS::EventSchemas::Registry",
    "AWS::EventSchemas::Schema",
}


def client(service: str, endpoint: str):
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"}),
    )


def dummy_zip() -> bytes:
    """A zip holding a `bootstrap` that is not a real binary: moto stores it, never runs it."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        info = zipfile.ZipInfo("bootstrap")
        info.external_attr = 0o755 << 16
        z.writestr(info, "#!/bin/sh\necho 'dummy code: tests/deploy/stack.py'\nexit 1\n")
    return buf.getvalue()


def code_locations(template: dict) -> list[tuple[str, str]]:
    """(bucket, key) of every AWS::Lambda::Function's Code and AWS::Lambda::LayerVersion's
    Content in a translated template."""
    out = []
    for res in template["Resources"].values():
        code = {
            "AWS::Lambda::Function": lambda: res["Properties"].get("Code", {}),
            "AWS::Lambda::LayerVersion": lambda: res["Properties"].get("Content", {}),
        }.get(res["Type"], dict)()
        if "S3Bucket" in code:
            out.append((code["S3Bucket"], code["S3Key"]))
    return out


def _walk_replace(node: Any, fn) -> Any:
    """Rebuilds `node` with `fn(x)` applied to every dict (fn returns None to keep x)."""
    if isinstance(node, dict):
        new = fn(node)
        if new is not None:
            return new
        return {k: _walk_replace(v, fn) for k, v in node.items()}
    if isinstance(node, list):
        return [_walk_replace(v, fn) for v in node]
    return node


def conditions(template: dict, params: dict[str, str]) -> dict[str, bool]:
    """Each condition of the template, evaluated with `params` (parameter defaults otherwise):
    Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition, and Ref of a parameter or pseudo
    parameter, which is all a template's Conditions section may use."""
    decl = template.get("Parameters", {})
    values = {k: str(params.get(k, d.get("Default", ""))) for k, d in decl.items()}
    values.update({"AWS::Region": REGION})
    conds = template.get("Conditions", {})
    done: dict[str, bool] = {}

    def ev(node: Any) -> Any:
        if isinstance(node, dict) and len(node) == 1:
            (k, v), = node.items()
            if k == "Ref":
                return values[v]
            if k == "Condition":
                return cond(v)
            if k == "Fn::Equals":
                return str(ev(v[0])) == str(ev(v[1]))
            if k == "Fn::Not":
                return not ev(v[0])
            if k == "Fn::And":
                return all(ev(x) for x in v)
            if k == "Fn::Or":
                return any(ev(x) for x in v)
        if isinstance(node, (str, int, float, bool)):
            return node
        raise ValueError(f"a condition this evaluator does not know: {node}")

    def cond(name: str) -> bool:
        if name not in done:
            done[name] = bool(ev(conds[name]))
        return done[name]

    return {name: cond(name) for name in conds}


def _moto_workarounds(template: dict, session_key: str,
                      params: dict[str, str] | None = None) -> tuple[dict, list[str], list[str]]:
    """The copy of `template` moto can create: (copy, workarounds applied, outputs dropped)."""
    t = copy.deepcopy(template)
    applied: list[str] = []

    # MOTO BUG (moto 5.2.x, moto/cloudformation/parsing.py clean_json): a list item
    # `Fn::If [cond, X, Ref AWS::NoValue]` whose condition is false becomes None in the list
    # instead of being left out (CloudFormation removes it), and e.g. an IAM role's
    # `Policies` then fails on None["PolicyName"] (HTTP 500). Such items are resolved here:
    # left out when their branch is NoValue, else kept for moto to resolve.
    truth = conditions(t, params or {})
    novalue = {"Ref": "AWS::NoValue"}
    dropped_items = 0

    def drop_novalue(node: Any) -> Any:
        nonlocal dropped_items
        if isinstance(node, dict):
            return {k: drop_novalue(v) for k, v in node.items()}
        if isinstance(node, list):
            out = []
            for item in node:
                if isinstance(item, dict) and set(item) == {"Fn::If"}:
                    c, yes, no = item["Fn::If"]
                    if (yes if truth.get(c) else no) == novalue:
                        dropped_items += 1
                        continue
                out.append(drop_novalue(item))
            return out
        return node

    t["Resources"] = drop_novalue(t["Resources"])
    if dropped_items:
        applied.append(f"list items Fn::If [cond, X, AWS::NoValue] resolved to NoValue left out ({dropped_items}; moto keeps None)")
    resources = t["Resources"]
    types = {k: v["Type"] for k, v in resources.items()}

    # MOTO BUG (moto 5.2.x, moto/events/models.py: EventBus has no physical_resource_id):
    # `Ref` of an AWS::Events::EventBus resolves to moto's Python object, not the bus name
    # (on AWS, Ref of an EventBus is its Name). A Rule's `EventBusName: !Ref Bus` then names
    # no bus, and a function's `WORKSPACE_EVENT_BUS: !Ref Bus` gets the object's repr.
    # `Fn::GetAtt [Bus, Name]` is the same value on AWS and works in moto.
    buses = {k for k, ty in types.items() if ty == "AWS::Events::EventBus"}

    def bus_ref(d: dict):
        if set(d) == {"Ref"} and d["Ref"] in buses:
            return {"Fn::GetAtt": [d["Ref"], "Name"]}
        return None

    if buses:
        before = json.dumps(t, sort_keys=True)
        t["Resources"] = resources = _walk_replace(resources, bus_ref)
        t["Outputs"] = _walk_replace(t.get("Outputs", {}), bus_ref)
        if json.dumps(t, sort_keys=True) != before:
            applied.append("Ref of an EventBus -> Fn::GetAtt [bus, Name] (moto's Ref gives an object)")

    # MOTO BUG (moto 5.2.x): CloudFormation dynamic references are not resolved; the
    # function's variable would hold the literal "{{resolve:secretsmanager:...}}" (and moto
    # creates no secret to resolve it from). A fresh random value per stack stands in for
    # the secret string, the same in every function as the one secret would be.
    def resolve_secret(d: dict):
        s = d.get("Fn::Sub") if set(d) == {"Fn::Sub"} else None
        if isinstance(s, str) and s.startswith("{{resolve:secretsmanager:"):
            return session_key
        return None

    before = json.dumps(t, sort_keys=True)
    t["Resources"] = resources = _walk_replace(resources, resolve_secret)
    if json.dumps(t, sort_keys=True) != before:
        applied.append("{{resolve:secretsmanager:...}} -> a random 64-character value per stack")

    # MOTO BUG (moto 5.2.x): an output whose value is a `Fn::GetAtt` of a type moto does not
    # create (the HTTP API's ApiEndpoint) makes CreateStack answer HTTP 500. Such outputs
    # are left out of the copy (and of deploy()'s "outputs").
    dropped = []
    for key, out in list(t.get("Outputs", {}).items()):
        refs = set()
        _walk_replace(out.get("Value"), lambda d: refs.update(
            [d["Fn::GetAtt"][0]] if "Fn::GetAtt" in d and isinstance(d["Fn::GetAtt"], list) else
            [d["Ref"]] if "Ref" in d and isinstance(d["Ref"], str) else []) and None)
        if any(types.get(r) in UNSUPPORTED_OUTPUT_TYPES for r in refs):
            del t["Outputs"][key]
            dropped.append(key)
    if dropped:
        applied.append(f"outputs of types moto does not create left out: {', '.join(dropped)}")
    return t, applied, dropped


def stack_events(cfn, stack_name: str) -> list[str]:
    try:
        evs = cfn.describe_stack_events(StackName=stack_name)["StackEvents"]
    except Exception as e:  # noqa: BLE001
        return [f"(no events: {e})"]
    return [
        f"{e.get('LogicalResourceId')} {e.get('ResourceType')} {e.get('ResourceStatus')} "
        f"{e.get('ResourceStatusReason') or ''}".rstrip()
        for e in reversed(evs)
    ]


class DeployError(Exception):
    pass


def deploy(
    endpoint: str,
    stack_name: str,
    params: dict[str, str] | None = None,
    template_path: Path | None = None,
    translated: dict | None = None,
    timeout: float = 120.0,
) -> dict:
    """Creates the stack in moto at `endpoint`; the JSON contract of the module doc."""
    params = dict(params or {})
    params.setdefault("EndpointUrl", endpoint)
    params.setdefault("Authorizer", "JwtAuthorizer")
    params.setdefault("IndexSubscriber", "Disabled")
    for k, v in translate.REQUIRED_PARAMS.items():
        params.setdefault(k, v)
    if translated is None:
        template = translate.load_template(template_path or translate.ROOT / "template.yaml")
        # Every parameter: the transform reads some (Tracing) itself.
        translated, errors = translate.translate(
            template, {k: v for k, v in params.items() if k != "EndpointUrl"}
        )
        if errors:
            raise DeployError("the SAM transform refuses the template:\n  " + "\n  ".join(errors))
    declared = translated.get("Parameters", {})
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise DeployError(f"parameters the template does not declare: {unknown}")

    body, applied, dropped = _moto_workarounds(translated, secrets.token_hex(32), params)

    s3 = client("s3", endpoint)
    blob = dummy_zip()
    for bucket, key in sorted(set(code_locations(body))):
        try:
            s3.create_bucket(Bucket=bucket)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        s3.put_object(Bucket=bucket, Key=key, Body=blob)

    cfn = client("cloudformation", endpoint)
    cfn.create_stack(
        StackName=stack_name,
        TemplateBody=json.dumps(body),
        Parameters=[{"ParameterKey": k, "ParameterValue": str(v)} for k, v in sorted(params.items())],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    deadline = time.monotonic() + timeout
    while True:
        stack = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
        status = stack["StackStatus"]
        if status == "CREATE_COMPLETE":
            break
        if not status.endswith("IN_PROGRESS") or time.monotonic() > deadline:
            raise DeployError(
                f"stack {stack_name}: {status}\n  " + "\n  ".join(stack_events(cfn, stack_name))
            )
        time.sleep(0.2)

    resources: dict[str, str] = {}
    paginator = cfn.get_paginator("list_stack_resources")
    for page in paginator.paginate(StackName=stack_name):
        for r in page["StackResourceSummaries"]:
            resources[r["LogicalResourceId"]] = r.get("PhysicalResourceId", "")

    # moto gives an AWS::Events::EventBus no physical id (its Ref bug, above); on AWS it is
    # the bus name, which the template sets.
    for logical_id, res in body["Resources"].items():
        if res["Type"] == "AWS::Events::EventBus" and logical_id in resources and not resources[logical_id]:
            name = res["Properties"].get("Name")
            if isinstance(name, dict) and "Fn::Sub" in name and isinstance(name["Fn::Sub"], str):
                name = name["Fn::Sub"].replace("${AWS::StackName}", stack_name)
            if isinstance(name, str):
                resources[logical_id] = name

    lam = client("lambda", endpoint)
    functions = {}
    for logical_id, res in body["Resources"].items():
        if res["Type"] != "AWS::Lambda::Function" or logical_id not in resources:
            continue
        c = lam.get_function_configuration(FunctionName=resources[logical_id])
        functions[logical_id] = {
            "name": c["FunctionName"],
            "role_arn": c["Role"],
            "role_name": c["Role"].rsplit("/", 1)[-1],
            "runtime": c.get("Runtime"),
            "handler": c.get("Handler"),
            "memory": c.get("MemorySize"),
            "timeout": c.get("Timeout"),
            # Lambda's variables are strings; moto keeps a Number parameter's value a number.
            "env": {k: str(v) for k, v in c.get("Environment", {}).get("Variables", {}).items()},
        }
    outputs = {o["OutputKey"]: o.get("OutputValue") for o in stack.get("Outputs", [])}
    return {
        "stack": stack_name,
        "resources": resources,
        "functions": functions,
        "outputs": outputs,
        # Not in the harness's contract; kept apart so a reader sees what moto was spared.
        "_moto_workarounds": applied,
    }


def parse_params(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise SystemExit(f"--param wants KEY=VALUE, got {item!r}")
        out[k] = v
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description="Deploy the translated template into moto.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("deploy")
    d.add_argument("--endpoint", required=True)
    d.add_argument("--stack-name", required=True)
    d.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    g = d.add_mutually_exclusive_group()
    g.add_argument("--template", type=Path, help="SAM template to translate (default template.yaml)")
    g.add_argument("--translated", type=Path, help="an already translated template (JSON)")
    d.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    translated = json.loads(args.translated.read_text()) if args.translated else None
    try:
        out = deploy(args.endpoint, args.stack_name, parse_params(args.param),
                     template_path=args.template, translated=translated, timeout=args.timeout)
    except DeployError as e:
        print(f"deploy failed: {e}", file=sys.stderr)
        return 1
    out.pop("_moto_workarounds", None)
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
