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
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from gpucost.allocation import allocate, check_not_allocated
from gpucost.billing import _projection
from gpucost.errors import InvalidInputError
from gpucost.frames import Table
from gpucost.model import Purchase
from gpucost.money import exact_decimals, minor_unit, split_exact

__all__ = ["to_focus", "focus_batches", "write_focus_split", "summable_columns", "FOCUS_SUMMABLE", "FOCUS_ALLOCATED"]

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
_X_SUMMABLE = re.compile(r"^x_\w*(Cost|Quantity)(In[A-Z][A-Za-z]*)?$")
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
    per holder (``AllocatedResourceId``/``Name`` the consumer; null on the
    unallocated portion: idle, down, unobserved; ``AllocatedTags`` the
    workload's labels and ``gpucost-holder`` as JSON; ``AllocatedMethodId``
    ``gpucost-<basis>``; ``AllocatedMethodDetails`` FOCUS's ``Elements``
    object with the weights); lines not split pass through. The summable metrics (``FOCUS_SUMMABLE``) of a line's allocated
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
        0     node-1            4.0  gpucost-allocated                 NaN
        1     node-1            4.0  gpucost-allocated               train
    """
    batches = focus_batches(costs, usage, inventory, workloads, focus=focus, basis=basis, alpha=alpha, idle=idle,
                            interval=interval, downtime=downtime, strict=strict, threads=threads)
    out = pa.concat_tables(list(batches))
    if path is not None:
        write_focus(out, path)
    return out


def focus_batches(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *, focus: Any = None,
                  batch_lines: int | None = None, basis: str = "allocated", alpha: float = 0.5, idle: str = "keep",
                  interval: float | None = None, downtime: Any = None, strict: bool = False,
                  threads: int | None = None) -> Iterator[pa.Table]:
    """:func:`gpucost.to_focus` a batch of origin charges at a time: the
    weights of every line are computed once (lines x holders), then each
    batch of ``batch_lines`` cost lines (all of them by default) is split and
    yielded as a pyarrow Table of its FOCUS rows, in line order. The batches
    concatenated are ``to_focus``'s table, row for row; so peak memory is the
    bill, the weights and one batch (what :func:`write_focus_split` and
    ``gpucost allocate --format focus`` write from).

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-1"],
        ...                       "start": pd.to_datetime(["2026-03-01 00:00", "2026-03-01 01:00"], utc=True),
        ...                       "end": pd.to_datetime(["2026-03-01 01:00", "2026-03-01 02:00"], utc=True),
        ...                       "cost": [8.0, 8.0]})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": ["train", None, "eval", "eval"],
        ...                       "share": 1.0, "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> [b.num_rows for b in gpucost.focus.focus_batches(costs, usage, inventory, interval=1800, batch_lines=1)]
        [2, 1]
    """
    if batch_lines is not None and int(batch_lines) <= 0:  # before the allocation, not after it
        raise InvalidInputError(f"batch_lines must be a positive number of cost lines, not {batch_lines}")
    frame = _pandas(costs, "costs")
    check_not_allocated(frame)
    origin = _origin_rows(frame, focus)
    parts = _fractions(frame, usage, inventory, workloads, basis=basis, alpha=alpha, idle=idle,
                       interval=interval, downtime=downtime, strict=strict, threads=threads)
    parts = parts.iloc[np.argsort(parts["cost_line"].to_numpy(np.int64), kind="stable")]
    line = parts["cost_line"].to_numpy(np.int64)
    tags = _Tags(workloads)
    n = len(frame)
    step = max(int(batch_lines or n), 1)
    for lo in range(0, max(n, 1), step):
        hi = min(lo + step, n)
        a, b = np.searchsorted(line, [lo, hi])
        batch = parts.iloc[a:b].assign(cost_line=line[a:b] - lo)
        yield _split(origin.slice(lo, hi - lo), frame.iloc[lo:hi], batch, tags, basis=basis, alpha=alpha, idle=idle,
                     first_line=lo, source=str(frame.attrs.get("source") or "costs"))


def write_focus_split(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *, path: Any,
                      suffix: str | None = None, batch_lines: int = 10_000, **options: Any) -> int:
    """:func:`gpucost.to_focus` streamed to ``path`` (a path or a binary
    file; Parquet when its name or ``suffix`` ends in ``.parquet``, else
    CSV), ``batch_lines`` origin charges at a time (:func:`focus_batches`),
    so the output is never whole in memory. The bytes are those
    ``to_focus(..., path=)`` writes for CSV; for Parquet the same table in
    row groups of a batch each. ``options``: those of ``to_focus``.
    Returns the number of FOCUS rows written.

    Examples:
        Two GPUs of ``gpu-a`` for an hour, $6.00: ``a`` on one, ``b`` on the other.

        >>> hour = pd.Timestamp("2026-03-01 09:00", tz="UTC")
        >>> bill = pd.DataFrame([{"resource_id": "gpu-a", "start": hour, "end": hour + pd.Timedelta("1h"),
        ...                       "cost": 6.0}])
        >>> held = pd.DataFrame([{"timestamp": hour, "resource_id": "gpu-a", "device": d, "consumer": c,
        ...                       "share": 1.0, "util": 1.0, "mem_used": 0.0} for d, c in ((0, "a"), (1, "b"))])
        >>> gpus = pd.DataFrame([{"resource_id": "gpu-a", "device": d, "mem_capacity": 2**34} for d in (0, 1)])
        >>> gpucost.focus.write_focus_split(bill, held, gpus, path="split.parquet", interval=3600, batch_lines=1)
        2
        >>> pd.read_parquet("split.parquet")[["EffectiveCost", "AllocatedResourceId"]]
           EffectiveCost AllocatedResourceId
        0            3.0                   a
        1            3.0                   b
    """
    sink = _Sink(path, suffix)
    rows = 0
    try:
        for batch in focus_batches(costs, usage, inventory, workloads, batch_lines=batch_lines, **options):
            sink.write(batch)
            rows += batch.num_rows
    finally:
        sink.close()
    return rows


def _pandas(data: Any, name: str) -> pd.DataFrame:
    table = Table(data, name).data
    return table if isinstance(table, pd.DataFrame) else table.to_pandas()


# ---- the origin charges ----------------------------------------------------------


def _origin_rows(costs: pd.DataFrame, focus: Any) -> pa.Table:
    """One FOCUS row per cost line, in line order: the FOCUS export the lines
    were read from (``focus=``, else ``attrs``: the file, or every part of a
    bill read in parts, in the order read), else columns built from the lines;
    lines of several sources (a FOCUS bill beside owned hardware or an
    invoice, ``attrs["sources"]``) each from their own."""
    sources = costs.attrs.get("sources")
    if focus is None and sources and sum(rows for rows, _ in sources) == len(costs):
        tables, at = [], 0
        for rows, attrs in sources:
            part = costs.iloc[at:at + rows]
            part.attrs = dict(attrs)
            tables.append(_origin_rows(part, None))
            at += rows
        return _concat_origins(tables)
    billing = costs.attrs.get("billing", {}) or {}
    if focus is None:
        focus = _focus_files(costs.attrs)
    if focus is None:
        return focus_columns(costs)
    files = list(focus) if isinstance(focus, list | tuple) else [focus]
    if all(isinstance(f, str | os.PathLike) for f in files):
        name = ", ".join(os.fspath(f) for f in files)
        tables = [_read_raw(f) for f in files]
        table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
        parquet = any(_is_parquet(f) for f in files)
    else:
        name, parquet = "focus", True
        table = focus if isinstance(focus, pa.Table) else pa.Table.from_pandas(focus, preserve_index=False)
    if table.num_rows != len(costs) and billing.get("duplicates_dropped"):
        # The reader dropped rows read twice (across parts too), keyed on the
        # whole CSV row or the Parquet columns it reads: so does this copy (first one kept).
        key = _projection(table.column_names, "focus") if parquet else table.column_names
        keep = ~table.select(key).to_pandas(types_mapper=pd.ArrowDtype).duplicated().to_numpy()
        table = table.filter(pa.array(keep))
    if table.num_rows != len(costs):
        raise InvalidInputError(f"{name}: {table.num_rows} FOCUS rows for {len(costs)} cost lines; give to_focus "
                                "the export the cost lines were read from (focus=), unfiltered")
    return table


def _concat_origins(tables: list[pa.Table]) -> pa.Table:
    """Origin rows of several sources as one table, in the types of the
    FOCUS export's columns (the widest table: text for a CSV, carried over
    as written; Parquet's own types) where the others have them too."""
    widest = max(tables, key=lambda t: t.num_columns).schema
    target = {f.name: f.type for f in widest}

    def conform(t: pa.Table) -> pa.Table:
        fields = [pa.field(f.name, target[f.name]) if f.name in target and not pa.types.is_null(f.type) else f
                  for f in t.schema]
        return t.cast(pa.schema(fields))
    return pa.concat_tables([conform(t) for t in tables], promote_options="default")


