"""The demo fleet in the formats users have (docs/demo.md).

:func:`gpucost.simulate.simulate_demo_month` makes the month as tables;
:func:`write_demo_files` writes it as the files a FinOps team starts from:

============================  ===============================================
``focus.csv.gz``              the bill as a FOCUS 1.2 export
``cur2.csv.gz``               the same bill as AWS CUR 2.0 (Data Exports)
``prometheus/<metric>.json``  DCGM exporter series as Prometheus answers
                              ``/api/v1/query_range`` (step = the interval)
``pods.json``, ``nodes.json`` ``kubectl get pods -A -o json`` and
                              ``kubectl get nodes -o json``
``spot_interruptions.jsonl``  EventBridge "EC2 Spot Instance Interruption
                              Warning" events
``budgets.csv``               monthly budgets per team (key, value, amount, thresholds)
``rates.csv``                 purchase options per instance type (for the advisor)
``gpucost.toml``              a config file naming all of the above
============================  ===============================================

Writing needs no reader; reading the files back goes through gpucost's
readers (:func:`load_demo`). Files are written atomically and byte for byte
the same for the same seed.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from gpucost.model import Purchase
from gpucost.simulate import (DEMO_ACCOUNT, DEMO_REGION, DEMO_RI_ARN, DEMO_SP_ARN, DemoFleet,
                              simulate_demo_month)

__all__ = ["write_demo_files", "demo_fleet", "FOCUS_COLUMNS", "CUR2_COLUMNS", "DCGM_METRICS", "atomic_write"]

#: FOCUS 1.2 columns written, in the order of the specification's examples.
FOCUS_COLUMNS = [
    "BilledCost", "BillingAccountId", "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory",
    "ChargeClass", "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
    "CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountStatus", "CommitmentDiscountType",
    "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "EffectiveCost", "ListCost", "ListUnitPrice",
    "PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName", "RegionId", "ResourceId", "ResourceName",
    "ResourceType", "ServiceCategory", "ServiceName", "SkuId", "SkuPriceDetails", "SkuPriceId", "SubAccountId",
    "Tags", "x_UsageType",
]
#: AWS CUR 2.0 columns written (snake_case, resource_tags as a JSON map).
CUR2_COLUMNS = [
    "identity_line_item_id", "identity_time_interval", "bill_billing_period_start_date",
    "bill_billing_period_end_date", "bill_payer_account_id", "line_item_usage_account_id",
    "line_item_line_item_type", "line_item_usage_start_date", "line_item_usage_end_date", "line_item_resource_id",
    "line_item_usage_type", "line_item_operation", "line_item_product_code", "line_item_usage_amount",
    "line_item_unblended_rate", "line_item_unblended_cost", "line_item_currency_code", "pricing_term",
    "pricing_public_on_demand_cost", "product_instance_type", "product_region_code", "reservation_effective_cost",
    "reservation_reservation_a_r_n", "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee", "savings_plan_savings_plan_a_r_n",
    "savings_plan_savings_plan_effective_cost", "savings_plan_total_commitment_to_date",
    "savings_plan_used_commitment", "resource_tags",
]
#: DCGM exporter fields written (exporter <= 4.8 units: percent and MiB).
DCGM_METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED")
GPU_MODELS = {"p4d.24xlarge": "NVIDIA A100-SXM4-40GB", "g5.xlarge": "NVIDIA A10G",
              "g5.12xlarge": "NVIDIA A10G", "p3.8xlarge": "Tesla V100-SXM2-16GB"}
_ZONE = f"{DEMO_REGION}a"


def atomic_write(path: str | os.PathLike, write: Callable[[io.BufferedWriter], None]) -> Path:
    """Writes a file through a temporary file in the same directory and a
    rename: readers see the old file or the whole new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report or a .prom file is for others to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _write_text(path: Path, text: str, compress: bool = False) -> Path:
    data = text.encode("utf-8")
    if compress:  # mtime=0: the same bytes every time
        data = gzip.compress(data, compresslevel=6, mtime=0)
    return atomic_write(path, lambda f: f.write(data))


