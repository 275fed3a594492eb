"""From one API call to the authorization requests AWS makes for it.

Each function takes the call as already parsed (operation name, request parameters, for S3 the
method/bucket/key/query/headers) and returns `Item`s: action, resource ARN and the
service-specific condition keys. The global keys (aws:SecureTransport, aws:PrincipalArn...)
are the caller's (moto_plugin.py) to add, since they depend on the connection, not the call.

Sources, per service, are AWS's "Actions, resources, and condition keys for <service>"
(Service Authorization Reference) and the service guides named at each function. Operations
not listed here fall back to `<service>:<Operation>` on `*`, flagged `unmodelled`, so a test
can notice a call nobody mapped.
"""

from __future__ import annotations

import base64
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Item:
    operation: str  # the API operation, e.g. "TransactWriteItems"
    action: str  # the IAM action checked, e.g. "dynamodb:PutItem"
    resource: str  # ARN (or "*")
    context: dict[str, list[str]] = field(default_factory=dict)
    unmodelled: bool = False
    # sts:GetCallerIdentity: AWS answers it whatever the policies say.
    always_allowed: bool = False
    # S3: the bucket whose bucket policy is evaluated with this item.
    bucket: str | None = None
    # S3 DeleteObjects: a denied key gets its own AccessDenied entry in the result instead
    # of failing the request (S3 reports success or failure per key).
    object_key: str | None = None
    # S3 GetObject/HeadObject of a key that does not exist: S3 answers 404 only to a caller
    # with s3:ListBucket on the bucket, else 403 (GetObject API reference, Permissions). This
    # item is that s3:ListBucket check; its denial is S3's bare "Access Denied".
    missing_object: bool = False


def generic(service: str, operation: str) -> list[Item]:
    return [Item(operation, f"{service}:{operation}", "*", unmodelled=True)]


# ---------------------------------------------------------------------------------------
# DynamoDB. "Using IAM with DynamoDB transactions": each Put/Update/Delete/Get of a
# transaction is authorized as PutItem/UpdateItem/DeleteItem/GetItem and a ConditionCheck as
# dynamodb:ConditionCheckItem, with dynamodb:EnclosingOperation naming the transaction.
# "Using IAM policy conditions for fine-grained access control": dynamodb:LeadingKeys is the
# partition key value(s) the request touches, dynamodb:Attributes the top-level attribute
# names, dynamodb:Select / dynamodb:ReturnValues the request's parameters.

# (table name) -> (table key schema, {index name: index key schema}), or None if unknown.
TableLookup = Callable[[str], "tuple[list[dict[str, str]], dict[str, list[dict[str, str]]]] | None"]


def table_arn(region: str, account: str, table: str) -> str:
    # TableName may itself be an ARN (DynamoDB accepts either).
    return table if table.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{table}"


def _table_name(table: str) -> str:
    return table.split(":table/", 1)[1].split("/", 1)[0] if table.startswith("arn:") else table


def _scalar(value: dict[str, Any]) -> str | None:
    """An AttributeValue as the string IAM compares (S, N, and B as its base64 text)."""
    for t in ("S", "N"):
        if t in value:
            return str(value[t])
    if "B" in value:
        b = value["B"]
        return b if isinstance(b, str) else base64.b64encode(b).decode()
    return None


def _hash_attr(schema: list[dict[str, str]]) -> str | None:
    return next((k["AttributeName"] for k in schema if k["KeyType"] == "HASH"), None)


def _top_level_names(expression: str | None, names: dict[str, str]) -> list[str] | None:
    """Top-level attribute names of a ProjectionExpression ("a.b[1], #c" -> ["a", "c"])."""
    if not expression:
        return None
    out = []
    for path in expression.split(","):
        head = path.strip().split(".", 1)[0].split("[", 1)[0].strip()
        out.append(names.get(head, head))
    return sorted(set(out))