def _focus_files(attrs: dict) -> list[str] | str | None:
    """The FOCUS file(s) a cost table was read from: ``attrs["source"]`` for
    one file; for a bill read in parts (``attrs["parts"]``, docs/formats.md)
    every part, when each was a FOCUS file."""
    parts = attrs.get("parts")
    if isinstance(parts, dict) and parts:
        files = [str(p.get("source", name)) for name, p in parts.items()]
        if all((p.get("billing") or {}).get("format") == "focus" for p in parts.values()) \
                and all(os.path.isfile(f) for f in files):
            return files
        return None
    billing = attrs.get("billing", {}) or {}
    source = str(attrs.get("source", ""))
    return source if billing.get("format") == "focus" and os.path.isfile(source) else None


def _is_parquet(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"PAR1"


def _read_raw(path: str | os.PathLike) -> pa.Table:
    """A FOCUS file as it is: Parquet with its types; CSV with every cell as
    written (text), so dimensions are carried over to the letter."""
    name = os.fspath(path)
    if _is_parquet(name):
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
    # A line without its own (an invoice's or owned line read beside a bill that has them) costs its cost.
    money = {m: (np.where(np.isnan(v := costs[c].to_numpy(float)), cost, v) if c in costs.columns else cost)
             for m, c in (("BilledCost", "billed_cost"), ("EffectiveCost", "effective_cost"), ("ListCost", "list_cost"))}
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


def _split(origin: pa.Table, costs: pd.DataFrame, parts: pd.DataFrame, tags: _Tags, *, basis: str,
           alpha: float, idle: str, first_line: int = 0, source: str = "focus") -> pa.Table:
    """The FOCUS rows of the origin charges ``origin`` (cost lines
    ``first_line``.. of ``source``), split by ``parts`` (their weights)."""
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
    for name in summable_columns(out.schema):
        try:
            values = _numbers(out.column(name))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            if name.startswith("x_"):
                continue  # a provider's column named like a cost that holds no number: copied
            text = out.column(name).to_pandas().astype(object)
            bad = np.flatnonzero(text.notna().to_numpy() & pd.to_numeric(text, errors="coerce").isna().to_numpy()
                                 & ~text.astype(str).str.strip().str.lower().isin(["", "null"]).to_numpy())
            at = int(rows[bad[0]]) + first_line if len(bad) else first_line
            raise InvalidInputError(f"{source}: row {at}, column '{name}': {text.iloc[bad[0]] if len(bad) else ''!r} "
                                    f"is not a number ({exc})") from None
        least = _QUANTITY_DECIMALS if name.endswith("Quantity") else currency
        split = split_exact(values, fraction, exact_decimals(values, least), by=rows)
        split = np.where(allocated, split, values)  # a row passing through keeps its value as read
        column = pa.array(split, pa.float64(), mask=np.isnan(values))
        if pa.types.is_string(out.schema.field(name).type):
            # Cells read as text stay text: passed-through rows exactly as written.
            column = pc.if_else(pa.array(allocated), pc.cast(column, pa.string()), out.column(name))
        out = out.set_column(out.schema.get_field_index(name), name, column)
    method = _method_ids(costs, basis, idle)[rows]
    holder = _at(consumer, slot, None)
    # The unallocated portion (idle, down, unobserved) names no resource (FOCUS 1.3 AllocatedResourceId).
    resource = np.where(np.isin(holder, list(_PSEUDO)), None, holder)
    details = _details(parts, slot, allocated, basis, alpha, idle, method == "gpucost-energy")
    for name, values in zip(FOCUS_ALLOCATED, (np.where(allocated, method, None), details, resource, resource,
                                              tags(holder, out.column("Tags") if "Tags" in out.column_names
                                                   else None))):
        column = pa.array(values, pa.string())
        if name in out.column_names:
            out = out.set_column(out.schema.get_field_index(name), name, column)
        else:
            out = out.append_column(name, column)
    return out


def summable_columns(schema: pa.Schema) -> list[str]:
    """The columns of a FOCUS schema that :func:`gpucost.to_focus` splits:
    ``FOCUS_SUMMABLE`` and a data generator's own cost and quantity columns
    (``x_`` names ending in ``Cost`` or ``Quantity``, optionally followed by
    ``In<Currency>``, such as Azure's ``x_EffectiveCostInUsd``) of a number
    type or text. Every other column is copied (docs/focus.md).

    Examples:
        >>> schema = pa.schema([("EffectiveCost", pa.float64()), ("x_EffectiveCostInUsd", pa.string()),
        ...                     ("x_BilledUnitPrice", pa.float64()), ("x_Credits", pa.list_(pa.float64())),
        ...                     ("ListUnitPrice", pa.float64())])
        >>> gpucost.focus.summable_columns(schema)
        ['EffectiveCost', 'x_EffectiveCostInUsd']
    """
    out = []
    for field in schema:
        numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type) or \
            pa.types.is_decimal(field.type) or pa.types.is_string(field.type) or \
            pa.types.is_large_string(field.type) or pa.types.is_null(field.type)
        if numeric and (field.name in FOCUS_SUMMABLE or _X_SUMMABLE.match(field.name)):
            out.append(field.name)
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


