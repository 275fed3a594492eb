"""Replaces moto's IAM decision with evaluate.py's for requests signed by STS role sessions.

`install()` (called by tests/moto_server.py) patches moto's two authorization hooks,
`ActionAuthenticatorMixin._authenticate_and_authorize_normal_action` (every service that
goes through `BaseResponse.call_action`: DynamoDB, EventBridge, SQS, STS...) and
`_authenticate_and_authorize_s3_action` (called by moto's S3 handlers once the bucket and key
are known). For each request:

- signed with an access key that belongs to a moto STS `AssumeRole` session: moto checks the
  SigV4 signature and session token (its own `IAMRequest.check_signature`), then
  authz_requests.py turns the call into the authorization requests AWS makes, and each is
  decided by evaluate.py against the role's current inline and attached managed policies
  (moto's IAM backend) and, for S3, the bucket policy (moto's S3 backend). This runs whatever
  moto's INITIAL_NO_AUTH_ACTION_COUNT says. A denial is answered as AWS answers it;
- anything else (the test harness's dummy credentials, acting as the account admin): moto's
  own hook runs, which with moto's defaults allows everything, as before.

moto's own bucket-policy check (`FakeBucket.get_permission`, applied to every object request
before any authentication, which reads `aws:SecureTransport=false` as satisfied) is turned off:
bucket policies are evaluated here, for role sessions, with the request's real context.

WORKSPACE_IAM_LOG=<file>: one JSON line per decision, per role policy set, per bucket policy
(see README.md). The server serves one request at a time, and writes hold a lock anyway.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
import threading
import urllib.parse
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import authz_requests  # noqa: E402
from evaluate import Decision, Request, Unsupported, evaluate  # noqa: E402

_log_lock = threading.Lock()
_seen_roles: dict[str, str] = {}  # role ARN -> digest of the policies last logged
_seen_resource_policies: dict[str, str] = {}  # bucket ARN -> digest last logged
# Object keys denied in the DeleteObjects request being answered (see _delete_keys).
_denied_delete_keys: set[str] | None = None


def install() -> None:
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.s3.models import FakeBucket
    from moto.s3.responses import S3Response

    original_normal = ActionAuthenticatorMixin._authenticate_and_authorize_normal_action
    original_s3 = ActionAuthenticatorMixin._authenticate_and_authorize_s3_action
    original_delete_keys = S3Response._bucket_response_delete_keys

    def normal(self, resource: str = "*") -> None:  # type: ignore[no-untyped-def]
        session = _session(self)
        if session is None:
            return original_normal(self, resource)
        _check_signature(self, s3=False)
        _decide(self, session, _items_normal(self, session))

    def s3(self, bucket_name: str | None = None, key_name: str | None = None) -> None:  # type: ignore[no-untyped-def]
        session = _session(self)
        if session is None:
            return original_s3(self, bucket_name=bucket_name, key_name=key_name)
        _check_signature(self, s3=True)
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.uri).query, keep_blank_values=True)
        items = authz_requests.s3(
            self.method,
            bucket_name,
            key_name,
            query,
            self.headers,
            self.body,
            str(self.data.get("Action") or "Unknown"),
        )
        if (
            bucket_name
            and key_name
            and len(items) == 1
            and items[0].operation in ("GetObject", "HeadObject")
            and "versionId" not in query
            and not _object_exists(session, bucket_name, key_name)
        ):
            items.append(authz_requests.missing_object(bucket_name, items[0].operation))
        _decide(self, session, items)

    def get_permission(bucket, action: str, resource: str) -> Any:  # type: ignore[no-untyped-def]
        from moto.iam.access_control import PermissionResult

        key = resource.split(":::", 1)[1].split("/", 1)[1] if "/" in resource else None
        if _denied_delete_keys is not None and action == "s3:DeleteObject" and key in _denied_delete_keys:
            return PermissionResult.DENIED
        return PermissionResult.NEUTRAL

    def delete_keys(self, bucket_name: str, authenticated: bool = True):  # type: ignore[no-untyped-def]
        # moto's DeleteObjects asks get_permission per key and reports a denied key as an
        # AccessDenied entry, as S3 does: feed it the keys our decision denied.
        global _denied_delete_keys
        _denied_delete_keys = getattr(self, "_iam_denied_keys", set())
        try:
            return original_delete_keys(self, bucket_name, authenticated)
        finally:
            _denied_delete_keys = None

    ActionAuthenticatorMixin._authenticate_and_authorize_normal_action = normal
    ActionAuthenticatorMixin._authenticate_and_authorize_s3_action = s3
    FakeBucket.get_permission = get_permission
    S3Response._bucket_response_delete_keys = delete_keys


# ---------------------------------------------------------------------------------------
# Who is calling


class _Session:
    def __init__(self, assumed: Any, account: str, partition: str, region: str, presigned: bool):
        self.assumed = assumed
        self.account = account
        self.partition = partition
        self.region = region
        self.presigned = presigned
        self.role_arn: str = assumed.role_arn
        self.role_name = assumed.role_arn.split("/")[-1]
        self.arn: str = assumed.arn
        self.name: str = assumed.session_name


_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")


def _session(response: Any) -> _Session | None:
    """The STS role session that signed this request, if any."""
    from moto.sts.models import sts_backends
    from moto.utilities.utils import get_partition

    headers = response.headers
    match = _CREDENTIAL.search(headers.get("Authorization", ""))
    query = urllib.parse.parse_qs(urllib.parse.urlparse(response.uri).query)
    presigned = False
    if match:
        key_id = match.group(1)
    elif "X-Amz-Credential" in query:  # a SigV4 presigned URL
        key_id, presigned = query["X-Amz-Credential"][0].split("/", 1)[0], True
    else:
        return None
    partition = get_partition(response.region)
    for assumed in sts_backends[response.current_account][partition].assumed_roles:
        if assumed.access_key_id == key_id:
            if presigned and query.get("X-Amz-Security-Token", [None])[0] != assumed.session_token:
                _raise_invalid_token(response)
            return _Session(assumed, response.current_account, partition, response.region, presigned)
    return None


def _raise_invalid_token(response: Any) -> None:
    from moto.s3.exceptions import S3InvalidTokenError

    raise S3InvalidTokenError()


def _check_signature(response: Any, s3: bool) -> None:
    """moto's own SigV4 check (and session-token check) of a header-signed request.
    Presigned URLs are not checked: moto has no check for them (DESIGN.md)."""
    if "Authorization" not in response.headers:
        return
    if os.environ.get("WORKSPACE_IAM_CHECK_SIGNATURE", "1") == "0":
        return  # escape hatch, should a client sign in a way moto's recomputation misreads
    from moto.core.exceptions import InvalidClientTokenIdError, SignatureDoesNotMatchError
    from moto.iam.access_control import IAMRequest, S3IAMRequest

    path = response.raw_path
    query = urllib.parse.urlparse(response.uri).query
    if query:
        path += "?" + query
    request_cls = S3IAMRequest if s3 else IAMRequest
    try:
        request_cls(
            account_id=response.current_account,
            method=response.method,
            path=path,
            data=response.data,
            body=response.raw_body,
            headers=response.headers,
            action=response.data.get("Action") if s3 else response._get_action(),
        ).check_signature()
    except (SignatureDoesNotMatchError, InvalidClientTokenIdError) as e:
        # moto answers these in IAM's XML, which JSON-protocol SDKs cannot read; AWS answers a
        # JSON service with InvalidSignatureException / UnrecognizedClientException.
        if s3 or not _is_json(response):
            raise
        if isinstance(e, SignatureDoesNotMatchError):
            code, message = "InvalidSignatureException", "The request signature we calculated does not match the signature you provided."
        else:
            code, message = "UnrecognizedClientException", "The security token included in the request is invalid."
        response.response_headers["x-amzn-ErrorType"] = code
        raise _error(response, 400, code, message, json_body=True) from None


# ---------------------------------------------------------------------------------------
# What the call asks for


def _params(response: Any) -> dict[str, Any]:
    """The request parameters: the JSON body for JSON protocols, else the query/form."""
    body = response.raw_body
    if body:
        try:
            parsed = json.loads(body)
            if isinstance(parsed, dict):
                return parsed
        except (ValueError, UnicodeDecodeError):
            pass
    return {k: (v[0] if isinstance(v, list) and v else v) for k, v in response.querystring.items()}


def _signing_service(response: Any) -> str:
    match = re.search(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/", response.headers.get("Authorization", ""))
    return match.group(1) if match else str(response.service_name)


def _items_normal(response: Any, session: _Session) -> list[authz_requests.Item]:
    service = _signing_service(response)
    operation = str(response._get_action())
    params = _params(response)
    items = None
    if service == "dynamodb":
        items = authz_requests.dynamodb(operation, params, session.region, session.account, _table_lookup(session))
    elif service == "events":
        items = authz_requests.events(operation, params, session.region, session.account)
    elif service == "sqs":
        items = authz_requests.sqs(operation, params, session.region, session.account)
    elif service == "sts" and operation == "GetCallerIdentity":
        # "GetCallerIdentity": no permissions are required; an explicit deny does not apply.
        items = [authz_requests.Item(operation, "sts:GetCallerIdentity", "*", always_allowed=True)]
    return items if items is not None else authz_requests.generic(service, operation)


def _table_lookup(session: _Session):  # type: ignore[no-untyped-def]
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[session.account][session.region]

    def lookup(name: str):  # type: ignore[no-untyped-def]
        table = backend.tables.get(name)
        if table is None:
            return None
        indexes = {i.name: i.schema for i in (table.indexes or []) + (table.global_indexes or [])}
        return table.schema, indexes

    return lookup


# ---------------------------------------------------------------------------------------
# Deciding


def role_policies(account: str, partition: str, role_name: str) -> list[dict[str, Any]]:
    """The role's inline and attached managed policies, as moto's IAM backend holds them now."""
    from moto.iam.exceptions import NotFoundException
    from moto.iam.models import iam_backends

    try:
        role = iam_backends[account][partition].get_role(role_name)
    except NotFoundException:
        return []  # a session of a deleted role: nothing allows anything
    if getattr(role, "permissions_boundary_arn", None):
        raise Unsupported(f"role {role_name} has a permissions boundary: not modelled")
    out = [{"name": name, "kind": "inline", "document": _document(doc)} for name, doc in role.policies.items()]
    for policy in role.managed_policies.values():
        version = next(v for v in policy.versions if v.is_default)
        out.append({"name": policy.name, "kind": "managed", "document": _document(version.document)})
    return out


def _document(doc: Any) -> Any:
    """A policy document as moto stores it: a dict, JSON text, URL-encoded JSON, or - for a
    role that moto's CloudFormation created - the Python repr of the dict."""
    if isinstance(doc, dict):
        return doc
    if isinstance(doc, bytes):
        doc = doc.decode()
    for parse in (json.loads, lambda d: json.loads(urllib.parse.unquote(d)), ast.literal_eval):
        try:
            parsed = parse(doc)
        except (ValueError, SyntaxError):
            continue
        if isinstance(parsed, dict):
            return parsed
    raise Unsupported(f"policy document moto holds is neither JSON nor a dict: {doc[:200]!r}")


