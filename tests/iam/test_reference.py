"""Reference cases: each states the AWS rule (and the AWS page it comes from) and asserts the
evaluator's decision, first on the pure evaluator and mapping, then end to end through
tests/moto_server.py with boto3 (role, AssumeRole, allowed and denied calls, decision log,
mutation report).

    .venv/bin/python -m pytest tests/iam -q
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import authz_requests as ar  # noqa: E402
import mutation  # noqa: E402
from evaluate import Request, Unsupported, evaluate  # noqa: E402

ACCOUNT, REGION = "123456789012", "us-east-1"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/fn"
SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/fn/s1"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/ws"
SCHEMA = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
INDEXES = {"byOwner": [{"AttributeName": "owner", "KeyType": "HASH"}]}


def lookup(name):
    return (SCHEMA, INDEXES) if name == "ws" else None


def policy(*statements):
    return [("p", {"Version": "2012-10-17", "Statement": list(statements)})]


def allow(action, resource, condition=None, **extra):
    st = {"Effect": "Allow", "Action": action, "Resource": resource, **extra}
    if condition:
        st["Condition"] = condition
    return st


def deny(action, resource, condition=None):
    st = {"Effect": "Deny", "Action": action, "Resource": resource}
    if condition:
        st["Condition"] = condition
    return st


def decide(policies, item_or_request, context=None, resource_policy=None):
    if isinstance(item_or_request, ar.Item):
        req = Request(SESSION, item_or_request.action, item_or_request.resource,
                      {**item_or_request.context, **(context or {})}, (ROLE,))
    else:
        req = item_or_request
    return evaluate(policies, req, resource_policy).allowed


def req(action, resource, context=None):
    return Request(SESSION, action, resource, context or {}, (ROLE,))


# ---------------------------------------------------------------------------------------
# DynamoDB ("Using IAM with DynamoDB transactions"; Service Authorization Reference)

TRANSACTION = {
    "TransactItems": [
        {"Put": {"TableName": "ws", "Item": {"pk": {"S": "u1#a"}, "sk": {"S": "1"}}}},
        {"ConditionCheck": {"TableName": "ws", "Key": {"pk": {"S": "u1#b"}, "sk": {"S": "1"}},
                            "ConditionExpression": "attribute_exists(pk)"}},
    ]
}


def transaction_allowed(policies):
    items = ar.dynamodb("TransactWriteItems", TRANSACTION, REGION, ACCOUNT, lookup)
    return all(decide(policies, i) for i in items)


def test_transact_write_items_is_authorized_per_item():
    """"Permissions for Put, Update, Delete, and Get actions are governed by the permissions
    used for the underlying PutItem, UpdateItem, DeleteItem, and GetItem operations. For the
    ConditionCheck action, you can use the dynamodb:ConditionCheckItem permission" (Using IAM
    with DynamoDB transactions)."""
    items = ar.dynamodb("TransactWriteItems", TRANSACTION, REGION, ACCOUNT, lookup)
    assert [(i.action, i.resource) for i in items] == [
        ("dynamodb:PutItem", TABLE), ("dynamodb:ConditionCheckItem", TABLE)]
    assert items[0].context["dynamodb:EnclosingOperation"] == ["TransactWriteItems"]
    assert transaction_allowed(policy(allow(["dynamodb:PutItem", "dynamodb:ConditionCheckItem"], TABLE)))
    assert not transaction_allowed(policy(allow("dynamodb:PutItem", TABLE)))
    assert not transaction_allowed(policy(allow("dynamodb:ConditionCheckItem", TABLE)))
    # There is no TransactWriteItems permission check: that action alone grants nothing.
    assert not transaction_allowed(policy(allow("dynamodb:TransactWriteItems", TABLE)))


def test_transact_get_items_is_get_item_per_item():
    """TransactGetItems: each Get is governed by dynamodb:GetItem (same page)."""
    items = ar.dynamodb("TransactGetItems", {"TransactItems": [
        {"Get": {"TableName": "ws", "Key": {"pk": {"S": "x"}, "sk": {"S": "1"}}}}]}, REGION, ACCOUNT, lookup)
    assert [i.action for i in items] == ["dynamodb:GetItem"]
    assert decide(policy(allow("dynamodb:GetItem", TABLE)), items[0])


def test_batch_write_item_is_its_own_action_per_table():
    """BatchWriteItem is an IAM action of its own on each table the batch writes (Service
    Authorization Reference, Amazon DynamoDB): PutItem does not grant it."""
    items = ar.dynamodb("BatchWriteItem", {"RequestItems": {"ws": [
        {"PutRequest": {"Item": {"pk": {"S": "a"}, "sk": {"S": "1"}}}},
        {"DeleteRequest": {"Key": {"pk": {"S": "b"}, "sk": {"S": "1"}}}}]}}, REGION, ACCOUNT, lookup)
    assert [(i.action, i.context["dynamodb:LeadingKeys"]) for i in items] == [("dynamodb:BatchWriteItem", ["a", "b"])]
    assert not decide(policy(allow(["dynamodb:PutItem", "dynamodb:DeleteItem"], TABLE)), items[0])
    assert decide(policy(allow("dynamodb:BatchWriteItem", TABLE)), items[0])


def test_query_on_an_index_is_checked_on_the_index_arn():
    """A Query or Scan with IndexName is authorized on the index resource
    `table/<name>/index/<index>`, which a table ARN does not cover (DynamoDB resource types in
    the Service Authorization Reference)."""
    params = {"TableName": "ws", "IndexName": "byOwner", "KeyConditionExpression": "#o = :o",
              "ExpressionAttributeNames": {"#o": "owner"}, "ExpressionAttributeValues": {":o": {"S": "alice"}}}
    [item] = ar.dynamodb("Query", params, REGION, ACCOUNT, lookup)
    assert item.resource == TABLE + "/index/byOwner"
    assert item.context["dynamodb:LeadingKeys"] == ["alice"]
    assert not decide(policy(allow("dynamodb:Query", TABLE)), item)
    assert decide(policy(allow("dynamodb:Query", TABLE + "/index/*")), item)
    [plain] = ar.dynamodb("Query", {"TableName": "ws", "KeyConditionExpression": "pk = :p",
                                    "ExpressionAttributeValues": {":p": {"S": "u1#x"}}}, REGION, ACCOUNT, lookup)
    assert plain.resource == TABLE and decide(policy(allow("dynamodb:Query", TABLE)), plain)


def test_leading_keys_with_for_all_values_string_like():
    """dynamodb:LeadingKeys is the partition key value the request touches; with
    ForAllValues:StringLike every such value must match ("Using IAM policy conditions for
    fine-grained access control")."""
    scoped = policy(allow("dynamodb:Query", TABLE, {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["u1#*"]}}))

    def query(pk):
        [item] = ar.dynamodb("Query", {"TableName": "ws", "KeyConditionExpression": "#p = :p AND begins_with(sk, :s)",
                                       "ExpressionAttributeNames": {"#p": "pk"},
                                       "ExpressionAttributeValues": {":p": {"S": pk}, ":s": {"S": "a"}}},
                             REGION, ACCOUNT, lookup)
        return item

    assert query("u1#docs").context["dynamodb:LeadingKeys"] == ["u1#docs"]
    assert decide(scoped, query("u1#docs"))
    assert not decide(scoped, query("u2#docs"))
    # GetItem's key gives the same key; BatchGetItem with one foreign key is denied as a whole.
    [get] = ar.dynamodb("GetItem", {"TableName": "ws", "Key": {"pk": {"S": "u2#x"}, "sk": {"S": "1"}}}, REGION, ACCOUNT, lookup)
    assert not decide(policy(allow("dynamodb:GetItem", TABLE, {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["u1#*"]}})), get)
    [batch] = ar.dynamodb("BatchGetItem", {"RequestItems": {"ws": {"Keys": [
        {"pk": {"S": "u1#a"}, "sk": {"S": "1"}}, {"pk": {"S": "u2#a"}, "sk": {"S": "1"}}]}}}, REGION, ACCOUNT, lookup)
    assert not decide(policy(allow("dynamodb:BatchGetItem", TABLE, {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["u1#*"]}})), batch)


