"""The cost of finding rows read twice across a bill's parts (issue 29).

A CUR 2.0 export of N hourly instance lines in 4 CSV parts, read part by part
twice in one process: with one record of the rows read for the whole bill
(``seen=gpucost.billing.BillRows()``, what the command and gpucost.plan do,
so a row repeated in another part is dropped) and with a record per part
(``seen=None``, as before: duplicates found within a part only). Best of
``--repeat`` runs each, in CPU time of the process (the development machine is
shared; wall time varies with its load) and wall time.

Usage:
    .venv/bin/python benchmarks/bench_bill_parts.py [--rows 1000000] [--repeat 5] [--dir /tmp/bill-parts]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import gpucost
from gpucost.billing import BillRows

HEADER = ("identity_line_item_id,identity_time_interval,line_item_line_item_type,line_item_resource_id,"
          "line_item_usage_type,line_item_unblended_cost,line_item_usage_amount,line_item_usage_start_date,"
          "line_item_usage_end_date,line_item_currency_code,product_instance_type\n")


def write_parts(root: Path, rows: int) -> list[Path]:
    """4 parts of rows // 4 lines each: 300 p4d instances, one line per instance-hour."""
    parts = [root / f"part-{k}.csv" for k in range(4)]
    per = rows // 4
    for k, path in enumerate(parts):
        if path.exists() and sum(1 for _ in path.open()) == per + 1:
            continue
        i = np.arange(k * per, (k + 1) * per)
        hour, instance = i // 300, i % 300
        with path.open("w") as f:
            f.write(HEADER)
            for line, h, n in zip(i, hour, instance):
                day, hh = 1 + (h // 24) % 31, h % 24
                start, end = f"2025-10-{day:02d}T{hh:02d}:00:00Z", f"2025-10-{day:02d}T{hh:02d}:59:59Z"
                f.write(f"li{line:012d},{start}/{end},Usage,i-{n:08x},USE1-BoxUsage:p4d.24xlarge,32.77,1,{start},"
                        f"{end},USD,p4d.24xlarge\n")
    return parts


def read(parts: list[Path], shared: bool) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    seen = BillRows() if shared else None
    frames = [gpucost.read_cur(p, seen=seen, progress=False) for p in parts]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert sum(map(len, frames)) == sum(f.attrs["billing"]["rows_read"] for f in frames)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "gpucost-bill-parts")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    parts = write_parts(args.dir, args.rows)
    size = sum(p.stat().st_size for p in parts)
    for shared in (False, True):
        read(parts, shared)  # warm
    best = {}
    for shared in (False, True):
        runs = [read(parts, shared) for _ in range(args.repeat)]
        best[shared] = (min(r[0] for r in runs), min(r[1] for r in runs))
    (cpu0, wall0), (cpu1, wall1) = best[False], best[True]
    print(f"{4 * (args.rows // 4):,} rows, {size / 1e6:.0f} MB in 4 CSV parts, best of {args.repeat}")
    print(f"  a record per part:     {cpu0:.3f} s CPU, {wall0:.3f} s wall")
    print(f"  one record for the bill: {cpu1:.3f} s CPU ({(cpu1 / cpu0 - 1) * 100:+.1f} %), {wall1:.3f} s wall")


if __name__ == "__main__":
    main()
