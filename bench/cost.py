#!/usr/bin/env python3
"""Writes docs/cost.md: what the AWS stack costs per million operations, per GB stored and
per idle month, from

- bench/cost/calls.json: the AWS calls and DynamoDB capacity of each operation, counted on
  the emulator by shared/store-aws/tests/call_budget.rs (which fails when they change);
- bench/cost/prices.json: the us-east-1 list prices, with the date they are taken as;
- template.yaml: each function's memory size, the alarms, dashboards, secrets and keys;
- shared/core/src/limits.rs: how many versions a file keeps;
- the assumptions in ASSUMPTIONS below (durations, batching, item and index sizes).

    python3 bench/cost.py            # rewrites docs/cost.md
    python3 bench/cost.py --check    # exits 1 when docs/cost.md is not what it would write

Python 3, standard library only. tests/cost/test_cost.py holds the page to this script and
recomputes some figures on its own.
"""

import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS = ROOT / "bench/cost/calls.json"
PRICES = ROOT / "bench/cost/prices.json"
TEMPLATE = ROOT / "template.yaml"
LIMITS = ROOT / "shared/core/src/limits.rs"
PAGE = ROOT / "docs/cost.md"

# What the counts cannot say, stated once.
ASSUMPTIONS = {
    # A Lambda invocation's billed duration: a fixed part (decoding, JSON, redaction,
    # SHA-256: under a millisecond locally, see docs/performance.md) plus one same-region
    # AWS round trip per sequential call the operation waits for.
    "fixedMs": 5,
    "roundTripMs": 10,
    # A write's event path at its worst: every write its own stream batch (fn-publish)
    # and its own indexer batch (fn-indexer), which is what a slow trickle of writes gets.
    # The SQS requests of one message: the rule's send, the trigger's receive and delete.
    "sqsRequestsPerChange": 3,
    # The search index object is this many times the text it holds (docs/performance.md,
    # 10,000 files of prose and code).
    "indexToText": 3.29,
    # DynamoDB item size per kept item, upper bound (calls.json: no file item is over 1 KB).
    "itemKB": 1.0,
    # Lambda's SQS trigger long-polls an idle queue with 5 pollers, each a 20 s poll.
    "idleSqsPollers": 5,
    "sqsLongPollSeconds": 20,
    # Change-log entries are kept 90 days (shared/core/src/changes.rs).
    "changeLogDays": 90,
}

# The rows priced per million: (label, operation in calls.json, SAM function, changes it
# commits: each publishes one event and is indexed).
ROWS = [
    ("GET, 1 KiB file", "get_1k", "GetFunction", 0),
    ("GET, 1 KiB file, body in S3", "get_1k_s3", "GetFunction", 0),
    ("GET, a past version", "get_version", "GetFunction", 0),
    ("PUT, 1 KiB over a file", "put_1k", "PutFunction", 1),
    ("PUT, 1 KiB over a file, If-Match", "put_1k_named", "PutFunction", 1),
    ("PUT, 1 KiB over a file, If-Match, body in S3", "put_1k_s3", "PutFunction", 1),
    ("PUT, 100 KiB over a file", "put_100k", "PutFunction", 1),
    ("PUT, 1 KiB, a new file", "put_new_1k", "PutFunction", 1),
    ("DELETE", "delete", "DeleteFunction", 1),
    ("LIST, a page of 100 files", "list_100", "ListFunction", 0),
    ("history of a file", "history", "ListFunction", 0),
    ("search, keyword, 100 files, a page of 20 hits", "search", "SearchFunction", 0),
    ("MCP read_file, 1 KiB", "mcp_read_file", "McpFunction", 0),
    ("MCP write_file, 1 KiB", "mcp_write_file", "McpFunction", 1),
    ("fork of a workspace of 10 files", "fork_10", "SnapshotsFunction", 0),
    ("merge of 10 changed files", "merge_10", "SnapshotsFunction", 10),
]

INDEXER_OP = "indexer_3_changes"
MONTH_SECONDS = 30 * 24 * 3600


