"""A hand-built day of two owned 8-GPU nodes (and a rented g5.xlarge beside
them) for the owner-advice, buy-versus-rent and report tests: cost lines in
the costs-table shape gpucost.owned_costs writes (``pricing`` owned, one line
per node, hour and component, power lines ``driver`` energy), DCGM-like
samples every minute with ``power_w``.

- capex: $10.00 per node-hour (primary), power: $1.20 per node-hour (split by
  energy), operations: $24.00 for the day with no resource; so a GPU-hour
  of the nodes costs (10 + 1.20) / 8 = $1.40.
- dgx-a: ``train`` (team research) holds GPUs 0-3 at 90 %, ``notebook``
  (team lab) holds GPU 4 at 0 % (lend it), GPUs 5-7 are free (consolidate).
- dgx-b: ``train-b`` (team research) holds all 8 at 80 % except from 12:30
  to 18:30, when every GPU is free (power it down).
- Power: 700 W per busy GPU, 60 W per held-idle or free one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpucost.model import CostDriver, Purchase
from scenarios import GIB, concat, lines, series, ts

DAY = "2026-03-02"
CAPEX, POWER, OPERATIONS = 10.0, 1.20, 24.0
BUSY_W, IDLE_W = 700.0, 60.0


def owned_lines(resource: str, hours: int = 24) -> pd.DataFrame:
    capex = lines(resource, DAY, hours, CAPEX, pricing=Purchase.OWNED).assign(
        component="capex", driver=CostDriver.GPU_TIME, primary=True)
    power = lines(resource, DAY, hours, POWER, pricing=Purchase.OWNED).assign(
        component="power", driver=CostDriver.ENERGY, primary=False)
    return concat(capex, power).assign(instance_type="dgx-h100", gpu_model="H100 80GB")


def costs(with_cloud: bool = False) -> pd.DataFrame:
    operations = pd.DataFrame({"resource_id": [""], "start": [ts(DAY)], "end": [ts(DAY) + pd.Timedelta("1D")],
                               "cost": [OPERATIONS], "pricing": [Purchase.OWNED], "component": ["operations"],
                               "driver": [CostDriver.GPU_TIME], "primary": [False], "instance_type": [""],
                               "gpu_model": [""]})
    parts = [owned_lines("dgx-a"), owned_lines("dgx-b"), operations]
    if with_cloud:
        parts.append(lines("i-cloud", DAY, 6, 1.006, pricing=Purchase.ON_DEMAND).assign(
            component="", driver=CostDriver.GPU_TIME, primary=True, instance_type="g5.xlarge", gpu_model="A10G 24GB"))
    return concat(*parts)


def usage(with_cloud: bool = False, power: bool = True) -> pd.DataFrame:
    end = "2026-03-03"
    w = {"busy": {"power_w": BUSY_W}, "idle": {"power_w": IDLE_W}} if power else {"busy": {}, "idle": {}}
    parts = [series("dgx-a", d, "train", DAY, end, 0.9, mem_gib=60, **w["busy"]) for d in range(4)]
    parts.append(series("dgx-a", 4, "notebook", DAY, end, 0.0, mem_gib=2, **w["idle"]))
    parts += [series("dgx-a", d, "", DAY, end, 0.0, **w["idle"]) for d in range(5, 8)]
    for d in range(8):
        parts += [series("dgx-b", d, "train-b", DAY, f"{DAY} 12:30", 0.8, mem_gib=60, **w["busy"]),
                  series("dgx-b", d, "", f"{DAY} 12:30", f"{DAY} 18:30", 0.0, **w["idle"]),
                  series("dgx-b", d, "train-b", f"{DAY} 18:30", end, 0.8, mem_gib=60, **w["busy"])]
    if with_cloud:  # a rented g5.xlarge: busy 2 h, then idle 4 h
        parts += [series("i-cloud", 0, "infer", DAY, f"{DAY} 02:00", 0.9, **w["busy"]),
                  series("i-cloud", 0, "", f"{DAY} 02:00", f"{DAY} 06:00", 0.0, **w["idle"])]
    return concat(*parts)


def inventory(with_cloud: bool = False) -> pd.DataFrame:
    rows = [("dgx-a", d, 80) for d in range(8)] + [("dgx-b", d, 80) for d in range(8)]
    if with_cloud:
        rows.append(("i-cloud", 0, 24))
    frame = pd.DataFrame(rows, columns=["resource_id", "device", "gib"])
    return frame.assign(mem_capacity=frame["gib"] * float(GIB)).drop(columns="gib")


def workloads() -> pd.DataFrame:
    return pd.DataFrame({"consumer": ["train", "notebook", "train-b", "infer"],
                         "team": ["research", "lab", "research", "serving"],
                         "project": ["llm", "eval", "llm", "chat"]})


def tables(with_cloud: bool = False, power: bool = True) -> tuple:
    return usage(with_cloud, power), costs(with_cloud), inventory(with_cloud), workloads()


__all__ = ["tables", "costs", "usage", "inventory", "workloads", "np"]
