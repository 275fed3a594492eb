"""The stack's access log, alarms and dashboard, checked in the translated template.

    .venv/bin/python -m pytest -q -p no:cacheprovider tests/deploy/test_observability.py

check.py runs the same checks (`problems(translated, params)`) on every parameter
combination it translates; the tests here translate template.yaml under both authorizers.

- The HTTP API's access log format is one JSON object whose values are each exactly one
  `$context` variable of an allow-list: request id, route, status, latencies, the
  integration's and authorizer's error messages, the source IP and the caller's principal
  (the PrincipalClaim of a JWT, or of the API-key authorizer's context). Never a header
  (`$request.*`), the `Authorization` header, an API key (`$context.identity.apiKey`) or
  any other claim or authorizer value.
- Every metric an alarm or the dashboard names in the namespace AgentWorkspace is a metric
  of schemas/metrics.json with one of its dimension sets, and its Function value is a
  function of the route table (shared/http/src/routes.rs), or, for EventsProcessed, one of
  the asynchronous functions of template.yaml (BuildProperties Binary fn-<label>, not in
  the route table). Every route-table function has a 5xx-rate and a p99 latency alarm.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import translate  # noqa: E402

ROOT = translate.ROOT
METRICS = json.loads((ROOT / "schemas/metrics.json").read_text())

# The access log's fields: the $context variable each must be (principal: see below).
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "requestTimeEpoch": "$context.requestTimeEpoch",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "integrationErrorMessage": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
    "sourceIp": "$context.identity.sourceIp",
}
REQUIRED_FIELDS = {"requestId", "routeKey", "status", "responseLatency", "integrationLatency",
                   "integrationErrorMessage", "principal"}
# Never in an access log: request headers, query strings and bodies, the credential.
FORBIDDEN = [r"\$request\.", r"(?i)authorization", r"(?i)apikey", r"(?i)\$context\.identity\.(apiKey|accessKey|cognito)",
             r"(?i)token", r"(?i)secret"]


def _labels() -> tuple[set[str], set[str]]:
    """(route-table function labels, every function label of template.yaml)."""
    src = (ROOT / "shared/http/src/routes.rs").read_text()
    body = src[src.index("pub const ROUTES"):]
    routes = set(re.findall(r'=>\s*\w+,\s*"(\w+)",\s*\w+;', body))
    unmatched = re.search(r'UNMATCHED_FUNCTION: &str = "(\w+)"', src)
    if unmatched:
        routes.add(unmatched.group(1))
    binaries = set(re.findall(r"Binary: fn-(\w+)", (ROOT / "template.yaml").read_text()))
    return routes, binaries


# ------------------------------------------------------------------ intrinsics
def _cond(t: dict, params: dict[str, str], name: str) -> bool:
    return bool(_value(t, params, t["Conditions"][name]))


def _value(t: dict, params: dict[str, str], node: Any) -> Any:
    """Parameters, conditions and Fn::Sub of parameters; resources stay `<X>`."""
    decl = t.get("Parameters", {})
    if isinstance(node, list):
        return [_value(t, params, x) for x in node]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        (k, v), = node.items()
        if k == "Ref":
            if v in decl:
                return params.get(v, decl[v].get("Default", ""))
            return f"<{v}>"
        if k == "Fn::If":
            return _value(t, params, v[1] if _cond(t, params, v[0]) else v[2])
        if k == "Fn::Equals":
            return str(_value(t, params, v[0])) == str(_value(t, params, v[1]))
        if k == "Fn::Not":
            return not _value(t, params, v[0])
        if k == "Condition":
            return _cond(t, params, v)
        if k == "Fn::Sub":
            text, extra = (v, {}) if isinstance(v, str) else (v[0], v[1])

            def one(m: re.Match) -> str:
                key = m.group(1)
                if key in extra:
                    return str(_value(t, params, extra[key]))
                if key in decl:
                    return str(params.get(key, decl[key].get("Default", "")))
                return "${" + key + "}"  # a resource or pseudo parameter: kept as written
            return re.sub(r"\$\{([^}!]+)\}", one, text)
        if k == "Fn::GetAtt":
            return f"<{v[0] if isinstance(v, list) else v}>"
    return {k: _value(t, params, x) for k, x in node.items()}


# ------------------------------------------------------------------ access log
def access_log_problems(t: dict, params: dict[str, str]) -> list[str]:
    stages = {k: r for k, r in t["Resources"].items() if r["Type"] == "AWS::ApiGatewayV2::Stage"}
    if len(stages) != 1:
        return [f"want one AWS::ApiGatewayV2::Stage, got {sorted(stages)}"]
    (name, stage), = stages.items()
    settings = stage["Properties"].get("AccessLogSettings")
    if not settings:
        return [f"{name} has no AccessLogSettings"]
    problems = []
    dest = _value(t, params, settings.get("DestinationArn"))
    groups = {k for k, r in t["Resources"].items() if r["Type"] == "AWS::Logs::LogGroup"}
    if not (isinstance(dest, str) and dest.strip("<>") in groups):
        problems.append(f"{name} access logs go to {dest}, not a log group of the stack")
    fmt = _value(t, params, settings.get("Format"))
    for pattern in FORBIDDEN:
        if re.search(pattern, str(fmt)):
            problems.append(f"access log format contains {pattern!r}: {fmt}")
    try:
        fields = json.loads(fmt)
    except (TypeError, ValueError) as e:
        return problems + [f"access log format is not one JSON object: {e}: {fmt!r}"]
    if not isinstance(fields, dict):
        return problems + [f"access log format is not one JSON object: {fmt!r}"]
    decl = t.get("Parameters", {})
    claim = params.get("PrincipalClaim", decl.get("PrincipalClaim", {}).get("Default"))
    jwt = params.get("Authorizer", decl["Authorizer"]["Default"]) == "JwtAuthorizer"
    allowed = dict(ACCESS_LOG_FIELDS, principal=f"$context.authorizer.claims.{claim}" if jwt else f"$context.authorizer.{claim}")
    for field in sorted(REQUIRED_FIELDS - set(fields)):
        problems.append(f"access log lacks {field}")
    for field, value in fields.items():
        if field not in allowed:
            problems.append(f"access log field {field}={value!r} is not in the allow-list")
        elif value != allowed[field]:
            problems.append(f"access log field {field}={value!r}, want {allowed[field]!r}")
    return problems


# ------------------------------------------------------------------ metrics
def _alarm_metrics(props: dict) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, metric, {dimension: value}) of an alarm (plain or metric math)."""
    out = []
    if "MetricName" in props:
        out.append((props.get("Namespace"), props["MetricName"],
                    {d["Name"]: d["Value"] for d in props.get("Dimensions", [])}))
    for q in props.get("Metrics", []):
        m = (q.get("MetricStat") or {}).get("Metric")
        if m:
            out.append((m.get("Namespace"), m["MetricName"], {d["Name"]: d["Value"] for d in m.get("Dimensions", [])}))
    return out