def _object_exists(session: _Session, bucket: str, key: str) -> bool:
    from moto.s3.models import FakeKey, s3_backends

    found = s3_backends[session.account][session.partition].buckets.get(bucket)
    return found is not None and isinstance(found.keys.get(key), FakeKey)


def _bucket_policy(account: str, partition: str, bucket: str) -> Any | None:
    from moto.s3.models import s3_backends

    found = s3_backends[account][partition].buckets.get(bucket)
    return _document(found.policy) if found is not None and found.policy else None


def global_context(session: _Session, response: Any, service: str) -> dict[str, list[str]]:
    """Global condition keys of the request ("AWS global condition context keys")."""
    environ = getattr(response.normalized_request, "environ", {}) or {}
    secure = environ.get("wsgi.url_scheme") == "https"
    ctx = {
        "aws:SecureTransport": ["true" if secure else "false"],
        "aws:PrincipalArn": [session.role_arn],
        "aws:PrincipalAccount": [session.account],
        "aws:PrincipalType": ["AssumedRole"],
        "aws:userid": [session.assumed.user_id],
        "aws:RequestedRegion": [session.region],
    }
    if service == "s3":
        ctx["s3:authType"] = ["REST-QUERY-STRING" if session.presigned else "REST-HEADER"]
        ctx["s3:signatureversion"] = ["AWS4-HMAC-SHA256"]
    return ctx