def _iso(instants: pd.Series) -> pd.Series:
    return instants.dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _money(values) -> pd.Series:
    return pd.Series(np.round(np.asarray(values, dtype=np.float64), 10)).map(lambda v: f"{v:.10g}")


def focus_frame(fleet: DemoFleet) -> pd.DataFrame:
    """The bill as FOCUS 1.2 columns (strings; None = NULL)."""
    b = fleet.bill
    n = len(b)
    purchase = b["charge_category"].eq("Purchase")
    unused = b["commitment_status"].eq("Unused")
    commitment = b["commitment_id"].notna()
    is_sp = b["commitment_id"].eq(DEMO_SP_ARN)
    instance = b["instance_type"].notna()
    spot = b["pricing"].eq(Purchase.SPOT)
    usage_type = np.where(instance, np.where(spot, "SpotUsage:", "BoxUsage:") + b["instance_type"].fillna(""),
                          None)
    usage_type = np.where(b["service"].eq("Amazon Simple Storage Service"), "TimedStorage-ByteHrs", usage_type)
    usage_type = np.where(b["service"].eq("Amazon Virtual Private Cloud"), "NatGateway-Hours", usage_type)
    quantity = b["quantity"].round(6).map(lambda v: f"{v:g}")
    rate = np.where(b["quantity"] > 0, b["list_cost"] / b["quantity"].where(b["quantity"] > 0, 1.0), 0.0)
    focus = pd.DataFrame({
        "BilledCost": _money(b["billed_cost"]),
        "BillingAccountId": DEMO_ACCOUNT,
        "BillingCurrency": "USD",
        "BillingPeriodEnd": _iso(pd.Series([fleet.end] * n)),
        "BillingPeriodStart": _iso(pd.Series([fleet.start] * n)),
        "ChargeCategory": b["charge_category"],
        "ChargeClass": None,
        "ChargeDescription": np.where(instance, b["instance_type"].fillna("") + " instance hours", b["service"]),
        "ChargeFrequency": np.where(purchase, "Recurring", "Usage-Based"),
        "ChargePeriodEnd": _iso(b["end"]),
        "ChargePeriodStart": _iso(b["start"]),
        "CommitmentDiscountCategory": np.where(commitment, np.where(is_sp, "Spend", "Usage"), None),
        "CommitmentDiscountId": b["commitment_id"],
        "CommitmentDiscountStatus": b["commitment_status"],
        "CommitmentDiscountType": np.where(commitment, np.where(is_sp, "Compute Savings Plan", "Reserved Instance"),
                                           None),
        "ConsumedQuantity": np.where(purchase | unused, None, quantity),
        "ConsumedUnit": np.where(purchase | unused, None, np.where(instance, "Hours", "Units")),
        "ContractedCost": _money(np.where(purchase, b["billed_cost"], b["list_cost"])),
        "EffectiveCost": _money(b["effective_cost"]),
        "ListCost": _money(np.where(purchase, b["billed_cost"], b["list_cost"])),
        "ListUnitPrice": _money(np.where(purchase, 1.0, rate)),
        "PricingCategory": np.select([purchase, spot, commitment], ["Standard", "Dynamic", "Committed"], "Standard"),
        "PricingQuantity": np.where(purchase, _money(b["billed_cost"]), quantity),
        "PricingUnit": np.where(purchase, "USD", np.where(instance, "Hours", "Units")),
        "ProviderName": "AWS",
        "RegionId": DEMO_REGION,
        "ResourceId": np.where(instance, f"arn:aws:ec2:{DEMO_REGION}:{DEMO_ACCOUNT}:instance/" + b["resource_id"],
                               b["resource_id"]),
        "ResourceName": None,
        "ResourceType": np.select([instance, commitment & is_sp, commitment],
                                  ["Instance", "Savings Plan", "Reserved Instance"], "Other"),
        "ServiceCategory": np.where(b["service"].eq("Amazon Simple Storage Service"), "Storage",
                                    np.where(b["service"].eq("Amazon Virtual Private Cloud"), "Networking",
                                             "Compute")),
        "ServiceName": b["service"],
        "SkuId": np.where(instance, "SKU-" + b["instance_type"].fillna("").str.upper(), "SKU-" +
                          b["service"].str.split().str[-1].str.upper()),
        "SkuPriceDetails": [json.dumps({"InstanceType": t}) if isinstance(t, str) else None
                            for t in b["instance_type"]],
        "SkuPriceId": np.where(spot, "SKU-SPOT", np.where(commitment, "SKU-COMMITTED", "SKU-OD")),
        "SubAccountId": DEMO_ACCOUNT,
        "Tags": [json.dumps(t, separators=(",", ":")) if t else None for t in b["tags"]],
        "x_UsageType": usage_type,
    })
    return focus[FOCUS_COLUMNS]


