"""The allocation written back as FOCUS 1.3 (docs/focus.md): every origin
charge that gpucost split becomes its *allocated charges* (FOCUS's data
generator-calculated split cost allocation), one per holder of its GPUs
(a workload, ``__idle__``, ``__down__``, ``__unobserved__``), with every column
of the origin charge carried over: dimensions and unit prices equal, the
summable metrics split so that they add up exactly to the origin charge's.
Charges that were not split (no GPU inventory, nothing measured them) pass
through unchanged, so the output is a complete FOCUS dataset.

The weights are the engine's own (``allocate(..., by=["cost_line",
"consumer"])`` on lines of amount 1: each holder's fraction of its line), and
the splitting is numpy/pyarrow over whole columns: no Python per row.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from gpucost.allocation import allocate, check_not_allocated
from gpucost.errors import InvalidInputError
from gpucost.frames import Table
from gpucost.model import Purchase
from gpucost.money import exact_decimals, minor_unit, split_exact

__all__ = ["to_focus", "FOCUS_SUMMABLE", "FOCUS_ALLOCATED"]

#: FOCUS metrics that add up across allocated charges (split); every other
#: column, unit prices included, is copied from the origin charge.
FOCUS_SUMMABLE = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "PricingCurrencyEffectiveCost",
                  "PricingCurrencyListCost", "PricingCurrencyContractedCost", "ConsumedQuantity", "PricingQuantity",
                  "CommitmentDiscountQuantity")
_QUANTITIES = ("ConsumedQuantity", "PricingQuantity", "CommitmentDiscountQuantity")
#: FOCUS 1.3's split cost allocation columns: null on charges not split.
FOCUS_ALLOCATED = ("AllocatedMethodId", "AllocatedMethodDetails", "AllocatedResourceId", "AllocatedResourceName",
                   "AllocatedTags")
_PSEUDO = {"__idle__": "idle", "__down__": "down", "__unobserved__": "unobserved", "__unattributed__": "unattributed"}
_NOT_SPLIT = ("__unattributed__", "__unobserved__")  # a line wholly on one of these passes through
_QUANTITY_DECIMALS = 6
_PRICING = {str(p): "Standard" if p == Purchase.ON_DEMAND else "Dynamic" if p == Purchase.SPOT else "Committed"
            for p in Purchase if p in (Purchase.ON_DEMAND, Purchase.SPOT) or p.is_commitment}


def to_focus(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *, focus: Any = None,
             basis: str = "allocated", alpha: float = 0.5, idle: str = "keep", interval: float | None = None,
             downtime: Any = None, strict: bool = False, threads: int | None = None,
             path: str | os.PathLike | None = None) -> pa.Table:
    """The allocation as a FOCUS 1.3 dataset of split cost allocations
    (docs/focus.md): for each cost line that was split, one allocated charge
    per holder (``AllocatedResourceId``/``Name`` the consumer, or
    ``__idle__``, ``__down__``, ``__unobserved__``; ``AllocatedTags`` its
    workload labels as JSON; ``AllocatedMethodId`` ``gpucost-<basis>``;
    ``AllocatedMethodDetails`` the weights as JSON); lines not split pass
    through. The summable metrics (``FOCUS_SUMMABLE``) of a line's allocated
    charges add up exactly to the line's (largest remainder in units of the
    value's own last decimal, at least the currency's minor unit).

    ``costs``, ``usage``, ``inventory``, ``workloads``, ``basis``, ``alpha``,
    ``idle``, ``interval``, ``downtime``, ``strict``, ``threads``: as for
    :func:`gpucost.allocate`. ``focus``: the FOCUS export (path or pyarrow
    Table) the cost lines were read from, row for row; by default the file
    :func:`gpucost.read_focus` read (``costs.attrs``), and for lines from
    another bill (CUR, GCP, Azure), owned hardware or an invoice, columns
    built from the cost lines (docs/focus.md, "From other bills").
    ``path``: also write the dataset there (Parquet for ``.parquet``, else
    CSV).

    Examples:
        One GPU hour billed $8.00: ``train`` held it 30 minutes, nobody the rest.

        >>> costs = pd.DataFrame({"resource_id": ["node-1"], "start": [pd.Timestamp("2026-03-01", tz="UTC")],
        ...                       "end": [pd.Timestamp("2026-03-01 01:00", tz="UTC")], "cost": [8.0]})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=2, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": ["train", None],
        ...                       "share": 1.0, "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> out = gpucost.to_focus(costs, usage, inventory, interval=1800)
        >>> out.select(["ResourceId", "EffectiveCost", "AllocatedMethodId", "AllocatedResourceId"]).to_pandas()
          ResourceId  EffectiveCost  AllocatedMethodId AllocatedResourceId
        0     node-1            4.0  gpucost-allocated            __idle__
        1     node-1            4.0  gpucost-allocated               train
    """
    frame = _pandas(costs, "costs")
    check_not_allocated(frame)
    origin = _origin_rows(frame, focus)
    fractions = _fractions(frame, usage, inventory, workloads, basis=basis, alpha=alpha, idle=idle,
                           interval=interval, downtime=downtime, strict=strict, threads=threads)
    out = _split(origin, frame, fractions, workloads, basis=basis, alpha=alpha, idle=idle)
    if path is not None:
        write_focus(out, path)
    return out


def _pandas(data: Any, name: str) -> pd.DataFrame:
    table = Table(data, name).data
    return table if isinstance(table, pd.DataFrame) else table.to_pandas()


# ---- the origin charges ----------------------------------------------------------


def _origin_rows(costs: pd.DataFrame, focus: Any) -> pa.Table:
    """One FOCUS row per cost line, in line order."""
    billing = costs.attrs.get("billing", {}) or {}
    if focus is None and billing.get("format") == "focus" and os.path.isfile(str(costs.attrs.get("source", ""))):
        focus = costs.attrs["source"]
    if focus is None:
        return focus_columns(costs)
    name = os.fspath(focus) if isinstance(focus, str | os.PathLike) else "focus"
    table = _read_raw(focus) if isinstance(focus, str | os.PathLike) else (
        focus if isinstance(focus, pa.Table) else pa.Table.from_pandas(focus, preserve_index=False))
    if table.num_rows != len(costs) and billing.get("duplicates_dropped"):
        # The reader dropped rows read twice: so does this copy (first one kept).
        keep = ~table.to_pandas(types_mapper=pd.ArrowDtype).duplicated().to_numpy()
        table = table.filter(pa.array(keep))
    if table.num_rows != len(costs):
        raise InvalidInputError(f"{name}: {table.num_rows} FOCUS rows for {len(costs)} cost lines; give to_focus "
                                "the export the cost lines were read from (focus=), unfiltered")
    return table


def _read_raw(path: str | os.PathLike) -> pa.Table:
    """A FOCUS file as it is: Parquet with its types; CSV with every cell as
    written (text), so dimensions are carried over to the letter."""
    name = os.fspath(path)
    with open(name, "rb") as f:
        parquet = f.read(4) == b"PAR1"
    if parquet:
        return pq.read_table(name)
    names = pacsv.open_csv(name).schema.names
    return pacsv.read_csv(name, convert_options=pacsv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False))


def focus_columns(costs: pd.DataFrame) -> pa.Table:
    """FOCUS columns for cost lines from a bill other than FOCUS (CUR, GCP,
    Azure), owned hardware (:func:`gpucost.owned_costs`) or an invoice
    (:func:`gpucost.read_invoice`): the mapping in docs/focus.md. gpucost's
    own pricing (``owned``, ``rate_card``, ...) is kept in ``x_Pricing``."""
    n = len(costs)

    def col(name: str, default: Any = None) -> pa.Array:
        if name in costs.columns:
            return pa.array(costs[name].astype(object).where(costs[name].notna(), None).to_numpy(), pa.string()) \
                if not pd.api.types.is_numeric_dtype(costs[name]) else pa.array(costs[name].to_numpy(float))
        return pa.nulls(n, pa.string()) if default is None else pa.array(np.full(n, default, dtype=object), pa.string())

    def instant(name: str) -> pa.Array:
        return pc.strftime(pa.array(pd.to_datetime(costs[name], utc=True)), format="%Y-%m-%dT%H:%M:%SZ")

    cost = costs["cost"].to_numpy(float)
    money = {m: (costs[c].to_numpy(float) if c in costs.columns else cost)
             for m, c in (("BilledCost", "billed_cost"), ("EffectiveCost", "effective_cost"))}
    money["ListCost"] = costs["list_cost"].to_numpy(float) if "list_cost" in costs.columns else cost
    pricing = costs["pricing"].astype(object).to_numpy() if "pricing" in costs.columns else np.full(n, None)
    category = pd.Series(pricing).map(_PRICING).fillna("Other").to_numpy(object)
    hours = costs["quantity_hours"].to_numpy(float) if "quantity_hours" in costs.columns else np.full(n, np.nan)
    primary = costs["primary"].to_numpy(bool) if "primary" in costs.columns else np.ones(n, bool)
    span = (pd.to_datetime(costs["end"], utc=True) - pd.to_datetime(costs["start"], utc=True)).dt.total_seconds()
    consumed = np.where(primary, np.where(np.isnan(hours), span.to_numpy() / 3600, hours), np.nan)
    instance = col("instance_type")
    details = pc.if_else(pc.is_null(instance), pa.nulls(n, pa.string()),
                         pc.binary_join_element_wise('{"InstanceType": "', instance, '"}', ""))
    return pa.table({
        "ServiceProviderName": col("provider"), "SubAccountId": col("account"), "RegionId": col("region"),
        "ServiceName": col("service"), "ChargeCategory": col("charge_category", "Usage"),
        "ChargePeriodStart": instant("start"), "ChargePeriodEnd": instant("end"),
        "ResourceId": col("resource_id"), "ResourceName": col("resource_name"), "SkuId": col("sku"),
        "SkuPriceDetails": details, "PricingCategory": pa.array(category, pa.string()),
        "CommitmentDiscountId": col("commitment_id"), "CommitmentDiscountStatus": col("commitment_status"),
        "BillingCurrency": col("currency"), "PricingCurrency": col("pricing_currency"),
        **{name: pa.array(values) for name, values in money.items()},
        "ConsumedQuantity": pa.array(consumed), "ConsumedUnit": pa.array(np.where(np.isnan(consumed), None, "Hours"),
                                                                         pa.string()),
        "Tags": col("tags"), "x_Pricing": pa.array(pricing, pa.string()),
    })


# ---- the split --------------------------------------------------------------------


def _fractions(costs: pd.DataFrame, usage: Any, inventory: Any, workloads: Any, **policy: Any) -> pd.DataFrame:
    """Each holder's fraction of each line: the engine's allocation of lines
    of amount 1 by (cost_line, consumer)."""
    # Per line, so the currency key changes nothing (and may be missing).
    unit = costs.drop(columns=[c for c in ("list_cost", "currency") if c in costs.columns]).assign(cost=1.0)
    unit.attrs = {}
    result = allocate(unit, usage, inventory, workloads, by=["cost_line", "consumer"], **policy)
    return result[["cost_line", "consumer", "cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours"]]


def _split(origin: pa.Table, costs: pd.DataFrame, parts: pd.DataFrame, workloads: Any, *, basis: str,
           alpha: float, idle: str) -> pa.Table:
    line = parts["cost_line"].to_numpy(np.int64)
    consumer = parts["consumer"].to_numpy(object)
    # A line wholly on __unattributed__ or __unobserved__ was not split.
    holders = np.bincount(line, minlength=len(costs))
    lone = holders[line] == 1
    split_line = np.zeros(len(costs), bool)
    split_line[line[~(lone & np.isin(consumer, _NOT_SPLIT))]] = True
    keep = split_line[line] & ~(np.isin(consumer, list(_PSEUDO)) & (parts["cost"].to_numpy() == 0))
    parts = parts[keep]
    line, consumer = line[keep], consumer[keep]
    passing = np.flatnonzero(~split_line)
    # Output order: origin rows in order, each split one as its allocated charges.
    rows = np.concatenate([passing, line])
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    allocated = np.concatenate([np.zeros(len(passing), bool), np.ones(len(line), bool)])[order]
    slot = np.concatenate([np.full(len(passing), -1), np.arange(len(line))])[order]
    out = origin.take(pa.array(rows))
    currency = _currency(origin, rows)
    fraction = _at(parts["cost"].to_numpy(float), slot, 1.0)
    for name in FOCUS_SUMMABLE:
        if name not in out.column_names:
            continue
        values = _numbers(out.column(name))
        least = _QUANTITY_DECIMALS if name in _QUANTITIES else currency
        split = split_exact(values, fraction, exact_decimals(values, least), by=rows)
        split = np.where(allocated, split, values)  # a row passing through keeps its value as read
        column = pa.array(split, pa.float64(), mask=np.isnan(values))
        if pa.types.is_string(out.schema.field(name).type):
            # Cells read as text stay text: passed-through rows exactly as written.
            column = pc.if_else(pa.array(allocated), pc.cast(column, pa.string()), out.column(name))
        out = out.set_column(out.schema.get_field_index(name), name, column)
    method = _method_ids(costs, basis, idle)[rows]
    holder = _at(consumer, slot, None)
    details = _details(parts, slot, allocated, basis, alpha, idle)
    tags = _tags(holder, workloads)
    for name, values in zip(FOCUS_ALLOCATED, (np.where(allocated, method, None), details, holder, holder, tags)):
        column = pa.array(values, pa.string())
        if name in out.column_names:
            out = out.set_column(out.schema.get_field_index(name), name, column)
        else:
            out = out.append_column(name, column)
    return out


def _at(values: np.ndarray, slot: np.ndarray, default: Any) -> np.ndarray:
    """``values[slot]`` on allocated rows (``slot >= 0``), ``default`` on the others."""
    out = np.full(len(slot), default, dtype=values.dtype if default is not None else object)
    out[slot >= 0] = values[slot[slot >= 0]]
    return out


def _numbers(column: pa.ChunkedArray) -> np.ndarray:
    """A FOCUS metric column as floats; empty cells and ``null`` are NaN."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        text = pc.utf8_trim_whitespace(column)
        null = pc.or_(pc.equal(text, ""), pc.equal(pc.utf8_lower(text), "null"))
        column = pc.if_else(null, pa.nulls(len(column), pa.string()), text)
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False).astype(float)


