"""The stack the Rust harness runs the functions in (tests/src/rie.rs, `fresh_stack`).

    python tests/stack_roles.py --endpoint http://127.0.0.1:PORT --stack-name NAME

1. translates template.yaml with the SAM translator and creates it in the emulator's
   CloudFormation (tests/deploy/stack.py), with the example subscriber on so every function
   of the template exists;
2. puts the stack's S3 bucket policies, which moto's CloudFormation marks created without
   creating (DESIGN.md), so the emulator's IAM decision (tests/iam/) evaluates them;
3. assumes each function's execution role (STS AssumeRole of the role the stack made) and
   prints {"resources": {logicalId: physicalId}, "functions": {logicalId: {"role_arn",
   "credentials": {AccessKeyId, SecretAccessKey, SessionToken}}}}.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "deploy"))

import stack as deploy_stack  # noqa: E402  (tests/deploy/stack.py)
import translate  # noqa: E402  (tests/deploy/translate.py)

PARAMS = {"IndexSubscriber": "Enabled", "Authorizer": "JwtAuthorizer"}


def resolve(node, resources: dict[str, str], types: dict[str, str]):
    """The few intrinsics a bucket policy of template.yaml uses (Ref and Arn of a bucket,
    `Fn::Sub` of a bucket's Arn), resolved to the stack's names; anything else is refused
    rather than guessed."""
    def bucket_arn(logical_id: str) -> str:
        if types.get(logical_id) != "AWS::S3::Bucket":
            raise SystemExit(f"bucket policy names {logical_id}, not a bucket of the stack")
        return f"arn:aws:s3:::{resources[logical_id]}"

    if isinstance(node, list):
        return [resolve(n, resources, types) for n in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"Ref"}:
        return resources[node["Ref"]]
    if set(node) == {"Fn::GetAtt"} and node["Fn::GetAtt"][1] == "Arn":
        return bucket_arn(node["Fn::GetAtt"][0])
    if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
        text = node["Fn::Sub"]
        for logical_id in types:
            placeholder = "${" + logical_id + ".Arn}"
            if placeholder in text:
                text = text.replace(placeholder, bucket_arn(logical_id))
        if "${" in text:
            raise SystemExit(f"unresolved Fn::Sub in a bucket policy: {text}")
        return text
    if any(k.startswith("Fn::") for k in node):
        raise SystemExit(f"an intrinsic this script does not resolve: {node}")
    return {k: resolve(v, resources, types) for k, v in node.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--stack-name", required=True)
    args = ap.parse_args()

    template = translate.load_template(translate.ROOT / "template.yaml")
    translated, errors = translate.translate(template, dict(PARAMS))
    if errors:
        print("the SAM transform refuses template.yaml:\n  " + "\n  ".join(errors), file=sys.stderr)
        return 1
    out = deploy_stack.deploy(args.endpoint, args.stack_name, dict(PARAMS), translated=translated)
    resources = out["resources"]
    types = {k: v["Type"] for k, v in translated["Resources"].items()}

    s3 = deploy_stack.client("s3", args.endpoint)
    for logical_id, res in translated["Resources"].items():
        if res["Type"] != "AWS::S3::BucketPolicy":
            continue
        props = res["Properties"]
        s3.put_bucket_policy(
            Bucket=resolve(props["Bucket"], resources, types),
            Policy=json.dumps(resolve(props["PolicyDocument"], resources, types)),
        )

    sts = deploy_stack.client("sts", args.endpoint)
    functions = {}
    for logical_id, f in out["functions"].items():
        creds = sts.assume_role(RoleArn=f["role_arn"], RoleSessionName=logical_id)["Credentials"]
        functions[logical_id] = {
            "role_arn": f["role_arn"],
            "credentials": {k: creds[k] for k in ("AccessKeyId", "SecretAccessKey", "SessionToken")},
        }
    json.dump({"resources": resources, "functions": functions}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