def cur2_frame(fleet: DemoFleet) -> pd.DataFrame:
    """The same bill as AWS CUR 2.0 line items: covered usage, savings-plan
    negations, RI and savings-plan fees (their unused parts), spot usage."""
    b = fleet.bill
    rows = []
    unused_rows = b[b["commitment_status"].eq("Unused")]
    unused = dict(zip(zip(unused_rows["commitment_id"], unused_rows["start"]), unused_rows["cost"]))
    for r in b.itertuples(index=False):  # demo writer: a few thousand rows
        interval = f"{r.start:%Y-%m-%dT%H:%M:%SZ}/{r.end:%Y-%m-%dT%H:%M:%SZ}"
        base = {
            "identity_time_interval": interval,
            "line_item_usage_start_date": f"{r.start:%Y-%m-%dT%H:%M:%SZ}",
            "line_item_usage_end_date": f"{r.end:%Y-%m-%dT%H:%M:%SZ}",
            "line_item_currency_code": "USD",
            "product_region_code": DEMO_REGION,
            "line_item_product_code": "AmazonEC2",
            "resource_tags": json.dumps({f"user_{k.replace('-', '_')}": v for k, v in r.tags.items()},
                                        separators=(",", ":")) if r.tags else "{}",
        }
        if isinstance(r.instance_type, str):
            base |= {"line_item_resource_id": r.resource_id, "product_instance_type": r.instance_type,
                     "line_item_operation": "RunInstances", "line_item_usage_amount": r.quantity,
                     "pricing_public_on_demand_cost": r.list_cost}
            rate = r.list_cost / r.quantity if r.quantity else 0.0
            if r.pricing == Purchase.SPOT:
                rows.append(base | {"line_item_line_item_type": "Usage", "pricing_term": "Spot",
                                    "line_item_usage_type": f"SpotUsage:{r.instance_type}",
                                    "line_item_operation": "RunInstances:SV001",
                                    "line_item_unblended_rate": r.cost / r.quantity if r.quantity else 0.0,
                                    "line_item_unblended_cost": r.cost})
            elif r.commitment_id == DEMO_RI_ARN:
                rows.append(base | {"line_item_line_item_type": "DiscountedUsage", "pricing_term": "Reserved",
                                    "line_item_usage_type": f"BoxUsage:{r.instance_type}",
                                    "line_item_unblended_rate": 0.0, "line_item_unblended_cost": 0.0,
                                    "reservation_effective_cost": r.cost, "reservation_reservation_a_r_n": DEMO_RI_ARN})
            elif r.commitment_id == DEMO_SP_ARN:
                covered = base | {"line_item_usage_type": f"BoxUsage:{r.instance_type}", "pricing_term": "OnDemand",
                                  "line_item_unblended_rate": rate, "savings_plan_savings_plan_a_r_n": DEMO_SP_ARN}
                rows.append(covered | {"line_item_line_item_type": "SavingsPlanCoveredUsage",
                                       "line_item_unblended_cost": r.list_cost,
                                       "savings_plan_savings_plan_effective_cost": r.cost})
                rows.append(covered | {"line_item_line_item_type": "SavingsPlanNegation",
                                       "line_item_unblended_cost": -r.list_cost, "line_item_usage_amount": 0.0,
                                       "pricing_public_on_demand_cost": None, "pricing_term": None})
            else:
                rows.append(base | {"line_item_line_item_type": "Usage", "pricing_term": "OnDemand",
                                    "line_item_usage_type": f"BoxUsage:{r.instance_type}",
                                    "line_item_unblended_rate": rate, "line_item_unblended_cost": r.cost})
        elif r.commitment_id == DEMO_SP_ARN and r.charge_category == "Purchase":
            used = r.billed_cost - unused.get((r.commitment_id, r.start), 0.0)
            rows.append(base | {"line_item_line_item_type": "SavingsPlanRecurringFee",
                                "line_item_usage_type": "ComputeSP:1yrNoUpfront", "line_item_product_code":
                                "ComputeSavingsPlans", "line_item_unblended_cost": r.billed_cost,
                                "savings_plan_savings_plan_a_r_n": DEMO_SP_ARN,
                                "savings_plan_total_commitment_to_date": r.billed_cost,
                                "savings_plan_used_commitment": used})
        elif r.commitment_id == DEMO_RI_ARN and r.charge_category == "Purchase":
            rows.append(base | {"line_item_line_item_type": "RIFee",
                                "line_item_usage_type": "HeavyUsage:p4d.24xlarge",
                                "line_item_unblended_cost": r.billed_cost,
                                "reservation_reservation_a_r_n": DEMO_RI_ARN,
                                "reservation_unused_amortized_upfront_fee_for_billing_period": 0.0,
                                "reservation_unused_recurring_fee": unused.get((r.commitment_id, r.start), 0.0)})
        elif r.commitment_status == "Unused":
            continue  # CUR carries unused commitment on the fee lines
        else:
            product = {"Amazon Simple Storage Service": "AmazonS3", "Amazon Virtual Private Cloud": "AmazonVPC"}
            rows.append(base | {"line_item_line_item_type": "Usage", "line_item_resource_id": r.resource_id,
                                "line_item_product_code": product.get(r.service, "AWS"),
                                "line_item_usage_type": "TimedStorage-ByteHrs" if "Storage" in r.service
                                else "NatGateway-Hours", "line_item_usage_amount": r.quantity,
                                "line_item_unblended_rate": r.cost / r.quantity, "line_item_unblended_cost": r.cost,
                                "pricing_term": "OnDemand", "pricing_public_on_demand_cost": r.list_cost})
    cur = pd.DataFrame(rows).reindex(columns=CUR2_COLUMNS)
    cur["identity_line_item_id"] = [f"li-{i:07d}" for i in range(len(cur))]
    cur["bill_billing_period_start_date"] = f"{fleet.start:%Y-%m-%dT%H:%M:%SZ}"
    cur["bill_billing_period_end_date"] = f"{fleet.end:%Y-%m-%dT%H:%M:%SZ}"
    cur["bill_payer_account_id"] = DEMO_ACCOUNT
    cur["line_item_usage_account_id"] = DEMO_ACCOUNT
    for column in CUR2_COLUMNS:
        if column.endswith(("_cost", "_rate", "_amount", "_fee", "_to_date", "_commitment",
                            "_billing_period")) and not column.endswith("_date"):
            values = pd.to_numeric(cur[column])
            cur[column] = values.map(lambda v: None if pd.isna(v) else f"{round(v, 10):.10g}")
    return cur


