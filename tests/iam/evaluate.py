"""A pure IAM policy evaluator: AWS's documented decision for one authorization request.

Inputs are plain data (policy documents as dicts or JSON strings, ARNs, a context of
condition keys), so the same function decides inside the emulator (moto_plugin.py), in the
reference cases (test_reference.py) and when a decision log is replayed (mutation.py).

What it follows (AWS IAM User Guide):
- "Policy evaluation logic" / "Determining whether a request is allowed or denied within an
  account": an explicit Deny in any applicable policy wins; otherwise an Allow in an
  identity-based policy, or in a resource-based policy that names the principal, allows;
  otherwise the request is implicitly denied.
- "IAM JSON policy elements": Action/NotAction (case-insensitive, `*` and `?`),
  Resource/NotResource (case-sensitive, wildcards over the whole ARN, so they span `/` and
  `:`), Principal/NotPrincipal in resource-based policies.
- "IAM JSON policy elements: Condition operators" and "Condition with multiple context keys or
  values": operators AND-ed, keys AND-ed, values of one key OR-ed; a key absent from the
  request makes a plain operator false, a negated one (`...Not...`) true; `...IfExists` is
  true when the key is absent; `Null` tests presence; `ForAllValues:` is true for an absent
  key or when every request value matches; `ForAnyValue:` needs one request value to match.

What it refuses (raises `Unsupported`, so a test fails instead of a silent guess): policy
variables (`${...}`), operators outside the list above (Date*, IpAddress, Binary*), a plain
(non-set) operator applied to a context key holding several values (AWS says multivalued
keys require a set operator and does not document the result otherwise), `NotPrincipal`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable


class Unsupported(Exception):
    """A policy uses something this evaluator does not model: fail loudly, do not guess."""


@dataclass
class Request:
    """One authorization request as AWS builds it: who, what action, on which resource, and
    the request context (condition key -> list of string values; an absent key is absent)."""

    principal: str  # the caller's ARN, e.g. arn:aws:sts::123:assumed-role/Role/session
    action: str  # e.g. "dynamodb:GetItem"
    resource: str  # an ARN, or "*" for actions without a resource type
    context: dict[str, list[str]] = field(default_factory=dict)
    # ARNs the principal also "is" for resource-policy Principal matching: for a role
    # session, the role ARN (AWS matches a role ARN principal against its sessions).
    principal_aliases: tuple[str, ...] = ()


@dataclass
class Decision:
    allowed: bool
    # "explicit_deny" | "allow" | "implicit_deny"
    reason: str
    # where the deciding statement(s) came from: ("identity"|"resource", policy name, Sid)
    statements: list[tuple[str, str, str | None]] = field(default_factory=list)
    deny_in: str | None = None  # "identity" | "resource" for an explicit deny

    def message(self, request: Request) -> str:
        """The denial message in AWS's wording (what the SDK shows as the error message)."""
        head = (
            f"User: {request.principal} is not authorized to perform: {request.action} "
            f"on resource: {request.resource} "
        )
        if self.reason == "explicit_deny":
            where = "a resource-based" if self.deny_in == "resource" else "an identity-based"
            return head + f"with an explicit deny in {where} policy"
        return head + f"because no identity-based policy allows the {request.action} action"


# A policy: (name, document). The document may be a dict or its JSON text.
Policy = tuple[str, Any]


def evaluate(
    identity_policies: Iterable[Policy],
    request: Request,
    resource_policy: Policy | None = None,
) -> Decision:
    """Decide `request` against the caller's identity policies and the resource's policy."""
    allows: list[tuple[str, str, str | None]] = []
    denies: list[tuple[str, str, str | None]] = []
    deny_in = None
    sources: list[tuple[str, Policy]] = [("identity", p) for p in identity_policies]
    if resource_policy is not None:
        sources.append(("resource", resource_policy))
    for kind, (name, document) in sources:
        for statement in _statements(document):
            if not _applies(statement, request, resource_based=(kind == "resource")):
                continue
            effect = statement.get("Effect")
            where = (kind, name, statement.get("Sid"))
            if effect == "Deny":
                denies.append(where)
                deny_in = deny_in or kind
            elif effect == "Allow":
                allows.append(where)
            else:
                raise Unsupported(f"statement Effect {effect!r} in {name}")
    if denies:
        return Decision(False, "explicit_deny", denies, deny_in)
    if allows:
        return Decision(True, "allow", allows)
    return Decision(False, "implicit_deny")