def _decide(response: Any, session: _Session, items: list[authz_requests.Item]) -> None:
    service = items[0].action.split(":", 1)[0] if items else str(response.service_name)
    try:
        if session.assumed.policy:
            raise Unsupported("AssumeRole with a session policy: not modelled")
        policies = role_policies(session.account, session.partition, session.role_name)
    except Unsupported as e:
        _log({"kind": "unsupported", "role_arn": session.role_arn, "error": str(e)})
        raise _error(response, 500, "Unsupported", f"IAM evaluator: {e}") from None
    _log_role(session.role_arn, policies)
    named = [(p["name"], p["document"]) for p in policies]
    base = global_context(session, response, service)

    denied: list[tuple[Request, Decision]] = []
    denied_keys: set[str] = set()
    for item in items:
        request = Request(
            principal=session.arn,
            action=item.action,
            resource=item.resource,
            context={**base, **item.context},
            principal_aliases=(session.role_arn,),
        )
        resource_policy = None
        try:
            if item.bucket:
                document = _bucket_policy(session.account, session.partition, item.bucket)
                _log_resource_policy(f"arn:aws:s3:::{item.bucket}", document)
                if document is not None:
                    resource_policy = (f"bucket-policy:{item.bucket}", document)
            decision = Decision(True, "always_allowed") if item.always_allowed else evaluate(named, request, resource_policy)
        except Unsupported as e:
            _log({"kind": "unsupported", "role_arn": session.role_arn, "action": item.action, "error": str(e)})
            raise _error(response, 500, "Unsupported", f"IAM evaluator: {e}") from None
        _log(
            {
                "kind": "decision",
                "role_arn": session.role_arn,
                "session": session.name,
                "service": service,
                "operation": item.operation,
                "action": item.action,
                "resource": item.resource,
                "context": request.context,
                "resource_policy": f"arn:aws:s3:::{item.bucket}" if item.bucket else None,
                "allowed": decision.allowed,
                "reason": decision.reason,
                "unmodelled": item.unmodelled,
                "always_allowed": item.always_allowed,
                "missing_object": item.missing_object,
            }
        )
        if not decision.allowed:
            if item.object_key is not None:
                denied_keys.add(item.object_key)
            else:
                denied.append((request, decision))

    response._iam_denied_keys = denied_keys  # read by the DeleteObjects patch
    if denied:
        request, decision = denied[0]
        bare = all(r.action == "s3:ListBucket" for r, _ in denied) and any(i.missing_object for i in items)
        _deny(response, service, "Access Denied" if bare else decision.message(request))


