"""Reading billing exports into cost lines: gpucost against pandas, pyarrow
and DuckDB doing the same normalisation on the same files, in one process.

Files: a synthetic AWS CUR 2.0 export and a FOCUS 1.2 export (hourly lines
over a fleet of instances, a mix of on-demand, reserved, savings-plan, spot,
storage, tax and credit lines), each as CSV and as Parquet typed the way AWS
Data Exports write them (timestamps, doubles, tags as map<string, string>).

The normalisation every contestant does: parse the period into UTC instants;
the amortized cost (CUR: AWS's CASE per line item type; FOCUS:
EffectiveCost); the pricing class (on_demand / commitment / spot / other);
the instance type (CUR: product column, else the usage type; FOCUS: from
x_UsageType); the gpu flag (instance type in the catalog's GPU types); the
string columns dictionary-encoded (pandas categoricals). Every contestant
must give the same cost total and pricing counts as gpucost before its time
counts. gpucost does more than the baselines: it also normalises the tags to
JSON strings (the baselines keep them as read), fills list/billed/effective
columns, the charge category and commitment columns, and checks every value.

Usage:
    .venv/bin/python benchmarks/bench_billing.py [--rows 400000] [--repeat 3] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

import gpucost

GPU_TYPES = sorted(gpucost.catalog.instance_types().query("gpus > 0").instance_type)
COMMITMENT_TYPES = ["DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation", "SavingsPlanRecurringFee",
                    "SavingsPlanUpfrontFee", "RIFee"]

# ---- synthetic exports -------------------------------------------------------------


def _fleet(rows: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    n_res = max(rows // 720, 50)  # a month of hours per instance
    instances = np.array(["p4d.24xlarge", "g5.xlarge", "g6e.12xlarge", "m5.large", "r6i.2xlarge", "c6i.4xlarge"])
    res_type = instances[rng.integers(0, len(instances), n_res)]
    res = rng.integers(0, n_res, rows)
    hour = np.sort(rng.integers(0, 720, rows))
    start = np.datetime64("2025-03-01T00:00:00", "s") + hour.astype("timedelta64[h]")
    return rng, res, res_type, start


def cur_table(rows: int) -> pa.Table:
    rng, res, res_type, start = _fleet(rows)
    kinds = np.array(["Usage", "DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation", "Usage",
                      "Usage", "Usage", "Tax", "Credit", "RIFee"])
    kind = kinds[rng.choice(len(kinds), rows, p=[.45, .12, .12, .05, .1, .08, .05, .01, .01, .01])]
    itype = res_type[res]
    spot = (kind == "Usage") & (rng.random(rows) < 0.1)
    usage_type = np.where(spot, "USE1-SpotUsage:", "USE1-BoxUsage:") + itype
    storage = (kind == "Usage") & (rng.random(rows) < 0.15)
    usage_type = np.where(storage, "USE1-EBS:VolumeUsage.gp3", usage_type)
    rid = np.char.add(np.where(storage, "vol-", "i-"), np.char.zfill(res.astype(str), 12))
    unblended = np.round(rng.gamma(2.0, 3.0, rows), 6)
    unblended = np.where(kind == "DiscountedUsage", 0.0, unblended)
    unblended = np.where(kind == "SavingsPlanNegation", -unblended, unblended)
    unblended = np.where(kind == "Credit", -np.abs(unblended), unblended)
    no_resource = np.isin(kind, ["Tax", "Credit", "RIFee", "SavingsPlanNegation"])
    end = start + np.timedelta64(1, "h")

    def ts(a):
        return np.datetime_as_string(a, unit="s") + "Z"

    tags = np.array([json.dumps({"user_team": f"team-{i % 17}", "user_project": f"p-{i % 41}"}) for i in range(997)])
    table = {
        "identity_line_item_id": np.char.add("li-", np.arange(rows).astype(str)),
        "identity_time_interval": np.char.add(np.char.add(ts(start), "/"), ts(end)),
        "bill_billing_period_start_date": np.full(rows, "2025-03-01T00:00:00Z"),
        "bill_payer_account_id": np.full(rows, "111122223333"),
        "line_item_line_item_type": kind,
        "line_item_usage_start_date": ts(start),
        "line_item_usage_end_date": ts(end),
        "line_item_usage_account_id": np.char.add("4444", np.char.zfill((res % 9).astype(str), 8)),
        "line_item_product_code": np.where(storage, "AmazonEC2", "AmazonEC2"),
        "line_item_usage_type": usage_type,
        "line_item_operation": np.full(rows, "RunInstances"),
        "line_item_resource_id": np.where(no_resource, "", rid),
        "line_item_usage_amount": np.ones(rows),
        "line_item_unblended_rate": np.round(np.abs(unblended), 6),
        "line_item_unblended_cost": unblended,
        "line_item_currency_code": np.full(rows, "USD"),
        "line_item_line_item_description": np.char.add("$ per On Demand Linux ", itype),
        "pricing_public_on_demand_cost": np.round(np.abs(unblended) * 1.3, 6),
        "pricing_term": np.where(kind == "DiscountedUsage", "Reserved", "OnDemand"),
        "product_instance_type": np.where(storage, "", itype),
        "product_region_code": np.full(rows, "us-east-1"),
        "product_sku": np.char.add("SKU", np.char.zfill((res % 5000).astype(str), 5)),
        "reservation_effective_cost": np.where(kind == "DiscountedUsage", np.round(rng.gamma(2, 2, rows), 6), 0.0),
        "reservation_reservation_a_r_n": np.where(np.isin(kind, ["DiscountedUsage", "RIFee"]), "arn:aws:ec2:ri-1", ""),
        "reservation_unused_amortized_upfront_fee_for_billing_period": np.where(kind == "RIFee", 1.5, 0.0),
        "reservation_unused_recurring_fee": np.where(kind == "RIFee", 2.25, 0.0),
        "savings_plan_savings_plan_a_r_n": np.where(np.isin(kind, ["SavingsPlanCoveredUsage",
                                                                   "SavingsPlanNegation"]), "arn:aws:sp-1", ""),
        "savings_plan_savings_plan_effective_cost": np.where(kind == "SavingsPlanCoveredUsage",
                                                             np.round(unblended * 0.7, 6), 0.0),
        "savings_plan_total_commitment_to_date": np.zeros(rows),
        "savings_plan_used_commitment": np.zeros(rows),
        "resource_tags": tags[res % len(tags)],
    }
    return pa.table(table)


def focus_table(rows: int) -> pa.Table:
    rng, res, res_type, start = _fleet(rows, seed=11)
    itype = res_type[res]
    category = np.array(["Standard", "Committed", "Dynamic", "Standard"])[rng.choice(4, rows, p=[.6, .25, .1, .05])]
    charge = np.where(rng.random(rows) < 0.01, "Tax", "Usage")
    commitment = np.where(category == "Committed", "arn:aws:savingsplans::1:savingsplan/sp-1", "")
    usage_type = np.where(category == "Dynamic", "USE1-SpotUsage:", "USE1-BoxUsage:") + itype
    billed = np.round(rng.gamma(2.0, 3.0, rows), 6)
    effective = np.where(category == "Committed", np.round(billed * 0.7, 6), billed)
    end = start + np.timedelta64(1, "h")

    def ts(a):
        return np.datetime_as_string(a, unit="s") + "Z"

    tags = np.array([json.dumps({"team": f"team-{i % 17}", "project": f"p-{i % 41}"}) for i in range(997)])
    table = {
        "BilledCost": np.where(category == "Committed", 0.0, billed),
        "BillingAccountId": np.full(rows, "111122223333"),
        "BillingCurrency": np.full(rows, "USD"),
        "BillingPeriodStart": np.full(rows, "2025-03-01T00:00:00Z"),
        "BillingPeriodEnd": np.full(rows, "2025-04-01T00:00:00Z"),
        "ChargeCategory": charge,
        "ChargeFrequency": np.full(rows, "Usage-Based"),
        "ChargePeriodStart": ts(start),
        "ChargePeriodEnd": ts(end),
        "CommitmentDiscountId": commitment,
        "CommitmentDiscountStatus": np.where(category == "Committed", "Used", ""),
        "ConsumedQuantity": np.ones(rows),
        "ConsumedUnit": np.full(rows, "Hours"),
        "EffectiveCost": effective,
        "ListCost": np.round(billed * 1.3, 6),
        "PricingCategory": np.where(charge == "Tax", "", category),
        "PricingQuantity": np.ones(rows),
        "PricingUnit": np.full(rows, "Hours"),
        "ProviderName": np.full(rows, "AWS"),
        "RegionId": np.full(rows, "us-east-1"),
        "ResourceId": np.where(charge == "Tax", "", np.char.add("arn:aws:ec2:us-east-1:1:instance/i-",
                                                                np.char.zfill(res.astype(str), 12))),
        "ResourceType": np.full(rows, "Instance"),
        "ServiceCategory": np.full(rows, "Compute"),
        "ServiceName": np.full(rows, "Amazon Elastic Compute Cloud"),
        "SkuId": np.char.add("SKU", np.char.zfill((res % 5000).astype(str), 5)),
        "SubAccountId": np.char.add("4444", np.char.zfill((res % 9).astype(str), 8)),
        "Tags": tags[res % len(tags)],
        "x_UsageType": usage_type,
    }
    return pa.table(table)


def write_files(directory: Path, rows: int) -> dict[str, Path]:
    files = {}
    for name, table, tag_column in [("cur", cur_table(rows), "resource_tags"), ("focus", focus_table(rows), "Tags")]:
        csv = directory / f"{name}.csv"
        pacsv.write_csv(table, csv, write_options=pacsv.WriteOptions(quoting_style="needed"))
        # Parquet as the exporters type it: instants, doubles, tags as a map, empty strings null.
        typed = {}
        for field in table.schema:
            col = table[field.name]
            if field.name.endswith(("_start_date", "_end_date", "PeriodStart", "PeriodEnd")):
                col = pc.strptime(col, format="%Y-%m-%dT%H:%M:%SZ", unit="ms").cast(pa.timestamp("ms", "UTC"))
            elif field.name == tag_column:
                col = pa.array([list(json.loads(v).items()) for v in col.to_pylist()],
                               pa.map_(pa.string(), pa.string()))
            elif pa.types.is_string(field.type):
                col = pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)
            typed[field.name] = col
        parquet = directory / f"{name}.parquet"
        pq.write_table(pa.table(typed), parquet, row_group_size=100_000)
        files[f"{name}.csv"] = csv
        files[f"{name}.parquet"] = parquet
    return files


# ---- the baselines ------------------------------------------------------------------

CUR_COLUMNS = ["line_item_line_item_type", "line_item_usage_start_date", "line_item_usage_end_date",
               "line_item_resource_id", "line_item_usage_type", "line_item_unblended_cost",
               "reservation_effective_cost", "reservation_reservation_a_r_n",
               "reservation_unused_amortized_upfront_fee_for_billing_period", "reservation_unused_recurring_fee",
               "savings_plan_savings_plan_effective_cost", "savings_plan_total_commitment_to_date",
               "savings_plan_used_commitment", "pricing_term", "product_instance_type",
               "line_item_usage_account_id", "product_region_code", "line_item_product_code", "resource_tags"]
FOCUS_COLUMNS = ["ChargePeriodStart", "ChargePeriodEnd", "EffectiveCost", "ResourceId", "PricingCategory",
                 "CommitmentDiscountId", "x_UsageType", "SubAccountId", "RegionId", "ServiceName", "Tags"]
CATEGORIES = {"cur": ["line_item_resource_id", "line_item_usage_account_id", "product_region_code",
                      "line_item_product_code", "resource_tags"],
              "focus": ["ResourceId", "SubAccountId", "RegionId", "ServiceName", "Tags"]}


def pandas_normalise(df: pd.DataFrame, fmt: str) -> pd.DataFrame:
    out = pd.DataFrame()
    if fmt == "cur":
        k = df["line_item_line_item_type"]
        f = (lambda c: df[c].fillna(0.0).astype(float))
        out["start"] = pd.to_datetime(df["line_item_usage_start_date"], utc=True, format="ISO8601")
        out["end"] = pd.to_datetime(df["line_item_usage_end_date"], utc=True, format="ISO8601")
        ri_arn = df["reservation_reservation_a_r_n"].fillna("")
        out["cost"] = np.select(
            [k == "SavingsPlanCoveredUsage", k == "SavingsPlanRecurringFee", k.isin(["SavingsPlanNegation",
             "SavingsPlanUpfrontFee"]), k == "DiscountedUsage", k == "RIFee", (k == "Fee") & (ri_arn != "")],
            [f("savings_plan_savings_plan_effective_cost"),
             f("savings_plan_total_commitment_to_date") - f("savings_plan_used_commitment"), 0.0,
             f("reservation_effective_cost"),
             f("reservation_unused_amortized_upfront_fee_for_billing_period") + f("reservation_unused_recurring_fee"),
             0.0], f("line_item_unblended_cost"))
        usage_type = df["line_item_usage_type"].fillna("")
        out["pricing"] = np.select(
            [usage_type.str.contains("SpotUsage", regex=False) | (df["pricing_term"] == "Spot"),
             k.isin(COMMITMENT_TYPES) | ((k == "Fee") & (ri_arn != "")), k == "Usage"],
            ["spot", "commitment", "on_demand"], "other")
        itype = df["product_instance_type"].replace("", np.nan)
        itype = itype.fillna(usage_type.str.extract(r"Usage:([^:]*\.[^:]*)$", expand=False))
    else:
        out["start"] = pd.to_datetime(df["ChargePeriodStart"], utc=True, format="ISO8601")
        out["end"] = pd.to_datetime(df["ChargePeriodEnd"], utc=True, format="ISO8601")
        out["cost"] = df["EffectiveCost"].astype(float)
        category = df["PricingCategory"].fillna("")
        committed = df["CommitmentDiscountId"].fillna("") != ""
        out["pricing"] = np.select([committed | (category == "Committed"), category == "Dynamic",
                                    category == "Standard"], ["commitment", "spot", "on_demand"], "other")
        itype = df["x_UsageType"].fillna("").str.extract(r"Usage:([^:]*\.[^:]*)$", expand=False)
    out["instance_type"] = itype.astype("category")
    out["gpu"] = itype.isin(GPU_TYPES).to_numpy()
    out["pricing"] = out["pricing"].astype("category")
    for column in CATEGORIES[fmt]:
        out[column] = df[column] if _nested(df[column]) or df[column].dtype == "category" \
            else df[column].astype("category")
    return out


def _nested(column: pd.Series) -> bool:
    """Whether a column holds maps (lists or dicts), which stay as they are."""
    first = column.dropna().iloc[:1]
    return len(first) == 1 and isinstance(first.iloc[0], list | dict | np.ndarray)


def run_pandas_csv(path: Path, fmt: str) -> pd.DataFrame:
    columns = CUR_COLUMNS if fmt == "cur" else FOCUS_COLUMNS
    return pandas_normalise(pd.read_csv(path, usecols=columns), fmt)


def run_pandas_parquet(path: Path, fmt: str) -> pd.DataFrame:
    columns = CUR_COLUMNS if fmt == "cur" else FOCUS_COLUMNS
    df = pd.read_parquet(path, columns=columns)
    for c in df.columns:
        if str(df[c].dtype).startswith("datetime64"):
            df[c] = df[c].dt.strftime("%Y-%m-%dT%H:%M:%SZ")  # pandas_normalise parses text
    return pandas_normalise(df, fmt)


def arrow_normalise(t: pa.Table, fmt: str) -> pd.DataFrame:
    def num(c):
        return pc.fill_null(t[c].cast(pa.float64()), 0.0)

    def ts(c):
        col = t[c]
        return col if pa.types.is_timestamp(col.type) else pc.strptime(col, format="%Y-%m-%dT%H:%M:%SZ", unit="s")

    def eq(c, v):
        return pc.fill_null(pc.equal(t[c], v), False)

    if fmt == "cur":
        k = t["line_item_line_item_type"]
        is_k = (lambda v: pc.equal(k, v))
        ri = pc.fill_null(pc.not_equal(t["reservation_reservation_a_r_n"], ""), False)
        cost = pc.case_when(
            pa.StructArray.from_arrays([
                pc.fill_null(is_k("SavingsPlanCoveredUsage"), False).combine_chunks(),
                pc.fill_null(is_k("SavingsPlanRecurringFee"), False).combine_chunks(),
                pc.fill_null(pc.or_(is_k("SavingsPlanNegation"), is_k("SavingsPlanUpfrontFee")), False).combine_chunks(),
                pc.fill_null(is_k("DiscountedUsage"), False).combine_chunks(),
                pc.fill_null(is_k("RIFee"), False).combine_chunks(),
                pc.and_(pc.fill_null(is_k("Fee"), False), ri).combine_chunks()], names=list("abcdef")),
            num("savings_plan_savings_plan_effective_cost"),
            pc.subtract(num("savings_plan_total_commitment_to_date"), num("savings_plan_used_commitment")),
            0.0, num("reservation_effective_cost"),
            pc.add(num("reservation_unused_amortized_upfront_fee_for_billing_period"),
                   num("reservation_unused_recurring_fee")),
            0.0, num("line_item_unblended_cost"))
        usage_type = pc.fill_null(t["line_item_usage_type"], "")
        spot = pc.or_(pc.match_substring(usage_type, "SpotUsage"), eq("pricing_term", "Spot"))
        commit = pc.or_(pc.is_in(k, pa.array(COMMITMENT_TYPES)), pc.and_(pc.fill_null(is_k("Fee"), False), ri))
        pricing = pc.if_else(spot, "spot", pc.if_else(commit, "commitment",
                                                        pc.if_else(is_k("Usage"), "on_demand", "other")))
        itype = pc.if_else(pc.fill_null(pc.not_equal(t["product_instance_type"], ""), False),
                           t["product_instance_type"],
                           pc.struct_field(pc.extract_regex(usage_type, r"Usage:(?P<t>[^:]*\.[^:]*)$"), "t"))
        start, end = ts("line_item_usage_start_date"), ts("line_item_usage_end_date")
    else:
        cat = pc.fill_null(t["PricingCategory"], "")
        committed = pc.or_(pc.fill_null(pc.not_equal(t["CommitmentDiscountId"], ""), False), pc.equal(cat, "Committed"))
        pricing = pc.if_else(committed, "commitment", pc.if_else(pc.equal(cat, "Dynamic"), "spot",
                             pc.if_else(pc.equal(cat, "Standard"), "on_demand", "other")))
        cost = t["EffectiveCost"].cast(pa.float64())
        usage_type = pc.fill_null(t["x_UsageType"], "")
        itype = pc.struct_field(pc.extract_regex(usage_type, r"Usage:(?P<t>[^:]*\.[^:]*)$"), "t")
        start, end = ts("ChargePeriodStart"), ts("ChargePeriodEnd")
    out = {"start": start, "end": end, "cost": cost, "pricing": pc.dictionary_encode(pricing),
           "instance_type": pc.dictionary_encode(itype), "gpu": pc.is_in(itype, pa.array(GPU_TYPES))}
    for column in CATEGORIES[fmt]:
        col = t[column]
        out[column] = col if pa.types.is_map(col.type) else pc.dictionary_encode(col)
    return pa.table(out).to_pandas()


def run_pyarrow_csv(path: Path, fmt: str) -> pd.DataFrame:
    columns = CUR_COLUMNS if fmt == "cur" else FOCUS_COLUMNS
    options = pacsv.ConvertOptions(include_columns=columns, strings_can_be_null=True)
    return arrow_normalise(pacsv.read_csv(path, convert_options=options), fmt)


def run_pyarrow_parquet(path: Path, fmt: str) -> pd.DataFrame:
    columns = CUR_COLUMNS if fmt == "cur" else FOCUS_COLUMNS
    return arrow_normalise(pq.read_table(path, columns=columns), fmt)


def duckdb_query(source: str, fmt: str) -> str:
    gpu = ", ".join(f"'{t}'" for t in GPU_TYPES)
    if fmt == "cur":
        commitment = ", ".join(f"'{t}'" for t in COMMITMENT_TYPES)
        itype = ("coalesce(nullif(product_instance_type, ''), "
                 "nullif(regexp_extract(line_item_usage_type, 'Usage:([^:]*\\.[^:]*)$', 1), ''))")
        return f"""
        SELECT CAST(line_item_usage_start_date AS TIMESTAMPTZ) AS start,
               CAST(line_item_usage_end_date AS TIMESTAMPTZ) AS "end",
               CASE line_item_line_item_type
                 WHEN 'SavingsPlanCoveredUsage' THEN coalesce(savings_plan_savings_plan_effective_cost, 0)
                 WHEN 'SavingsPlanRecurringFee' THEN coalesce(savings_plan_total_commitment_to_date, 0)
                                                     - coalesce(savings_plan_used_commitment, 0)
                 WHEN 'SavingsPlanNegation' THEN 0 WHEN 'SavingsPlanUpfrontFee' THEN 0
                 WHEN 'DiscountedUsage' THEN coalesce(reservation_effective_cost, 0)
                 WHEN 'RIFee' THEN coalesce(reservation_unused_amortized_upfront_fee_for_billing_period, 0)
                                   + coalesce(reservation_unused_recurring_fee, 0)
                 ELSE CASE WHEN line_item_line_item_type = 'Fee' AND coalesce(reservation_reservation_a_r_n, '') <> ''
                           THEN 0 ELSE line_item_unblended_cost END END AS cost,
               CASE WHEN contains(coalesce(line_item_usage_type, ''), 'SpotUsage') OR pricing_term = 'Spot' THEN 'spot'
                    WHEN line_item_line_item_type IN ({commitment}) OR (line_item_line_item_type = 'Fee'
                         AND coalesce(reservation_reservation_a_r_n, '') <> '') THEN 'commitment'
                    WHEN line_item_line_item_type = 'Usage' THEN 'on_demand' ELSE 'other' END AS pricing,
               {itype} AS instance_type, coalesce({itype} IN ({gpu}), false) AS gpu,
               line_item_resource_id, line_item_usage_account_id, product_region_code, line_item_product_code,
               resource_tags
        FROM {source}"""
    itype = "nullif(regexp_extract(x_UsageType, 'Usage:([^:]*\\.[^:]*)$', 1), '')"
    return f"""
        SELECT CAST(ChargePeriodStart AS TIMESTAMPTZ) AS start, CAST(ChargePeriodEnd AS TIMESTAMPTZ) AS "end",
               EffectiveCost AS cost,
               CASE WHEN coalesce(CommitmentDiscountId, '') <> '' OR PricingCategory = 'Committed' THEN 'commitment'
                    WHEN PricingCategory = 'Dynamic' THEN 'spot' WHEN PricingCategory = 'Standard' THEN 'on_demand'
                    ELSE 'other' END AS pricing,
               {itype} AS instance_type, coalesce({itype} IN ({gpu}), false) AS gpu,
               ResourceId, SubAccountId, RegionId, ServiceName, Tags
        FROM {source}"""


def run_duckdb(path: Path, fmt: str) -> pd.DataFrame:
    source = f"read_parquet('{path}')" if path.suffix == ".parquet" else f"read_csv('{path}')"
    frame = duckdb.sql(duckdb_query(source, fmt)).df()
    for column in ["pricing", "instance_type", *CATEGORIES[fmt]]:
        if not _nested(frame[column]):
            frame[column] = frame[column].astype("category")
    return frame


def run_gpucost(path: Path, fmt: str) -> pd.DataFrame:
    return gpucost.read_cur(path, progress=False) if fmt == "cur" else gpucost.read_focus(path, progress=False)


# ---- measuring ----------------------------------------------------------------------


def best_time(fn, repeat: int) -> tuple[float, pd.DataFrame]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def check(reference: pd.DataFrame, other: pd.DataFrame, name: str) -> None:
    total, expected = float(other["cost"].sum()), float(reference["cost"].sum())
    if not np.isclose(total, expected, rtol=1e-9, atol=1e-6):
        raise SystemExit(f"{name}: cost total {total} differs from gpucost's {expected}")
    counts = other["pricing"].astype(str).value_counts().sort_index()
    if not counts.equals(reference["pricing"].astype(str).value_counts().sort_index()):
        raise SystemExit(f"{name}: pricing counts differ:\n{counts}")
    if int(np.asarray(other["gpu"]).sum()) != int(reference["gpu"].sum()):
        raise SystemExit(f"{name}: gpu flags differ")


def peak_rss_mb(path: Path, fmt: str) -> tuple[float, float]:
    """Peak resident memory (MB, VmHWM) of a fresh interpreter after the
    imports, and after reading `path` with gpucost. (getrusage's ru_maxrss
    would include the benchmark process's own peak, kept across exec.)"""
    code = (
        "import gpucost; from pathlib import Path\n"
        "def hwm():\n"
        "    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "base = hwm()\n"
        f"f = gpucost.read_{'cur' if fmt == 'cur' else 'focus'}(Path({str(path)!r}), progress=False)\n"
        "print(base, hwm())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]) / 1024, int(out[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where to write the files (default: a temp dir)")
    parser.add_argument("--memory-only", action="store_true",
                        help="only write cur.csv and report gpucost's peak memory reading it")
    args = parser.parse_args()
    directory = args.dir or Path(tempfile.mkdtemp(prefix="gpucost-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    if args.memory_only:
        path = directory / "cur.csv"
        for start in range(0, args.rows, 500_000):  # written in parts: the generator is not what we measure
            part = cur_table(min(500_000, args.rows - start))
            with open(path, "ab" if start else "wb") as f:
                pacsv.write_csv(part, f, write_options=pacsv.WriteOptions(quoting_style="needed",
                                                                           include_header=start == 0))
        base, peak = peak_rss_mb(path, "cur")
        print(f"peak RSS reading cur.csv ({path.stat().st_size / 1e6:.0f} MB, {args.rows:,} rows) with gpucost: "
              f"{peak:.0f} MB (after imports: {base:.0f} MB)")
        if args.dir is None:
            path.unlink()
            directory.rmdir()
        return
    files = write_files(directory, args.rows)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"machine: {platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"versions: gpucost {gpucost.__version__}, pandas {pd.__version__}, pyarrow {pa.__version__}, "
          f"duckdb {duckdb.__version__}, python {platform.python_version()}")
    print(f"rows per file: {args.rows:,}; best of {args.repeat}\n")
    print(f"{'file':<15}{'MB':>8}  {'reader':<34}{'seconds':>9}{'MB/s':>9}{'rows/s':>12}")
    contestants = [
        ("gpucost", run_gpucost, run_gpucost),
        ("pandas (read_csv / read_parquet)", run_pandas_csv, run_pandas_parquet),
        ("pyarrow (csv / parquet + compute)", run_pyarrow_csv, run_pyarrow_parquet),
        ("DuckDB (read_csv / read_parquet)", run_duckdb, run_duckdb),
    ]
    for key, path in files.items():
        fmt = key.split(".")[0]
        size = path.stat().st_size / 1e6
        reference = None
        for name, on_csv, on_parquet in contestants:
            fn = on_parquet if path.suffix == ".parquet" else on_csv
            seconds, result = best_time(lambda: fn(path, fmt), args.repeat)
            if reference is None:
                reference = result
            else:
                check(reference, result, f"{name} on {key}")
            print(f"{key:<15}{size:>8.1f}  {name:<34}{seconds:>9.3f}{size / seconds:>9.1f}"
                  f"{len(result) / seconds:>12,.0f}")
        print()
    for key in ("cur.csv", "cur.parquet"):
        base, peak = peak_rss_mb(files[key], "cur")
        print(f"peak RSS reading {key} ({files[key].stat().st_size / 1e6:.0f} MB) with gpucost: {peak:.0f} MB "
              f"(after imports: {base:.0f} MB)")
    if args.dir is None:
        for path in files.values():
            path.unlink()
        directory.rmdir()


if __name__ == "__main__":
    main()