def dynamodb(
    operation: str, params: dict[str, Any], region: str, account: str, lookup: TableLookup
) -> list[Item] | None:
    """Items for a DynamoDB call, or None for an operation not modelled here."""

    def leading(table: str, *keys: dict[str, Any] | None, index: str | None = None) -> list[str] | None:
        info = lookup(_table_name(table))
        if info is None:
            return None
        schema = info[1].get(index, []) if index else info[0]
        attr = _hash_attr(schema)
        values = sorted(
            {v for k in keys if k and attr in k and (v := _scalar(k[attr])) is not None}
        )
        return values or None

    def item(op: str, action: str, table: str, ctx: dict[str, list[str] | None]) -> Item:
        return Item(
            op,
            f"dynamodb:{action}",
            table_arn(region, account, table),
            {k: v for k, v in ctx.items() if v is not None},
        )

    def one(key: str) -> list[str] | None:
        return [params[key]] if params.get(key) is not None else None

    names = params.get("ExpressionAttributeNames") or {}
    table = params.get("TableName", "")

    if operation in ("GetItem", "DeleteItem", "UpdateItem"):
        ctx = {"dynamodb:LeadingKeys": leading(table, params.get("Key")), "dynamodb:ReturnValues": one("ReturnValues")}
        if operation == "GetItem":
            ctx["dynamodb:Attributes"] = _top_level_names(params.get("ProjectionExpression"), names) or (
                sorted(params["AttributesToGet"]) if params.get("AttributesToGet") else None
            )
        return [item(operation, operation, table, ctx)]
    if operation == "PutItem":
        it = params.get("Item") or {}
        return [
            item(
                operation,
                "PutItem",
                table,
                {
                    "dynamodb:LeadingKeys": leading(table, it),
                    "dynamodb:Attributes": sorted(it) or None,
                    "dynamodb:ReturnValues": one("ReturnValues"),
                },
            )
        ]
    if operation in ("Query", "Scan"):
        index = params.get("IndexName")
        arn = table_arn(region, account, table) + (f"/index/{index}" if index else "")
        ctx: dict[str, list[str] | None] = {
            "dynamodb:Select": one("Select"),
            "dynamodb:Attributes": _top_level_names(params.get("ProjectionExpression"), names)
            or (sorted(params["AttributesToGet"]) if params.get("AttributesToGet") else None),
        }
        if operation == "Query":
            ctx["dynamodb:LeadingKeys"] = _query_leading(params, lookup, _table_name(table), index)
        return [Item(operation, f"dynamodb:{operation}", arn, {k: v for k, v in ctx.items() if v is not None})]
    if operation == "DescribeTable":
        return [item(operation, "DescribeTable", table, {})]
    if operation == "BatchGetItem":
        # "BatchGetItem" and "BatchWriteItem" are IAM actions of their own (Service
        # Authorization Reference), checked once per table the batch touches.
        return [
            item(operation, "BatchGetItem", t, {"dynamodb:LeadingKeys": leading(t, *(r.get("Keys") or []))})
            for t, r in (params.get("RequestItems") or {}).items()
        ]
    if operation == "BatchWriteItem":
        out = []
        for t, writes in (params.get("RequestItems") or {}).items():
            keys = [w.get("PutRequest", {}).get("Item") or w.get("DeleteRequest", {}).get("Key") for w in writes]
            out.append(item(operation, "BatchWriteItem", t, {"dynamodb:LeadingKeys": leading(t, *keys)}))
        return out
    if operation == "TransactWriteItems":
        out = []
        kinds = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
        for entry in params.get("TransactItems") or []:
            for kind, action in kinds.items():
                if kind in entry:
                    body = entry[kind]
                    key = body.get("Item") if kind == "Put" else body.get("Key")
                    out.append(
                        item(
                            operation,
                            action,
                            body.get("TableName", ""),
                            {
                                "dynamodb:LeadingKeys": leading(body.get("TableName", ""), key),
                                "dynamodb:EnclosingOperation": ["TransactWriteItems"],
                            },
                        )
                    )
        return out
    if operation == "TransactGetItems":
        return [
            item(
                operation,
                "GetItem",
                e["Get"].get("TableName", ""),
                {
                    "dynamodb:LeadingKeys": leading(e["Get"].get("TableName", ""), e["Get"].get("Key")),
                    "dynamodb:EnclosingOperation": ["TransactGetItems"],
                },
            )
            for e in params.get("TransactItems") or []
            if "Get" in e
        ]
    return None