def _deny(response: Any, service: str, message: str) -> None:
    if service == "s3":
        from moto.s3.exceptions import S3AccessDeniedError

        # moto's own class (its serializer finds the S3 error model through the exception's
        # module), with AWS's message in place of moto's generic "Access Denied".
        error = S3AccessDeniedError()
        error.message = message
        raise error
    # JSON protocols (DynamoDB, EventBridge, SQS JSON...): 400 with an error type the SDKs read
    # from `__type` and `x-amzn-ErrorType`. DynamoDB's is the coral-qualified name.
    error_type = "AccessDeniedException"
    if service in ("dynamodb",):
        type_name = "com.amazon.coral.service#AccessDeniedException"
    else:
        type_name = error_type
    if _is_json(response):
        response.response_headers["x-amzn-ErrorType"] = error_type
        response.response_headers["Content-Type"] = "application/x-amz-json-1.0"
        raise _error(response, 400, type_name, message, json_body=True)
    raise _error(response, 403, "AccessDenied", message)


def _is_json(response: Any) -> bool:
    return "json" in response.headers.get("Content-Type", "") or bool(response.headers.get("X-Amz-Target"))


def _error(response: Any, status: int, code: str, message: str, json_body: bool | None = None) -> Exception:
    """An HTTPException moto's call_action turns into the response (body = description)."""
    from moto.core.exceptions import ServiceException
    from werkzeug.exceptions import HTTPException

    if response.service_name == "s3":
        # Only for "Unsupported": moto's S3 handlers let a non-S3 error through as a 500,
        # with the message in moto's log - loud, which is all it has to be.
        return ServiceException(code, message)
    if json_body is None:
        json_body = _is_json(response)
    if json_body:
        body = json.dumps({"__type": code, "message": message, "Message": message})
    else:
        body = (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
            f"<Message>{_xml_escape(message)}</Message></Error><RequestId>0</RequestId></ErrorResponse>"
        )
    exc = HTTPException(description=body)
    exc.code = status
    return exc


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---------------------------------------------------------------------------------------
# Decision log


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _log_role(role_arn: str, policies: list[dict[str, Any]]) -> None:
    digest = _digest(policies)
    if _seen_roles.get(role_arn) != digest:
        _seen_roles[role_arn] = digest
        _log({"kind": "role", "role_arn": role_arn, "policies": policies})


def _log_resource_policy(resource: str, document: Any) -> None:
    digest = _digest(document)
    if _seen_resource_policies.get(resource, _digest(None)) != digest:
        _seen_resource_policies[resource] = digest
        _log({"kind": "resource_policy", "resource": resource, "document": document})


def _log(entry: dict[str, Any]) -> None:
    path = os.environ.get("WORKSPACE_IAM_LOG")
    if not path:
        return
    line = json.dumps(entry, sort_keys=True) + "\n"
    with _log_lock, open(path, "a", encoding="utf-8") as f:
        f.write(line)