#: AllocatedMethodDetails' UsageUnit per basis: what the AllocatedRatio was measured in.
_USAGE = {"allocated": ("GPU-Hours", "gpu_hours"), "blended": ("GPU-Hours", "gpu_hours"),
          "used": ("Busy GPU-Hours", "effective_gpu_hours")}


def _details(parts: pd.DataFrame, slot: np.ndarray, allocated: np.ndarray, basis: str, alpha: float,
             idle: str, energy: np.ndarray) -> pa.Array:
    """AllocatedMethodDetails as FOCUS 1.3's object (docs/focus.md): one
    ``Elements`` entry with ``AllocatedRatio`` (this charge's fraction of the
    origin charge), ``UsageUnit`` and ``UsageQuantity`` (the GPU-hours the
    ratio was measured in; none for energy-prorated lines) and gpucost's
    ``x_`` weights; the policy as top-level ``x_`` keys. Built over whole
    columns."""
    n = len(slot)

    def text(value: str) -> pa.Array:
        return pa.array(np.full(n, value, dtype=object), pa.string())

    def number(column: str) -> pa.Array:
        return pc.cast(pa.array(np.round(_at(parts[column].to_numpy(float), slot, 0.0), 12)), pa.string())

    unit, quantity = _USAGE.get(basis, _USAGE["allocated"])
    usage = pc.binary_join_element_wise(text(f', "UsageUnit": "{unit}", "UsageQuantity": '), number(quantity), "")
    pieces = [text('{"Elements": [{"AllocatedRatio": '), number("cost"),
              pc.if_else(pa.array(energy), text(""), usage)]
    for key, column in (("x_GpuHours", "gpu_hours"), ("x_EffectiveGpuHours", "effective_gpu_hours"),
                        ("x_MemGibHours", "mem_gib_hours")):
        pieces += [text(f', "{key}": '), number(column)]
    policy = {"x_Basis": basis, "x_Idle": idle, **({"x_Alpha": float(alpha)} if basis == "blended" else {})}
    pieces.append(text("}], " + json.dumps(policy)[1:]))
    joined = pc.binary_join_element_wise(*pieces, "")
    return pc.if_else(pa.array(allocated), joined, pa.nulls(n, pa.string()))


