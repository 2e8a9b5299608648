"""Where to run spot: prices by zone, their volatility, and what moving a job
would have saved (docs/advisor.md §4).

Spot price history is a step function: each record is the price of an
instance type in a zone from its timestamp until the next record of the same
series (AWS ``describe-spot-price-history`` also returns the last change
before the window, which is the price in force at its start). Statistics are
weighted by how long each price held.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.analyses._tables import (
    NANOS_PER_HOUR,
    finite_floats,
    frame,
    instant_ns,
    instants_ns,
    split_at_hours,
    strings,
    table,
)
from gpucost.errors import InvalidInputError

__all__ = ["read_spot_prices", "spot_placement", "spot_move_savings"]

PRICE_COLUMNS = ("instance_type", "zone", "region", "product", "timestamp", "price")
# Accepted spellings (lower case, without "_" and "-") of each column.
_ALIASES = {
    "instancetype": "instance_type",
    "availabilityzone": "zone", "zone": "zone", "az": "zone",
    "region": "region",
    "productdescription": "product", "product": "product",
    "timestamp": "timestamp", "time": "timestamp",
    "spotprice": "price", "price": "price",
}
_JSON_FIELDS = {"instance_type": "InstanceType", "zone": "AvailabilityZone", "product": "ProductDescription",
                "timestamp": "Timestamp", "price": "SpotPrice"}
_REGION = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+-\d+)")


def _region_of(zone: pd.Series) -> pd.Series:
    region = zone.str.extract(_REGION, expand=False)
    return region.fillna(zone.str.replace(r"[a-z]$", "", regex=True))


def _normalise(raw: pd.DataFrame, source: str, where: str, first_line: int) -> pd.DataFrame:
    """Columns renamed, values parsed; `where(i)` names record i in errors."""
    renamed = {}
    for column in raw.columns:
        key = re.sub(r"[_\-\s]", "", str(column)).lower()
        if key in _ALIASES and _ALIASES[key] not in renamed.values():
            renamed[column] = _ALIASES[key]
    data = raw.rename(columns=renamed)
    for column in ("instance_type", "zone", "timestamp", "price"):
        if column not in data.columns:
            raise InvalidInputError(f"{source}: missing required column '{column}'")

    def fail(mask: np.ndarray, column: str, what) -> None:
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            original = next((k for k, v in renamed.items() if v == column), column)
            raise InvalidInputError(f"{source}: {where} {i + first_line}, column '{original}': {what(i)}")

    out = pd.DataFrame(index=pd.RangeIndex(len(data)))
    for column in ("instance_type", "zone"):
        values = data[column].astype(object)
        fail((values.isna() | (values.astype(str).str.strip() == "")).to_numpy(), column, lambda i: "missing")
        out[column] = values.astype(str).str.strip()
    out["region"] = data["region"].astype(object).where(data["region"].notna(), None) if "region" in data \
        else None
    missing_region = out["region"].isna()
    out.loc[missing_region, "region"] = _region_of(out["zone"][missing_region])
    out["product"] = data["product"].astype(object).fillna("").astype(str) if "product" in data else ""
    stamps = data["timestamp"]
    if not isinstance(stamps.dtype, pd.DatetimeTZDtype) and not pd.api.types.is_datetime64_dtype(stamps):
        parsed = pd.to_datetime(stamps.astype(object), utc=True, errors="coerce", format="ISO8601")
    else:
        parsed = stamps.dt.tz_localize("UTC") if stamps.dt.tz is None else stamps.dt.tz_convert("UTC")
    fail(parsed.isna().to_numpy(), "timestamp",
         lambda i: "missing" if pd.isna(stamps.iat[i]) else f"'{stamps.iat[i]}' is not a timestamp")
    out["timestamp"] = parsed.dt.as_unit("ns")
    prices = pd.to_numeric(data["price"], errors="coerce")
    fail((prices.isna() | ~np.isfinite(prices) | (prices < 0)).to_numpy(), "price",
         lambda i: "missing" if pd.isna(data["price"].iat[i]) else f"'{data['price'].iat[i]}' is not a price")
    out["price"] = prices.astype(np.float64)
    return out.sort_values(["instance_type", "zone", "product", "timestamp"], kind="stable", ignore_index=True)


def read_spot_prices(source: Any) -> pd.DataFrame:
    """Spot price history as a table.

    Args:
        source: a path to the JSON that ``aws ec2 describe-spot-price-history``
            prints (``{"SpotPriceHistory": [{"AvailabilityZone",
            "InstanceType", "ProductDescription", "SpotPrice", "Timestamp"},
            ...]}``, or a list of such pages), or to a CSV with columns
            ``instance_type, zone, timestamp, price`` (and optionally
            ``region, product``; AWS's names are accepted too, in any case);
            or that JSON already loaded; or a DataFrame.

    Returns:
        ``instance_type, zone, region, product, timestamp`` (UTC), ``price``,
        sorted by series and time. The region is the zone's (``us-east-1a`` ->
        ``us-east-1``) unless given.

    Raises:
        gpucost.InvalidInputError: naming the file, the record (JSON, 0-based)
            or line (CSV, 1-based) and the field.

    Examples:
        >>> history = {"SpotPriceHistory": [   # what aws ec2 describe-spot-price-history prints
        ...     {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.4200", "Timestamp": "2026-03-02T00:00:00Z"},
        ...     {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.5000", "Timestamp": "2026-03-02T12:00:00Z"},
        ...     {"AvailabilityZone": "us-east-1b", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.3500", "Timestamp": "2026-03-02T00:00:00Z"}]}
        >>> gpucost.read_spot_prices(history)
          instance_type        zone     region     product                 timestamp  price
        0     g5.xlarge  us-east-1a  us-east-1  Linux/UNIX 2026-03-02 00:00:00+00:00   0.42
        1     g5.xlarge  us-east-1a  us-east-1  Linux/UNIX 2026-03-02 12:00:00+00:00   0.50
        2     g5.xlarge  us-east-1b  us-east-1  Linux/UNIX 2026-03-02 00:00:00+00:00   0.35
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        name = os.path.basename(path)
        if path.endswith((".csv", ".csv.gz")):
            raw = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
            return _normalise(raw, name, "line", 2)
        try:
            with open(path, encoding="utf-8") as handle:
                loaded = json.load(handle)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{name}: line {exc.lineno}: not JSON ({exc.msg})") from None
        return _from_json(loaded, name)
    if isinstance(source, (dict, list)):
        return _from_json(source, "prices")
    t = table(source, "prices")
    return _normalise(frame(t, "prices", optional=t.columns), "prices", "row", 0)


def _from_json(loaded: Any, name: str) -> pd.DataFrame:
    pages = loaded if isinstance(loaded, list) and (not loaded or "SpotPriceHistory" in loaded[0]) else [loaded]
    records: list = []
    for page in pages:
        if isinstance(page, dict) and "SpotPriceHistory" in page:
            records.extend(page["SpotPriceHistory"])
        elif isinstance(page, list):
            records.extend(page)
        else:
            raise InvalidInputError(f"{name}: expected the output of describe-spot-price-history "
                                    "(an object with 'SpotPriceHistory')")
    raw = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=list(_JSON_FIELDS.values()))
    for column, field in _JSON_FIELDS.items():
        if column != "product" and field not in raw.columns:
            raise InvalidInputError(f"{name}: record 0, field '{field}': missing")
    return _normalise(raw, name, "record", 0).rename_axis(None)


def _prices(prices: Any, product: str | None) -> pd.DataFrame:
    p = prices if isinstance(prices, pd.DataFrame) and list(prices.columns) == list(PRICE_COLUMNS) \
        else read_spot_prices(prices)
    if product is not None:
        p = p[p["product"] == product]
    elif p["product"].nunique() > 1:
        raise InvalidInputError(f"prices: several products ({', '.join(sorted(p['product'].unique()))}): "
                                "pass product= to choose one")
    if p.empty:
        raise InvalidInputError("prices: no price records" + (f" for product '{product}'" if product else ""))
    return p.reset_index(drop=True)


def _segments(p: pd.DataFrame, start: int, end: int) -> pd.DataFrame:
    """Each record as the span its price held, clipped to [start, end)."""
    ts = p["timestamp"].array.asi8
    series = (p["instance_type"] + "\x1f" + p["zone"]).to_numpy()
    nxt = np.append(ts[1:], end)
    last_of_series = np.append(series[1:] != series[:-1], True)
    seg_end = np.where(last_of_series, end, nxt)
    s, e = np.maximum(ts, start), np.minimum(seg_end, end)
    return p.assign(seg_start=s, seg_end=e, duration=np.maximum(e - s, 0))


def _window(p: pd.DataFrame, start: Any, end: Any) -> tuple[int, int]:
    ts = p["timestamp"].array.asi8
    lo = instant_ns(start, "start") if start is not None else int(ts.min())
    hi = instant_ns(end, "end") if end is not None else int(ts.max())
    if hi <= lo:
        raise InvalidInputError("parameter 'end': the window [start, end) is empty (give end after start; "
                                "with one record per series there is no span to weigh)")
    return lo, hi


def spot_placement(prices: Any, *, start: Any = None, end: Any = None, product: str | None = None,
                   interruptions: Any = None) -> pd.DataFrame:
    """Per instance type, every zone ranked by its time-weighted spot price.

    Args:
        prices: as for :func:`read_spot_prices` (or its result).
        start, end: the window (default: first to last record).
        product: e.g. ``"Linux/UNIX"``; required when the history has several.
        interruptions: optional ``instance_type`` plus ``zone`` or ``region``,
            with either a ``rate`` column (share of spot instances interrupted,
            e.g. from the Spot placement score or your own history) or one row
            per interruption (counted).

    Returns:
        One row per ``(instance_type, zone)``: ``region, mean_price,
        min_price, max_price, std, volatility`` (std / mean), ``changes``
        (records in the window), ``latest_price, hours_covered, coverage``
        (share of the window with a known price), ``rank`` (1 = cheapest
        mean in its instance type), ``premium_vs_cheapest``, and
        ``interruptions`` / ``interruption_rate`` when given.

    Examples:
        >>> history = {"SpotPriceHistory": [   # what aws ec2 describe-spot-price-history prints
        ...     {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.4200", "Timestamp": "2026-03-02T00:00:00Z"},
        ...     {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.5000", "Timestamp": "2026-03-02T12:00:00Z"},
        ...     {"AvailabilityZone": "us-east-1b", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.3500", "Timestamp": "2026-03-02T00:00:00Z"}]}
        >>> zones = gpucost.spot_placement(history, end="2026-03-03")
        >>> zones[["instance_type", "zone", "mean_price", "min_price", "max_price", "coverage", "rank",
        ...        "premium_vs_cheapest"]]
          instance_type        zone  mean_price  min_price  max_price  coverage  rank  premium_vs_cheapest
        0     g5.xlarge  us-east-1b        0.35       0.35       0.35       1.0     1             0.000000
        1     g5.xlarge  us-east-1a        0.46       0.42       0.50       1.0     2             0.314286
    """
    p = _prices(prices, product)
    lo, hi = _window(p, start, end)
    seg = _segments(p, lo, hi)
    seg["weight"] = seg["duration"].astype(np.float64)
    seg["pw"] = seg["price"] * seg["weight"]
    keys = ["instance_type", "zone"]
    held = seg[seg["duration"] > 0]
    g = held.groupby(keys, sort=True)
    out = pd.DataFrame({"region": g["region"].first(), "product": g["product"].first(),
                        "weight": g["weight"].sum(), "pw": g["pw"].sum(),
                        "min_price": g["price"].min(), "max_price": g["price"].max()})
    out["mean_price"] = out["pw"] / out["weight"]
    dev = held["price"] - held.set_index(keys).index.map(out["mean_price"]).to_numpy()
    out["std"] = np.sqrt((dev ** 2 * held["weight"]).groupby([held[k] for k in keys]).sum() / out["weight"])
    out["volatility"] = out["std"] / out["mean_price"]
    ts = seg["timestamp"].array.asi8
    in_window = seg[(ts >= lo) & (ts < hi)]
    out["changes"] = in_window.groupby(keys).size().reindex(out.index, fill_value=0)
    out["latest_price"] = seg[ts <= hi].groupby(keys)["price"].last().reindex(out.index)
    out["hours_covered"] = out["weight"] / NANOS_PER_HOUR
    out["coverage"] = out["weight"] / (hi - lo)
    out = out.reset_index()
    out["rank"] = out.groupby("instance_type")["mean_price"].rank(method="min").astype(np.int64)
    cheapest = out.groupby("instance_type")["mean_price"].transform("min")
    out["premium_vs_cheapest"] = out["mean_price"] / cheapest - 1
    columns = ["instance_type", "zone", "region", "product", "mean_price", "min_price", "max_price", "std",
               "volatility", "changes", "latest_price", "hours_covered", "coverage", "rank", "premium_vs_cheapest"]
    out = out[columns]
    if interruptions is not None:
        out = _join_interruptions(out, interruptions, lo, hi)
    return out.sort_values(["instance_type", "rank", "zone"], ignore_index=True)


def _join_interruptions(out: pd.DataFrame, interruptions: Any, lo: int, hi: int) -> pd.DataFrame:
    name = "interruptions"
    t = table(interruptions, name)
    place = "zone" if t.has("zone") else "region"
    data = pd.DataFrame({"instance_type": strings(t, name, "instance_type"), place: strings(t, name, place)})
    if t.has("rate"):
        data["interruption_rate"] = finite_floats(t, name, "rate", minimum=0)
        joined = data.groupby(["instance_type", place], as_index=False)["interruption_rate"].mean()
    else:
        if t.has("timestamp"):
            stamp = instants_ns(t, name, "timestamp")
            data = data[(stamp >= lo) & (stamp < hi)]
        joined = data.groupby(["instance_type", place], as_index=False).size().rename(
            columns={"size": "interruptions"})
    merged = out.merge(joined, on=["instance_type", place], how="left")
    if "interruptions" in merged:
        merged["interruptions"] = merged["interruptions"].fillna(0).astype(np.int64)
    return merged


def _hourly_prices(p: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame:
    """Time-weighted mean price of every (instance_type, zone, hour)."""
    seg = _segments(p, lo, hi)
    seg = seg[seg["duration"] > 0]
    idx, hour, piece_start, piece_end = split_at_hours(seg["seg_start"], seg["seg_end"])
    dur = (piece_end - piece_start).astype(np.float64)
    pieces = pd.DataFrame({"instance_type": seg["instance_type"].to_numpy()[idx], "zone": seg["zone"].to_numpy()[idx],
                           "region": seg["region"].to_numpy()[idx], "hour": hour, "dur": dur,
                           "pw": seg["price"].to_numpy()[idx] * dur})
    g = pieces.groupby(["instance_type", "zone", "region", "hour"], as_index=False)[["dur", "pw"]].sum()
    g["price"] = g["pw"] / g["dur"]
    g["covered"] = g["dur"] >= NANOS_PER_HOUR  # a full hour of known price
    return g[["instance_type", "zone", "region", "hour", "price", "covered"]]


def spot_move_savings(prices: Any, jobs: Any, *, by: Sequence[str] | str = ("job",), scope: str = "region",
                      product: str | None = None) -> pd.DataFrame:
    """What running each job in the cheapest spot zone would have cost.

    Args:
        prices: as for :func:`read_spot_prices`.
        jobs: hourly rows per job, as :func:`gpucost.hourly_demand` returns
            with ``by=["job"]``: the ``by`` columns, ``instance_type, period``
            (hour), ``instance_hours``, ``cost`` (what it was paid), optionally
            ``region`` and ``zone`` (where it ran).
        by: the job key columns.
        scope: ``"region"``: only zones of the job's region (when the job has
            one); ``"any"``: every zone of the instance type.
        product: as for :func:`spot_placement`.

    Returns:
        One row per job and instance type: ``region, instance_hours, paid,
        cheapest_zone, cost_at_cheapest, saving`` (paid minus cost at the
        cheapest zone), ``saving_pct, zones_compared`` (zones with a price for
        every hour of the job), and ``zone, cost_at_zone`` when the job's zone
        is known. A job no zone prices fully has NaN figures and 0 zones.

    Examples:
        A three-hour job in us-east-1a, where us-east-1b was cheaper:

        >>> history = {"SpotPriceHistory": [   # what aws ec2 describe-spot-price-history prints
        ...     {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.4200", "Timestamp": "2026-03-02T00:00:00Z"},
        ...     {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.5000", "Timestamp": "2026-03-02T12:00:00Z"},
        ...     {"AvailabilityZone": "us-east-1b", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
        ...      "SpotPrice": "0.3500", "Timestamp": "2026-03-02T00:00:00Z"}]}
        >>> hours = pd.date_range("2026-03-02 10:00", periods=3, freq="h", tz="UTC")
        >>> jobs = pd.DataFrame({"job": "train", "instance_type": "g5.xlarge", "period": hours, "instance_hours": 1.0,
        ...                      "cost": 0.5, "region": "us-east-1", "zone": "us-east-1a"})
        >>> gpucost.spot_move_savings(history, jobs)[["job", "paid", "cheapest_zone", "cost_at_cheapest", "saving",
        ...                                           "zones_compared", "cost_at_zone"]]
             job  paid cheapest_zone  cost_at_cheapest  saving  zones_compared  cost_at_zone
        0  train   1.5    us-east-1b              1.05    0.45               2          1.34
    """
    if scope not in ("region", "any"):
        raise InvalidInputError(f"parameter 'scope': '{scope}' is not 'region' or 'any'")
    by_list = [by] if isinstance(by, str) else list(by)
    name = "jobs"
    t = table(jobs, name)
    j = frame(t, name, [*by_list, "instance_type"], ["region", "zone"])
    j["hour"] = instants_ns(t, name, "period") // NANOS_PER_HOUR * NANOS_PER_HOUR
    j["instance_hours"] = finite_floats(t, name, "instance_hours", minimum=0)
    j["cost"] = finite_floats(t, name, "cost")
    j = j[~j[by_list[0]].isin(["__idle__", "__unattributed__"])]
    keys = [*by_list, "instance_type"]
    if "region" not in j:
        j["region"] = None
    p = _prices(prices, product)
    lo = min(int(j["hour"].min()), int(p["timestamp"].array.asi8.min())) if len(j) else 0
    hi = int(j["hour"].max()) + NANOS_PER_HOUR if len(j) else 1
    hourly = _hourly_prices(p, lo, hi)

    summary = j.groupby(keys, sort=True, dropna=False).agg(
        region=("region", "first"), instance_hours=("instance_hours", "sum"), paid=("cost", "sum"),
        hours=("hour", "nunique"))
    if "zone" in j:
        summary["zone"] = j.groupby(keys, sort=True, dropna=False)["zone"].first()
    candidates = hourly.rename(columns={"zone": "candidate", "region": "candidate_region"})
    pairs = j.merge(candidates, on=["instance_type", "hour"], how="inner")
    if scope == "region":
        pairs = pairs[pairs["region"].isna() | (pairs["region"] == pairs["candidate_region"])]
    pairs = pairs.assign(zone_cost=pairs["instance_hours"] * pairs["price"])
    per_zone = pairs.groupby([*keys, "candidate"], sort=True, dropna=False).agg(
        cost=("zone_cost", "sum"), hours=("hour", "nunique")).reset_index()
    job_hours = per_zone.merge(summary["hours"].rename("job_hours").reset_index(), on=keys, how="left")["job_hours"]
    per_zone["complete"] = per_zone["hours"].to_numpy() == job_hours.to_numpy()
    complete = per_zone[per_zone["complete"]]
    best = complete.sort_values([*keys, "cost", "candidate"]).drop_duplicates(keys).set_index(keys)
    out = summary.drop(columns="hours")
    out["cheapest_zone"] = best["candidate"].reindex(out.index)
    out["cost_at_cheapest"] = best["cost"].reindex(out.index)
    out["saving"] = out["paid"] - out["cost_at_cheapest"]
    out["saving_pct"] = (out["saving"] / out["paid"]).where(out["paid"] > 0)
    out["zones_compared"] = complete.groupby(keys).size().reindex(out.index, fill_value=0).astype(np.int64)
    out = out.reset_index()
    if "zone" in out:
        here = complete.rename(columns={"candidate": "zone", "cost": "cost_at_zone"})[[*keys, "zone", "cost_at_zone"]]
        out = out.merge(here, on=[*keys, "zone"], how="left")
    return out