def load():
    calls = json.loads(CALLS.read_text())
    prices = json.loads(PRICES.read_text())
    template = TEMPLATE.read_text()
    limits = LIMITS.read_text()
    return calls, prices, template, limits


def resources(template):
    """Each resource of template.yaml: logical id -> (type, its lines)."""
    out, current = {}, None
    in_resources = False
    for line in template.splitlines():
        if re.match(r"^\S", line):
            in_resources = line.startswith("Resources:")
            current = None
            continue
        if not in_resources:
            continue
        m = re.match(r"^  ([A-Za-z0-9]+):\s*$", line)
        if m:
            current = m.group(1)
            out[current] = ["", []]
            continue
        if current:
            out[current][1].append(line)
            t = re.match(r"^    Type:\s*(\S+)", line)
            if t:
                out[current][0] = t.group(1)
    return {k: (t, lines) for k, (t, lines) in out.items()}


def global_memory(template):
    m = re.search(r"^Globals:\n  Function:\n((?:    .*\n|\s*\n)*)", template, re.M)
    mm = m and re.search(r"^    MemorySize:\s*(\d+)", m.group(1), re.M)
    if not mm:
        sys.exit("template.yaml: no Globals.Function.MemorySize")
    return int(mm.group(1))


def functions(template):
    """SAM function -> (binary, memory MB) from template.yaml."""
    default = global_memory(template)
    out = {}
    for name, (kind, lines) in resources(template).items():
        if kind != "AWS::Serverless::Function":
            continue
        text = "\n".join(lines)
        binary = re.search(r"Binary:\s*(\S+)", text)
        mem = re.search(r"^      MemorySize:\s*(\d+)", text, re.M)
        out[name] = (binary.group(1) if binary else name, int(mem.group(1)) if mem else default)
    return out


def count_type(template, kind):
    return sum(1 for t, _ in resources(template).values() if t == kind)


def max_versions(limits):
    m = re.search(r"max_versions:\s*(\d+)", limits)
    if not m:
        sys.exit("shared/core/src/limits.rs: no max_versions default")
    return int(m.group(1))


def duration_ms(round_trips):
    return ASSUMPTIONS["fixedMs"] + ASSUMPTIONS["roundTripMs"] * round_trips


def lambda_cost(p, memory_mb, ms, invocations=1_000_000):
    """(requests, compute) in dollars for `invocations` of `ms` at `memory_mb`."""
    requests = invocations / 1e6 * p["lambdaRequestPerMillion"]
    compute = invocations * (memory_mb / 1024) * (ms / 1000) * p["lambdaArmGbSecond"]
    return requests, compute


def dynamo_cost(p, op, n=1_000_000):
    d = op["dynamodb"]
    return n / 1e6 * (
        d["readRequestUnits"] * p["dynamodbReadUnitPerMillion"]
        + d["writeRequestUnits"] * p["dynamodbWriteUnitPerMillion"]
    )


def s3_cost(p, op, n=1_000_000):
    c = op["calls"]
    puts = c.get("S3.PutObject", 0) + c.get("S3.ListObjectVersions", 0)
    gets = c.get("S3.GetObject", 0) + c.get("S3.HeadObject", 0)
    return n / 1000 * (puts * p["s3PutPerThousand"] + gets * p["s3GetPerThousand"])


def events_cost(p, fns, indexer, changes, n=1_000_000):
    """What `changes` committed changes per operation set off, for `n` operations, at worst
    (no batching): (publisher + EventBridge + SQS, indexer)."""
    k = n * changes
    if k == 0:
        return 0.0, 0.0
    _, pub_mem = fns["PublishFunction"]
    req, comp = lambda_cost(p, pub_mem, duration_ms(1), k)
    publish = req + comp + k / 1e6 * p["eventbridgeEventPerMillion"]
    publish += k * ASSUMPTIONS["sqsRequestsPerChange"] / 1e6 * p["sqsRequestPerMillion"]
    _, idx_mem = fns["IndexerFunction"]
    req, comp = lambda_cost(p, idx_mem, duration_ms(indexer["roundTrips"]), k)
    index = req + comp + dynamo_cost(p, indexer, k) + s3_cost(p, indexer, k)
    return publish, index