def _prometheus_bodies(fleet: DemoFleet) -> dict[str, str]:
    """One query_range answer per DCGM metric: a series per (GPU or MIG
    instance, pod) and the points it had, as DCGM exporter <= 4.8 reports them."""
    u = fleet.usage
    res = fleet.resources.set_index("resource_id")
    rid = u["resource_id"].astype(str).to_numpy()
    consumer = u["consumer"].astype(str).to_numpy()
    mig = u["share"].to_numpy() < 1.0
    # A MIG instance is a share below 1 that is not time-slicing: the demo's MIG host.
    mig &= np.asarray(res.loc[rid, "role"].to_numpy() == "mig")
    seconds = u["timestamp"].array.asi8 // {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[u["timestamp"].dt.unit]
    keys = pd.DataFrame({"rid": rid, "device": u["device"].to_numpy(), "consumer": consumer, "mig": mig,
                         "share": np.round(u["share"].to_numpy(), 6)})
    group_ids, uniques = pd.factorize(pd.MultiIndex.from_frame(keys))
    order = np.argsort(group_ids, kind="stable")
    bounds = np.flatnonzero(np.diff(group_ids[order])) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(order)]))
    util_pct = np.rint(u["util"].to_numpy() * 100).astype(np.int64)
    engine = np.round(u["util"].to_numpy(), 3)
    mem_mib = np.rint(u["mem_used"].to_numpy() / 2**20).astype(np.int64)
    results: dict[str, list[str]] = {m: [] for m in DCGM_METRICS}
    profiles = {round(3 / 7, 6): ("3g.20gb", "1"), round(2 / 7, 6): ("2g.10gb", "2"), round(1 / 7, 6): ("1g.5gb", "3")}
    mig_slot: dict[tuple, str] = {}
    for (r, device, pod, is_mig, share), s, e in zip(uniques, starts, ends):
        rows = order[s:e]
        node = res.at[r, "node"]
        namespace, _, name = pod.partition("/")
        labels = {"gpu": str(device), "UUID": _uuid(r, device), "device": f"nvidia{device}",
                  "modelName": GPU_MODELS[res.at[r, "instance_type"]]}
        if is_mig:
            profile, gi = profiles[share]
            if profile == "1g.5gb":  # two 1g instances: ids 3 and 4 in pod order
                gi = mig_slot.setdefault((r, device, pod), str(3 + sum(1 for key in mig_slot if key[:2] == (r, device))))
            labels |= {"GPU_I_PROFILE": profile, "GPU_I_ID": gi}
        labels |= {"Hostname": node, "container": name.rsplit("-", 1)[0] if name else "", "namespace": namespace,
                   "pod": name, "instance": f"{node}:9400", "job": "dcgm-exporter"}
        times = seconds[rows]
        for metric, values in (("DCGM_FI_DEV_GPU_UTIL", None if is_mig else util_pct[rows]),
                               ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", engine[rows] if is_mig else None),
                               ("DCGM_FI_DEV_FB_USED", mem_mib[rows])):
            if values is None:
                continue
            metric_labels = json.dumps({"__name__": metric, **labels}, separators=(",", ":"))
            points = ",".join(f'[{t},"{v:g}"]' for t, v in zip(times.tolist(), values.tolist()))
            results[metric].append(f'{{"metric":{metric_labels},"values":[{points}]}}')
    return {m: '{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(series) + "]}}\n"
            for m, series in results.items()}