def _currency(origin: pa.Table, rows: np.ndarray) -> np.ndarray:
    """The minor unit of each row's BillingCurrency (2 when none)."""
    if "BillingCurrency" not in origin.column_names:
        return np.full(len(rows), 2)
    codes = origin.column("BillingCurrency").to_pandas().astype(object)
    units = {c: minor_unit(c if isinstance(c, str) and c.strip() and c.lower() != "null" else None)
             for c in codes.dropna().unique()}
    return codes.map(units).fillna(2).astype(int).to_numpy()[rows]


def _method_ids(costs: pd.DataFrame, basis: str, idle: str) -> np.ndarray:
    """``gpucost-<basis>`` (``-idle-shared`` when idle is shared) per line;
    ``gpucost-energy`` for lines prorated by energy."""
    base = f"gpucost-{basis}" + ("-idle-shared" if idle == "share" else "")
    ids = np.full(len(costs), base, dtype=object)
    if "driver" in costs.columns:
        ids[(costs["driver"].astype(object) == "energy").to_numpy()] = "gpucost-energy"
    return ids


def _details(parts: pd.DataFrame, slot: np.ndarray, allocated: np.ndarray, basis: str, alpha: float,
             idle: str) -> pa.Array:
    """AllocatedMethodDetails: the policy and this charge's weights as a JSON
    object, built over whole columns."""
    policy = {"Basis": basis, "Idle": idle, **({"Alpha": float(alpha)} if basis == "blended" else {})}
    head = json.dumps(policy)[:-1]
    pieces = [pa.array(np.full(len(slot), head, dtype=object), pa.string())]
    for key, column in (("AllocatedRatio", "cost"), ("GpuHours", "gpu_hours"),
                        ("EffectiveGpuHours", "effective_gpu_hours"), ("MemGibHours", "mem_gib_hours")):
        values = _at(parts[column].to_numpy(float), slot, 0.0)
        pieces += [pa.array(np.full(len(slot), f', "{key}": ', dtype=object), pa.string()),
                   pc.cast(pa.array(np.round(values, 12)), pa.string())]
    pieces.append(pa.array(np.full(len(slot), "}", dtype=object), pa.string()))
    text = pc.binary_join_element_wise(*pieces, "")
    return pc.if_else(pa.array(allocated), text, pa.nulls(len(slot), pa.string()))