def _dashboard_metrics(body: str) -> list[tuple[str, str, dict[str, Any]]]:
    doc = json.loads(re.sub(r"\$\{[^}]+\}", "SUBSTITUTED", body))
    out = []
    for w in doc["widgets"]:
        for row in (w.get("properties") or {}).get("metrics", []):
            parts = [x for x in row if not isinstance(x, dict)]
            if len(parts) < 2 or len(parts) % 2:
                raise ValueError(f"dashboard metric row not [namespace, name, (dim, value)...]: {row}")
            out.append((parts[0], parts[1], dict(zip(parts[2::2], parts[3::2]))))
    return out


def metric_problems(t: dict, params: dict[str, str]) -> list[str]:
    routes, binaries = _labels()
    asynchronous = binaries - routes
    sets = [sorted(s) for s in METRICS["dimensionSets"]]
    problems = []
    used: list[tuple[str, str, str, dict]] = []
    for k, r in t["Resources"].items():
        if r["Type"] == "AWS::CloudWatch::Alarm":
            used += [(k, *m) for m in _alarm_metrics(_value(t, params, r["Properties"]))]
        elif r["Type"] == "AWS::CloudWatch::Dashboard":
            body = _value(t, params, r["Properties"]["DashboardBody"])
            try:
                used += [(k, *m) for m in _dashboard_metrics(body)]
            except ValueError as e:
                problems.append(f"{k}: {e}")
    if not any(ns == METRICS["namespace"] for _, ns, _, _ in used):
        problems.append(f"no alarm or dashboard metric in {METRICS['namespace']}")
    alarmed: dict[str, set[str]] = {}
    for where, ns, metric, dims in used:
        if ns != METRICS["namespace"]:
            continue
        what = f"{where}: {ns} {metric} {dims}"
        if metric not in METRICS["metrics"]:
            problems.append(f"{what}: {metric} is not a metric of schemas/metrics.json")
        if sorted(dims) not in sets:
            problems.append(f"{what}: dimensions {sorted(dims)} are not a set of schemas/metrics.json {sets}")
        fn = dims.get("Function")
        allowed = asynchronous if metric == "EventsProcessed" else routes
        if fn not in allowed:
            problems.append(f"{what}: Function={fn!r} is not one of {sorted(allowed)}")
        if t["Resources"][where]["Type"] == "AWS::CloudWatch::Alarm":
            alarmed.setdefault(metric, set()).add(fn)
    for metric in ("ServerErrors", "Latency"):
        missing = routes - alarmed.get(metric, set())
        if missing:
            problems.append(f"route-table functions without a {metric} alarm: {sorted(missing)}")
    return problems


