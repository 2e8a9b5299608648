"""Writing a month's allocation back as FOCUS 1.3 split cost allocations
(issue 32, docs/focus.md): ``gpucost.to_focus`` (the whole output as one
table, then written) against ``gpucost.focus.write_focus_split`` (streamed a
batch of origin charges at a time), each in its own process so that its peak
RSS is its own.

The bill: a synthetic FOCUS 1.3 CSV export of ``--lines`` lines: every hour
of a 30-day month for ``--gpus / 8`` p4d.24xlarge instances (the GPU lines),
the rest hourly EBS volume, network and tax lines with no GPU (passed
through). Telemetry: every GPU every ``--interval`` seconds, held by one of
60 jobs for runs of 1 to 12 hours, a quarter of the runs idle.

Usage:
    .venv/bin/python benchmarks/bench_focus.py [--lines 60000] [--gpus 256] [--interval 300] [--batch 10000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import gpucost

MONTH = pd.Timestamp("2026-03-01T00:00:00Z")
HOURS = 720


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_inputs(root: Path, lines: int, gpus: int, interval: int) -> None:
    rng = np.random.default_rng(32)
    nodes = gpus // 8
    hour = np.repeat(np.arange(HOURS), nodes)
    node = np.tile(np.arange(nodes), HOURS)
    gpu_lines = len(hour)
    other = max(lines - gpu_lines, 0)
    o_hour = np.sort(rng.integers(0, HOURS, other))
    kind = rng.choice(np.array(["vol", "net", "tax"]), other, p=[0.7, 0.25, 0.05])
    start = np.concatenate([hour, o_hour])
    iso = lambda h: (MONTH + pd.to_timedelta(h, unit="h")).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    n = gpu_lines + other
    resource_id = np.concatenate([np.char.add("arn:aws:ec2:us-east-1:111122223333:instance/i-", node.astype(str)),
                                  np.where(kind == "tax", "", np.char.add(np.char.add(kind, "-"),
                                                                          rng.integers(0, 500, other).astype(str)))])
    effective = np.concatenate([np.full(gpu_lines, 21.9576), np.round(rng.uniform(0.001, 2, other), 6)])
    frame = pd.DataFrame({
        "BillingAccountId": "111122223333", "BillingCurrency": "USD",
        "BillingPeriodStart": "2026-03-01T00:00:00Z", "BillingPeriodEnd": "2026-04-01T00:00:00Z",
        "ChargePeriodStart": iso(start), "ChargePeriodEnd": iso(start + 1),
        "ChargeCategory": np.concatenate([np.full(gpu_lines, "Usage"), np.where(kind == "tax", "Tax", "Usage")]),
        "ChargeClass": "", "ServiceProviderName": "AWS", "HostProviderName": "AWS",
        "ServiceName": np.concatenate([np.full(gpu_lines, "Amazon EC2"), np.where(kind == "vol", "Amazon EBS",
                                                                                  "Amazon EC2")]),
        "RegionId": "us-east-1", "SubAccountId": "111122223333", "ResourceId": resource_id,
        "SkuId": np.concatenate([np.full(gpu_lines, "BoxUsage:p4d.24xlarge"), np.char.add("sku-", kind)]),
        "PricingCategory": "Standard", "PricingUnit": "Hours", "PricingQuantity": "1",
        "ListUnitPrice": np.concatenate([np.full(gpu_lines, "32.7726"), np.full(other, "")]),
        "ListCost": np.round(effective * 1.25, 6), "ContractedCost": effective, "BilledCost": effective,
        "EffectiveCost": effective, "ConsumedQuantity": np.concatenate([np.ones(gpu_lines), np.full(other, np.nan)]),
        "ConsumedUnit": np.concatenate([np.full(gpu_lines, "Hours"), np.full(other, "")]),
        "x_EffectiveCostInUsd": effective, "Tags": '{"env": "prod"}',
        "AllocatedMethodId": "", "AllocatedMethodDetails": "", "AllocatedResourceId": "",
        "AllocatedResourceName": "", "AllocatedTags": "",
    })
    assert len(frame) == n
    frame.to_csv(root / "focus.csv", index=False)
    # Telemetry: runs of 1-12 hours per GPU, a job or idle.
    steps = np.arange(0, HOURS * 3600, interval)
    rows = []
    for g in range(gpus):  # a loop per GPU, building its whole month at once
        bounds = np.cumsum(rng.integers(1, 13, HOURS)) * 3600
        bounds = bounds[bounds < HOURS * 3600]
        run = np.searchsorted(bounds, steps, side="right")
        job = rng.integers(-20, 60, len(bounds) + 1)
        owner = np.where(job[run] < 0, "", np.char.add("job-", job[run].clip(0).astype(str)))
        rows.append(pd.DataFrame({"t": steps, "resource_id": f"i-{g // 8}", "device": g % 8, "consumer": owner}))
    usage = pd.concat(rows, ignore_index=True)
    usage["timestamp"] = MONTH + pd.to_timedelta(usage.pop("t"), unit="s")
    usage = usage.assign(share=1.0, util=rng.uniform(0, 1, len(usage)).round(2), mem_used=20 * 2.0 ** 30)
    usage.to_parquet(root / "usage.parquet", index=False)
    pd.DataFrame({"resource_id": [f"i-{k}" for k in range(nodes)], "instance_type": "p4d.24xlarge"}).to_csv(
        root / "nodes.csv", index=False)
    pd.DataFrame({"consumer": [f"job-{k}" for k in range(60)], "team": [f"team-{k % 7}" for k in range(60)]}).to_csv(
        root / "workloads.csv", index=False)


def run_one(root: Path, mode: str, batch: int, interval: int) -> dict:
    costs = gpucost.read_focus(root / "focus.csv")
    usage = pd.read_parquet(root / "usage.parquet")
    inventory = gpucost.inventory(pd.read_csv(root / "nodes.csv"))
    workloads = pd.read_csv(root / "workloads.csv")
    before = _rss_mb()
    t0 = time.perf_counter()
    if mode == "oneshot":
        rows = gpucost.to_focus(costs, usage, inventory, workloads, interval=interval,
                                path=root / "split-oneshot.csv").num_rows
    else:
        rows = gpucost.focus.write_focus_split(costs, usage, inventory, workloads, interval=interval,
                                               path=root / "split-stream.csv", batch_lines=batch)
    seconds = time.perf_counter() - t0
    return {"mode": mode, "lines": len(costs), "usage_rows": len(usage), "rows": rows, "seconds": round(seconds, 2),
            "rss_inputs_mb": round(before), "rss_peak_mb": round(_rss_mb())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=60_000)
    ap.add_argument("--gpus", type=int, default=256)
    ap.add_argument("--interval", type=int, default=300)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--dir")
    ap.add_argument("--child", choices=("oneshot", "stream"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-focus-"))
    if args.child:
        print(json.dumps(run_one(root, args.child, args.batch, args.interval)))
        return
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "focus.csv").exists():
        make_inputs(root, args.lines, args.gpus, args.interval)
    results = []
    for mode in ("oneshot", "stream"):
        out = subprocess.run([sys.executable, __file__, "--child", mode, "--dir", str(root), "--batch",
                              str(args.batch), "--interval", str(args.interval)],
                             check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(results[-1]))
    same = (root / "split-oneshot.csv").read_bytes() == (root / "split-stream.csv").read_bytes()
    print(f"streamed output equals the one-shot output byte for byte: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
