"""Hardware you own as cost lines (docs/onprem.md): capex written off by the
hour over the service life, power, facility, support and the cluster's
operations, in the shape the bill readers give, so :func:`gpucost.allocate`,
``gpucost check``, the report, budgets and forecasts take them unchanged.
The arithmetic is C++ (``gpucost::OwnedCostLines``, include/gpucost/owned.h).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.allocation import usage_columns
from gpucost.billing import COST_LINE_COLUMNS
from gpucost.catalog import instance_types
from gpucost.errors import InvalidInputError
from gpucost.model import ChargeCategory, CostDriver, OwnedComponent, Provider, Purchase
from gpucost.prometheus import to_ns

__all__ = ["owned_costs", "CLASS_FIELDS"]

#: The fields of a node class (include/gpucost/owned.h, OwnedNodeClass) and
#: what each is; ``instance_type`` names a catalog row whose GPUs, GPU TDP
#: and node maximum power fill ``gpus``, ``gpu_tdp_w`` and ``max_power_w``.
CLASS_FIELDS: dict[str, str] = {
    "instance_type": "a catalog row (onprem rows: dgx-h100, hgx-h100-8, dgx-h200, dgx-b200, dgx-a100-80gb, ...)",
    "gpus": "GPU devices of one node",
    "price": "purchase price of one node",
    "in_service": "when the node went into service (UTC)",
    "life_years": "service life in calendar years",
    "residual": "value at the end of life (default 0)",
    "depreciation_schedule": "fractions of price - residual per service year (default: straight line by the hour)",
    "support_per_year": "support contract per node and year",
    "facility_per_kw_month": "facility cost per kW-month of the node's power",
    "facility_kw": "kW billed (default max_power_w / 1000)",
    "facility_per_rack_month": "facility cost per rack-month",
    "rack_share": "racks one node takes (default 1)",
    "max_power_w": "the node's nameplate maximum power in W",
    "fixed_power_w": "the node's constant draw in W when not measured",
    "gpu_tdp_w": "nameplate GPU TDP in W (for the utilisation curve)",
    "base_power_w": "the rest of the node's draw in W (CPUs, fans, network), added to the GPUs'",
    "power_curve": "[[util, fraction of TDP], ...] (default: TDP at any load)",
    "embodied_kg_per_gpu_hour": "embodied (scope 3) kg CO2e per GPU-hour: the lines carry it for the inventory, "
                                "and allocate adds embodied_co2e_kg",
}
_NUMBERS = ("price", "residual", "support_per_year", "facility_per_kw_month", "facility_kw", "facility_per_rack_month",
            "rack_share", "max_power_w", "fixed_power_w", "gpu_tdp_w", "base_power_w", "embodied_kg_per_gpu_hour")


def owned_costs(classes: Mapping[str, Mapping[str, Any]], nodes: Any, start: Any, end: Any, *, usage: Any = None,
                pue: float = 1.0, tariff: Any = 0.0, operations_per_month: float = 0.0, freq: str = "h",
                interval: float | None = None, currency: str | None = None, catalog: Any = None,
                tariff_tz: str | None = None) -> pd.DataFrame:
    """Cost lines of hardware you own, per node, component and hour (or day).

    Args:
        classes: node class name -> its fields (:data:`CLASS_FIELDS`):
            ``price``, ``in_service``, ``life_years`` at least, and power
            (``fixed_power_w``, or ``gpu_tdp_w``, or measured ``usage``).
        nodes: node (the ``resource_id`` telemetry and the inventory use) ->
            class name, or -> ``{"class": ..., "in_service": ...}``; or a
            table with ``resource_id`` (or ``host``) and ``class`` columns
            (the hosts table's) and optionally ``in_service``.
        start, end: the lines cover [start, end) (UTC).
        usage: samples with ``power_w`` (the whole device's draw, repeated on
            each holder's row: each device and instant counts once) for
            measured power; their ``util`` drives the curve where no power
            was measured.
        pue: facility energy / IT energy; the power lines pay for it.
        tariff: $/kWh: a number, 24 numbers by hour of day (UTC, or
            ``tariff_tz``'s local time), or a table ``start, end, per_kwh``
            on whole hours.
        operations_per_month: the cluster's fixed costs a month, as lines
            with no resource (share them with ``gpucost.share_costs(...,
            {"component": "operations"}, split="gpu_hours")``).
        freq: ``"h"`` (hourly lines) or ``"D"`` (daily; the same totals).
        interval: seconds a sample stands for when ``usage`` has no
            ``duration`` column.
        tariff_tz: the IANA time zone whose hours of day the 24 rates follow
            (a utility's peak hours are local, daylight saving included);
            zones whose offset is not whole hours are refused.
        currency: ISO 4217 code of every line; default none: no ``currency``
            columns (one currency, the bill's).
        catalog: the catalog ``instance_type`` is looked up in (default the
            embedded one).

    Returns:
        The bill readers' columns (``pricing`` ``owned``, ``provider``
        ``onprem``, ``service`` ``owned hardware``, ``sku`` and ``component``
        the component: ``capex``, ``power``, ``facility``, ``support``,
        ``operations``; ``instance_type`` the class), plus ``driver``
        (``energy`` on power lines), ``energy_kwh`` (IT energy of power
        lines, before PUE), ``energy_estimated`` and ``node_class``. Capex
        lines are primary: they bill the node's GPU time.

    Raises:
        gpucost.InvalidInputError: naming the class or node and the field.

    Examples:
        One DGX H100 bought for $320,000 on 2026-01-01, written off over 4
        years (35,064 hours: 2028 is a leap year), drawing 10.2 kW at
        $0.12/kWh and PUE 1.3, for one day:

        >>> lines = gpucost.owned_costs(
        ...     {"dgx": {"instance_type": "dgx-h100", "price": 320000, "in_service": "2026-01-01",
        ...              "life_years": 4, "fixed_power_w": 10200}},
        ...     {"dgx01": "dgx"}, "2026-03-01", "2026-03-02", pue=1.3, tariff=0.12)
        >>> lines.groupby("component", observed=True)["cost"].sum().round(6)
        component
        capex    219.028063
        power     38.188800
        Name: cost, dtype: float64
        >>> print(lines["pricing"].iloc[0], lines["primary"].iloc[0], lines["driver"].iloc[-1])
        owned True energy
    """
    if freq not in ("h", "D"):
        raise InvalidInputError(f"parameter 'freq': {freq!r} is not \"h\" (hourly lines) or \"D\" (daily)")
    class_rows = [_class_fields(name, fields, catalog) for name, fields in _mapping(classes, "classes").items()]
    # Not a cost: carried on the lines for the inventory (gpucost.inventory), never priced.
    embodied = {row["name"]: row.pop("embodied_kg_per_gpu_hour") for row in class_rows
                if "embodied_kg_per_gpu_hour" in row}
    ids, node_classes, node_in_service = _nodes(nodes)
    if tariff_tz is not None:
        tariff = _local_hours(tariff, tariff_tz, start, end)
    flat, by_hour, series = _tariff(tariff)
    raw = _core.owned_cost_lines(
        class_rows, ids, node_classes, node_in_service, float(pue), flat, by_hour, *series,
        float(operations_per_month), currency or "", to_ns(start, "start"), to_ns(end, "end"), freq == "D",
        None if interval is None else float(interval), None if usage is None else usage_columns(usage))
    type_of_class = {row["name"]: row.get("instance_type") or row["name"] for row in class_rows}
    class_of = dict(zip(ids, node_classes))
    lines = _frame(raw, class_of, {node: type_of_class.get(c, c) for node, c in class_of.items()}, currency)
    if embodied:
        lines["embodied_kg_per_gpu_hour"] = lines["node_class"].map(embodied).astype(float)
    return lines


# ---- inputs ---------------------------------------------------------------------


def _mapping(value: Any, parameter: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"parameter '{parameter}': expected a mapping, got {type(value).__name__}")
    return value


def _class_fields(name: str, fields: Any, catalog: Any) -> dict:
    where = f"owned: node class '{name}'"
    if not isinstance(fields, Mapping):
        raise InvalidInputError(f"{where}: expected a table of fields, got {type(fields).__name__}")
    row: dict[str, Any] = {"name": str(name)}
    for key, value in fields.items():
        if key not in CLASS_FIELDS:
            raise InvalidInputError(f"{where}: unknown field '{key}' (one of {', '.join(CLASS_FIELDS)})")
        if key in _NUMBERS or key in ("gpus", "life_years"):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise InvalidInputError(f"{where}: field '{key}': expected a number, got {value!r}")
            row[key] = int(value) if key in ("gpus", "life_years") else float(value)
            if key in ("gpus", "life_years") and value != int(value):
                raise InvalidInputError(f"{where}: field '{key}': {value!r} is not a whole number")
        elif key == "in_service":
            row[key] = _instant(value, f"{where}: field 'in_service'")
        elif key in ("depreciation_schedule", "power_curve"):
            row[key] = _numbers(value, where, key, pairs=key == "power_curve")
        else:
            row[key] = str(value)
    if "instance_type" in row:
        _fill_from_catalog(row, where, catalog)
    return row


def _instant(value: Any, where: str) -> int:
    try:
        return to_ns(value, "instant")
    except InvalidInputError:
        raise InvalidInputError(f"{where}: {value!r} is not an instant (e.g. \"2026-01-01\")") from None


def _numbers(value: Any, where: str, key: str, *, pairs: bool) -> list:
    try:
        out = [tuple(float(x) for x in v) if pairs else float(v) for v in value]
    except (TypeError, ValueError):
        out = None
    if out is None or (pairs and any(len(p) != 2 for p in out)):
        shape = "a list of [util, fraction] pairs" if pairs else "a list of numbers"
        raise InvalidInputError(f"{where}: field '{key}': expected {shape}, got {value!r}")
    return out


def _fill_from_catalog(row: dict, where: str, catalog: Any) -> None:
    types = instance_types(catalog)
    found = types[types["instance_type"] == row["instance_type"]]
    if not len(found):
        raise InvalidInputError(f"{where}: field 'instance_type': {row['instance_type']!r} is not in the catalog "
                                "(add a row: gpucost.catalog, docs/onprem.md)")
    spec = found.iloc[0]
    row.setdefault("gpus", int(spec["gpus"]))
    for field, column in (("gpu_tdp_w", "gpu_tdp_w"), ("max_power_w", "node_max_power_w")):
        if column in spec.index and pd.notna(spec[column]) and spec[column] > 0:
            row.setdefault(field, float(spec[column]))


def _nodes(nodes: Any) -> tuple[list[str], list[str], list[int]]:
    missing = np.iinfo(np.int64).min  # the class's in-service date
    if isinstance(nodes, Mapping):
        ids, classes, since = [], [], []
        for node, value in nodes.items():
            spec = value if isinstance(value, Mapping) else {"class": value}
            if "class" not in spec:
                raise InvalidInputError(f"owned: node '{node}': field 'class' is missing")
            ids.append(str(node))
            classes.append(str(spec["class"]))
            since.append(_instant(spec["in_service"], f"owned: node '{node}': field 'in_service'")
                         if spec.get("in_service") is not None else missing)
        return ids, classes, since
    if isinstance(nodes, pd.DataFrame):
        id_column = "resource_id" if "resource_id" in nodes.columns else "host"
        for column in (id_column, "class"):
            if column not in nodes.columns:
                raise InvalidInputError(f"nodes: missing required column '{column}'")
        rows = nodes[nodes["class"].notna() & (nodes["class"].astype(str) != "")]
        since = [missing if pd.isna(v) else _instant(v, "nodes: column 'in_service'")
                 for v in (rows["in_service"] if "in_service" in rows.columns else [None] * len(rows))]
        return rows[id_column].astype(str).tolist(), rows["class"].astype(str).tolist(), since
    raise InvalidInputError(f"parameter 'nodes': expected a mapping of node -> class or a table, "
                            f"got {type(nodes).__name__}")


def _local_hours(tariff: Any, tz: str, start: Any, end: Any) -> pd.DataFrame:
    """24 rates by local hour of day -> the series of UTC hours over [start,
    end), each at the rate of its local hour."""
    try:
        zone = ZoneInfo(str(tz))
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInputError(f"parameter 'tariff_tz': {tz!r} is not an IANA time zone") from None
    if isinstance(tariff, str) or not isinstance(tariff, Sequence):
        raise InvalidInputError("parameter 'tariff_tz': only for 24 rates by hour of day (a series table has "
                                "its own instants)")
    rates = _numbers(tariff, "owned", "tariff", pairs=False)
    if len(rates) != 24:
        raise InvalidInputError(f"owned: tariff: expected 24 rates ($/kWh) by hour of day, got {len(rates)}")
    hours = pd.date_range(pd.Timestamp(to_ns(start, "start"), tz="UTC"), pd.Timestamp(to_ns(end, "end"), tz="UTC"),
                          freq="h", inclusive="left")
    local = hours.tz_convert(zone)
    if len(local) and (local.minute != 0).any():
        raise InvalidInputError(f"parameter 'tariff_tz': {tz} is not a whole number of hours from UTC: give the "
                                "tariff as a table start, end, per_kwh")
    return pd.DataFrame({"start": hours, "end": hours + pd.Timedelta(hours=1),
                         "per_kwh": np.asarray(rates)[np.asarray(local.hour)]})


def _tariff(tariff: Any) -> tuple[float, list[float], tuple[list[int], list[int], list[float]]]:
    none: tuple[list[int], list[int], list[float]] = ([], [], [])
    if isinstance(tariff, (int, float)) and not isinstance(tariff, bool):
        return float(tariff), [], none
    if isinstance(tariff, pd.DataFrame):
        for column in ("start", "end", "per_kwh"):
            if column not in tariff.columns:
                raise InvalidInputError(f"tariff: missing required column '{column}'")
        starts = [_instant(v, "tariff: column 'start'") for v in tariff["start"]]
        ends = [_instant(v, "tariff: column 'end'") for v in tariff["end"]]
        return 0.0, [], (starts, ends, tariff["per_kwh"].astype(float).tolist())
    if isinstance(tariff, Sequence) and not isinstance(tariff, str):
        return 0.0, _numbers(tariff, "owned", "tariff", pairs=False), none
    raise InvalidInputError(f"parameter 'tariff': expected $/kWh (a number), 24 numbers by hour of day or a table "
                            f"start, end, per_kwh; got {type(tariff).__name__}")


# ---- output ---------------------------------------------------------------------


def _frame(raw: dict, class_of: Mapping[str, str], instance_type_of: Mapping[str, str],
           currency: str | None) -> pd.DataFrame:
    codes, values = raw["resource_id"]
    n = len(raw["cost"])
    resource = pd.Categorical.from_codes(codes, categories=pd.Index(values, dtype="str"), validate=False)
    names = [OwnedComponent(c) for c in raw["component_names"]]
    component = pd.Categorical.from_codes(raw["component"].astype(np.int32), categories=pd.Index(names, dtype="str"),
                                          validate=False)
    start = pd.DatetimeIndex(raw["start"].view("datetime64[ns]")).tz_localize("UTC")
    end = pd.DatetimeIndex(raw["end"].view("datetime64[ns]")).tz_localize("UTC")
    cost = raw["cost"]
    is_node = np.asarray(codes) >= 0

    def constant(value: Any) -> pd.Categorical:
        return pd.Categorical.from_codes(np.zeros(n, dtype=np.int32), categories=pd.Index([str(value)], dtype="str"),
                                         validate=False)

    def empty() -> pd.Categorical:
        return pd.Categorical.from_codes(np.full(n, -1, dtype=np.int32), categories=pd.Index([], dtype="str"),
                                         validate=False)

    drivers = [CostDriver.GPU_TIME, CostDriver.ENERGY]
    columns: dict[str, Any] = {
        "resource_id": resource, "start": start, "end": end, "cost": cost, "list_cost": cost.copy(),
        "pricing": constant(Purchase.OWNED), "provider": constant(Provider.ONPREM), "account": empty(),
        "region": empty(), "service": constant("owned hardware"), "sku": component,
        "instance_type": _per_node(resource, instance_type_of), "charge_category": constant(ChargeCategory.USAGE), "commitment_id": empty(),
        "commitment_status": empty(), "billed_cost": cost.copy(), "effective_cost": cost.copy(),
        "currency": constant(currency) if currency else empty(), "resource_name": resource, "tags": constant("{}"),
        "gpu": is_node, "primary": raw["primary"].astype(bool), "quantity_hours": np.full(n, np.nan),
        "pricing_currency": constant(currency) if currency else empty(), "instance_id": empty(),
    }
    # The readers' order; without a currency, no currency columns (one currency, as allocate reads it).
    columns = {name: columns[name] for name in COST_LINE_COLUMNS if currency or "currency" not in name}
    columns["component"] = component
    columns["driver"] = pd.Categorical.from_codes(raw["driver"].astype(np.int32),
                                                  categories=pd.Index(drivers, dtype="str"), validate=False)
    columns["energy_kwh"] = raw["energy_kwh"]
    columns["energy_estimated"] = raw["energy_estimated"].astype(bool)
    columns["node_class"] = _per_node(resource, class_of)
    return pd.DataFrame(columns, copy=False)


def _per_node(resource: pd.Categorical, value_of: Mapping[str, str]) -> pd.Categorical:
    """A value per node (its class, its instance type) for each line; null on operations lines."""
    values = np.asarray([value_of[v] for v in resource.categories] + [None], dtype=object)
    codes = np.asarray(resource.codes)
    return pd.Categorical(values[np.where(codes < 0, len(values) - 1, codes)])