# ---------------------------------------------------------------------------------------
# S3 ("Actions, resources, and condition keys for Amazon S3"; the API pages' Permissions)

BUCKET = "arn:aws:s3:::wsb"


def s3(method, key=None, query=None, headers=None, body=None):
    return ar.s3(method, "wsb", key, {k: [v] for k, v in (query or {}).items()}, headers or {}, body, "X")


def test_get_object_version_needs_s3_get_object_version():
    """GetObject (and HeadObject) with a versionId needs s3:GetObjectVersion; without one,
    s3:GetObject (GetObject / HeadObject API reference, Permissions)."""
    [plain] = s3("GET", "t/a")
    [versioned] = s3("GET", "t/a", {"versionId": "v1"})
    [head] = s3("HEAD", "t/a", {"versionId": "v1"})
    assert (plain.action, plain.resource) == ("s3:GetObject", BUCKET + "/t/a")
    assert versioned.action == head.action == "s3:GetObjectVersion"
    only_get = policy(allow("s3:GetObject", BUCKET + "/*"))
    assert decide(only_get, plain)
    assert not decide(only_get, versioned)
    assert decide(policy(allow("s3:GetObjectVersion", BUCKET + "/*")), head)


def test_list_object_versions_needs_list_bucket_versions_with_prefix():
    """ListObjectVersions is s3:ListBucketVersions on the bucket ARN (not the object ARN),
    with s3:prefix / s3:delimiter / s3:max-keys as condition keys."""
    [item] = s3("GET", query={"versions": "", "prefix": "t/a", "delimiter": "/"})
    assert (item.action, item.resource) == ("s3:ListBucketVersions", BUCKET)
    assert item.context["s3:prefix"] == ["t/a"] and item.context["s3:delimiter"] == ["/"]
    scoped = policy(allow("s3:ListBucketVersions", BUCKET, {"StringLike": {"s3:prefix": ["t/*"]}}))
    assert decide(scoped, item)
    [other] = s3("GET", query={"versions": "", "prefix": "x/"})
    assert not decide(scoped, other)
    assert not decide(policy(allow("s3:ListBucket", BUCKET)), item)
    assert not decide(policy(allow("s3:ListBucketVersions", BUCKET + "/*")), item)
    [v2] = s3("GET", query={"list-type": "2", "prefix": "t/"})
    assert (v2.operation, v2.action) == ("ListObjectsV2", "s3:ListBucket")