def _uuid(rid: str, device: int) -> str:
    h = f"{abs(hash_str(rid)):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{device:04d}{h[24:32]}"


def hash_str(text: str) -> int:
    """A stable (process-independent) hash: FNV-1a, 128 bits."""
    h = 0x6C62272E07BB014262B821756295C58D
    for byte in text.encode():
        h = ((h ^ byte) * 0x0000000001000000000000000000013B) % 2**128
    return h


def _kubectl(fleet: DemoFleet) -> tuple[str, str]:
    w = fleet.workloads
    res = fleet.resources
    # A pod's node: where its first sample was.
    first = fleet.usage.loc[fleet.usage["consumer"].astype(str) != "", ["consumer", "resource_id"]]
    first = first.drop_duplicates("consumer").astype(str).set_index("consumer")["resource_id"]
    node_of = dict(zip(res["resource_id"], res["node"]))
    keys = {"team": "team-id", "project": "project-id", "user": "user-id", "job": "job-id", "attempt": "attempt"}
    pods = []
    consumers = sorted(set(first.index))
    labelled = w.set_index("consumer")
    for consumer in consumers:
        namespace, _, name = consumer.partition("/")
        labels = {}
        if consumer in labelled.index:
            row = labelled.loc[consumer]
            labels = {keys[c]: row[c] for c in keys if row[c] is not None}
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": namespace, "labels": labels},
                     "spec": {"nodeName": node_of[first[consumer]]}})
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": r.node, "labels": {"node.kubernetes.io/instance-type": r.instance_type,
                                                      "topology.kubernetes.io/zone": _ZONE}},
              "spec": {"providerID": f"aws:///{_ZONE}/{r.resource_id}"}}
             for r in res.itertuples(index=False)]

    def as_list(items):
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}},
                          indent=1) + "\n"
    return as_list(pods), as_list(nodes)