def _statements(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, (str, bytes)):
        document = json.loads(document)
    statements = document.get("Statement", [])
    return [statements] if isinstance(statements, dict) else list(statements)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _applies(statement: dict[str, Any], request: Request, resource_based: bool) -> bool:
    """Whether the statement matches the request (its Effect is the caller's business)."""
    if "Action" in statement and "NotAction" in statement:
        raise Unsupported("a statement with both Action and NotAction is invalid")
    if "Action" in statement:
        if not any(_action_matches(a, request.action) for a in _as_list(statement["Action"])):
            return False
    elif "NotAction" in statement:
        if any(_action_matches(a, request.action) for a in _as_list(statement["NotAction"])):
            return False
    else:
        raise Unsupported("a statement without Action or NotAction")

    if "Resource" in statement:
        if not any(_resource_matches(r, request.resource) for r in _as_list(statement["Resource"])):
            return False
    elif "NotResource" in statement:
        if any(_resource_matches(r, request.resource) for r in _as_list(statement["NotResource"])):
            return False
    else:
        raise Unsupported("a statement without Resource or NotResource")

    if resource_based:
        if "NotPrincipal" in statement:
            raise Unsupported("NotPrincipal in a resource-based policy")
        if not _principal_matches(
            statement.get("Principal"), request, statement.get("Effect") == "Deny"
        ):
            return False
    elif "Principal" in statement or "NotPrincipal" in statement:
        raise Unsupported("Principal in an identity-based policy is invalid")

    return conditions_hold(statement.get("Condition", {}), request.context)


def _no_variables(text: str) -> str:
    if "${" in text:
        raise Unsupported(f"policy variable in {text!r}: not modelled")
    return text


def _glob(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`*` = any run of characters (including `/` and `:`), `?` = one character; nothing
    else is special (unlike fnmatch, `[...]` is literal in IAM)."""
    body = "".join(
        ".*" if c == "*" else "." if c == "?" else re.escape(c) for c in _no_variables(pattern)
    )
    return re.compile(body, flags | re.DOTALL)


def _action_matches(pattern: str, action: str) -> bool:
    # IAM action names are case-insensitive ("IAM JSON policy elements: Action").
    return _glob(pattern, re.IGNORECASE).fullmatch(action) is not None


def _resource_matches(pattern: str, resource: str) -> bool:
    if pattern == "*":
        return True
    return _glob(pattern).fullmatch(resource) is not None


def _account_of(arn: str) -> str | None:
    parts = arn.split(":", 5)
    return parts[4] if len(parts) == 6 else None


def _principal_matches(principal: Any, request: Request, is_deny: bool) -> bool:
    """Principal element of a resource-based policy ("AWS JSON policy elements: Principal").

    `"*"` or `{"AWS": "*"}` is everyone. A session ARN or its role ARN names the caller
    itself. An account (`123...` or `arn:aws:iam::123:root`) in an Allow delegates to the
    account's IAM policies rather than granting (same-account access still needs the identity
    policy), so it does not count here; in a Deny it covers every principal of that account.
    Service and federated principals never name a role session.
    """
    if principal is None:
        raise Unsupported("a resource-based statement without Principal")
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        raise Unsupported(f"Principal {principal!r}")
    names = [_no_variables(p) for p in _as_list(principal.get("AWS", []))]
    if "*" in names:
        return True
    me = {request.principal, *request.principal_aliases}
    if me.intersection(names):
        return True
    if is_deny:
        account = _account_of(request.principal)
        return any(n in (account, f"arn:aws:iam::{account}:root") for n in names)
    return False


# ---------------------------------------------------------------------------------------
# Conditions


def conditions_hold(block: dict[str, Any], context: dict[str, list[str]]) -> bool:
    """Every operator, and every key under it, must hold (AND); a key's values are OR-ed."""
    lowered = {k.lower(): v for k, v in context.items()}  # key names are case-insensitive
    for operator, keys in block.items():
        for key, policy_values in keys.items():
            values = lowered.get(key.lower())
            if not _condition(operator, [str(_json_scalar(p)) for p in _as_list(policy_values)], values):
                return False
    return True