def _tags(holder: np.ndarray, workloads: Any) -> np.ndarray:
    """AllocatedTags: the holder's workload labels as a JSON object (one
    encoding per consumer, mapped onto the rows), the pseudo-holders'
    ``{"gpucost-holder": "idle"}`` and the like."""
    labels: dict[str, str] = {}
    if workloads is not None:
        frame = _pandas(workloads, "workloads")
        names = [c for c in frame.columns if c != "consumer"]
        for consumer, values in zip(frame["consumer"].astype(str), frame[names].astype(object).to_numpy()):
            labels[consumer] = json.dumps({"gpucost-holder": "workload", **{
                k: str(v) for k, v in zip(names, values) if v is not None and not (isinstance(v, float) and np.isnan(v))}})
    unique, inverse = np.unique(holder.astype(str), return_inverse=True)
    encoded = np.array([json.dumps({"gpucost-holder": _PSEUDO[u]}) if u in _PSEUDO else
                        labels.get(u, json.dumps({"gpucost-holder": "workload"})) for u in unique], dtype=object)
    return np.where(pd.isna(holder), None, encoded[inverse])


def write_focus(table: pa.Table, path: Any, suffix: str | None = None) -> None:
    """Writes a FOCUS dataset to a path or binary file: Parquet when the
    name (or ``suffix``) ends in ``.parquet``, else CSV."""
    name = suffix or (os.fspath(path) if isinstance(path, str | os.PathLike) else "")
    if name.lower().endswith(".parquet"):
        for column in FOCUS_SUMMABLE:  # metrics read as CSV text are numbers in Parquet
            if column in table.column_names and pa.types.is_string(table.schema.field(column).type):
                values = _numbers(table.column(column))
                table = table.set_column(table.schema.get_field_index(column), column,
                                         pa.array(values, mask=np.isnan(values)))
        pq.write_table(table, path)
    else:
        pacsv.write_csv(table, path)