def _query_leading(params: dict[str, Any], lookup: TableLookup, table: str, index: str | None) -> list[str] | None:
    """The partition key value a Query names (its equality on the table's or index's
    partition key), parsed with moto's own KeyConditionExpression parser."""
    info = lookup(table)
    if info is None:
        return None
    schema = info[1].get(index, []) if index else info[0]
    attr = _hash_attr(schema)
    if params.get("KeyConditionExpression"):
        from moto.dynamodb.parsing.key_condition_expression import parse_expression

        try:
            hash_conditions, _, _ = parse_expression(
                params["KeyConditionExpression"],
                params.get("ExpressionAttributeValues") or {},
                params.get("ExpressionAttributeNames") or {},
                schema,
            )
        except Exception:  # moto answers the ValidationException itself
            return None
        values = [_scalar(v) for name, v in hash_conditions if name == attr]
    else:  # legacy KeyConditions
        cond = (params.get("KeyConditions") or {}).get(attr) or {}
        values = [_scalar(v) for v in cond.get("AttributeValueList", [])] if cond.get("ComparisonOperator") == "EQ" else []
    values = [v for v in values if v is not None]
    return sorted(set(values)) or None


# ---------------------------------------------------------------------------------------
# EventBridge: "events:PutEvents" is authorized per entry on the entry's bus ARN
# ("Amazon EventBridge permissions reference"; EventBusName is a name or an ARN, absent
# means the default bus). events:source and events:detail-type are the entry's.


def bus_arn(region: str, account: str, name: str | None) -> str:
    name = name or "default"
    return name if name.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{name}"


def events(operation: str, params: dict[str, Any], region: str, account: str) -> list[Item] | None:
    if operation == "PutEvents":
        out = []
        for entry in params.get("Entries") or []:
            ctx = {}
            if entry.get("Source") is not None:
                ctx["events:source"] = [entry["Source"]]
            if entry.get("DetailType") is not None:
                ctx["events:detail-type"] = [entry["DetailType"]]
            out.append(Item(operation, "events:PutEvents", bus_arn(region, account, entry.get("EventBusName")), ctx))
        return out
    return None


# ---------------------------------------------------------------------------------------
# SQS: each action on the queue ARN (the URL's last path segment is the queue name).

