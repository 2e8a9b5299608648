"""Hand-built fleets for the purchasing-advice tests: every number in them is
chosen so the expected advice can be worked out by hand."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

GIB = 2**30
T0 = pd.Timestamp("2026-03-02", tz="UTC")  # a Monday
FOCUS_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "focus-spec-examples")


@dataclass
class Fleet:
    """Cost lines, hourly usage samples (one per instance-hour, interval 3600)
    and the inventory of single-GPU or multi-GPU instances."""

    lines: list = field(default_factory=list)
    samples: list = field(default_factory=list)
    gpus: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)

    def run(self, resource: str, instance_type: str, hours, consumer: str, util, *, gpus: int = 1,
            price: float = 1.0, list_price: float | None = None, pricing: str = "on_demand",
            label: str | None = None) -> None:
        """`resource` runs (billed hourly) in every hour of `hours` (ints from
        T0), held whole by `consumer` ("" = nobody) at utilisation `util`."""
        hours = np.asarray(list(hours))
        util = np.broadcast_to(np.asarray(util, dtype=np.float64), hours.shape)
        self.gpus[resource] = gpus
        start = T0 + pd.to_timedelta(hours, unit="h")
        self.lines.append(pd.DataFrame({
            "resource_id": resource, "start": start, "end": start + pd.Timedelta(hours=1), "cost": price,
            "list_cost": price if list_price is None else list_price, "instance_type": instance_type,
            "pricing": pricing, "charge_category": "Usage"}))
        for d in range(gpus):
            self.samples.append(pd.DataFrame({
                "timestamp": start, "resource_id": resource, "device": d, "consumer": consumer, "share": 1.0,
                "util": np.where(consumer == "", 0.0, util), "mem_used": 0.0,
                "duration": 3600.0}))  # each sample stands for its billed hour, however sparse the hours
        if label is not None:
            self.labels[consumer] = label

    @property
    def costs(self) -> pd.DataFrame:
        return pd.concat(self.lines, ignore_index=True)

    @property
    def usage(self) -> pd.DataFrame:
        return pd.concat(self.samples, ignore_index=True)

    @property
    def inventory(self) -> pd.DataFrame:
        rows = [(r, d, 24.0 * GIB) for r, n in self.gpus.items() for d in range(n)]
        return pd.DataFrame(rows, columns=["resource_id", "device", "mem_capacity"])

    @property
    def workloads(self) -> pd.DataFrame | None:
        if not self.labels:
            return None
        return pd.DataFrame({"consumer": list(self.labels), "workload-class": list(self.labels.values())})


def diurnal(hours, low: float, high: float) -> np.ndarray:
    """Utilisation with a daily rhythm: `high` at 14:00 UTC, `low` at 02:00."""
    hours = np.asarray(list(hours))
    return low + (high - low) * 0.5 * (1 + np.cos(2 * np.pi * ((hours % 24) - 14) / 24))


def business_hours(weeks: int) -> list[int]:
    """Weekdays 08:00-20:00 UTC over `weeks` weeks from T0 (a Monday)."""
    return [w * 168 + d * 24 + h for w in range(weeks) for d in range(5) for h in range(8, 20)]


def read_focus_example(name: str) -> pd.DataFrame | None:
    """A FOCUS specification example as the cost lines the billing readers
    produce (a minimal local read: literal `null` is missing)."""
    path = os.path.join(FOCUS_DIR, name)
    if not os.path.exists(path):
        return None
    raw = pd.read_csv(path, dtype=str, na_values=["null"], keep_default_na=False).dropna(how="all")
    pricing = raw["PricingCategory"].map({"Standard": "on_demand", "Committed": "commitment", "Dynamic": "spot"})
    out = pd.DataFrame({
        "resource_id": raw["ResourceId"],
        "start": pd.to_datetime(raw["ChargePeriodStart"], utc=True, errors="coerce"),
        "end": pd.to_datetime(raw["ChargePeriodEnd"], utc=True, errors="coerce"),
        "cost": raw["EffectiveCost"].astype(float),
        "list_cost": raw["ListCost"].astype(float) if "ListCost" in raw else np.nan,
        "billed_cost": raw["BilledCost"].astype(float),
        "effective_cost": raw["EffectiveCost"].astype(float),
        "charge_category": raw["ChargeCategory"],
        "commitment_id": raw["CommitmentDiscountId"],
        "commitment_status": raw["CommitmentDiscountStatus"] if "CommitmentDiscountStatus" in raw else None,
        "pricing": pricing,
        "instance_type": raw["SkuId"] if "SkuId" in raw else None,
    })
    return out.reset_index(drop=True)
