#!/usr/bin/env python3
"""The deploy gate: translate, lint, deploy into moto, and compare what was created with
what the template says. No AWS account.

    python tests/deploy/check.py [--template template.yaml] [--endpoint http://127.0.0.1:PORT]

1. translate.py: the SAM transform, for every Authorizer × IndexSubscriber combination,
   with a customer managed key (KmsKeyArn) and for each samconfig.toml environment.
2. cfn-lint on each *translated* template (plain CloudFormation) with its parameters: any
   error fails, and any warning not in LINT_IGNORE (each with its reason) fails too.
3. Static checks of each translated template: the HTTP API body's routes and security equal
   the route table (openapi.json, and shared/http/src/routes.rs for greedy paths and the
   function of each route), the one security scheme resolves to the selected authorizer,
   and the properties moto's CloudFormation ignores match EXPECT below.
   test_observability.py's access log and metric checks, and the stack Rules (only
   samconfig.toml's prod as written may be refused, and must be).
4. Each combination is deployed (stack.py) into moto (`--endpoint`, or one started here with
   tests/moto_server.py) and every created resource is read back through moto's APIs and
   compared with the translated template: functions, roles and their inline policies,
   environment, tables, queues, rules and targets, event source mappings, permissions.

Prints a compact report; exits 1 on any error or mismatch.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stack  # noqa: E402
import test_observability  # noqa: E402
import translate  # noqa: E402

ROOT = translate.ROOT
ACCOUNT = "123456789012"  # moto's default account
REGION = stack.REGION

# ------------------------------------------------------------------ expectations
# cfn-lint rules whose findings on the translated template are not defects, each with why.
# Keyed by (rule id, resource or parameter path prefix). Nothing else is ignored.
LINT_IGNORE: dict[tuple[str, str], str] = {}

# Environment variables that name a resource of the stack: the variable, the resource type
# and the logical id whose physical id it must equal, on every function.
RESOURCE_VARS = {
    "WORKSPACE_BUCKET": ("AWS::S3::Bucket", "WorkspaceBucket"),
    "WORKSPACE_BLOB_S3_BUCKET": ("AWS::S3::Bucket", "BlobBucket"),
    "WORKSPACE_TABLE": ("AWS::DynamoDB::Table", "WorkspaceTable"),
    "WORKSPACE_CACHE_TABLE": ("AWS::DynamoDB::Table", "CacheTable"),
    "WORKSPACE_EVENT_BUS": ("AWS::Events::EventBus", "WorkspaceEventBus"),
}
# Read by something other than our settings code: the tracing filter and the AWS SDK.
OTHER_READ_VARS = {"RUST_LOG": "tracing's EnvFilter", "AWS_ENDPOINT_URL": "the AWS SDK (emulator)"}
# Functions whose configuration must not carry the paging tokens' key (read no settings).
NO_SECRET_FUNCTIONS = {"ConsoleFunction"}

BASIC_EXECUTION = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
DENY_INSECURE = {
    "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
}
PUBLIC_ACCESS_BLOCKED = {
    "BlockPublicAcls": True, "BlockPublicPolicy": True,
    "IgnorePublicAcls": True, "RestrictPublicBuckets": True,
}
SSE_S3 = {"ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
# With KmsKeyArn: SSE-KMS with that key and bucket keys ("<KmsKeyArn>" is replaced by it).
SSE_KMS = {"ServerSideEncryptionConfiguration": [{
    "ServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "<KmsKeyArn>"},
    "BucketKeyEnabled": True}]}
XRAY = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"
# Customer data: kept when the stack is deleted or the resource replaced.
EXPECT_RETAINED = ["WorkspaceBucket", "BlobBucket", "WorkspaceTable", "CacheTable", "SessionTokenKey"]
# Reserved concurrency of the asynchronous functions: the parameter of each (0: none).
EXPECT_RESERVED = {"PublishFunction": "PublishConcurrency", "IndexerFunction": "IndexerConcurrency",
                   "SweepFunction": "SweepConcurrency", "PurgeFunction": "PurgeConcurrency",
                   "IndexFunction": "IndexSubscriberConcurrency"}
# The functions whose role gets KMS statements with KmsKeyArn, and the actions (by service
# the key is used through); every other role has none. Without KmsKeyArn no role has any.
EXPECT_KMS = {
    "GetFunction": {"s3": ["kms:Decrypt"]}, "SearchFunction": {"s3": ["kms:Decrypt"]},
    **{f: {"s3": ["kms:Decrypt", "kms:GenerateDataKey"]} for f in (
        "PutFunction", "BlobFunction", "PresignFunction", "McpFunction", "SnapshotsFunction",
        "IndexFunction", "WorkspacesFunction")},
    "PublishFunction": {"sqs": ["kms:Decrypt", "kms:GenerateDataKey"]},
    "IndexerFunction": {"s3": ["kms:Decrypt", "kms:GenerateDataKey"], "sqs": ["kms:Decrypt"]},
}
# What moto's CloudFormation ignores, stated here and checked in the translated template.
EXPECT_BUCKETS = {
    "WorkspaceBucket": {
        "VersioningConfiguration": {"Status": "Enabled"},
        "PublicAccessBlockConfiguration": PUBLIC_ACCESS_BLOCKED,
        "BucketEncryption": "<encryption>",
        "LifecycleConfiguration": {"Rules": [
            {"Id": "ExpireNoncurrentVersions", "Status": "Enabled",
             "NoncurrentVersionExpiration": {"NoncurrentDays": 30, "NewerNoncurrentVersions": "<MaxVersions>"}},
            {"Id": "AbortIncompleteMultipartUploads", "Status": "Enabled",
             "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
        ]},
        "CorsConfiguration": {"CorsRules": [
            {"Id": "PresignedUploadPut", "AllowedMethods": ["PUT"], "AllowedOrigins": ["*"],
             "AllowedHeaders": ["content-type"], "MaxAge": 3600}]},
    },
    "BlobBucket": {
        "VersioningConfiguration": {"Status": "Enabled"},
        "PublicAccessBlockConfiguration": PUBLIC_ACCESS_BLOCKED,
        "BucketEncryption": "<encryption>",
        "LifecycleConfiguration": {"Rules": [
            {"Id": "ExpireNoncurrentVersions", "Status": "Enabled",
             "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
            {"Id": "RemoveExpiredDeleteMarkers", "Status": "Enabled", "ExpiredObjectDeleteMarker": True},
            {"Id": "AbortIncompleteMultipartUploads", "Status": "Enabled",
             "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
        ]},
        "CorsConfiguration": None,  # no browser reaches the blob bucket directly
    },
}
EXPECT_TABLES = {
    "WorkspaceTable": {"TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
                       "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": "<PointInTimeRecovery>"},
                       "SSESpecification": "<sse>",
                       "DeletionProtectionEnabled": "<TableDeletionProtection>"},
    "CacheTable": {"TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
                   "SSESpecification": "<sse>",
                   "DeletionProtectionEnabled": "<TableDeletionProtection>"},
}
EXPECT_ARCHITECTURES = ["arm64"]
EXPECT_SECRET = ("SessionTokenKey", 64)  # the paging tokens' HMAC key, and its length
# Queues that a rule sends to: each needs a queue policy letting events.amazonaws.com send,
# only from that rule.
EXPECT_RULE_QUEUES = {"SearchIndexQueue": "SearchIndexRule"}
MOTO_CREATES = {
    "AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::SQS::Queue", "AWS::Events::EventBus",
    "AWS::Events::Rule", "AWS::IAM::Role", "AWS::Lambda::Function", "AWS::Lambda::Permission",
    "AWS::Lambda::EventSourceMapping", "AWS::Logs::LogGroup", "AWS::SNS::Topic", "AWS::CloudWatch::Dashboard",
}

SENTINEL = "\x00unsupported\x00"  # what a Ref/GetAtt of a resource moto does not create gives
NOVALUE = object()


# ------------------------------------------------------------------ report
class Report:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.counts: dict[str, int] = {}

    def check(self, section: str, ok: bool, message: str) -> bool:
        self.counts[section] = self.counts.get(section, 0) + 1
        if not ok:
            self.problems.append(f"[{section}] {message}")
        return ok

    def eq(self, section: str, what: str, got: Any, want: Any) -> bool:
        return self.check(section, _norm(got) == _norm(want), f"{what}: got {_show(got)}, want {_show(want)}")


def _norm(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return str(v)
    return v


def _show(v: Any) -> str:
    s = json.dumps(v, sort_keys=True, default=str).replace(SENTINEL, "<unsupported>")
    return s if len(s) < 400 else s[:400] + "…"


# ------------------------------------------------------------------ intrinsics
class Resolver:
    """Evaluates CloudFormation intrinsics of a translated template for one parameter set.
    `attr(logical, attribute)` gives GetAtt values (and `ref(logical)` Refs) of resources."""

    def __init__(self, template: dict, params: dict[str, str], stack_name: str,
                 ref: Callable[[str], Any], attr: Callable[[str, str], Any]) -> None:
        self.t = template
        self.params = {}
        for name, decl in template.get("Parameters", {}).items():
            v = params.get(name, decl.get("Default"))
            if decl.get("Type") == "CommaDelimitedList" and isinstance(v, str):
                v = v.split(",")
            self.params[name] = v
        self.pseudo = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws",
                       "AWS::StackName": stack_name, "AWS::URLSuffix": "amazonaws.com",
                       "AWS::NoValue": NOVALUE}
        self.ref, self.attr = ref, attr

    def cond(self, name: str | None) -> bool:
        if name is None:
            return True
        return bool(self.value(self.t["Conditions"][name]))

    def exists(self, logical: str) -> bool:
        return self.cond(self.t["Resources"][logical].get("Condition"))

    def _ref(self, name: str) -> Any:
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.params:
            return self.params[name]
        return self.ref(name)

    def _sub(self, s: str, extra: dict) -> str:
        def one(m: re.Match) -> str:
            key = m.group(1)
            if key.startswith("!"):
                return "${" + key[1:] + "}"
            if key in extra:
                v = extra[key]
            elif "." in key and key.split(".", 1)[0] in self.t["Resources"]:
                v = self.attr(*key.split(".", 1))
            else:
                v = self._ref(key)
            return ",".join(v) if isinstance(v, list) else str(v)
        return re.sub(r"\$\{([^}]+)\}", one, s)

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [x for x in (self.value(v) for v in node) if x is not NOVALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (k, v), = node.items()
            if k == "Ref":
                return self._ref(v)
            if k == "Fn::GetAtt":
                logical, attribute = v if isinstance(v, list) else v.split(".", 1)
                return self.attr(logical, attribute)
            if k == "Fn::Sub":
                if isinstance(v, str):
                    return self._sub(v, {})
                return self._sub(v[0], {n: self.value(x) for n, x in v[1].items()})
            if k == "Fn::If":
                return self.value(v[1] if self.cond(v[0]) else v[2])
            if k == "Fn::Equals":
                a, b = (self.value(x) for x in v)
                return str(a) == str(b)
            if k == "Fn::Not":
                return not self.value(v[0])
            if k == "Fn::And":
                return all(self.value(x) for x in v)
            if k == "Fn::Or":
                return any(self.value(x) for x in v)
            if k == "Condition":
                return self.cond(v)
            if k == "Fn::Join":
                return v[0].join(str(x) for x in self.value(v[1]))
            if k == "Fn::Select":
                return self.value(v[1])[int(self.value(v[0]))]
            if k == "Fn::Split":
                return str(self.value(v[1])).split(v[0])
        out = {}
        for k, v in node.items():
            r = self.value(v)
            if r is not NOVALUE:
                out[k] = r
        return out


def symbolic(template: dict, params: dict[str, str]) -> Resolver:
    """Resolves parameters and conditions; resources stay names: <X> and <X.Attr>."""
    return Resolver(template, params, "STACK", lambda x: f"<{x}>", lambda x, a: f"<{x}.{a}>")


# ------------------------------------------------------------------ route table
def route_table() -> tuple[dict[tuple[str, str], bool], dict[tuple[str, str], tuple[str, str]]]:
    """openapi.json: {(METHOD, openapi path): public}; routes.rs: {(METHOD, openapi path):
    (exact API Gateway pattern, function)}."""
    doc = json.loads((ROOT / "openapi.json").read_text())
    table = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            table[(method.upper(), path)] = op.get("security", doc.get("security")) == []
    src = (ROOT / "shared/http/src/routes.rs").read_text()
    consts = dict(re.findall(r'^const (\w+): &str = "([^"]+)";', src, re.M))
    body = src[src.index("pub const ROUTES"):]
    rows = {}
    for method, pat, func in re.findall(
            r'^\s*(GET|PUT|POST|DELETE|PATCH|HEAD)\s+("[^"]+"|\w+)\s*=>\s*\w+,\s*"(\w+)",\s*\w+;', body, re.M):
        pattern = pat.strip('"') if pat.startswith('"') else consts[pat]
        rows[(method, pattern.replace("+}", "}"))] = (pattern, func)
    unmatched = re.search(r'UNMATCHED_FUNCTION: &str = "(\w+)"', src)
    rows[("ANY", "$default")] = ("$default", unmatched.group(1) if unmatched else "?")
    return table, rows


# ------------------------------------------------------------------ lint
def lint(rep: Report, name: str, translated: dict, params: dict[str, str]) -> None:
    from cfnlint.api import ManualArgs
    from cfnlint.api import lint as cfn_lint

    decl = translated.get("Parameters", {})
    values = {}
    for k, v in translate.parameter_values(params).items():
        values[k] = v.split(",") if decl.get(k, {}).get("Type") == "CommaDelimitedList" else v
    matches = cfn_lint(json.dumps(translated), config=ManualArgs(regions=[REGION], parameters=[values]))
    for m in matches:
        rid = m.rule.id
        path = "/".join(str(p) for p in (m.path or []))
        line = f"{name}: {rid} {path}: {m.message}"
        reason = next((r for (i, p), r in LINT_IGNORE.items() if i == rid and path.startswith(p)), None)
        if reason:
            rep.notes.append(f"lint ignored {line} ({reason})")
        elif rid.startswith("I"):
            rep.notes.append(f"lint info {line}")
        else:
            rep.check("lint", False, line)
    rep.check("lint", True, "")


# ------------------------------------------------------------------ static checks
def check_api(rep: Report, name: str, t: dict, r: Resolver) -> None:
    sec = f"api {name}"
    apis = [k for k, v in t["Resources"].items() if v["Type"] == "AWS::ApiGatewayV2::Api"]
    if not rep.check(sec, len(apis) == 1, f"want one AWS::ApiGatewayV2::Api, got {apis}"):
        return
    body = t["Resources"][apis[0]]["Properties"].get("Body") or {}
    table, rows = route_table()
    rep.eq(sec, "openapi.json operations vs routes.rs rows", sorted(table), sorted(k for k in rows if k[0] != "ANY"))
    fn_of = {v["Metadata"]["BuildProperties"]["Binary"].removeprefix("fn-"): k
             for k, v in t["Resources"].items()
             if v["Type"] == "AWS::Lambda::Function" and "BuildProperties" in (v.get("Metadata") or {})}
    in_body: dict[tuple[str, str], bool] = {}
    schemes_used: set[str] = set()
    for path, item in (body.get("paths") or {}).items():
        for method, op in item.items():
            if not isinstance(op, dict):
                continue
            m = "ANY" if method == "x-amazon-apigateway-any-method" else method.upper()
            key = (m, "$default" if path == "/$default" else path.replace("+}", "}"))
            security = op.get("security", body.get("security", []))
            names = {n for req in security for n in req} - {"NONE"}
            schemes_used |= names
            public = not names
            in_body[key] = public
            if key in rows:
                pattern, func = rows[key]
                want_path = "/$default" if pattern == "$default" else pattern
                rep.eq(sec, f"{m} {key[1]} exact path (greedy or not)", path, want_path)
                integ = json.dumps(op.get("x-amazon-apigateway-integration", {}))
                target = fn_of.get(func, f"?fn-{func}")
                rep.check(sec, f"${{{target}.Arn}}" in integ or f'"{target}"' in integ,
                          f"{m} {key[1]}: integration does not name {target} (route function {func})")
            if not public:
                rep.check(sec, len(security) == 1 and len(security[0]) == 1,
                          f"{m} {path}: security must name exactly one scheme, got {security}")
    want = dict(table)
    want[("ANY", "$default")] = True
    missing = sorted(set(want) - set(in_body))
    extra = sorted(set(in_body) - set(want))
    rep.check(sec, not missing, f"routes of the table missing from the API body: {missing}")
    rep.check(sec, not extra, f"routes in the API body that the table lacks: {extra}")
    for key in sorted(set(want) & set(in_body)):
        rep.check(sec, want[key] == in_body[key],
                  f"{key[0]} {key[1]}: {'public' if in_body[key] else 'authenticated'} in the API, "
                  f"{'public' if want[key] else 'authenticated'} in the route table")
    if not rep.check(sec, len(schemes_used) == 1, f"authenticated routes must share one scheme, got {sorted(schemes_used)}"):
        return
    scheme_name = next(iter(schemes_used))
    scheme = r.value((body.get("components") or {}).get("securitySchemes", {}).get(scheme_name))
    auth = (scheme or {}).get("x-amazon-apigateway-authorizer") or {}
    selected = r.params["Authorizer"]
    ident = auth.get("identitySource")
    ident = ident if isinstance(ident, list) else [s.strip() for s in str(ident).split(",")]
    rep.eq(sec, f"{scheme_name} identity source", ident, ["$request.header.Authorization"])
    if selected == "JwtAuthorizer":
        rep.eq(sec, f"{scheme_name} (Authorizer=JwtAuthorizer) type", [scheme.get("type"), auth.get("type")], ["oauth2", "jwt"])
        rep.eq(sec, f"{scheme_name} jwtConfiguration", auth.get("jwtConfiguration"),
               {"issuer": r.params["JwtIssuer"], "audience": r.params["JwtAudience"]})
    else:
        rep.eq(sec, f"{scheme_name} (Authorizer=ApiKeyAuthorizer) type", [scheme.get("type"), auth.get("type")], ["apiKey", "request"])
        uri = str(auth.get("authorizerUri"))
        rep.check(sec, "<AuthorizerFunction.Arn>" in uri and uri.endswith("/invocations"),
                  f"{scheme_name} authorizerUri must invoke AuthorizerFunction, got {uri}")
        for k, v in {"authorizerPayloadFormatVersion": "2.0", "enableSimpleResponses": True,
                     "authorizerResultTtlInSeconds": 0}.items():
            rep.eq(sec, f"{scheme_name} {k}", auth.get(k), v)
        perms = [v for k, v in t["Resources"].items() if v["Type"] == "AWS::Lambda::Permission" and r.exists(k)
                 and r.value(v["Properties"].get("FunctionName")) in ("<AuthorizerFunction.Arn>", "<AuthorizerFunction>")]
        rep.check(sec, any(r.value(p["Properties"]).get("Principal") == "apigateway.amazonaws.com" for p in perms),
                  "no permission for API Gateway to invoke AuthorizerFunction")


def rules_refusing(t: dict, r: Resolver) -> list[str]:
    """The stack Rules whose assertions fail with these parameters (CloudFormation refuses
    the deploy before anything changes; the SAM transform and moto never evaluate them)."""
    out = []
    for name, rule in (t.get("Rules") or {}).items():
        if "RuleCondition" in rule and not r.value(rule["RuleCondition"]):
            continue
        for a in rule.get("Assertions", []):
            if not _assert(r, a["Assert"]):
                out.append(f"{name}: {a.get('AssertDescription', '')}")
    return out


def _assert(r: Resolver, node: Any) -> Any:
    """Rule functions: the intrinsics Resolver knows, plus Fn::EachMemberIn."""
    if isinstance(node, dict) and len(node) == 1:
        (k, v), = node.items()
        if k == "Fn::EachMemberIn":
            return all(x in r.value(v[1]) for x in r.value(v[0]))
        if k == "Fn::Not":
            return not _assert(r, v[0])
        if k == "Fn::Or":
            return any(_assert(r, x) for x in v)
        if k == "Fn::And":
            return all(_assert(r, x) for x in v)
    return r.value(node)


def check_ignored_by_moto(rep: Report, name: str, t: dict, r: Resolver) -> None:
    sec = f"static {name}"
    res = t["Resources"]
    kms = r.params.get("KmsKeyArn") or ""
    enabled = {k: r.params.get(k) == "Enabled" for k in ("PointInTimeRecovery", "TableDeletionProtection")}
    for bucket, want in EXPECT_BUCKETS.items():
        props = r.value(res[bucket]["Properties"])
        for k, v in want.items():
            if k == "LifecycleConfiguration":
                v = json.loads(json.dumps(v).replace('"<MaxVersions>"', json.dumps(r.params["MaxVersions"])))
            if v == "<encryption>":
                v = json.loads(json.dumps(SSE_KMS).replace("<KmsKeyArn>", kms)) if kms else SSE_S3
            rep.eq(sec, f"{bucket}.{k}", props.get(k), v)
        policies = [r.value(p["Properties"]) for k, p in res.items()
                    if p["Type"] == "AWS::S3::BucketPolicy" and r.exists(k)
                    and r.value(p["Properties"]["Bucket"]) == f"<{bucket}>"]
        stmts = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
        want_stmt = dict(DENY_INSECURE, Resource=[f"<{bucket}.Arn>", f"<{bucket}.Arn>/*"])
        rep.check(sec, want_stmt in stmts, f"{bucket}: no bucket policy statement {_show(want_stmt)}")
    for table, want in EXPECT_TABLES.items():
        props = r.value(res[table]["Properties"])
        for k, v in want.items():
            v = json.loads(json.dumps(v).replace('"<PointInTimeRecovery>"', json.dumps(enabled["PointInTimeRecovery"]))
                           .replace('"<TableDeletionProtection>"', json.dumps(enabled["TableDeletionProtection"])))
            if v == "<sse>":
                v = {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": kms} if kms else {"SSEEnabled": True}
            rep.eq(sec, f"{table}.{k}", props.get(k), v)
    for k in EXPECT_RETAINED:
        rep.eq(sec, f"{k} DeletionPolicy/UpdateReplacePolicy", [res[k].get("DeletionPolicy"), res[k].get("UpdateReplacePolicy")],
               ["Retain", "Retain"])
    for k, v in res.items():
        if v["Type"] == "AWS::SQS::Queue":
            props = r.value(v["Properties"])
            rep.eq(sec, f"{k} encryption", [props.get("KmsMasterKeyId"), props.get("SqsManagedSseEnabled")],
                   [kms, None] if kms else [None, True])
    rep.eq(sec, "SessionTokenKey.KmsKeyId", r.value(res["SessionTokenKey"]["Properties"]).get("KmsKeyId"), kms or None)
    rep.eq(sec, "WorkspaceEventBus.KmsKeyIdentifier", r.value(res["WorkspaceEventBus"]["Properties"]).get("KmsKeyIdentifier"), kms or None)
    groups = {r.value(v["Properties"]["LogGroupName"]): k for k, v in res.items()
              if v["Type"] == "AWS::Logs::LogGroup" and r.exists(k)}
    for k, v in res.items():
        if v["Type"] == "AWS::Logs::LogGroup" and r.exists(k):
            rep.eq(sec, f"{k}.RetentionInDays", r.value(v["Properties"]).get("RetentionInDays"), r.params["LogRetentionDays"])
    fns = {k: v for k, v in res.items() if v["Type"] == "AWS::Lambda::Function" and r.exists(k)}
    roles = set()
    for f, v in fns.items():
        props = r.value(v["Properties"])
        rep.eq(sec, f"{f}.Architectures", props.get("Architectures"), EXPECT_ARCHITECTURES)
        group = (props.get("LoggingConfig") or {}).get("LogGroup")
        rep.eq(sec, f"{f}.LoggingConfig.LogGroup", group, f"<{f}LogGroup>")
        rep.check(sec, f"/aws/lambda/STACK/{f}" in groups, f"{f}: no log group /aws/lambda/<stack>/{f}")
        rep.eq(sec, f"{f}.TracingConfig", props.get("TracingConfig"),
               {"Mode": "Active"} if r.params.get("Tracing") == "Active" else None)
        reserved = r.params.get(EXPECT_RESERVED[f]) if f in EXPECT_RESERVED else None
        rep.eq(sec, f"{f}.ReservedConcurrentExecutions", props.get("ReservedConcurrentExecutions"),
               None if reserved in (None, 0, "0") else reserved)
        role_name = str(props.get("Role", "")).removeprefix("<").removesuffix(".Arn>")
        stmts = [st for p in r.value(res[role_name]["Properties"]).get("Policies", [])
                 for st in p["PolicyDocument"]["Statement"]] if role_name in res else []
        got_kms: dict[str, list[str]] = {}
        for st in stmts:
            acts = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            if any(a.startswith("kms:") for a in acts):
                via = st.get("Condition", {}).get("StringEquals", {}).get("kms:ViaService", "?")
                rep.eq(sec, f"{f} KMS statement resource", st.get("Resource"), kms)
                got_kms.setdefault(via.split(".")[0], []).extend(sorted(acts))
        rep.eq(sec, f"{f} KMS grants by service", got_kms, EXPECT_KMS.get(f, {}) if kms else {})
        role = props.get("Role", "")
        roles.add(role.removeprefix("<").removesuffix(".Arn>"))
        env = props.get("Environment", {}).get("Variables", {})
        secret = env.get("WORKSPACE_SESSION_TOKEN_KEY")
        if f in NO_SECRET_FUNCTIONS:
            rep.eq(sec, f"{f} WORKSPACE_SESSION_TOKEN_KEY", secret, "")
        else:
            rep.eq(sec, f"{f} WORKSPACE_SESSION_TOKEN_KEY", secret,
                   f"{{{{resolve:secretsmanager:<{EXPECT_SECRET[0]}>:SecretString}}}}")
    for role in sorted(roles):
        arns = r.value(res[role]["Properties"].get("ManagedPolicyArns", [])) if role in res else None
        want_arns = [BASIC_EXECUTION] + ([XRAY] if r.params.get("Tracing") == "Active" else [])
        rep.eq(sec, f"{role}.ManagedPolicyArns", sorted(arns or []), sorted(want_arns))
    s = r.value(res[EXPECT_SECRET[0]]["Properties"]).get("GenerateSecretString", {})
    rep.check(sec, s.get("PasswordLength", 0) >= EXPECT_SECRET[1] and s.get("ExcludePunctuation") is True,
              f"{EXPECT_SECRET[0]}.GenerateSecretString: {_show(s)}")
    for queue, rule in EXPECT_RULE_QUEUES.items():
        policies = [r.value(p["Properties"]) for k, p in res.items()
                    if p["Type"] == "AWS::SQS::QueuePolicy" and r.exists(k)
                    and f"<{queue}>" in r.value(p["Properties"]["Queues"])]
        stmts = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
        ok = [s for s in stmts if s.get("Effect") == "Allow" and s.get("Principal") == {"Service": "events.amazonaws.com"}
              and s.get("Action") in ("sqs:SendMessage", ["sqs:SendMessage"]) and s.get("Resource") == f"<{queue}.Arn>"
              and s.get("Condition") == {"ArnEquals": {"aws:SourceArn": f"<{rule}.Arn>"}}]
        rep.check(sec, len(ok) == 1 and len(stmts) == 1,
                  f"{queue}: want one queue policy statement letting events.amazonaws.com send from {rule}, got {_show(stmts)}")


# ------------------------------------------------------------------ variables the code reads
def read_vars() -> set[str]:
    names = set()
    for f in ("shared/wiring/src/settings.rs", "shared/wiring/src/env.rs"):
        names |= set(re.findall(r'"(WORKSPACE_[A-Z0-9_]+)"', (ROOT / f).read_text()))
    for f in (ROOT / "functions").glob("*/src/*.rs"):
        names |= set(re.findall(r'env::var\("([A-Z][A-Z0-9_]+)"\)', f.read_text()))
    return names | set(OTHER_READ_VARS)


# ------------------------------------------------------------------ deployed checks
class Moto:
    def __init__(self, endpoint: str) -> None:
        self.c = {s: stack.client(s, endpoint) for s in
                  ("lambda", "iam", "dynamodb", "sqs", "events", "cloudformation", "kms", "sns", "logs", "cloudwatch")}


def deployed_resolver(t: dict, params: dict[str, str], stack_name: str, phys: dict[str, str], m: Moto) -> Resolver:
    types = {k: v["Type"] for k, v in t["Resources"].items()}
    cache: dict[tuple[str, str], Any] = {}
    r: Resolver

    def ref(x: str) -> Any:
        ty = types.get(x)
        if ty == "AWS::Events::EventBus":
            return attr(x, "Name")  # AWS's Ref of a bus is its name (moto's is empty)
        if ty not in MOTO_CREATES:
            return SENTINEL
        return phys.get(x, SENTINEL)

    def attr(x: str, a: str) -> Any:
        if (x, a) in cache:
            return cache[(x, a)]
        ty, p = types.get(x), phys.get(x)
        v: Any = SENTINEL
        if ty == "AWS::Lambda::Function" and a == "Arn":
            v = m.c["lambda"].get_function_configuration(FunctionName=p)["FunctionArn"]
        elif ty == "AWS::IAM::Role" and a == "Arn":
            v = m.c["iam"].get_role(RoleName=p)["Role"]["Arn"]
        elif ty == "AWS::DynamoDB::Table":
            d = m.c["dynamodb"].describe_table(TableName=p)["Table"]
            v = {"Arn": d["TableArn"], "StreamArn": d.get("LatestStreamArn")}.get(a, SENTINEL)
        elif ty == "AWS::S3::Bucket" and a == "Arn":
            v = f"arn:aws:s3:::{p}"
        elif ty == "AWS::SQS::Queue" and a in ("Arn", "QueueName"):
            arn = m.c["sqs"].get_queue_attributes(QueueUrl=p, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            v = arn if a == "Arn" else arn.rsplit(":", 1)[-1]
        elif ty == "AWS::Events::EventBus":
            name = r.value(t["Resources"][x]["Properties"]["Name"])
            v = {"Name": name, "Arn": m.c["events"].describe_event_bus(Name=name)["Arn"]}.get(a, SENTINEL)
        elif ty == "AWS::Logs::LogGroup" and a == "Arn":
            v = m.c["logs"].describe_log_groups(logGroupNamePrefix=p)["logGroups"][0]["arn"].removesuffix(":*")
        elif ty == "AWS::Events::Rule" and a == "Arn":
            bus = r.value(t["Resources"][x]["Properties"].get("EventBusName", "default"))
            v = m.c["events"].describe_rule(Name=p, EventBusName=bus)["Arn"]
        cache[(x, a)] = v
        return v

    r = Resolver(t, params, stack_name, ref, attr)
    return r


def _matches(got: Any, want: Any) -> bool:
    """Equality, where SENTINEL in `want` (a Ref/GetAtt moto cannot give) matches anything
    moto put in its place (it writes None)."""
    g, w = json.dumps(_norm(got), sort_keys=True), json.dumps(_norm(want), sort_keys=True)
    marker = json.dumps(SENTINEL)[1:-1]
    if marker not in w:
        return g == w
    pattern = ".*?".join(re.escape(p) for p in w.split(marker))
    return re.fullmatch(pattern, g) is not None


def _policy_doc(d: Any) -> Any:
    """A policy document as moto answers it: a dict, JSON, or (moto 5.2.x, for the inline
    policies of a role its CloudFormation created from an explicit AWS::IAM::Role) the
    Python repr of the dict."""
    if not isinstance(d, str):
        return d
    try:
        return json.loads(d)
    except ValueError:
        import ast

        return ast.literal_eval(d)


def check_deployed(rep: Report, name: str, t: dict, params: dict[str, str], out: dict, m: Moto) -> None:
    sec = f"moto {name}"
    phys = out["resources"]
    r = deployed_resolver(t, params, out["stack"], phys, m)
    res = t["Resources"]
    for k, v in res.items():
        if v["Type"] in MOTO_CREATES:
            rep.check(sec, (k in phys) == r.exists(k),
                      f"{k}: {'created' if k in phys else 'not created'}, condition says {r.exists(k)}")
    live = {k: v for k, v in res.items() if k in phys and v["Type"] in MOTO_CREATES}
    reads = read_vars()
    ids_by_value = {p: k for k, p in phys.items() if p}
    ids_by_value[r.attr("WorkspaceEventBus", "Name")] = "WorkspaceEventBus"

    for k, v in live.items():
        ty, props = v["Type"], r.value(v["Properties"])
        try:
            if ty == "AWS::Lambda::Function":
                f = out["functions"][k]
                for field, key in (("runtime", "Runtime"), ("handler", "Handler"), ("memory", "MemorySize"), ("timeout", "Timeout")):
                    rep.eq(sec, f"{k}.{key}", f[field], props.get(key))
                rep.eq(sec, f"{k}.Role", f["role_arn"], props["Role"])
                env = f["env"]
                want_env = dict(props.get("Environment", {}).get("Variables", {}))
                if "WORKSPACE_SESSION_TOKEN_KEY" in want_env and str(want_env["WORKSPACE_SESSION_TOKEN_KEY"]).startswith("{{resolve:"):
                    want_env["WORKSPACE_SESSION_TOKEN_KEY"] = env.get("WORKSPACE_SESSION_TOKEN_KEY")  # stack.py's stand-in
                rep.eq(sec, f"{k} environment", env, want_env)
                for var in sorted(set(env) - reads):
                    rep.check(sec, False, f"{k} sets {var}, which no code reads (settings.rs, env.rs, functions/*)")
                for var, (rtype, logical) in RESOURCE_VARS.items():
                    want = r.attr(logical, "Name") if rtype == "AWS::Events::EventBus" else phys.get(logical)
                    rep.eq(sec, f"{k} {var} (the stack's {logical})", env.get(var), want)
                for var, val in env.items():
                    owner = ids_by_value.get(str(val))
                    if owner and var not in RESOURCE_VARS:
                        rep.check(sec, False, f"{k} {var} names the stack's {owner} but check.py's RESOURCE_VARS does not list it")
                    if var not in RESOURCE_VARS and re.search(r"(BUCKET|TABLE|QUEUE|STREAM|_BUS)$", var) and var not in ("WORKSPACE_BLOB_BUCKETS",):
                        rep.check(sec, False, f"{k} {var} looks like a resource name but RESOURCE_VARS does not list it")
            elif ty == "AWS::IAM::Role":
                iam = m.c["iam"]
                role = iam.get_role(RoleName=phys[k])["Role"]
                rep.eq(sec, f"{k}.AssumeRolePolicyDocument", _policy_doc(role["AssumeRolePolicyDocument"]), props["AssumeRolePolicyDocument"])
                names = iam.list_role_policies(RoleName=phys[k])["PolicyNames"]
                got = {n: iam.get_role_policy(RoleName=phys[k], PolicyName=n)["PolicyDocument"] for n in names}
                got = {n: _policy_doc(d) for n, d in got.items()}
                want = {p["PolicyName"]: p["PolicyDocument"] for p in props.get("Policies", [])}
                rep.check(sec, _matches(got, want), f"{k} inline policies: got {_show(got)}, want {_show(want)}")
            elif ty == "AWS::DynamoDB::Table":
                d = m.c["dynamodb"].describe_table(TableName=phys[k])["Table"]
                rep.eq(sec, f"{k}.KeySchema", d["KeySchema"], props["KeySchema"])
                rep.eq(sec, f"{k}.AttributeDefinitions", sorted(d["AttributeDefinitions"], key=str), sorted(props["AttributeDefinitions"], key=str))
                rep.eq(sec, f"{k}.BillingMode", d.get("BillingModeSummary", {}).get("BillingMode"), props.get("BillingMode", "PROVISIONED"))
                for idx in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
                    g = sorted((i["IndexName"], json.dumps(i["KeySchema"]), json.dumps(i.get("Projection"), sort_keys=True)) for i in d.get(idx, []))
                    w = sorted((i["IndexName"], json.dumps(i["KeySchema"]), json.dumps(i.get("Projection"), sort_keys=True)) for i in props.get(idx, []))
                    rep.eq(sec, f"{k}.{idx}", g, w)
                rep.eq(sec, f"{k}.StreamViewType", d.get("StreamSpecification", {}).get("StreamViewType"),
                       (props.get("StreamSpecification") or {}).get("StreamViewType"))
            elif ty == "AWS::SQS::Queue":
                a = m.c["sqs"].get_queue_attributes(QueueUrl=phys[k], AttributeNames=["All"])["Attributes"]
                for key, default in (("VisibilityTimeout", 30), ("MessageRetentionPeriod", 345600),
                                     ("DelaySeconds", 0), ("ReceiveMessageWaitTimeSeconds", 0)):
                    rep.eq(sec, f"{k}.{key}", a.get(key), props.get(key, default))
                rep.eq(sec, f"{k}.RedrivePolicy", json.loads(a["RedrivePolicy"]) if "RedrivePolicy" in a else None,
                       props.get("RedrivePolicy"))
                rep.eq(sec, f"{k}.KmsMasterKeyId", a.get("KmsMasterKeyId"), props.get("KmsMasterKeyId"))
                if "SqsManagedSseEnabled" in props:
                    rep.eq(sec, f"{k}.SqsManagedSseEnabled", a.get("SqsManagedSseEnabled"), str(props["SqsManagedSseEnabled"]).lower())
            elif ty == "AWS::Logs::LogGroup":
                g = [x for x in m.c["logs"].describe_log_groups(logGroupNamePrefix=phys[k])["logGroups"]
                     if x["logGroupName"] == phys[k]]
                rep.eq(sec, f"{k}.LogGroupName", phys[k], props["LogGroupName"])
                rep.eq(sec, f"{k}.RetentionInDays", g[0].get("retentionInDays") if g else None, props.get("RetentionInDays"))
            elif ty == "AWS::SNS::Topic":
                a = m.c["sns"].get_topic_attributes(TopicArn=phys[k])["Attributes"]
                rep.eq(sec, f"{k}.DisplayName", a.get("DisplayName"), props.get("DisplayName"))
                rep.eq(sec, f"{k}.KmsMasterKeyId", a.get("KmsMasterKeyId"), props.get("KmsMasterKeyId"))
            elif ty == "AWS::CloudWatch::Dashboard":
                d = m.c["cloudwatch"].get_dashboard(DashboardName=props["DashboardName"])
                rep.eq(sec, f"{k}.DashboardBody", json.loads(d["DashboardBody"]), json.loads(props["DashboardBody"]))
            elif ty == "AWS::Events::Rule":
                ev = m.c["events"]
                bus = props.get("EventBusName", "default")
                d = ev.describe_rule(Name=phys[k], EventBusName=bus)
                rep.eq(sec, f"{k}.EventBusName", d.get("EventBusName"), bus)
                rep.eq(sec, f"{k}.EventPattern", json.loads(d["EventPattern"]) if "EventPattern" in d else None, props.get("EventPattern"))
                rep.eq(sec, f"{k}.ScheduleExpression", d.get("ScheduleExpression"), props.get("ScheduleExpression"))
                rep.eq(sec, f"{k}.State", d.get("State"), props.get("State", "ENABLED"))
                targets = ev.list_targets_by_rule(Rule=phys[k], EventBusName=bus)["Targets"]
                rep.eq(sec, f"{k}.Targets", sorted(targets, key=lambda x: x["Id"]), sorted(props.get("Targets", []), key=lambda x: x["Id"]))
            elif ty == "AWS::Lambda::EventSourceMapping":
                d = m.c["lambda"].get_event_source_mapping(UUID=phys[k])
                fn = props["FunctionName"]
                rep.eq(sec, f"{k}.FunctionArn", d["FunctionArn"].rsplit(":", 1)[-1], fn.rsplit(":", 1)[-1])
                rep.eq(sec, f"{k}.EventSourceArn", d["EventSourceArn"], props["EventSourceArn"])
                for key in ("BatchSize", "MaximumBatchingWindowInSeconds", "StartingPosition", "BisectBatchOnFunctionError",
                            "MaximumRetryAttempts", "FunctionResponseTypes", "DestinationConfig", "ScalingConfig",
                            "MaximumRecordAgeInSeconds", "ParallelizationFactor", "FilterCriteria"):
                    if key in props or key in d:
                        rep.eq(sec, f"{k}.{key}", d.get(key), props.get(key))
            elif ty == "AWS::Lambda::Permission":
                fn = props["FunctionName"]
                try:
                    policy = json.loads(m.c["lambda"].get_policy(FunctionName=fn)["Policy"])
                except Exception as e:  # noqa: BLE001
                    rep.check(sec, False, f"{k}: no resource policy on {fn}: {e}")
                    continue
                want = {"Action": props["Action"], "Principal": {"Service": props["Principal"]}}
                if "SourceArn" in props:
                    want["Condition"] = {"ArnLike": {"AWS:SourceArn": props["SourceArn"]}}
                found = [s for s in policy["Statement"] if _matches(
                    {x: s.get(x) for x in want}, want)]
                rep.check(sec, len(found) >= 1, f"{k}: no statement {_show(want)} on {fn}")
        except Exception as e:  # noqa: BLE001
            rep.check(sec, False, f"{k} ({ty}): could not be read back: {type(e).__name__}: {e}")


# ------------------------------------------------------------------ moto
def start_moto() -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([str(ROOT / ".venv/bin/python"), str(ROOT / "tests/moto_server.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = (p.stdout.readline() if p.stdout else "").strip()
    if not port.isdigit():
        p.kill()
        raise SystemExit("moto did not report its port")
    return p, f"http://127.0.0.1:{port}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    ap.add_argument("--endpoint", help="a moto server to deploy into (default: start one)")
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "deploy")
    ap.add_argument("--no-deploy", action="store_true", help="translate, lint and static checks only")
    args = ap.parse_args()
    t0 = time.monotonic()
    rep = Report()
    timings: list[str] = []

    done, failed = translate.translate_all(args.template, args.out)
    for name, errors in failed.items():
        for e in errors:
            rep.check("translate", False, f"{name}: {e}")
    rep.check("translate", True, "")
    timings.append(f"translate {time.monotonic() - t0:.1f}s")

    by_name = {translate.combo_name(c): c for c in translate.COMBOS}
    t1 = time.monotonic()
    for name, tr in done.items():
        lint(rep, name, tr, by_name[name])
    timings.append(f"lint {time.monotonic() - t1:.1f}s")

    for name, tr in done.items():
        r = symbolic(tr, translate.parameter_values(by_name[name]))
        try:
            check_api(rep, name, tr, r)
            check_ignored_by_moto(rep, name, tr, r)
            for p in test_observability.problems(tr, translate.parameter_values(by_name[name])):
                rep.check(f"observability {name}", False, p)
            rep.check(f"observability {name}", True, "")
            refused = rules_refusing(tr, r)
            if by_name[name].get("_env") == "prod" and not (r.params.get("AlarmTopicArn") or r.params.get("AlarmEmail")):
                # samconfig.toml's prod leaves AlarmTopicArn for the team to set: the Rule
                # must refuse it as written (deployed below with a topic filled in).
                rep.check(sec := f"rules {name}", any(x.startswith("ProdAlarmsNeedADestination") for x in refused),
                          f"prod without AlarmTopicArn/AlarmEmail is not refused by a Rule: {refused}")
                rep.notes.append(f"{name}: refused as written ({'; '.join(refused)}); deployed with a moto SNS topic as AlarmTopicArn")
            else:
                rep.check(f"rules {name}", not refused, f"the stack Rules refuse these parameters: {refused}")
        except Exception as e:  # noqa: BLE001
            rep.check(f"static {name}", False, f"could not check: {type(e).__name__}: {e}")

    proc = None
    if done and not args.no_deploy:
        t2 = time.monotonic()
        endpoint = args.endpoint
        if not endpoint:
            proc, endpoint = start_moto()
        try:
            m = Moto(endpoint)
            run = int(time.time())
            for name, tr in done.items():
                params = dict(translate.parameter_values(by_name[name]), EndpointUrl=endpoint)
                if params.get("KmsKeyArn"):
                    # A real key of the emulator, as the deployer would name theirs.
                    params["KmsKeyArn"] = m.c["kms"].create_key(Description=f"check.py {name}")["KeyMetadata"]["Arn"]
                if params.get("Environment") == "prod" and not (params.get("AlarmTopicArn") or params.get("AlarmEmail")):
                    params["AlarmTopicArn"] = m.c["sns"].create_topic(Name=f"oncall-{run}")["TopicArn"]
                stack_name = f"check-{run}-{name.lower()}"
                t3 = time.monotonic()
                try:
                    out = stack.deploy(endpoint, stack_name, params, translated=tr)
                except stack.DeployError as e:
                    rep.check(f"moto {name}", False, f"deploy: {e}")
                    continue
                except Exception as e:  # noqa: BLE001
                    rep.check(f"moto {name}", False, f"deploy: {type(e).__name__}: {e}")
                    continue
                timings.append(f"deploy {name} {time.monotonic() - t3:.1f}s")
                for w in out.pop("_moto_workarounds", []):
                    rep.notes.append(f"moto workaround ({name}): {w}")
                check_deployed(rep, name, tr, params, out, m)
        finally:
            if proc:
                proc.terminate()
                proc.wait(timeout=10)
        timings.append(f"deploy+compare {time.monotonic() - t2:.1f}s")

    print("== deploy gate:", ", ".join(f"{k} {v} checks" for k, v in rep.counts.items()))
    for n in dict.fromkeys(rep.notes):
        print("note:", n)
    for p in rep.problems:
        print("FAIL", p)
    print(f"== {len(rep.problems)} problem(s); {'; '.join(timings)}; total {time.monotonic() - t0:.1f}s")
    return 1 if rep.problems else 0


if __name__ == "__main__":
    sys.exit(main())