def money(x):
    if x == 0:
        return "$0"
    if x < 0.01:
        return f"${x:.4f}"
    if x < 100:
        return f"${x:.2f}"
    return f"${x:,.0f}"


def calls_text(op):
    return ", ".join(f"{n} {c}" for c, n in op["calls"].items())


def cost_rows(calls, prices, fns):
    p = prices["prices"]
    ops = calls["operations"]
    indexer = ops[INDEXER_OP]
    rows = []
    for label, key, fn, changes in ROWS:
        op = ops[key]
        binary, mem = fns[fn]
        ms = duration_ms(op["roundTrips"])
        req, comp = lambda_cost(p, mem, ms)
        api = p["httpApiRequestPerMillion"]
        ddb = dynamo_cost(p, op)
        s3 = s3_cost(p, op)
        publish, index = events_cost(p, fns, indexer, changes)
        total = req + comp + api + ddb + s3 + publish + index
        rows.append(
            {
                "label": label,
                "key": key,
                "binary": binary,
                "memory": mem,
                "ms": ms,
                "lambda": req + comp,
                "api": api,
                "dynamodb": ddb,
                "s3": s3,
                "publish": publish,
                "index": index,
                "total": total,
                "op": op,
                "changes": changes,
            }
        )
    return rows


# The sizes of the inline-against-S3 table, KiB (calls.json's ladder).
LADDER_KIB = [1, 2, 3, 4, 16, 64]


def template_default(template, parameter):
    block = template.split(f"\n  {parameter}:\n", 1)[1]
    return int(re.search(r"\n    Default: (\d+)", block).group(1))


def pair_cost(p, fns, put, get):
    """A million writes and a million reads: (DynamoDB, S3, Lambda) dollars."""
    ddb = dynamo_cost(p, put) + dynamo_cost(p, get)
    s3 = s3_cost(p, put) + s3_cost(p, get)
    lam = 0.0
    for op, fn in ((put, "PutFunction"), (get, "GetFunction")):
        _, mem = fns[fn]
        lam += sum(lambda_cost(p, mem, duration_ms(op["roundTrips"])))
    return ddb, s3, lam