def problems(t: dict, params: dict[str, str]) -> list[str]:
    return access_log_problems(t, params) + metric_problems(t, params)


# ------------------------------------------------------------------ tests
def _translated(params: dict[str, str]) -> dict:
    out, errors = translate.translate(translate.load_template(ROOT / "template.yaml"), params)
    assert not errors, errors
    return out


def test_access_log_jwt() -> None:
    params = {"Authorizer": "JwtAuthorizer", "IndexSubscriber": "Disabled"}
    assert access_log_problems(_translated(params), translate.parameter_values(params)) == []


def test_access_log_api_key() -> None:
    params = {"Authorizer": "ApiKeyAuthorizer", "IndexSubscriber": "Enabled"}
    assert access_log_problems(_translated(params), translate.parameter_values(params)) == []


def test_access_log_refuses_a_header() -> None:
    params = {"Authorizer": "JwtAuthorizer", "IndexSubscriber": "Disabled"}
    t = _translated(params)
    stage = next(r for r in t["Resources"].values() if r["Type"] == "AWS::ApiGatewayV2::Stage")
    stage["Properties"]["AccessLogSettings"]["Format"] = json.dumps(
        {**ACCESS_LOG_FIELDS, "principal": "$context.authorizer.claims.sub", "auth": "$request.header.Authorization"})
    found = access_log_problems(t, translate.parameter_values(params))
    assert any("$request" in p for p in found) and any("auth" in p for p in found), found


def test_alarm_and_dashboard_metrics() -> None:
    for params in ({"Authorizer": "JwtAuthorizer", "IndexSubscriber": "Enabled"},
                   {"Authorizer": "ApiKeyAuthorizer", "IndexSubscriber": "Disabled"}):
        assert metric_problems(_translated(params), translate.parameter_values(params)) == []


def test_metric_check_refuses_unknown_names() -> None:
    params = {"Authorizer": "JwtAuthorizer", "IndexSubscriber": "Disabled"}
    t = _translated(params)
    t["Resources"]["Stray"] = {"Type": "AWS::CloudWatch::Alarm", "Properties": {
        "Namespace": "AgentWorkspace", "MetricName": "Latency",
        "Dimensions": [{"Name": "Function", "Value": "publish"}, {"Name": "Tenant", "Value": "x"}]}}
    found = metric_problems(t, translate.parameter_values(params))
    assert any("Tenant" in p for p in found) and any("'publish'" in p for p in found), found