def test_delete_objects_is_checked_per_key():
    """DeleteObjects: "For each key, Amazon S3 performs a delete operation and returns the
    result of that delete, success or failure" - s3:DeleteObject (s3:DeleteObjectVersion with
    a VersionId) on each key's object ARN."""
    body = (b'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>t/a</Key></Object>'
            b"<Object><Key>secret/b</Key></Object><Object><Key>t/c</Key><VersionId>v9</VersionId></Object></Delete>")
    items = s3("POST", query={"delete": ""}, body=body)
    assert [(i.action, i.resource, i.object_key) for i in items] == [
        ("s3:DeleteObject", BUCKET + "/t/a", "t/a"),
        ("s3:DeleteObject", BUCKET + "/secret/b", "secret/b"),
        ("s3:DeleteObject", BUCKET + "/t/c", "t/c"),
        ("s3:DeleteObjectVersion", BUCKET + "/t/c", "t/c")]
    p = policy(allow("s3:DeleteObject", BUCKET + "/t/*"))
    assert [decide(p, i) for i in items] == [True, False, True, False]


def test_deleting_a_version_needs_delete_object_and_delete_object_version():
    """DeleteObject API reference, Permissions (general purpose buckets): "To delete an object
    from a bucket, you must always have the s3:DeleteObject permission. ... To delete a
    specific version of an object from a versioning-enabled bucket, you must have the
    s3:DeleteObjectVersion permission." A versioned delete is allowed only with both."""
    items = s3("DELETE", "t/a", query={"versionId": "v1"})
    assert [i.action for i in items] == ["s3:DeleteObject", "s3:DeleteObjectVersion"]
    only_version = policy(allow("s3:DeleteObjectVersion", BUCKET + "/t/*"))
    both = policy(allow(["s3:DeleteObject", "s3:DeleteObjectVersion"], BUCKET + "/t/*"))
    assert not all(decide(only_version, i) for i in items)
    assert all(decide(both, i) for i in items)
    [plain] = s3("DELETE", "t/a")
    assert plain.action == "s3:DeleteObject"


def test_copy_object_needs_put_on_target_and_get_on_source():
    """CopyObject: s3:PutObject on the destination and s3:GetObject (s3:GetObjectVersion for
    a versioned source) on the source (CopyObject API reference, Permissions)."""
    put, get = s3("PUT", "t/new", headers={"x-amz-copy-source": "/src/t/old%20one?versionId=v2"})
    assert (put.action, put.resource) == ("s3:PutObject", BUCKET + "/t/new")
    assert (get.action, get.resource, get.bucket) == ("s3:GetObjectVersion", "arn:aws:s3:::src/t/old one", "src")