def inline_section(w, ops, p, fns, template, versions):
    """Small files inline against S3, from the counted ladder; checks the default threshold
    is the largest size where inline costs no more for a write and a read together."""
    threshold = template_default(template, "InlineBodyMaxBytes")
    w("## Small files inline")
    w("")
    w(
        "A body of at most `InlineBodyMaxBytes` (default "
        f"{threshold:,} bytes; `WORKSPACE_INLINE_BODY_BYTES`) is kept in DynamoDB with its "
        "commit, in the head and in the version item, and never goes to S3 "
        "(docs/design.md, \"Small files inline\"). A million writes (If-Match naming the "
        "head, over a file of the same size) and a million reads of a file of each size, "
        "counted on the emulator (`*_put_*k`, `*_get_*k` in `bench/cost/calls.json`):"
    )
    w("")
    w("| file | inline: calls, write units, read units | in S3: calls | DynamoDB + S3 + Lambda, inline | the same, in S3 | inline costs |")
    w("|---|---|---|---:|---:|---:|")
    cheaper = {}
    for kib in LADDER_KIB:
        ip, ig = ops[f"inline_put_{kib}k"], ops[f"inline_get_{kib}k"]
        sp, sg = ops[f"s3_put_{kib}k"], ops[f"s3_get_{kib}k"]
        inline = sum(pair_cost(p, fns, ip, ig))
        s3 = sum(pair_cost(p, fns, sp, sg))
        cheaper[kib] = inline <= s3
        w(
            f"| {kib} KiB | {calls_text(ip)}, {ip['dynamodb']['writeRequestUnits']} WRU; "
            f"{calls_text(ig)}, {ig['dynamodb']['readRequestUnits']:g} RRU | "
            f"{calls_text(sp)}; {calls_text(sg)} | {money(inline)} | {money(s3)} | "
            f"{inline / s3:.2f}× |"
        )
    w("")
    below = [k for k in LADDER_KIB if cheaper[k]]
    largest = max(below) if below else 0
    if largest * 1024 != threshold or any(cheaper[k] for k in LADDER_KIB if k > largest):
        raise SystemExit(
            f"InlineBodyMaxBytes defaults to {threshold}, but the counted ladder puts the "
            f"break-even at {largest} KiB: change the default (template.yaml, "
            "DEFAULT_INLINE_BODY_BYTES) or say why"
        )
    ddb_gb = p["dynamodbStorageGbMonth"] + p["dynamodbPitrGbMonth"]
    s3_gb = p["s3StorageGbMonth"]
    w(
        f"**Why {threshold:,} bytes:** it is the largest size counted where a write and a read "
        "together cost no more inline than through S3. An inline body is written twice, "
        "in the head and the version item, and a transaction bills 2 write units per KB of "
        f"each (${p['dynamodbWriteUnitPerMillion']} per million units), so each KB inline "
        f"adds about {money(4 * p['dynamodbWriteUnitPerMillion'])} per million writes; the "
        f"S3 path pays an S3 PUT ({money(1000 * p['s3PutPerThousand'])} per million) and GET "
        f"({money(1000 * p['s3GetPerThousand'])}), and a round trip more of Lambda each way. "
        "Latency is better inline at any size (one round trip instead of two); the price "
        "decides the default. A deployment that values latency over the bill can raise it "
        "to 65,536 bytes."
    )
    w("")
    w(
        f"**Storage** is where inline costs most: DynamoDB is {money(ddb_gb)} per GB-month "
        f"(storage and point-in-time recovery) against S3's {money(s3_gb)}, and the live "
        "version is kept twice (head and version item). A GB of small files never rewritten "
        f"costs {money(2 * ddb_gb)} a month inline against {money(s3_gb)} in S3; rewritten "
        f"{versions} times or more ({versions} versions kept), {money((versions + 1) * ddb_gb)} "
        f"against {money(versions * s3_gb)}. At 2 KiB, a million small files is 1.9 GB: "
        f"{money(1.9 * 2 * ddb_gb)} a month inline with one version each."
    )
    w("")
    w(
        "**Listing** reads the heads, bodies included: a page of 100 inline files of 1 KiB "
        f"is {ops['list_100']['dynamodb']['readRequestUnits']:g} read units (about 10 with "
        "bodies in S3). **The stream** carries inline bodies to the publisher in its "
        "version items' images; its view type is unchanged (`NEW_AND_OLD_IMAGES`: the "
        "publisher reads a pruned version's old image for its S3 key), Lambda's reads of a "
        "stream are free, and the event source's filter passes only the records the "
        "publisher acts on (INSERTs of versions and erases, REMOVEs of versions with an S3 "
        "body), so fewer invocations than before."
    )
    w("")