def _interruptions_jsonl(fleet: DemoFleet) -> str:
    lines = []
    for i, r in enumerate(fleet.interruptions.itertuples(index=False)):
        arn = f"arn:aws:ec2:{DEMO_REGION}:{DEMO_ACCOUNT}:instance/{r.resource_id}"
        lines.append(json.dumps({
            "version": "0", "id": f"00000000-0000-4000-8000-{i:012d}",
            "detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2",
            "account": DEMO_ACCOUNT, "time": f"{r.time:%Y-%m-%dT%H:%M:%SZ}", "region": DEMO_REGION,
            "resources": [arn], "detail": {"instance-id": r.resource_id, "instance-action": "terminate"}},
            separators=(",", ":")))
    return "\n".join(lines) + "\n"


CONFIG_TEMPLATE = """\
# gpucost configuration for the demo fleet (docs/cli.md). Every key is also a flag.
[sources]
bill = "focus.csv.gz"                 # or "cur2.csv.gz": the same bill as AWS CUR 2.0
telemetry = ["prometheus/DCGM_FI_DEV_GPU_UTIL.json", "prometheus/DCGM_FI_PROF_GR_ENGINE_ACTIVE.json",
             "prometheus/DCGM_FI_DEV_FB_USED.json"]
step = {interval}                     # seconds per telemetry point
pods = "pods.json"
nodes = "nodes.json"
interruptions = "spot_interruptions.jsonl"
rates = "rates.csv"                   # purchase options for `gpucost advise`

[labels]                              # result column = pod label key
team = "team-id"
project = "project-id"
user = "user-id"
job = "job-id"
attempt = "attempt"                   # spot jobs: the attempt number of each pod

[policy]
basis = "allocated"
idle = "keep"

[budgets]
file = "budgets.csv"
today = "2026-03-20"                  # month to date and forecast as on this day
"""


def write_demo_files(directory: str | os.PathLike, fleet: DemoFleet | None = None, *,
                     progress: bool = False) -> dict[str, Path]:
    """Writes the demo month in the formats users have into ``directory``
    (created if needed) and returns the paths by name. Each file is written
    atomically; the same fleet gives the same bytes."""
    fleet = fleet or demo_fleet()
    out = Path(directory)
    paths: dict[str, Path] = {}
    tasks = [("focus", "focus.csv.gz"), ("cur2", "cur2.csv.gz"), ("telemetry", "prometheus"),
             ("pods", "pods.json"), ("interruptions", "spot_interruptions.jsonl"), ("budgets", "budgets.csv"),
             ("rates", "rates.csv"), ("config", "gpucost.toml")]
    bar = _progress(len(tasks), "writing demo files", progress)
    for name, file in tasks:
        if name == "focus":
            paths[name] = _write_text(out / file, focus_frame(fleet).to_csv(index=False, lineterminator="\n"), True)
        elif name == "cur2":
            paths[name] = _write_text(out / file, cur2_frame(fleet).to_csv(index=False, lineterminator="\n"), True)
        elif name == "telemetry":
            for metric, body in _prometheus_bodies(fleet).items():
                paths[metric] = _write_text(out / file / f"{metric}.json", body)
        elif name == "pods":
            pods, nodes = _kubectl(fleet)
            paths["pods"] = _write_text(out / "pods.json", pods)
            paths["nodes"] = _write_text(out / "nodes.json", nodes)
        elif name == "interruptions":
            paths[name] = _write_text(out / file, _interruptions_jsonl(fleet))
        elif name == "budgets":
            paths[name] = _write_text(out / file, fleet.budgets.to_csv(index=False, lineterminator="\n"))
        elif name == "rates":
            paths[name] = _write_text(out / file, fleet.rates.to_csv(index=False, lineterminator="\n"))
        else:
            paths[name] = _write_text(out / file, CONFIG_TEMPLATE.format(interval=fleet.interval))
        bar.update(1)
    bar.close()
    return paths


_DEMO_CACHE: dict[int, DemoFleet] = {}