TLS_POLICY = ("bucket-policy", {"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [BUCKET, BUCKET + "/*"],
    "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})


def test_bucket_policy_denies_plain_http_and_allows_https():
    """An explicit Deny in a resource-based policy overrides the identity policy's Allow
    ("Policy evaluation logic"); aws:SecureTransport is "false" over HTTP, "true" over TLS."""
    [get] = s3("GET", "t/a")
    ident = policy(allow("s3:GetObject", BUCKET + "/*"))
    assert not decide(ident, get, {"aws:SecureTransport": ["false"]}, TLS_POLICY)
    assert decide(ident, get, {"aws:SecureTransport": ["true"]}, TLS_POLICY)
    d = evaluate(ident, req("s3:GetObject", BUCKET + "/t/a", {"aws:SecureTransport": ["false"]}), TLS_POLICY)
    assert d.reason == "explicit_deny" and "explicit deny in a resource-based policy" in d.message(req("s3:GetObject", BUCKET))


def test_resource_policy_naming_the_session_or_role_allows_without_identity_policy():
    """Within one account, an Allow in a resource-based policy that names the principal (the
    role, whose ARN covers its sessions) allows even with no identity policy; naming the
    account delegates to IAM and grants nothing on its own (Policy evaluation logic,
    "Determining whether a request is allowed or denied within an account")."""
    r = req("s3:GetObject", BUCKET + "/t/a")
    named = ("bp", {"Statement": [{"Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "s3:GetObject", "Resource": BUCKET + "/*"}]})
    account = ("bp", {"Statement": [{"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "s3:GetObject", "Resource": BUCKET + "/*"}]})
    other = ("bp", {"Statement": [{"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/other"}, "Action": "s3:GetObject", "Resource": BUCKET + "/*"}]})
    assert evaluate([], r, named).allowed
    assert not evaluate([], r, account).allowed
    assert not evaluate([], r, other).allowed


# ---------------------------------------------------------------------------------------
# Policy grammar and evaluation logic (IAM User Guide: "Policy evaluation logic", "IAM JSON
# policy elements: Action / NotAction / Resource / NotResource / Condition operators")


def test_explicit_deny_beats_allow():
    """"An explicit deny in any policy overrides any allows" (Policy evaluation logic)."""
    p = policy(allow("dynamodb:*", "*"), deny("dynamodb:DeleteItem", TABLE))
    assert decide(p, req("dynamodb:GetItem", TABLE))
    d = evaluate(p, req("dynamodb:DeleteItem", TABLE))
    assert not d.allowed and d.reason == "explicit_deny"
    assert decide(policy(allow("s3:GetObject", "*")), req("s3:GetObject", BUCKET + "/a"))
    assert not decide([], req("s3:GetObject", BUCKET + "/a"))  # default deny


def test_not_action_and_not_resource():
    """NotAction matches every action except those listed; NotResource every resource except
    those listed (IAM JSON policy elements: NotAction, NotResource)."""
    p = policy({"Effect": "Allow", "NotAction": "dynamodb:Delete*", "Resource": TABLE})
    assert decide(p, req("dynamodb:GetItem", TABLE))
    assert not decide(p, req("dynamodb:DeleteItem", TABLE))
    q = policy({"Effect": "Allow", "Action": "s3:GetObject", "NotResource": BUCKET + "/secret/*"})
    assert decide(q, req("s3:GetObject", BUCKET + "/t/a"))
    assert not decide(q, req("s3:GetObject", BUCKET + "/secret/a"))


def test_wildcards_in_action_and_resource():
    """Action names are case-insensitive and take `*` and `?`; Resource ARNs are
    case-sensitive and `*` matches any run of characters, `/` and `:` included."""
    assert decide(policy(allow("DynamoDB:get*", TABLE)), req("dynamodb:GetItem", TABLE))
    assert decide(policy(allow("s3:?etObject", "*")), req("s3:GetObject", "*"))
    assert not decide(policy(allow("s3:?etObject", "*")), req("s3:GetObjectVersion", "*"))
    assert decide(policy(allow("s3:GetObject", "arn:aws:s3:::wsb/*")), req("s3:GetObject", BUCKET + "/a/b:c"))
    assert decide(policy(allow("dynamodb:Query", "arn:aws:dynamodb:*:*:table/ws*")), req("dynamodb:Query", TABLE + "/index/x"))
    assert not decide(policy(allow("s3:GetObject", "arn:aws:s3:::WSB/*")), req("s3:GetObject", BUCKET + "/a"))
    assert not decide(policy(allow("s3:GetObject", "arn:aws:s3:::ws?/a")), req("s3:GetObject", BUCKET + "/ab"))
    # `[` is literal in IAM, not a character class.
    assert not decide(policy(allow("s3:GetObject", "arn:aws:s3:::ws[b]/a")), req("s3:GetObject", BUCKET + "/a"))


def test_if_exists():
    """...IfExists: "If the policy key is present in the context of the request, process the
    key as specified in the policy. If the key is not present, evaluate the condition element
    as true" (Condition operators, ...IfExists)."""
    p = policy(allow("s3:ListBucket", BUCKET, {"StringLikeIfExists": {"s3:prefix": "t/*"}}))
    assert decide(p, req("s3:ListBucket", BUCKET))
    assert decide(p, req("s3:ListBucket", BUCKET, {"s3:prefix": ["t/x"]}))
    assert not decide(p, req("s3:ListBucket", BUCKET, {"s3:prefix": ["x"]}))


def test_missing_keys():
    """"If the key that you specify in a policy condition is not present in the request
    context, the values do not match and the condition is false. If the policy condition
    requires that the key is not matched, such as StringNotLike or ArnNotLike, ... the
    condition is true." ForAllValues is true when the key is absent; ForAnyValue false; Null
    tests presence (Condition operators; Single-valued vs. multivalued context keys)."""
    def holds(cond, ctx=None):
        return decide(policy(allow("x:Y", "*", cond)), req("x:Y", "*", ctx))
    assert not holds({"StringEquals": {"k": "v"}})
    assert holds({"StringNotEquals": {"k": "v"}})
    assert holds({"StringNotLike": {"k": "v*"}})
    assert not holds({"Bool": {"aws:SecureTransport": "true"}})
    assert holds({"ForAllValues:StringEquals": {"k": "v"}})
    assert not holds({"ForAnyValue:StringEquals": {"k": "v"}})
    assert holds({"Null": {"k": "true"}}) and not holds({"Null": {"k": "false"}})
    assert holds({"Null": {"k": "false"}}, {"k": ["v"]}) and not holds({"Null": {"k": "true"}}, {"k": ["v"]})


def test_condition_logic_and_operators():
    """Several operators, and several keys under one, are AND-ed; several values of one key
    are OR-ed (Condition with multiple context keys or values). Key names are
    case-insensitive; StringEquals is case-sensitive, ...IgnoreCase is not."""
    def holds(cond, ctx):
        return decide(policy(allow("x:Y", "*", cond)), req("x:Y", "*", ctx))
    assert holds({"StringEquals": {"k": ["a", "b"]}}, {"k": ["b"]})
    assert not holds({"StringEquals": {"k": "a", "j": "b"}}, {"k": ["a"], "j": ["c"]})
    assert not holds({"StringEquals": {"k": "a"}, "StringLike": {"j": "b*"}}, {"k": ["a"], "j": ["x"]})
    assert holds({"StringEquals": {"K": "a"}}, {"k": ["a"]})
    assert not holds({"StringEquals": {"k": "A"}}, {"k": ["a"]})
    assert holds({"StringEqualsIgnoreCase": {"k": "A"}}, {"k": ["a"]})
    assert holds({"NumericLessThanEquals": {"s3:max-keys": "100"}}, {"s3:max-keys": ["100"]})
    assert not holds({"NumericLessThan": {"s3:max-keys": "100"}}, {"s3:max-keys": ["100"]})
    assert holds({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/f?"}}, {"aws:PrincipalArn": [ROLE]})
    assert not holds({"ArnNotLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/f?"}}, {"aws:PrincipalArn": [ROLE]})
    assert holds({"Bool": {"aws:SecureTransport": True}}, {"aws:SecureTransport": ["true"]})
    # ForAllValues: every request value must match one policy value.
    assert holds({"ForAllValues:StringEquals": {"dynamodb:Attributes": ["a", "b"]}}, {"dynamodb:Attributes": ["a", "b"]})
    assert not holds({"ForAllValues:StringEquals": {"dynamodb:Attributes": ["a"]}}, {"dynamodb:Attributes": ["a", "b"]})
    assert holds({"ForAnyValue:StringEquals": {"dynamodb:Attributes": ["a"]}}, {"dynamodb:Attributes": ["a", "b"]})


def test_unmodelled_policy_features_fail_loudly():
    """Policy variables, unmodelled operators and a plain operator on a multivalued key are
    refused rather than guessed ("Multivalued context keys require a condition set
    operator", Single-valued vs. multivalued context keys)."""
    with pytest.raises(Unsupported):
        decide(policy(allow("s3:GetObject", "arn:aws:s3:::wsb/${aws:username}/*")), req("s3:GetObject", BUCKET + "/a"))
    with pytest.raises(Unsupported):
        decide(policy(allow("x:Y", "*", {"DateLessThan": {"aws:CurrentTime": "2030-01-01T00:00:00Z"}})), req("x:Y", "*"))
    with pytest.raises(Unsupported):
        decide(policy(allow("x:Y", "*", {"StringEquals": {"k": "a"}})), req("x:Y", "*", {"k": ["a", "b"]}))


# ---------------------------------------------------------------------------------------
# EventBridge ("Amazon EventBridge permissions reference": PutEvents on each entry's bus)


def test_put_events_checks_each_entry_on_its_bus():
    """PutEvents is authorized per entry against that entry's event bus (a name, an ARN, or
    the default bus when absent); one entry on an ungranted bus denies the call."""
    items = ar.events("PutEvents", {"Entries": [
        {"EventBusName": "ws-bus", "Source": "ws", "DetailType": "d", "Detail": "{}"},
        {"EventBusName": f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/other", "Source": "ws"},
        {"Source": "ws"}]}, REGION, ACCOUNT)
    bus = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/"
    assert [i.resource for i in items] == [bus + "ws-bus", bus + "other", bus + "default"]
    p = policy(allow("events:PutEvents", bus + "ws-bus"))
    assert [decide(p, i) for i in items] == [True, False, False]
    assert items[0].context == {"events:source": ["ws"], "events:detail-type": ["d"]}


def test_unknown_operations_are_flagged_unmodelled():
    [item] = ar.generic("kms", "Decrypt")
    assert (item.action, item.resource, item.unmodelled) == ("kms:Decrypt", "*", True)
    assert ar.dynamodb("ListTables", {}, REGION, ACCOUNT, lookup) is None


# ---------------------------------------------------------------------------------------
# End to end: tests/moto_server.py with the plug-in, driven by boto3.

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("moto")
    log = tmp / "iam.jsonl"
    env = dict(os.environ, WORKSPACE_IAM_LOG=str(log), WORKSPACE_MOTO_TLS_DIR=str(tmp / "tls"))
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "moto_server.py")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        http, https = proc.stdout.readline().strip(), proc.stdout.readline().strip()
        assert http.isdigit() and https.isdigit(), "moto_server.py prints the HTTP then the HTTPS port"
        yield {"http": f"http://127.0.0.1:{http}", "https": f"https://127.0.0.1:{https}",
               "cert": str(tmp / "tls" / "cert.pem"), "log": log}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


ADMIN = dict(region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")


def client(moto, service, creds=ADMIN, tls=False):
    import boto3
    from botocore.config import Config

    return boto3.client(service, endpoint_url=moto["https"] if tls else moto["http"],
                        verify=moto["cert"] if tls else None,
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}), **creds)


def error_of(call):
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError) as e:
        call()
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"], e.value


BUS = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/ws-bus"
ROLE_POLICY = {"Version": "2012-10-17", "Statement": [
    {"Sid": "Table", "Effect": "Allow", "Resource": TABLE,
     "Action": ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:Scan"]},
    {"Sid": "Own", "Effect": "Allow", "Resource": TABLE, "Action": "dynamodb:UpdateItem",
     "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["u1#*"]}}},
    {"Sid": "Objects", "Effect": "Allow", "Resource": BUCKET + "/t/*",
     "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]},
    {"Sid": "Bus", "Effect": "Allow", "Resource": BUS, "Action": "events:PutEvents"},
    {"Sid": "List", "Effect": "Allow", "Resource": BUCKET, "Action": "s3:ListBucket",
     "Condition": {"StringLike": {"s3:prefix": "t/*"}}},
]}


@pytest.fixture(scope="module")
def role(moto):
    iam, ddb, s3c, ev = (client(moto, s) for s in ("iam", "dynamodb", "s3", "events"))
    ddb.create_table(TableName="ws", KeySchema=SCHEMA, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}])
    s3c.create_bucket(Bucket="wsb")
    s3c.put_bucket_policy(Bucket="wsb", Policy=json.dumps(TLS_POLICY[1]))
    for key in ("t/a", "t/b", "secret/c"):
        s3c.put_object(Bucket="wsb", Key=key, Body=b"x")  # the admin is not held to the policy
    ev.create_event_bus(Name="ws-bus")
    ev.create_event_bus(Name="other")
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": ACCOUNT}, "Action": "sts:AssumeRole"}]}
    iam.create_role(RoleName="fn", AssumeRolePolicyDocument=json.dumps(trust))
    iam.put_role_policy(RoleName="fn", PolicyName="fn-policy", PolicyDocument=json.dumps(ROLE_POLICY))
    creds = client(moto, "sts").assume_role(RoleArn=ROLE, RoleSessionName="s1")["Credentials"]
    return dict(region_name=REGION, aws_access_key_id=creds["AccessKeyId"],
                aws_secret_access_key=creds["SecretAccessKey"], aws_session_token=creds["SessionToken"])


def log_lines(moto):
    return [json.loads(line) for line in moto["log"].read_text().splitlines()]


def test_e2e_dynamodb(moto, role):
    ddb = client(moto, "dynamodb", role)
    ddb.put_item(TableName="ws", Item={"pk": {"S": "u1#a"}, "sk": {"S": "1"}})
    assert ddb.get_item(TableName="ws", Key={"pk": {"S": "u1#a"}, "sk": {"S": "1"}})["Item"]
    ddb.update_item(TableName="ws", Key={"pk": {"S": "u1#a"}, "sk": {"S": "1"}},
                    UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"S": "1"}})
    # LeadingKeys: the role may update only u1#* partitions.
    code, status, err = error_of(lambda: ddb.update_item(
        TableName="ws", Key={"pk": {"S": "u2#a"}, "sk": {"S": "1"}},
        UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"S": "1"}}))
    assert (code, status) == ("AccessDeniedException", 400)
    assert "dynamodb:UpdateItem" in str(err) and SESSION in str(err)
    assert err.response["ResponseMetadata"]["HTTPHeaders"]["x-amzn-errortype"] == "AccessDeniedException"
    # A transaction whose ConditionCheck is not granted is denied whole: the Put is not applied.
    code, _, err = error_of(lambda: ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": "ws", "Item": {"pk": {"S": "u1#t"}, "sk": {"S": "1"}}}},
        {"ConditionCheck": {"TableName": "ws", "Key": {"pk": {"S": "u1#a"}, "sk": {"S": "1"}},
                            "ConditionExpression": "attribute_exists(pk)"}}]))
    assert code == "AccessDeniedException" and "dynamodb:ConditionCheckItem" in str(err)
    admin = client(moto, "dynamodb")
    assert "Item" not in admin.get_item(TableName="ws", Key={"pk": {"S": "u1#t"}, "sk": {"S": "1"}})
    # The suite's own credentials are still the admin: anything goes.
    admin.delete_item(TableName="ws", Key={"pk": {"S": "u1#zz"}, "sk": {"S": "1"}})
    # STS GetCallerIdentity needs no permission.
    assert client(moto, "sts", role).get_caller_identity()["Arn"] == SESSION


def test_e2e_signature_is_checked(moto, role):
    bad = dict(role, aws_secret_access_key="wrong" + role["aws_secret_access_key"])
    code, _, _ = error_of(lambda: client(moto, "dynamodb", bad).get_item(
        TableName="ws", Key={"pk": {"S": "u1#a"}, "sk": {"S": "1"}}))
    assert code in ("SignatureDoesNotMatch", "InvalidSignatureException")


def test_e2e_eventbridge(moto, role):
    ev = client(moto, "events", role)
    ok = ev.put_events(Entries=[{"EventBusName": "ws-bus", "Source": "ws", "DetailType": "d", "Detail": "{}"}])
    assert ok["FailedEntryCount"] == 0
    code, status, err = error_of(lambda: ev.put_events(Entries=[
        {"EventBusName": "ws-bus", "Source": "ws", "DetailType": "d", "Detail": "{}"},
        {"EventBusName": "other", "Source": "ws", "DetailType": "d", "Detail": "{}"}]))
    assert (code, status) == ("AccessDeniedException", 400)
    assert "event-bus/other" in str(err)


def test_e2e_s3(moto, role):
    plain, tls = client(moto, "s3", role), client(moto, "s3", role, tls=True)
    # The bucket policy denies everything over plain HTTP, whatever the identity policy says.
    code, status, _ = error_of(lambda: plain.get_object(Bucket="wsb", Key="t/a"))
    assert (code, status) == ("AccessDenied", 403)
    assert tls.get_object(Bucket="wsb", Key="t/a")["Body"].read() == b"x"
    code, status, err = error_of(lambda: tls.get_object(Bucket="wsb", Key="secret/c"))
    assert (code, status) == ("AccessDenied", 403) and "s3:GetObject" in str(err)
    # ListObjectsV2 is s3:ListBucket on the bucket, here only for prefixes under t/.
    assert [o["Key"] for o in tls.list_objects_v2(Bucket="wsb", Prefix="t/")["Contents"]] == ["t/a", "t/b"]
    code, _, _ = error_of(lambda: tls.list_objects_v2(Bucket="wsb", Prefix="secret/"))
    assert code == "AccessDenied"
    code, _, _ = error_of(lambda: tls.list_object_versions(Bucket="wsb", Prefix="t/"))
    assert code == "AccessDenied"  # s3:ListBucketVersions is not granted
    # A missing key is a 404 only with s3:ListBucket on the bucket (GetObject API reference):
    # the role's ListBucket needs an s3:prefix the GetObject does not have, so 403.
    code, status, err = error_of(lambda: tls.get_object(Bucket="wsb", Key="t/missing"))
    assert (code, status) == ("AccessDenied", 403) and "Access Denied" in str(err)
    # DeleteObjects: per key; the denied key is reported, the granted one deleted.
    result = tls.delete_objects(Bucket="wsb", Delete={"Objects": [{"Key": "t/b"}, {"Key": "secret/c"}]})
    assert [d["Key"] for d in result.get("Deleted", [])] == ["t/b"]
    assert [(e["Key"], e["Code"]) for e in result.get("Errors", [])] == [("secret/c", "AccessDenied")]
    admin = client(moto, "s3")
    assert admin.head_object(Bucket="wsb", Key="secret/c")
    # A presigned URL made with the role's credentials is decided as the role.
    import urllib.request
    url = tls.generate_presigned_url("get_object", Params={"Bucket": "wsb", "Key": "t/a"})
    import ssl
    ctx = ssl.create_default_context(cafile=moto["cert"])
    assert urllib.request.urlopen(url, context=ctx).read() == b"x"


def test_e2e_decision_log_and_mutation(moto, role, tmp_path):
    # Run after the other e2e tests (pytest keeps file order): the log holds their decisions.
    lines = log_lines(moto)
    kinds = {line["kind"] for line in lines}
    assert {"role", "decision", "resource_policy"} <= kinds
    [role_line] = [line for line in lines if line["kind"] == "role"]
    assert role_line["role_arn"] == ROLE and role_line["policies"][0]["document"] == ROLE_POLICY
    decisions = [line for line in lines if line["kind"] == "decision"]
    for d in decisions:
        assert set(d) >= {"role_arn", "session", "service", "operation", "action", "resource", "context", "allowed", "unmodelled"}
    assert any(d["action"] == "dynamodb:ConditionCheckItem" and not d["allowed"] for d in decisions)
    tls_get = [d for d in decisions if d["action"] == "s3:GetObject" and d["allowed"]]
    assert tls_get and all(d["context"]["aws:SecureTransport"] == ["true"] for d in tls_get)

    report = mutation.analyse(lines)
    unneeded = {(u["sid"], u["action"]) for u in report["unneeded"]}
    # dynamodb:Scan is granted and never used by these tests.
    assert ("Table", "dynamodb:Scan") in unneeded
    assert ("Table", "dynamodb:GetItem") not in unneeded and ("Bus", "events:PutEvents") not in unneeded
    assert report["denied_in_run"] and not report["replay_mismatches"] and not report["unsupported"]
    out = subprocess.run([sys.executable, os.path.join(HERE, "mutation.py"), "--log", str(moto["log"])],
                         capture_output=True, text=True)
    assert out.returncode == 1 and json.loads(out.stdout)["unneeded"]
    ok = subprocess.run([sys.executable, os.path.join(HERE, "mutation.py"), "--log", str(moto["log"]), "--report-only"],
                        capture_output=True, text=True)
    assert ok.returncode == 0


def test_mutation_counts_denials_per_action(tmp_path):
    """An action that the logged requests need is counted by how many it would deny."""
    doc = {"Statement": [{"Sid": "A", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": "*"}]}
    lines = [{"kind": "role", "role_arn": ROLE, "policies": [{"name": "p", "kind": "inline", "document": doc}]}]
    for _ in range(2):
        lines.append({"kind": "decision", "role_arn": ROLE, "session": "s1", "service": "s3", "operation": "GetObject",
                      "action": "s3:GetObject", "resource": BUCKET + "/a", "context": {}, "resource_policy": None,
                      "allowed": True, "unmodelled": False})
    report = mutation.analyse(lines)
    counts = {a["action"]: a["denies"] for a in report["roles"][ROLE]["actions"]}
    assert counts == {"s3:GetObject": 2, "s3:PutObject": 0}
    assert report["wildcard_resource_statements"] == [{"role_arn": ROLE, "policy": "p", "sid": "A"}]


def test_tls_mode_keeps_its_one_line_contract(tmp_path):
    """`moto_server.py --tls FOLDER` (used by local/tests/on_aws.rs) still serves HTTPS only
    and prints one port, with FOLDER/cert.pem trusted by the client."""
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "moto_server.py"), "--tls", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = proc.stdout.readline().strip()
        assert port.isdigit()
        moto = {"https": f"https://127.0.0.1:{port}", "cert": str(tmp_path / "cert.pem"), "http": None}
        assert client(moto, "sts", tls=True).get_caller_identity()["Account"] == ACCOUNT
    finally:
        proc.terminate()
        proc.wait(timeout=10)