_SQS = {"SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch",
        "GetQueueAttributes", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch", "GetQueueUrl"}


def sqs(operation: str, params: dict[str, Any], region: str, account: str) -> list[Item] | None:
    if operation not in _SQS:
        return None
    # SendMessageBatch etc. are authorized as their single-message action.
    action = operation.removesuffix("Batch")
    if operation == "GetQueueUrl":
        name, owner = params.get("QueueName", ""), params.get("QueueOwnerAWSAccountId") or account
    else:
        path = urllib.parse.urlparse(params.get("QueueUrl", "")).path.strip("/").split("/")
        name, owner = path[-1], (path[0] if len(path) == 2 else account)
    return [Item(operation, f"sqs:{action}", f"arn:aws:sqs:{region}:{owner}:{name}")]


# ---------------------------------------------------------------------------------------
# S3 ("Actions, resources, and condition keys for Amazon S3" and each API page's
# "Permissions" section). Object ARN arn:aws:s3:::bucket/key, bucket ARN arn:aws:s3:::bucket.

_BUCKET_GET = {  # sub-resource in the query -> (operation, action)
    "versions": ("ListObjectVersions", "ListBucketVersions"),
    "uploads": ("ListMultipartUploads", "ListBucketMultipartUploads"),
    "versioning": ("GetBucketVersioning", "GetBucketVersioning"),
    "location": ("GetBucketLocation", "GetBucketLocation"),
    "policy": ("GetBucketPolicy", "GetBucketPolicy"),
    "tagging": ("GetBucketTagging", "GetBucketTagging"),
    "acl": ("GetBucketAcl", "GetBucketAcl"),
    "cors": ("GetBucketCors", "GetBucketCORS"),
    "lifecycle": ("GetBucketLifecycleConfiguration", "GetLifecycleConfiguration"),
    "encryption": ("GetBucketEncryption", "GetEncryptionConfiguration"),
    "notification": ("GetBucketNotificationConfiguration", "GetBucketNotification"),
    "publicAccessBlock": ("GetPublicAccessBlock", "GetBucketPublicAccessBlock"),
    "ownershipControls": ("GetBucketOwnershipControls", "GetBucketOwnershipControls"),
    "object-lock": ("GetObjectLockConfiguration", "GetBucketObjectLockConfiguration"),
}
_BUCKET_PUT = {
    "versioning": ("PutBucketVersioning", "PutBucketVersioning"),
    "policy": ("PutBucketPolicy", "PutBucketPolicy"),
    "tagging": ("PutBucketTagging", "PutBucketTagging"),
    "cors": ("PutBucketCors", "PutBucketCORS"),
    "lifecycle": ("PutBucketLifecycleConfiguration", "PutLifecycleConfiguration"),
    "encryption": ("PutBucketEncryption", "PutEncryptionConfiguration"),
    "notification": ("PutBucketNotificationConfiguration", "PutBucketNotification"),
    "publicAccessBlock": ("PutPublicAccessBlock", "PutBucketPublicAccessBlock"),
}
_BUCKET_DELETE = {
    "policy": ("DeleteBucketPolicy", "DeleteBucketPolicy"),
    "tagging": ("DeleteBucketTagging", "PutBucketTagging"),
    "cors": ("DeleteBucketCors", "PutBucketCORS"),
    "lifecycle": ("DeleteBucketLifecycle", "PutLifecycleConfiguration"),
    "encryption": ("DeleteBucketEncryption", "PutEncryptionConfiguration"),
    "publicAccessBlock": ("DeletePublicAccessBlock", "PutBucketPublicAccessBlock"),
}
_LIST_KEYS = ("prefix", "delimiter", "max-keys")


def object_arn(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def missing_object(bucket: str, operation: str) -> Item:
    """The extra check S3 makes when a GetObject/HeadObject names a key that does not exist."""
    return Item(operation, "s3:ListBucket", f"arn:aws:s3:::{bucket}", bucket=bucket, missing_object=True)


def s3(
    method: str,
    bucket: str | None,
    key: str | None,
    query: dict[str, list[str]],
    headers: Any,
    body: bytes | str | None,
    fallback_operation: str,
) -> list[Item]:
    """Items for an S3 REST call. `query` maps each query parameter to its values;
    `fallback_operation` (moto's own name for the call) labels an unmodelled one."""
    q = {k: (v[0] if v else "") for k, v in query.items()}
    version = q.get("versionId") or None
    ctx: dict[str, list[str]] = {}
    if version:
        ctx["s3:versionid"] = [version]

    def item(operation: str, action: str, resource: str, extra: dict[str, list[str]] | None = None, **kw: Any) -> Item:
        return Item(operation, f"s3:{action}", resource, {**ctx, **(extra or {})}, bucket=kw.pop("on_bucket", bucket), **kw)

    if not bucket:
        if method == "GET":
            return [Item("ListBuckets", "s3:ListAllMyBuckets", "*")]
        return [Item(fallback_operation, f"s3:{fallback_operation}", "*", unmodelled=True)]

    bucket_arn = f"arn:aws:s3:::{bucket}"
    if not key:
        if method == "HEAD":  # HeadBucket: "you must have permissions for s3:ListBucket"
            return [item("HeadBucket", "ListBucket", bucket_arn)]
        if method == "GET":
            listing = {f"s3:{k}": [q[k]] for k in _LIST_KEYS if k in q}
            for sub, (op, action) in _BUCKET_GET.items():
                if sub in q:
                    return [item(op, action, bucket_arn, listing if sub == "versions" else None)]
            op = "ListObjectsV2" if q.get("list-type") == "2" else "ListObjects"
            return [item(op, "ListBucket", bucket_arn, listing)]
        if method == "PUT":
            for sub, (op, action) in _BUCKET_PUT.items():
                if sub in q:
                    return [item(op, action, bucket_arn)]
            if not q:
                return [item("CreateBucket", "CreateBucket", bucket_arn)]
        if method == "DELETE":
            for sub, (op, action) in _BUCKET_DELETE.items():
                if sub in q:
                    return [item(op, action, bucket_arn)]
            if not q:
                return [item("DeleteBucket", "DeleteBucket", bucket_arn)]
        if method == "POST" and "delete" in q:
            # DeleteObjects: each key is deleted as DeleteObject would delete it (see there),
            # on its own object ARN; S3 reports each key's result on its own.
            out = []
            for obj in _delete_objects(body):
                extra = {"s3:versionid": [obj[1]]} if obj[1] else {}
                for action in _delete_actions(bool(obj[1])):
                    out.append(item("DeleteObjects", action, object_arn(bucket, obj[0]), extra, object_key=obj[0]))
            return out
        return [Item(fallback_operation, f"s3:{fallback_operation}", "*", bucket=bucket, unmodelled=True)]

    arn = object_arn(bucket, key)
    versioned = "Version" if version else ""
    if method in ("GET", "HEAD"):
        if method == "GET" and "uploadId" in q:
            return [item("ListParts", "ListMultipartUploadParts", arn)]
        if method == "GET" and "tagging" in q:
            return [item("GetObjectTagging", f"GetObject{versioned}Tagging", arn)]
        if method == "GET" and "acl" in q:
            return [item("GetObjectAcl", f"GetObject{versioned}Acl", arn)]
        if method == "GET" and "attributes" in q:
            return [item("GetObjectAttributes", f"GetObject{versioned}Attributes", arn)]
        # HeadObject needs exactly what GetObject needs (HeadObject API reference).
        op = "GetObject" if method == "GET" else "HeadObject"
        return [item(op, f"GetObject{versioned}", arn)]
    if method == "PUT":
        if "tagging" in q:
            return [item("PutObjectTagging", f"PutObject{versioned}Tagging", arn)]
        if "acl" in q:
            return [item("PutObjectAcl", f"PutObject{versioned}Acl", arn)]
        source = headers.get("x-amz-copy-source")
        op = "UploadPart" if "uploadId" in q else "PutObject"
        if source:
            # CopyObject / UploadPartCopy: s3:PutObject on the target and s3:GetObject (or
            # s3:GetObjectVersion) on the source, which the source bucket's policy also sees.
            op = "UploadPartCopy" if "uploadId" in q else "CopyObject"
            src_bucket, src_key, src_version = _copy_source(source)
            copy_ctx = {"s3:x-amz-copy-source": [urllib.parse.unquote(source.split("?", 1)[0]).lstrip("/")]}
            src_ctx = {"s3:versionid": [src_version]} if src_version else {}
            return [
                Item(op, "s3:PutObject", arn, copy_ctx, bucket=bucket),
                Item(op, f"s3:GetObject{'Version' if src_version else ''}", object_arn(src_bucket, src_key), src_ctx, bucket=src_bucket),
            ]
        return [item(op, "PutObject", arn)]
    if method == "DELETE":
        if "uploadId" in q:
            return [item("AbortMultipartUpload", "AbortMultipartUpload", arn)]
        if "tagging" in q:
            return [item("DeleteObjectTagging", f"DeleteObject{versioned}Tagging", arn)]
        return [item("DeleteObject", action, arn) for action in _delete_actions(bool(version))]
    if method == "POST":
        if "uploads" in q:
            return [item("CreateMultipartUpload", "PutObject", arn)]
        if "uploadId" in q:
            return [item("CompleteMultipartUpload", "PutObject", arn)]
        if "restore" in q:
            return [item("RestoreObject", "RestoreObject", arn)]
    return [Item(fallback_operation, f"s3:{fallback_operation}", "*", bucket=bucket, unmodelled=True)]


def _copy_source(header: str) -> tuple[str, str, str | None]:
    path, _, qs = header.partition("?")
    path = urllib.parse.unquote(path).lstrip("/")
    src_bucket, _, src_key = path.partition("/")
    version = urllib.parse.parse_qs(qs).get("versionId", [None])[0]
    return src_bucket, src_key, version


def _delete_actions(versioned: bool) -> list[str]:
    """What a delete of one object needs. The DeleteObject and DeleteObjects API references
    (Permissions, general purpose buckets): "To delete an object from a bucket, you must
    always have the s3:DeleteObject permission", and "To delete a specific version of an
    object from a versioning-enabled bucket, you must have the s3:DeleteObjectVersion
    permission". So a delete that names a VersionId needs both; we follow the text rather
    than the looser reading that s3:DeleteObjectVersion alone suffices, so a policy that
    passes here cannot fail on AWS for this reason."""
    return ["DeleteObject", "DeleteObjectVersion"] if versioned else ["DeleteObject"]


def _delete_objects(body: bytes | str | None) -> list[tuple[str, str | None]]:
    """(key, version id) of each <Object> in a DeleteObjects body."""
    if not body:
        return []
    root = ET.fromstring(body)
    ns = root.tag.split("}", 1)[0] + "}" if root.tag.startswith("{") else ""
    out = []
    for obj in root.findall(f"{ns}Object"):
        key = obj.findtext(f"{ns}Key") or ""
        version = obj.findtext(f"{ns}VersionId") or None
        out.append((key, version))
    return out