def demo_fleet(seed: int = 0) -> DemoFleet:
    """The demo month: simulated once a process (it is the same every time),
    handed out as a copy, so a caller that changes its tables changes no
    later call's."""
    if seed not in _DEMO_CACHE:
        _DEMO_CACHE[seed] = simulate_demo_month(seed=seed)
    cached = _DEMO_CACHE[seed]
    return dataclasses.replace(cached, **{field.name: getattr(cached, field.name).copy()
                                          for field in dataclasses.fields(cached)
                                          if isinstance(getattr(cached, field.name), pd.DataFrame)})


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, unit="file", leave=False)


#: The demo's on-prem cluster: two DGX H100 nodes bought at $320,000 each in
#: January 2026 (4-year straight line), $20,000 a year of support, facility at
#: $150 per kW-month, 1.5 kW of base draw beside the GPUs; PUE 1.3 at
#: $0.12/kWh on a 380 gCO2e/kWh grid (docs/onprem.md, docs/energy.md).
ONPREM_CLASSES = {"dgx-h100": {"instance_type": "dgx-h100", "price": 320000, "in_service": "2026-01-01",
                               "life_years": 4, "support_per_year": 20000, "facility_per_kw_month": 150,
                               "base_power_w": 1500}}
ONPREM_NODES = {"dgx01": "dgx-h100", "dgx02": "dgx-h100"}
ONPREM_ACCOUNTS = ("lab-chen", "lab-ruiz", "lab-svensson")
ONPREM_ENERGY = {"pue": 1.3, "tariff": 0.12, "carbon_intensity": 380.0}


def demo_onprem(start: pd.Timestamp, end: pd.Timestamp, seed: int = 0) -> dict[str, pd.DataFrame]:
    """An owned Slurm cluster beside the demo's cloud fleet: hourly samples of
    its 16 GPUs (jobs of three accounts in blocks of 4 to 48 hours, free time
    between them, each GPU's measured draw), its cost lines from
    :func:`gpucost.owned_costs`, inventory and workloads (job -> account,
    user)."""
    from gpucost.catalog import inventory as catalog_inventory
    from gpucost.owned import owned_costs
    rng = np.random.default_rng(seed + 31)
    hours = pd.date_range(start, end, freq="h", inclusive="left")
    rows, jobs = [], []
    for node in ONPREM_NODES:
        for gpu in range(8):
            at = 0
            while at < len(hours):
                length = int(rng.integers(4, 49))
                if rng.random() < 0.7:  # a job holds the GPU; else it sits free
                    job = f"{len(jobs) + 1:05d}"
                    account = ONPREM_ACCOUNTS[int(rng.integers(len(ONPREM_ACCOUNTS)))]
                    jobs.append((job, account, f"{account[4:]}-{int(rng.integers(1, 4))}"))
                    util = float(rng.uniform(0.35, 0.95))
                    rows.append((node, gpu, at, min(at + length, len(hours)), job, util, 90.0 + 610.0 * util))
                else:
                    rows.append((node, gpu, at, min(at + length, len(hours)), "", 0.0, 70.0))
                at += length
    spans = pd.DataFrame(rows, columns=["resource_id", "device", "first", "last", "consumer", "util", "power_w"])
    lengths = (spans["last"] - spans["first"]).to_numpy()
    which = np.repeat(np.arange(len(spans)), lengths)
    offset = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    usage = spans.iloc[which].reset_index(drop=True)
    usage.insert(0, "timestamp", hours[usage["first"].to_numpy() + offset])
    usage = usage.drop(columns=["first", "last"]).assign(share=1.0, mem_used=0.0, duration=3600.0)
    workloads = pd.DataFrame(jobs, columns=["consumer", "account", "user"])
    costs = owned_costs(ONPREM_CLASSES, ONPREM_NODES, start, end, usage=usage, pue=ONPREM_ENERGY["pue"],
                        tariff=ONPREM_ENERGY["tariff"])
    inventory = catalog_inventory(pd.DataFrame({"resource_id": list(ONPREM_NODES), "instance_type": "dgx-h100"}))
    return {"costs": costs, "usage": usage, "inventory": inventory, "workloads": workloads}
