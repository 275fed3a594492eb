"""The least-privilege gate of the test run: every call the functions made under their own
roles was allowed, and removing any single action from any function's policy would deny at
least one of those calls.

    .venv/bin/python tests/iam/least_privilege.py --log target/iam-decisions.jsonl

The log is the emulator's decision log (WORKSPACE_IAM_LOG) of a run in which every recorded
event and the API Gateway parity suite ran each function under the role its stack created
(tests/src/rie.rs). Several stacks may have run (one per suite): an action is needed by a
function when removing it denies a call in any of that function's stacks. Functions are
named by the role session name, which the harness sets to the function's logical id.

Two kinds of action are allowed to be needed by no logged call, each listed below with why:
- LAMBDA_SERVICE: what Lambda itself does with the function's role (an event source
  mapping polling a stream or a queue, an on-failure destination). No function code makes
  these calls, so no test of the code can need them; removing one breaks the trigger.
- NOT_YET_EXERCISED: calls the code makes on a path no test drives under the roles yet.
  Each entry is a gap in the tests, stated; the gate fails when an entry is no longer
  needed here (a test now covers it: delete the entry) so the list only shrinks.
Anything else unneeded fails the gate: the action is removed from template.yaml, or a test
that needs it is added.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mutation import analyse  # noqa: E402

# (function logical id, action): why only Lambda's service makes this call with the role.
LAMBDA_SERVICE = {
    # The DynamoDB stream event source mapping reads the table's stream with the role
    # (AWS Lambda developer guide, "Using AWS Lambda with Amazon DynamoDB": execution role
    # permissions).
    ("PublishFunction", "dynamodb:DescribeStream"): "stream event source mapping",
    ("PublishFunction", "dynamodb:GetRecords"): "stream event source mapping",
    ("PublishFunction", "dynamodb:GetShardIterator"): "stream event source mapping",
    ("PublishFunction", "dynamodb:ListStreams"): "stream event source mapping",
    # The mapping's on-failure destination sends the failed batch's record with the role.
    ("PublishFunction", "sqs:SendMessage"): "stream mapping's on-failure destination",
    # The SQS event source mapping polls and deletes with the role (developer guide, "Using
    # Lambda with Amazon SQS": execution role permissions).
    ("IndexerFunction", "sqs:ReceiveMessage"): "SQS event source mapping",
    ("IndexerFunction", "sqs:DeleteMessage"): "SQS event source mapping",
    ("IndexerFunction", "sqs:GetQueueAttributes"): "SQS event source mapping",
}

# (function logical id, action): the code path that makes the call, which no test drives
# under the function's role yet.
NOT_YET_EXERCISED: dict[tuple[str, str], str] = {
}


def function_of(session: str | None, role_arn: str) -> str:
    if session:
        return session
    # <stack>-<LogicalId>Role-<suffix>, as CloudFormation names a role it generates.
    name = role_arn.rsplit("/", 1)[-1]
    return name.rsplit("-", 1)[0].split("-")[-1].removesuffix("Role")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    with open(args.log, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if not any(e.get("kind") == "decision" for e in lines):
        print(f"{args.log} holds no decision: no function ran under its role", file=sys.stderr)
        return 1
    report = analyse(lines)

    sessions = {}
    for e in lines:
        if e.get("kind") == "decision":
            sessions.setdefault(e["role_arn"], e.get("session"))
    # function → action → the most calls its removal denies in any one stack
    needed: dict[str, dict[str, int]] = defaultdict(dict)
    for role_arn, role in report["roles"].items():
        fn = function_of(sessions.get(role_arn), role_arn)
        for row in role["actions"]:
            prev = needed[fn].get(row["action"], 0)
            needed[fn][row["action"]] = max(prev, row["denies"])

    problems = []
    for key in ("denied_in_run", "unsupported", "replay_mismatches", "wildcard_resource_statements"):
        for item in report[key]:
            problems.append(f"{key}: {json.dumps(item, sort_keys=True)[:300]}")
    for item in report["unmodelled"]:
        problems.append(f"a call the evaluator does not model: {item}")
    unneeded = []
    for fn, actions in sorted(needed.items()):
        for action, denies in sorted(actions.items()):
            key = (fn, action)
            if denies:
                if key in NOT_YET_EXERCISED:
                    problems.append(f"{fn} {action}: now needed by a test; remove it from NOT_YET_EXERCISED")
                continue
            if key in LAMBDA_SERVICE:
                continue
            if key in NOT_YET_EXERCISED:
                unneeded.append(f"{fn} {action} (listed: {NOT_YET_EXERCISED[key]})")
                continue
            problems.append(f"{fn} {action}: no call of the tests needs it (remove it, or test the call)")
    for fn, action in sorted(set(NOT_YET_EXERCISED) | set(LAMBDA_SERVICE)):
        if action not in needed.get(fn, {}):
            problems.append(f"{fn} {action}: listed, but not in the function's policy")

    calls = sum(1 for e in lines if e.get("kind") == "decision" and not e.get("always_allowed"))
    print(
        f"least privilege: {calls} calls by {len(needed)} functions under their own roles, "
        f"{sum(len(a) for a in needed.values())} granted actions; "
        f"{len(LAMBDA_SERVICE)} used by Lambda's service, {len(unneeded)} not yet exercised"
    )
    for line in unneeded:
        print(f"  not yet exercised: {line}")
    for line in problems:
        print(f"  FAIL {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
