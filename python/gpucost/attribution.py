"""The costs around the GPUs: tagged storage and networking, shared costs.

After :func:`gpucost.allocate`, every cost line whose resource has no GPUs in
the inventory sits on ``__unattributed__``: checkpoint buckets, volumes, data
transfer, NAT gateways, taxes. Two steps move it where it belongs, and the
total always stays the bill's:

- :func:`attribute_tagged` charges lines whose resource carries a tag (an AWS
  cost-allocation tag, a GCP label, an Azure tag) to the group the tag names,
  next to that group's GPU cost;
- :func:`share_costs` spreads chosen shared lines (a NAT gateway, a shared
  file system, a cluster's operations) over the groups, in proportion to
  their GPU cost, their GPU-hours held or used, or evenly.

Both work on allocation results (one row per group) and on whole columns of
the cost lines; tags are parsed once per distinct tag set, never per line::

    result = gpucost.allocate(costs, usage, inventory, workloads, by="project")
    result = gpucost.attribute_tagged(result, costs, tag="project-id", inventory=inventory)
    result = gpucost.share_costs(result, costs, {"service": "Amazon Virtual Private Cloud"},
                                 by="project", inventory=inventory)

(:func:`attribute_tagged` and :func:`share_costs` have examples that run.)
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.allocation import RESULT_METRICS
from gpucost.errors import InvalidInputError, conversion_hint
from gpucost.model import NOT_WORKLOADS

__all__ = ["attribute_tagged", "share_costs", "SPLITS"]

#: How :func:`share_costs` splits shared lines: by GPU cost, GPU-hours held,
#: GPU-hours used, or evenly.
SPLITS = ("weighted", "gpu_hours", "used_gpu_hours", "even")
_HOUR_COLUMNS = {"gpu_hours": "gpu_hours", "used_gpu_hours": "effective_gpu_hours"}

IDLE = "__idle__"
UNATTRIBUTED = "__unattributed__"
_REL = 1e-9
_ABS = 1e-6  # currency units: float sums of thousands of lines


def _per_currency(function: Callable) -> Callable:
    """Runs `function` once per currency of the allocation (its rows and the
    cost lines of that currency), so that two currencies are never added, and
    puts the ``currency`` key back after the group column."""

    @functools.wraps(function)
    def run(allocation: pd.DataFrame, costs: pd.DataFrame, *args: Any, **kwargs: Any) -> pd.DataFrame:
        if "currency" not in allocation.columns:
            return function(allocation, costs, *args, **kwargs)
        line_currency = (costs["currency"].astype("string").fillna("").to_numpy() if "currency" in costs.columns
                         else None)
        parts = []
        for currency, rows in allocation.groupby("currency", sort=True):
            mine = (line_currency == currency) if line_currency is not None else np.ones(len(costs), dtype=bool)
            args_here = [_subset(a, mine, len(costs)) for a in args]
            kwargs_here = {k: _subset(v, mine, len(costs)) for k, v in kwargs.items()}
            out = function(rows.drop(columns="currency").reset_index(drop=True),
                           costs[mine].reset_index(drop=True), *args_here, **kwargs_here)
            out.insert(1, "currency", currency)
            parts.append(out)
        return pd.concat(parts, ignore_index=True)

    return run


def _subset(value: Any, mask: np.ndarray, rows: int) -> Any:
    """A per-line argument (a boolean mask over the cost lines) cut to `mask`."""
    if isinstance(value, (pd.Series, np.ndarray, list)) and len(value) == rows and not isinstance(value, str):
        return np.asarray(value)[mask]
    return value


@_per_currency
def attribute_tagged(allocation: pd.DataFrame, costs: pd.DataFrame, tag: str | Sequence[str] = "project-id", *,
                     by: str | None = None, inventory: Any = None,
                     tag_map: Mapping[str, str] | Callable[[str], str] | None = None) -> pd.DataFrame:
    """Charge the unattributed lines whose resource carries ``tag`` to the
    group named by the tag's value.

    Args:
        allocation: a :func:`gpucost.allocate` result grouped by ``by``.
        costs: the cost lines that were allocated (a ``gpucost.read_*``
            result, or any frame with ``resource_id``, ``cost`` and ``tags``
            as JSON object strings).
        tag: the tag key, or several keys tried in order. A key also matches
            AWS's ``user:<key>`` and ``user_<key>`` spellings.
        by: the allocation's group column the tag values belong to; by
            default its only key column. Other key columns are summed away.
        inventory: the inventory used for the allocation: lines whose
            resource is not in it are the unattributed ones. Without it, the
            lines whose ``gpu`` column is False.
        tag_map: tag value -> group value (a mapping, values not in it kept
            as they are, or a function), when the tags spell groups
            differently from the workload labels.

    Returns:
        One row per group: ``by``, ``cost`` (the total), ``gpu_cost`` (from
        the allocation), ``tagged_cost`` (tagged lines), ``unattributed_cost``
        (what is left, on the ``__unattributed__`` row), then the allocation's
        ``idle_cost``, GPU-hour and memory columns (0 for tag-only groups).
        ``cost.sum()`` equals the allocation's.

    Raises:
        gpucost.InvalidInputError: when the cost lines do not match the
            allocation's ``__unattributed__`` cost, or a column is missing.

    Examples:
        A GPU node ($8), a bucket tagged ``team=research`` ($2) and a support
        fee ($1): the bucket and the fee are ``__unattributed__`` after the
        allocation; the tag charges the bucket to research.

        >>> costs = pd.DataFrame({"resource_id": ["node-1", "bucket-1", ""], "cost": [8.0, 2.0, 1.0],
        ...                       "service": ["EC2", "S3", "Support"],
        ...                       "tags": ["{}", '{"team": "research"}', "{}"],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": ["train", "train", "infer", "infer"],
        ...                       "share": 1.0, "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> workloads = pd.DataFrame({"consumer": ["train", "infer"], "team": ["research", "product"]})
        >>> allocation = gpucost.allocate(costs, usage, inventory, workloads, by="team")
        >>> allocation[["team", "cost"]]
                       team  cost
        0          __idle__   0.0
        1  __unattributed__   3.0
        2           product   4.0
        3          research   4.0
        >>> tagged = gpucost.attribute_tagged(allocation, costs, tag="team", inventory=inventory)
        >>> tagged[["team", "cost", "gpu_cost", "tagged_cost", "unattributed_cost"]]
                       team  cost  gpu_cost  tagged_cost  unattributed_cost
        0          __idle__   0.0       0.0          0.0                0.0
        1  __unattributed__   1.0       0.0          0.0                1.0
        2           product   4.0       4.0          0.0                0.0
        3          research   6.0       4.0          2.0                0.0
    """
    _frames(allocation, costs)
    keys = [tag] if isinstance(tag, str) else [str(t) for t in tag]
    group = _group_column(allocation, by)
    base = _collapse(allocation, group)
    outside = _outside_gpu_allocation(costs, inventory)
    pool = _row_value(base, group, UNATTRIBUTED, "cost")
    outside_cost = _cost(costs)[outside]
    _check_same(pool, float(outside_cost.sum()),
                "the allocation's __unattributed__ cost", "the cost lines outside the inventory")

    values = _tag_values(costs, keys)[outside]
    if tag_map is not None:
        mapper = tag_map if callable(tag_map) else (lambda v, m=tag_map: m.get(v, v))
        values = values.map(lambda v: v if v is None else mapper(v))
    tagged = values.notna().to_numpy()
    if tagged.any():
        reserved = set(values[tagged]) & {IDLE, UNATTRIBUTED, "__unlabelled__"}
        if reserved:
            raise InvalidInputError(f"costs: tag '{keys[0]}' has the reserved value '{sorted(reserved)[0]}'")
    by_tag = outside_cost[tagged].groupby(values[tagged].to_numpy()).sum()

    metrics = [m for m in RESULT_METRICS if m in base.columns and m not in ("cost", "cost_per_effective_gpu_hour")]
    out = base[[group, *metrics]].copy()
    out["gpu_cost"] = np.where(out[group] == UNATTRIBUTED, 0.0, base["cost"])
    out["unattributed_cost"] = np.where(out[group] == UNATTRIBUTED, pool - float(by_tag.sum()), 0.0)
    new = pd.DataFrame({group: by_tag.index.astype(str)})
    out = pd.concat([out, new[~new[group].isin(out[group])]], ignore_index=True)
    out[metrics + ["gpu_cost", "unattributed_cost"]] = out[metrics + ["gpu_cost", "unattributed_cost"]].fillna(0.0)
    out["tagged_cost"] = out[group].map(by_tag).fillna(0.0).astype(float)
    if UNATTRIBUTED not in set(out[group]) and abs(pool) > 0:
        raise InvalidInputError("allocation: no __unattributed__ row to take the tagged lines from")
    out["cost"] = out["gpu_cost"] + out["tagged_cost"] + out["unattributed_cost"]
    out = out[[group, "cost", "gpu_cost", "tagged_cost", "unattributed_cost", *metrics]]
    return out.sort_values(group, kind="stable").reset_index(drop=True)


@_per_currency
def share_costs(allocation: pd.DataFrame, costs: pd.DataFrame, selector: Any, by: str = "team",
                split: str = "weighted", *, inventory: Any = None) -> pd.DataFrame:
    """Distribute shared cost lines over the groups.

    Args:
        allocation: a :func:`gpucost.allocate` or :func:`attribute_tagged`
            result with a ``by`` column.
        costs: the cost lines that were allocated.
        selector: which lines are shared: a boolean mask, a function of
            ``costs`` returning one, a ``DataFrame.query`` string, or a
            mapping of column to a value or list of values (all must match).
            They must be among the unattributed lines (outside the inventory
            and, after :func:`attribute_tagged`, untagged).
        by: the group column.
        split: what drives each group's part: ``"weighted"`` (its GPU cost:
            ``gpu_cost`` when present, else ``cost``), ``"gpu_hours"`` (the
            GPU-hours it held), ``"used_gpu_hours"`` (the GPU-hours it kept
            busy, ``effective_gpu_hours``) or ``"even"``. The two hour
            splits give nothing to ``__idle__``, ``__unattributed__``,
            ``__unobserved__`` and ``__down__``, whose hours nobody held.
        inventory: as in :func:`attribute_tagged`.

    Returns:
        The groups with ``own_cost`` (their cost before sharing),
        ``shared_cost`` (their part of the shared lines; negative on
        ``__unattributed__``, which gives them up) and ``cost`` = own + shared,
        then the input's other columns. ``__idle__`` and ``__unattributed__``
        receive no share. ``cost.sum()`` is unchanged.

    Examples:
        The support fee ($1) shared evenly over the teams, after the tagged
        bucket went to research (see :func:`attribute_tagged`):

        >>> costs = pd.DataFrame({"resource_id": ["node-1", "bucket-1", ""], "cost": [8.0, 2.0, 1.0],
        ...                       "service": ["EC2", "S3", "Support"],
        ...                       "tags": ["{}", '{"team": "research"}', "{}"],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": ["train", "train", "infer", "infer"],
        ...                       "share": 1.0, "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> workloads = pd.DataFrame({"consumer": ["train", "infer"], "team": ["research", "product"]})
        >>> allocation = gpucost.allocate(costs, usage, inventory, workloads, by="team")
        >>> tagged = gpucost.attribute_tagged(allocation, costs, tag="team", inventory=inventory)
        >>> shared = gpucost.share_costs(tagged, costs, {"service": "Support"}, by="team", split="even",
        ...                              inventory=inventory)
        >>> shared[["team", "own_cost", "shared_cost", "cost"]]
                       team  own_cost  shared_cost  cost
        0          __idle__       0.0          0.0   0.0
        1  __unattributed__       1.0         -1.0   0.0
        2           product       4.0          0.5   4.5
        3          research       6.0          0.5   6.5

        By GPU-hours held instead (research held 1 of them, product 1):

        >>> gpucost.share_costs(tagged, costs, {"service": "Support"}, by="team", split="gpu_hours",
        ...                     inventory=inventory)[["team", "gpu_hours", "shared_cost"]]
                       team  gpu_hours  shared_cost
        0          __idle__        0.0          0.0
        1  __unattributed__        0.0         -1.0
        2           product        1.0          0.5
        3          research        1.0          0.5
    """
    if split not in SPLITS:
        raise InvalidInputError(f"parameter 'split': unknown split '{split}' (expected one of "
                                f"{', '.join(SPLITS)})")
    _frames(allocation, costs)
    group = _group_column(allocation, by)
    base = _collapse(allocation, group)
    mask = _select(costs, selector)
    outside = _outside_gpu_allocation(costs, inventory)
    inside = mask & ~outside
    if inside.any():
        row = int(np.flatnonzero(inside)[0])
        raise InvalidInputError(f"costs: row {row}, column 'resource_id': a selected shared line is a GPU line "
                                f"that was already allocated")
    shared = float(_cost(costs)[mask].sum())
    pool_column = "unattributed_cost" if "unattributed_cost" in base.columns else "cost"
    pool = _row_value(base, group, UNATTRIBUTED, pool_column)
    if not _close(shared, pool) and abs(shared) > abs(pool) + _ABS:
        raise InvalidInputError(f"costs: the selected shared lines cost {shared:.6f} but only {pool:.6f} is left "
                                f"unattributed (lines already charged through tags cannot be shared again)")

    receivers = ~base[group].isin([IDLE, UNATTRIBUTED]).to_numpy()
    if not receivers.any():
        raise InvalidInputError(f"allocation: no group in column '{group}' to share costs over")
    if split == "even":
        weights = receivers.astype(float)
    elif split in _HOUR_COLUMNS:
        column = _HOUR_COLUMNS[split]
        if column not in base.columns:
            raise InvalidInputError(f"allocation: missing required column '{column}' for split=\"{split}\"")
        holders = receivers & ~base[group].isin(list(NOT_WORKLOADS)).to_numpy()
        weights = np.where(holders, base[column].to_numpy(dtype=float), 0.0)
        if not weights.sum() > 0:
            raise InvalidInputError(f"allocation: the groups have no positive '{column}' to share by "
                                    f"(use split=\"even\")")
    else:
        weight_column = "gpu_cost" if "gpu_cost" in base.columns else "cost"
        weights = np.where(receivers, base[weight_column].to_numpy(dtype=float), 0.0)
        if not weights.sum() > 0:
            raise InvalidInputError(f"allocation: the groups have no positive '{weight_column}' to weight by "
                                    f"(use split=\"even\")")
    out = base.copy()
    out.insert(1, "own_cost", out.pop("cost"))
    out.insert(2, "shared_cost", weights / weights.sum() * shared)  # fractions first: tiny weights cannot round away
    out.loc[out[group] == UNATTRIBUTED, "shared_cost"] = -shared
    if "unattributed_cost" in out.columns:
        out.loc[out[group] == UNATTRIBUTED, "unattributed_cost"] -= shared
    if shared != 0 and not (out[group] == UNATTRIBUTED).any():
        raise InvalidInputError("allocation: no __unattributed__ row to take the shared lines from")
    out.insert(1, "cost", out["own_cost"] + out["shared_cost"])
    return out


# ---- helpers -------------------------------------------------------------------


def _frames(allocation: Any, costs: Any) -> None:
    for name, frame in (("allocation", allocation), ("costs", costs)):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"{name}: expected a pandas DataFrame, got {type(frame).__name__}{conversion_hint(frame)}")


def _group_column(allocation: pd.DataFrame, by: str | None) -> str:
    # `currency` is the key allocate appends to every grouping, not a group.
    keys = [c for c in allocation.columns if c not in RESULT_METRICS and c not in
            ("gpu_cost", "tagged_cost", "unattributed_cost", "own_cost", "shared_cost", "currency")]
    if by is None:
        if len(keys) != 1:
            raise InvalidInputError(f"allocation: has key columns {keys}; say which one with by=")
        return keys[0]
    if by not in allocation.columns:
        raise InvalidInputError(f"allocation: missing required column '{by}'")
    return by


def _collapse(allocation: pd.DataFrame, group: str) -> pd.DataFrame:
    """One row per group (other key columns summed away)."""
    numeric = [c for c in allocation.columns if c != group and pd.api.types.is_numeric_dtype(allocation[c])]
    if "cost" not in numeric:
        raise InvalidInputError("allocation: missing required column 'cost'")
    if "currency" in allocation.columns and allocation["currency"].nunique() > 1:
        raise InvalidInputError(f"allocation: amounts in {allocation['currency'].nunique()} currencies "
                                f"({', '.join(sorted(map(str, allocation['currency'].unique())))}); "
                                "they are never added: attribute one currency at a time")
    frame = allocation[[group, *numeric]].copy()
    frame[group] = frame[group].astype(str)
    if frame[group].is_unique:
        return frame.reset_index(drop=True)
    return frame.groupby(group, sort=True, as_index=False)[numeric].sum(min_count=0)


def _cost(costs: pd.DataFrame) -> pd.Series:
    if "cost" not in costs.columns:
        raise InvalidInputError("costs: missing required column 'cost'")
    return costs["cost"].astype(float).reset_index(drop=True)


def _outside_gpu_allocation(costs: pd.DataFrame, inventory: Any) -> np.ndarray:
    """Lines the engine charged to __unattributed__: resources not in the
    inventory (or, without one, lines the reader did not mark as GPU lines)."""
    if "resource_id" not in costs.columns:
        raise InvalidInputError("costs: missing required column 'resource_id'")
    ids = costs["resource_id"]
    if inventory is not None:
        known = pd.Index(pd.Series(inventory["resource_id"]).dropna().astype(str).unique())
        present = ids.notna().to_numpy() & (ids.astype(str) != "").to_numpy()
        return ~(present & pd.Index(ids.astype(str)).isin(known))
    if "gpu" not in costs.columns:
        raise InvalidInputError("costs: without inventory=, the 'gpu' column tells GPU lines from the others; "
                                "it is missing")
    return ~costs["gpu"].to_numpy(dtype=bool)


def _tag_values(costs: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """The first of `keys` found in each line's tags (None when absent); an
    expanded ``tag_<key>`` column is used when there is one."""
    for key in keys:
        if f"tag_{key}" in costs.columns and len(keys) == 1:
            column = costs[f"tag_{key}"]
            return column.astype(object).where(column.notna(), None).reset_index(drop=True)
    if "tags" not in costs.columns:
        raise InvalidInputError("costs: missing required column 'tags'")
    tags = costs["tags"].astype("category").reset_index(drop=True)
    per_set = []  # one value per distinct tag set
    for text in tags.cat.categories:
        per_set.append(_pick(text, keys))
    values = np.asarray(per_set + [None], dtype=object)[np.where(tags.cat.codes < 0, len(per_set), tags.cat.codes)]
    return pd.Series(values, dtype=object)


def _pick(text: str, keys: Sequence[str]) -> str | None:
    try:
        tags = json.loads(text) if text else {}
    except json.JSONDecodeError:
        raise InvalidInputError(f"costs: column 'tags': {text[:80]!r} is not a JSON object") from None
    if not isinstance(tags, dict):
        return None
    for key in keys:
        for spelling in (key, f"user:{key}", f"user_{key}"):
            value = tags.get(spelling)
            if value is not None and value != "":
                return value if isinstance(value, str) else json.dumps(value)
    return None


def _select(costs: pd.DataFrame, selector: Any) -> np.ndarray:
    n = len(costs)
    if callable(selector):
        selector = selector(costs)
    if isinstance(selector, str):
        mask = costs.eval(selector)
    elif isinstance(selector, Mapping):
        mask = np.ones(n, dtype=bool)
        for column, wanted in selector.items():
            if column not in costs.columns:
                raise InvalidInputError(f"costs: missing required column '{column}'")
            options = [wanted] if isinstance(wanted, str) or not isinstance(wanted, Sequence) else list(wanted)
            mask &= costs[column].astype(object).isin(options).to_numpy()
    else:
        mask = selector
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.shape != (n,):
        raise InvalidInputError(f"parameter 'selector': expected a boolean mask of {n} lines")
    return mask


def _row_value(frame: pd.DataFrame, group: str, name: str, column: str) -> float:
    rows = frame.loc[frame[group] == name, column]
    return float(rows.sum()) if len(rows) else 0.0


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL, abs_tol=_ABS)


def _check_same(a: float, b: float, what_a: str, what_b: str) -> None:
    if not _close(a, b):
        raise InvalidInputError(f"costs: {what_b} total {b:.6f} but {what_a} is {a:.6f}; pass the cost lines "
                                f"and inventory the allocation was made with")
