"""docs/cost.md is what bench/cost.py writes from bench/cost/calls.json, the prices and
template.yaml, and a few of its figures, recomputed here on their own, agree."""

import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def generator():
    spec = importlib.util.spec_from_file_location("cost", ROOT / "bench/cost.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def page():
    return (ROOT / "docs/cost.md").read_text()


def row(label):
    """The cells of the per-million table's row `label`, as numbers where they are money."""
    for line in page().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == label and len(cells) == 9:
            return [float(re.sub(r"[^0-9.]", "", c)) if "$" in c else c for c in cells]
    raise AssertionError(f"no row '{label}' in docs/cost.md")


def test_the_page_is_what_the_script_writes():
    cost = generator()
    assert page() == cost.render(*cost.load()), (
        "docs/cost.md is stale: run `python3 bench/cost.py` (after "
        "UPDATE_COST_CALLS=1 for bench/cost/calls.json when the calls changed)"
    )


def test_a_million_gets_recomputed():
    calls = json.loads((ROOT / "bench/cost/calls.json").read_text())["operations"]["get_1k"]
    p = json.loads((ROOT / "bench/cost/prices.json").read_text())["prices"]
    template = (ROOT / "template.yaml").read_text()
    # fn-get's memory: its own MemorySize, else the Globals' one.
    block = template.split("\n  GetFunction:\n", 1)[1].split("\n  ListFunction:\n", 1)[0]
    own = re.search(r"\n      MemorySize: (\d+)", block)
    memory = int(own.group(1)) if own else int(
        re.search(r"Globals:\n  Function:\n(?:    .*\n)*?    MemorySize: (\d+)", template).group(1)
    )
    seconds = (5 + 10 * calls["roundTrips"]) / 1000
    want = (
        0.20  # a million Lambda requests
        + 1e6 * memory / 1024 * seconds * p["lambdaArmGbSecond"]
        + p["httpApiRequestPerMillion"]
        + calls["dynamodb"]["readRequestUnits"] * p["dynamodbReadUnitPerMillion"]
        + calls["calls"].get("S3.GetObject", 0) * 1000 * p["s3GetPerThousand"]
    )
    # A small file's head carries its body (inline): one GetItem, no S3 request.
    assert calls["calls"] == {"DynamoDB.GetItem": 1}
    assert abs(row("GET, 1 KiB file")[-1] - want) < 0.006, (row("GET, 1 KiB file"), want)


def test_a_million_puts_dynamodb_recomputed():
    calls = json.loads((ROOT / "bench/cost/calls.json").read_text())["operations"]["put_1k_s3"]
    p = json.loads((ROOT / "bench/cost/prices.json").read_text())["prices"]
    d = calls["dynamodb"]
    # A transaction: 2 write units per item of up to 1 KB (the body is in S3).
    assert d["writeRequestUnits"] == 2 * d["transactionItems"] * d["largestItemKB"]
    want = (
        d["readRequestUnits"] * p["dynamodbReadUnitPerMillion"]
        + d["writeRequestUnits"] * p["dynamodbWriteUnitPerMillion"]
    )
    assert abs(row("PUT, 1 KiB over a file, If-Match, body in S3")[4] - want) < 0.006


def test_inline_puts_write_the_body_twice():
    ops = json.loads((ROOT / "bench/cost/calls.json").read_text())["operations"]
    # Each KiB more of an inline body adds 1 KB to the head and the version item: 2 write
    # units each in a transaction.
    for small, large in [(1, 2), (2, 3), (3, 4)]:
        a = ops[f"inline_put_{small}k"]["dynamodb"]["writeRequestUnits"]
        b = ops[f"inline_put_{large}k"]["dynamodb"]["writeRequestUnits"]
        assert b - a == 4, (small, large, a, b)
    for kib in [1, 2, 3, 4, 16, 64]:
        assert ops[f"inline_put_{kib}k"]["calls"] == {"DynamoDB.TransactWriteItems": 1}
        assert ops[f"inline_get_{kib}k"]["calls"] == {"DynamoDB.GetItem": 1}


def test_the_idle_stack_counts_the_templates_alarms():
    template = (ROOT / "template.yaml").read_text()
    alarms = len(re.findall(r"^    Type: AWS::CloudWatch::Alarm\s*$", template, re.M))
    dollars = f"${alarms * 0.10:.2f}" if alarms else "$0"
    assert f"CloudWatch alarms in `template.yaml`: {alarms} | {dollars} |" in page()