def render(calls, prices, template, limits):
    p = prices["prices"]
    ops = calls["operations"]
    fns = functions(template)
    versions = max_versions(limits)
    rows = cost_rows(calls, prices, fns)
    a = ASSUMPTIONS
    out = []
    w = out.append
    w("# What it costs")
    w("")
    w(
        "Generated by `python3 bench/cost.py` from the AWS calls the tests count "
        "(`bench/cost/calls.json`, written by `shared/store-aws/tests/call_budget.rs`), the "
        "prices in `bench/cost/prices.json`, the functions' memory sizes and the resources in "
        "`template.yaml`, and the assumptions stated below. Do not edit it by hand: "
        "`tests/cost/test_cost.py` fails when it differs from what the script writes, and the "
        "call test fails when an operation's calls change, until both are regenerated:"
    )
    w("")
    w("```sh")
    w("UPDATE_COST_CALLS=1 bash tests/run.sh   # or the call test alone on the emulator")
    w("python3 bench/cost.py")
    w("```")
    w("")
    w(
        f"**Prices**: {prices['region']} on-demand list prices as of {prices['asOf']}. "
        f"{prices['source']}"
    )
    w("")
    w(
        "**The local server costs nothing**: `workspace-local` on the embedded store (one redb "
        "file, the search index beside it) makes no AWS call, so every figure below is $0 there "
        "but the machine it runs on."
    )
    w("")
    w("## A million operations")
    w("")
    w(
        "Each row is one million of the operation, through the HTTP API (the default JWT "
        "authorizer adds nothing). Lambda is requests plus GB-seconds on arm64 at the "
        "function's `MemorySize` in `template.yaml`, for a duration of "
        f"{a['fixedMs']} ms plus {a['roundTripMs']} ms per AWS round trip the operation waits "
        "for in sequence (counted). *Events* is what each committed change sets off: its "
        "stream record through `fn-publish`, one EventBridge event, and "
        f"{a['sqsRequestsPerChange']} SQS requests to the indexer's queue; *index* is "
        "`fn-indexer` keeping the workspace's search index object current. Both are at their "
        "worst, one batch per change (a trickle of writes); under load the publisher takes up "
        "to 100 records a batch and the indexer 10 messages, and one catch-up serves a "
        "workspace's whole batch."
    )
    w("")
    w("| operation (per 1M) | function, MB, ms | Lambda | HTTP API | DynamoDB | S3 | events | index | total |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        w(
            f"| {r['label']} | {r['binary']}, {r['memory']}, {r['ms']} | {money(r['lambda'])} | "
            f"{money(r['api'])} | {money(r['dynamodb'])} | {money(r['s3'])} | "
            f"{money(r['publish'])} | {money(r['index'])} | **{money(r['total'])}** |"
        )
    w("")
    w("What each operation calls, as counted on the emulator, and the DynamoDB capacity those calls consume:")
    w("")
    w("| operation | AWS calls (round trips) | read units | write units |")
    w("|---|---|---:|---:|")
    for r in rows:
        d = r["op"]["dynamodb"]
        w(
            f"| {r['label']} | {calls_text(r['op'])} ({r['op']['roundTrips']}) | "
            f"{d['readRequestUnits']:g} | {d['writeRequestUnits']} |"
        )
    idx = ops[INDEXER_OP]
    w(
        f"| the indexer, per batch (priced per change above) | {calls_text(idx)} "
        f"({idx['roundTrips']}) | {idx['dynamodb']['readRequestUnits']:g} | "
        f"{idx['dynamodb']['writeRequestUnits']} |"
    )
    w("")
    w(
        "How the units are derived (`shared/store-aws/tests/call_budget.rs`): the test reads "
        "every item before and after the operation and sizes it by DynamoDB's rules; a read "
        "costs 1 unit per 4 KB, rounded up (a Query sums its items first), and half of that "
        "when eventually consistent; a write 1 unit per KB of the larger of the item's two "
        "images; every item of a `TransactWriteItems` (a condition check included) 2 units "
        "per KB. Every read the code makes is strongly consistent (`ConsistentRead`): a head "
        "read must see the last commit. A file item is at most 1 KB plus the body it keeps "
        "inline (up to the threshold: the ladder below goes to 64 KiB)."
    )
    w("")
    w("Reading the table:")
    w("")
    w(
        "- **The HTTP API is the largest part of a read.** A GET of a small file is one "
        "`GetItem` (its head carries the body, inline); over the inline threshold it is "
        "two calls (the head, then the body by version id). $1.00 of every million is API "
        "Gateway."
    )
    w(
        "- **A write's cost is mostly its event path.** The commit is one transaction of 4 "
        "items (head, version, change-log entry, secrets-epoch check; a new file also "
        "counts the workspace's files), 8 write units (a write past the kept versions also "
        "deletes the oldest version item in it, not in the counted rows); the change then costs an event, "
        "three SQS requests and an indexer run that stores the whole index object again "
        "(one S3 PUT per batch, which is why batching matters)."
    )
    w(
        "- **Over the inline threshold, 100 KiB costs what 3 KiB does** in requests: the "
        "body is one S3 PUT either way and never passes through DynamoDB. Size shows in "
        "storage."
    )
    search = ops["search"]
    w(
        "- **A search reads heads.** Before it answers it catches its index up from the "
        "change log, reading again the head of every path changed in the 10 s before the "
        "newest change it has applied (`CHANGE_LOG_OVERLAP_MS` in "
        "`shared/core/src/search/feed.rs`: changes are stamped by the committing process, so "
        "one may land a little before another already seen), and it checks each hit's head, "
        f"so no hit names a stale version. The counted search: "
        f"{search['calls'].get('DynamoDB.GetItem', 0)} head reads, 20 for its hits and the "
        f"rest for the {search['calls'].get('DynamoDB.GetItem', 0) - 20} paths written in that window; "
        "a workspace whose last 10 s of writes "
        "touched many paths pays one read per path on every search until the next write. "
        f"A cold instance costs the same requests ({calls_text(ops['search_cold'])}): it "
        "downloads the index object instead of getting a 304."
    )
    w(
        "- **MCP tool calls are the file operations plus the MCP function.** `read_file` is "
        "a GET's calls; `write_file` is a PUT's and then catches the instance's loaded "
        "search index up (fn-mcp also serves the search tool)."
    )
    w(
        "- **A fork costs the same whatever its files; a merge grows with what changed.** "
        "Creating a fork is one swap of the workspace's point registry (the fork's record "
        "and its point in one `TransactWriteItems`) and one empty S3 object the orphan sweep "
        "finds it by; a merge reads each changed path's base and parent and commits them "
        "(3 items a file), in one transaction while they fit."
    )
    w("")
    inline_section(w, ops, p, fns, template, versions)
    w("## Storage, per month")
    w("")
    kept = versions
    s3 = p["s3StorageGbMonth"]
    w(
        f"Bodies are S3 object versions, each stored in full. A file keeps its last "
        f"{kept} versions (`maxVersions`, `shared/core/src/limits.rs`; the `MaxVersions` "
        "parameter): the publisher deletes the S3 version of each pruned version, and the "
        "bucket's lifecycle rule expires any noncurrent version beyond the newest "
        f"{kept} after 30 days. So a GB of live content costs between one copy and "
        f"{kept}, by how often it is rewritten."
    )
    w("")
    idx_gb = a["indexToText"] * s3
    item = a["itemKB"]
    ddb_gb = p["dynamodbStorageGbMonth"] + p["dynamodbPitrGbMonth"]
    per_million_items = 1e6 * item / 1024 / 1024 * ddb_gb
    w("| what | per month |")
    w("|---|---:|")
    w(f"| 1 GB of file bodies, never rewritten (1 version) | {money(s3)} |")
    w(f"| 1 GB of file bodies, rewritten {kept} times or more ({kept} versions kept) | {money(kept * s3)} |")
    w(
        f"| the search index of 1 GB of text (the object is about {a['indexToText']}× the text; "
        f"one version kept) | {money(idx_gb)} |"
    )
    w(
        f"| 1 million DynamoDB items (heads, version items, change-log entries; ≤ {item:g} KB "
        f"each), storage {money(p['dynamodbStorageGbMonth'])} and point-in-time recovery "
        f"{money(p['dynamodbPitrGbMonth'])} per GB | {money(per_million_items)} |"
    )
    w(
        f"| CloudWatch Logs, per GB ingested (one line per request) / per GB kept | "
        f"{money(p['logsIngestionGb'])} / {money(p['logsStorageGbMonth'])} |"
    )
    w("")
    example_files, example_kib = 100_000, 10
    gb = example_files * example_kib / 1024 / 1024
    items = example_files * (1 + kept)
    ex = gb * kept * s3 + gb * idx_gb + items * item / 1024 / 1024 * ddb_gb
    w(
        f"For example, {example_files:,} files of {example_kib} KiB ({gb:.2f} GB) each "
        f"rewritten at least {kept} times: {money(gb * kept * s3)} of bodies, "
        f"{money(gb * idx_gb)} of index and {items:,} items "
        f"({money(items * item / 1024 / 1024 * ddb_gb)}): about {money(ex)} a month, "
        "plus the change log's entries (one per write, kept "
        f"{a['changeLogDays']} days)."
    )
    w("")
    w("## An idle stack, per month")
    w("")
    alarms = count_type(template, "AWS::CloudWatch::Alarm")
    dashboards = count_type(template, "AWS::CloudWatch::Dashboard")
    secrets = count_type(template, "AWS::SecretsManager::Secret")
    keys = count_type(template, "AWS::KMS::Key")
    kms_param = re.search(r"^  KmsKeyArn:\s*$", template, re.M) is not None
    polls = a["idleSqsPollers"] * MONTH_SECONDS / a["sqsLongPollSeconds"]
    sqs_idle = polls / 1e6 * p["sqsRequestPerMillion"]
    fixed = [
        (f"CloudWatch alarms in `template.yaml`: {alarms}", alarms * p["cloudwatchAlarmMonth"]),
        (f"CloudWatch dashboards: {dashboards}", dashboards * p["cloudwatchDashboardMonth"]),
        (
            f"Secrets Manager secrets: {secrets} (the paging tokens' key, resolved at deploy: "
            "no calls at run time)",
            secrets * p["secretMonth"],
        ),
        (f"KMS keys the stack creates: {keys}", keys * p["kmsKeyMonth"]),
        (
            f"SQS: the indexer's trigger long-polling an empty queue (about {polls:,.0f} "
            f"requests: {a['idleSqsPollers']} pollers, one {a['sqsLongPollSeconds']} s poll each)",
            sqs_idle,
        ),
        ("Lambda, HTTP API, DynamoDB on-demand, EventBridge: billed per use", 0.0),
        ("fn-sweep and fn-purge, once a day each", 0.0),
    ]
    total = sum(c for _, c in fixed)
    w("| what | per month |")
    w("|---|---:|")
    for what, c in fixed:
        w(f"| {what} | {money(c)} |")
    w(f"| **total, idle** | **{money(total)}** |")
    w("")
    if kms_param:
        w(
            f"With `KmsKeyArn` set, your key adds {money(p['kmsKeyMonth'])} a month (if the "
            f"stack is its only user) and {money(p['kmsRequestPerTenThousand'])} per 10,000 "
            "requests it makes of KMS."
        )
    else:
        w(
            "A customer-managed KMS key, if you encrypt with one, costs "
            f"{money(p['kmsKeyMonth'])} a month and {money(p['kmsRequestPerTenThousand'])} per "
            "10,000 requests."
        )
    w(
        "Stored data is billed idle too (the section above), and so are logs kept: "
        f"{money(p['logsStorageGbMonth'])} per GB-month."
    )
    w("")
    w("## What is assumed")
    w("")
    w(
        f"- Durations: {a['fixedMs']} ms plus {a['roundTripMs']} ms per sequential AWS round "
        "trip (counted). Not measured on AWS; a cold start adds its init once per "
        "container (docs/performance.md: about 8 ms here)."
    )
    w(
        "- Events at their worst: every change its own publisher and indexer batch; the "
        "indexer's batch priced per change is the counted one (3 changes of one workspace)."
    )
    w(
        "- The API-key authorizer (`Authorizer: ApiKeyAuthorizer`) caches nothing "
        "(`authorizerResultTtlInSeconds: 0`): it adds one `fn-authorizer` invocation per "
        "request, not priced here. The default JWT authorizer adds nothing."
    )
    w(
        "- Free: " + "; ".join(prices["free"]) + ". Free tiers are ignored."
    )
    w(
        f"- The search index is {a['indexToText']}× its text and DynamoDB items are ≤ "
        f"{a['itemKB']:g} KB, as measured in docs/performance.md and counted."
    )
    w("")
    return "\n".join(out)


def main():
    text = render(*load())
    if "--check" in sys.argv[1:]:
        if PAGE.read_text() != text:
            print("docs/cost.md is stale: run python3 bench/cost.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