class _Tags:
    """AllocatedTags: a holder's workload labels as a JSON object with
    ``gpucost-holder`` (``workload``, or ``idle``, ``down``, ``unobserved``
    for the unallocated portion); one encoding per consumer, mapped onto
    the rows."""

    def __init__(self, workloads: Any) -> None:
        self.labels: dict[str, str] = {}
        if workloads is not None:
            frame = _pandas(workloads, "workloads")
            names = [c for c in frame.columns if c != "consumer"]
            for consumer, values in zip(frame["consumer"].astype(str), frame[names].astype(object).to_numpy()):
                self.labels[consumer] = json.dumps({"gpucost-holder": "workload", **{
                    k: str(v) for k, v in zip(names, values)
                    if v is not None and not (isinstance(v, float) and np.isnan(v))}})

    def __call__(self, holder: np.ndarray, origin_tags: pa.ChunkedArray | None = None) -> np.ndarray:
        unique, inverse = np.unique(holder.astype(str), return_inverse=True)
        encoded = np.array([json.dumps({"gpucost-holder": _PSEUDO[u]}) if u in _PSEUDO else
                            self.labels.get(u, json.dumps({"gpucost-holder": "workload"})) for u in unique],
                           dtype=object)
        out = np.where(pd.isna(holder), None, encoded[inverse])
        if origin_tags is None or not self.labels or not (pa.types.is_string(origin_tags.type)
                                                          or pa.types.is_large_string(origin_tags.type)):
            return out
        # FOCUS 1.3: AllocatedTags must not repeat a tag already in the origin charge's Tags. One
        # parse per distinct Tags text, one encoding per (holder, Tags) pair that repeats one.
        texts, which = np.unique(origin_tags.to_numpy(zero_copy_only=False).astype(str), return_inverse=True)
        parsed = [_json_object(t) for t in texts]
        labels = [json.loads(self.labels.get(u, "{}")) if u not in _PSEUDO else {} for u in unique]
        hit = np.zeros(len(holder), bool)
        for key in {k for d in labels for k in d if k != "gpucost-holder"}:  # a loop per label key
            mine = np.array([d.get(key) for d in labels], dtype=object)
            theirs = np.array([str(p[key]) if key in p else None for p in parsed], dtype=object)
            hit |= (mine[inverse] == theirs[which]) & (theirs[which] != None)  # noqa: E711 (elementwise)
        hit &= ~pd.isna(holder)
        if hit.any():
            pairs, at = np.unique(np.stack([inverse[hit], which[hit]]), axis=1, return_inverse=True)
            fixed = np.array([json.dumps({k: v for k, v in json.loads(self.labels[unique[h]]).items()
                                          if not (k in parsed[t] and str(parsed[t][k]) == v)})
                              for h, t in pairs.T], dtype=object)
            out[hit] = fixed[at.ravel()]
        return out


