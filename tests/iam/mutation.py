"""Replays a decision log (WORKSPACE_IAM_LOG) to find permissions the tests never needed.

For every role in the log, for every policy statement and every Action entry it lists (as
written: "dynamodb:GetItem", or a wildcard entry as one), the role's logged decisions are
re-evaluated with that one entry removed, by the same evaluator the emulator used. An entry
whose removal denies no request the run allowed is "unneeded by the tests": either the
policy grants more than the functions use, or the tests do not exercise the call.

    .venv/bin/python tests/iam/mutation.py --log target/iam.jsonl [--report-only]

Prints a JSON report; exits 1 if a logged decision was denied in the run, an entry is
unneeded, the evaluator refused a policy, or a replay disagrees with the logged decision
(unless --report-only). Statements with Resource "*" and unmodelled calls are reported only.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from collections import defaultdict
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from evaluate import Request, evaluate  # noqa: E402


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    s = document.get("Statement", [])
    return [s] if isinstance(s, dict) else s


def _principal(role_arn: str, session: str) -> str:
    account = role_arn.split(":")[4]
    return f"arn:aws:sts::{account}:assumed-role/{role_arn.split('/')[-1]}/{session}"


def _decide(policies: list[dict[str, Any]], entry: dict[str, Any], resource_policy: Any) -> bool:
    request = Request(
        principal=_principal(entry["role_arn"], entry["session"]),
        action=entry["action"],
        resource=entry["resource"],
        context=entry["context"],
        principal_aliases=(entry["role_arn"],),
    )
    named = [(p["name"], p["document"]) for p in policies]
    rp = (entry["resource_policy"], resource_policy) if resource_policy is not None else None
    return evaluate(named, request, rp).allowed


def _without(policies: list[dict[str, Any]], target: tuple[str, int, str]) -> list[dict[str, Any]]:
    """The policies with one Action entry removed from one statement (a statement left with
    no action is dropped: an empty Action list is not a valid statement)."""
    name, index, action = target
    out = copy.deepcopy(policies)
    for policy in out:
        if policy["name"] != name:
            continue
        statements = _statements(policy["document"])
        if index >= len(statements) or "Action" not in statements[index]:
            continue
        remaining = [a for a in _as_list(statements[index]["Action"]) if a != action]
        if remaining:
            statements[index]["Action"] = remaining
        else:
            statements.pop(index)
        policy["document"]["Statement"] = statements
    return out


def analyse(lines: list[dict[str, Any]]) -> dict[str, Any]:
    # Each decision is replayed against the role policies and bucket policy in force when it
    # was made (the log records a new version before the first decision that uses it).
    roles: dict[str, list[dict[str, Any]]] = {}
    buckets: dict[str, Any] = {}
    decisions: dict[str, list[tuple[dict[str, Any], list[dict[str, Any]], Any]]] = defaultdict(list)
    targets: dict[str, dict[tuple[str, int, str], str | None]] = defaultdict(dict)
    wildcard: list[dict[str, Any]] = []
    denied, unmodelled, errors, mismatches = [], [], [], []

    for entry in lines:
        kind = entry.get("kind")
        if kind == "role":
            roles[entry["role_arn"]] = entry["policies"]
            for policy in entry["policies"]:
                for i, st in enumerate(_statements(policy["document"])):
                    # Only Allow statements grant; removing from a Deny cannot deny more.
                    for action in _as_list(st.get("Action", [])) if st.get("Effect") == "Allow" else []:
                        targets[entry["role_arn"]].setdefault((policy["name"], i, action), st.get("Sid"))
                    if st.get("Effect") == "Allow" and "*" in _as_list(st.get("Resource", [])):
                        w = {"role_arn": entry["role_arn"], "policy": policy["name"], "sid": st.get("Sid")}
                        if w not in wildcard:
                            wildcard.append(w)
        elif kind == "resource_policy":
            buckets[entry["resource"]] = entry["document"]
        elif kind == "unsupported":
            errors.append(entry)
        elif kind == "decision":
            if entry.get("always_allowed"):
                continue
            policies = roles.get(entry["role_arn"], [])
            rp = buckets.get(entry["resource_policy"]) if entry.get("resource_policy") else None
            if entry.get("unmodelled"):
                unmodelled.append({k: entry[k] for k in ("role_arn", "operation", "action")})
            if not entry["allowed"]:
                denied.append({k: entry[k] for k in ("role_arn", "operation", "action", "resource")})
                continue
            if not _decide(policies, entry, rp):
                mismatches.append(entry)
            decisions[entry["role_arn"]].append((entry, policies, rp))

    report: dict[str, Any] = {"roles": {}, "unneeded": []}
    for role_arn, role_targets in targets.items():
        actions = []
        for (name, index, action), sid in role_targets.items():
            denies = sum(
                1 for entry, policies, rp in decisions[role_arn]
                if not _decide(_without(policies, (name, index, action)), entry, rp)
            )
            row = {"policy": name, "statement": index, "sid": sid, "action": action, "denies": denies}
            actions.append(row)
            if denies == 0:
                report["unneeded"].append({"role_arn": role_arn, **row})
        report["roles"][role_arn] = {"actions": actions, "decisions": len(decisions[role_arn])}
    report["denied_in_run"] = denied
    report["wildcard_resource_statements"] = wildcard
    report["unmodelled"] = unmodelled
    report["unsupported"] = errors
    report["replay_mismatches"] = mismatches
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", required=True, help="the WORKSPACE_IAM_LOG file")
    parser.add_argument("--report-only", action="store_true", help="always exit 0")
    args = parser.parse_args(argv)
    with open(args.log, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    report = analyse(lines)
    print(json.dumps(report, indent=2, sort_keys=True))
    failed = report["denied_in_run"] or report["unneeded"] or report["unsupported"] or report["replay_mismatches"]
    return 0 if args.report_only or not failed else 1


if __name__ == "__main__":
    sys.exit(main())