def _json_scalar(value: Any) -> Any:
    # JSON true/false in a policy are compared as the strings "true"/"false".
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        raise Unsupported(f"condition value {value!r}")
    return value


def _condition(operator: str, policy_values: list[str], request_values: list[str] | None) -> bool:
    for v in policy_values:
        _no_variables(v)
    present = request_values is not None and len(request_values) > 0

    qualifier = None
    if ":" in operator:
        qualifier, operator = operator.split(":", 1)
        if qualifier not in ("ForAllValues", "ForAnyValue"):
            raise Unsupported(f"condition set qualifier {qualifier!r}")

    if operator == "Null":
        if qualifier:
            raise Unsupported("a set qualifier on Null")
        wanted_absent = [v.lower() == "true" for v in policy_values]
        return any(absent == (not present) for absent in wanted_absent)

    if_exists = operator.endswith("IfExists")
    if if_exists:
        operator = operator[: -len("IfExists")]
    match, negated = _operator(operator)

    if qualifier == "ForAllValues":
        if not present:
            return True
        return all(_single(match, negated, policy_values, v) for v in request_values)  # type: ignore[union-attr]
    if qualifier == "ForAnyValue":
        if not present:
            return False
        return any(_single(match, negated, policy_values, v) for v in request_values)  # type: ignore[union-attr]

    if not present:
        # Absent key: IfExists passes; a negated operator is true; any other is false.
        return True if if_exists else negated
    if len(request_values) > 1:  # type: ignore[arg-type]
        raise Unsupported(
            f"{operator} (no ForAllValues/ForAnyValue) on a key with several values "
            f"{request_values!r}: AWS requires a set operator for multivalued keys"
        )
    return _single(match, negated, policy_values, request_values[0])  # type: ignore[index]


def _single(match, negated: bool, policy_values: list[str], value: str) -> bool:  # type: ignore[no-untyped-def]
    """One request value against the policy's values: any match (OR); negated = none."""
    hit = any(match(p, value) for p in policy_values)
    return not hit if negated else hit


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError as e:
        raise Unsupported(f"not a number in a Numeric condition: {text!r}") from e


def _arn_like(pattern: str, value: str) -> bool:
    # ARN operators compare each of the six colon-separated parts on its own; `*`/`?` inside.
    p, v = pattern.split(":", 5), value.split(":", 5)
    if len(p) != 6 or len(v) != 6:
        return False
    return all(_glob(a).fullmatch(b) is not None for a, b in zip(p, v))


_OPERATORS = {
    "StringEquals": (lambda p, v: p == v),
    "StringEqualsIgnoreCase": (lambda p, v: p.lower() == v.lower()),
    "StringLike": (lambda p, v: _glob(p).fullmatch(v) is not None),
    "ArnEquals": _arn_like,  # ArnEquals also honours wildcards, per the operator table
    "ArnLike": _arn_like,
    "Bool": (lambda p, v: p.lower() == v.lower()),
    "NumericEquals": (lambda p, v: _number(v) == _number(p)),
    "NumericLessThan": (lambda p, v: _number(v) < _number(p)),
    "NumericLessThanEquals": (lambda p, v: _number(v) <= _number(p)),
    "NumericGreaterThan": (lambda p, v: _number(v) > _number(p)),
    "NumericGreaterThanEquals": (lambda p, v: _number(v) >= _number(p)),
}
_NEGATED = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
    "NumericNotEquals": "NumericEquals",
}


def _operator(name: str):  # type: ignore[no-untyped-def]
    if name in _OPERATORS:
        return _OPERATORS[name], False
    if name in _NEGATED:
        return _OPERATORS[_NEGATED[name]], True
    raise Unsupported(f"condition operator {name!r} is not modelled")


__all__ = ["Decision", "Request", "Unsupported", "conditions_hold", "evaluate"]