def _json_object(text: str) -> dict:
    """A Tags cell as a dict ({} when empty or not a JSON object)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class _Sink:
    """A FOCUS dataset written a table at a time to a path or binary file:
    Parquet (metrics read as CSV text written as numbers) when the name or
    ``suffix`` ends in ``.parquet``, else CSV (one header)."""

    def __init__(self, path: Any, suffix: str | None = None) -> None:
        name = suffix or (os.fspath(path) if isinstance(path, str | os.PathLike) else "")
        self.parquet = name.lower().endswith(".parquet")
        self.path = path
        self.writer: Any = None
        self.schema: pa.Schema | None = None

    def write(self, table: pa.Table) -> None:
        if self.parquet:
            for column in summable_columns(table.schema):  # metrics read as CSV text are numbers in Parquet
                if pa.types.is_string(table.schema.field(column).type):
                    values = _numbers(table.column(column))
                    table = table.set_column(table.schema.get_field_index(column), column,
                                             pa.array(values, mask=np.isnan(values)))
        if self.writer is None:
            self.schema = table.schema
            self.writer = (pq.ParquetWriter if self.parquet else pacsv.CSVWriter)(self.path, table.schema)
        # A batch whose column is all null may type it null: the first batch's types hold.
        self.writer.write_table(table if table.schema == self.schema else table.cast(self.schema))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def write_focus(table: pa.Table, path: Any, suffix: str | None = None) -> None:
    """Writes a FOCUS dataset to a path or binary file: Parquet when the
    name (or ``suffix``) ends in ``.parquet``, else CSV."""
    sink = _Sink(path, suffix)
    try:
        sink.write(table)
    finally:
        sink.close()
