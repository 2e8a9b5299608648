"""gpucost.spark.allocate: the allocation of Spark DataFrames.

How (docs/scale.md): cost lines and usage samples are grouped by a bucket of
``resource_id`` and cogrouped, so each group holds every line and every
sample of its resources; ``applyInPandas`` (Arrow transfer) runs the engine
(:func:`gpucost.allocate`) on each group, and Spark sums the partial
results. The Distribution invariant (docs/semantics.md, section 4) makes
the sum exact; nothing of the proration is re-implemented here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from gpucost.allocation import JOIN_SUMMED, combine_joins, infer_interval, series_spacings
from gpucost.allocation import allocate as _allocate
from gpucost.errors import ROW_ERROR, InvalidInputError, conversion_hint
from gpucost.join import check_public_call

__all__ = ["allocate"]

BUCKET = "_gpucost_bucket"
KIND = "_gpucost_kind"  # "row": a result row; "diag": one group's diagnostics; "join": a join row
SUMMED = ("cost", "idle_cost", "list_cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours", "energy_kwh",
          "facility_energy_kwh", "co2e_kg", "embodied_co2e_kg")
DIAGNOSTICS = ("lines_total", "lines_unattributed", "lines_unobserved", "lines_oversubscribed",
               "lines_primary_overlap", "samples_total", "samples_duplicate", "samples_no_consumer",
               "samples_unknown_resource", "samples_outside_lines", "samples_used")
INTERVAL = "_gpucost_interval"
JOIN = "_gpucost_join_"  # prefix of the join table's columns
JOIN_STRINGS = ("resource_id", "currency")
JOIN_TIMES = ("lines_start", "lines_end", "samples_start", "samples_end")
JOIN_COUNTS = ("lines", "primary_lines", "lines_primary_overlap", "lines_oversubscribed", "samples",
               "samples_no_consumer", "samples_outside_lines", "samples_unknown_resource")
INSTANTS = {"costs": ("start", "end"), "usage": ("timestamp",)}


def _instants_as_nanos(df: DataFrame, table: str) -> DataFrame:
    """Spark timestamps as long nanoseconds since the epoch: exact, and free
    of the session time zone (pandas would get naive local wall times)."""
    for name in INSTANTS[table]:
        if name in df.columns and isinstance(df.schema[name].dataType, T.TimestampType):
            df = df.withColumn(name, F.unix_micros(F.col(name)) * F.lit(1000))
    return df


def _metrics(has_list_cost: bool, usage_columns: Sequence[str], policy: dict, embodied: bool = False) -> list[str]:
    """The summed result columns: list_cost when costs have it, the energy
    columns (docs/semantics.md, 9) when usage has power_w and the policy
    asks for facility energy or CO2e, embodied CO2e when the inventory has
    embodied_kg_per_gpu_hour."""
    wanted = {"list_cost": has_list_cost, "energy_kwh": "power_w" in usage_columns,
              "facility_energy_kwh": "power_w" in usage_columns and policy.get("pue") is not None,
              "co2e_kg": "power_w" in usage_columns and policy.get("carbon_intensity") is not None,
              "embodied_co2e_kg": embodied}
    return [name for name in SUMMED if wanted.get(name, True)]


def _schema(by: Sequence[str], metrics: Sequence[str]) -> T.StructType:
    fields = [T.StructField(name, T.TimestampType() if name == "period" else T.StringType()) for name in by]
    fields += [T.StructField(name, T.DoubleType()) for name in metrics]
    fields += [T.StructField(name, T.LongType()) for name in DIAGNOSTICS]
    fields.append(T.StructField(INTERVAL, T.DoubleType()))
    fields += [T.StructField(JOIN + name, T.StringType()) for name in JOIN_STRINGS]
    fields.append(T.StructField(JOIN + "in_inventory", T.BooleanType()))
    fields += [T.StructField(JOIN + name, T.LongType() if name in JOIN_COUNTS else T.DoubleType())
               for name in JOIN_SUMMED]
    fields += [T.StructField(JOIN + name, T.LongType()) for name in JOIN_TIMES]  # ns, -2**63 = none
    fields.append(T.StructField(KIND, T.StringType()))
    return T.StructType(fields)


def _partition_function(inventory: pd.DataFrame, workloads: pd.DataFrame | None, policy: dict, by: list[str],
                        metrics: list[str]):

    def run(usage: pd.DataFrame, costs: pd.DataFrame) -> pd.DataFrame:  # cogroup order
        costs = costs.drop(columns=[BUCKET], errors="ignore")
        usage = usage.drop(columns=[BUCKET], errors="ignore")
        try:
            result = _allocate(costs, usage, inventory, workloads, **policy)
        except InvalidInputError as exc:
            raise _located(exc, costs, usage) from None
        rows = result[by + metrics].copy()
        for name in DIAGNOSTICS:
            rows[name] = 0
        rows[KIND] = "row"
        diag = {name: [0.0] for name in metrics}
        diag.update({name: [int(result.attrs["diagnostics"][name])] for name in DIAGNOSTICS})
        diag.update({name: [None] for name in by})
        diag[INTERVAL] = [result.attrs["diagnostics"]["interval"]]
        diag[KIND] = ["diag"]
        join = result.attrs["join"]
        joined = pd.DataFrame({JOIN + name: join[name] for name in JOIN_STRINGS + ("in_inventory",) + JOIN_SUMMED})
        for name in JOIN_TIMES:
            joined[JOIN + name] = np.asarray(join[name].array.asi8)  # NaT: -2**63
        for name in metrics:
            joined[name] = 0.0
        for name in DIAGNOSTICS:
            joined[name] = 0
        joined[KIND] = "join"
        out = pd.concat([frame for frame in (rows, pd.DataFrame(diag), joined) if len(frame)], ignore_index=True)
        if "period" in by:
            out["period"] = pd.to_datetime(out["period"], utc=True)
        # PySpark converts numpy-backed columns; pandas 3 strings are Arrow-backed.
        for name in [KIND] + [b for b in by if b != "period"] + [JOIN + n for n in JOIN_STRINGS]:
            if name in out.columns:
                out[name] = out[name].astype(object)
        return out.reindex(columns=_schema(by, metrics).fieldNames())

    return run


def _located(exc: InvalidInputError, costs: pd.DataFrame, usage: pd.DataFrame) -> InvalidInputError:
    """Rows of a Spark group mean nothing to the user: name the row by what
    identifies it."""
    match = ROW_ERROR.match(str(exc))
    if not match or match["table"] not in ("costs", "usage"):
        return exc
    frame, keys = (usage, ["timestamp", "resource_id", "device", "consumer"]) if match["table"] == "usage" \
        else (costs, ["resource_id", "start", "end"])
    row = int(match["row"])
    if row >= len(frame):
        return exc
    values = ", ".join(f"{k}={frame[k].iloc[row]!r}" for k in keys if k in frame.columns)
    return InvalidInputError(f"{match['table']}: the row with {values}, {match['rest']}",
                             **{**exc.location(), "row": None})


def _to_pandas(df: DataFrame) -> pd.DataFrame:
    """Through Arrow (PySpark >= 4: ``toArrow``), which also spares pandas 3
    the deprecated calls of PySpark's own ``toPandas``."""
    return df.toArrow().to_pandas() if hasattr(df, "toArrow") else df.toPandas()


def _local(data: Any, table: str) -> pd.DataFrame | None:
    if data is None or isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, DataFrame):
        return _to_pandas(data)
    raise TypeError(f"{table}: expected a pandas or Spark DataFrame, got {type(data).__name__}{conversion_hint(data)}")


def allocate(costs: DataFrame, usage: DataFrame, inventory: Any, workloads: Any = None, *,
             buckets: int | None = None, **policy: Any) -> pd.DataFrame:
    """:func:`gpucost.allocate` on Spark DataFrames.

    Args:
        costs, usage: Spark DataFrames with the columns of docs/semantics.md
            (instants as Spark timestamps, or long nanoseconds).
        inventory, workloads: pandas or Spark DataFrames (small: collected and
            shipped whole to every task).
        buckets: groups of resources processed per task (default: the
            session's ``spark.sql.shuffle.partitions``).
        **policy: basis, alpha, idle, interval, by, freq, as for allocate.

    Returns:
        What :func:`gpucost.allocate` returns for the same tables (equal to
        1e-9 relative), as a pandas DataFrame with the summed diagnostics in
        ``attrs``.

    Raises:
        gpucost.InvalidInputError: bad input (raised by the failing Spark task;
            the message names the table, the row's identifying values and the
            column).

    Examples:
        Skipped by the doctests: it needs a Spark session (a JVM, about 15 s
        to start; tests/python/test_spark.py runs these calls against
        :func:`gpucost.allocate`). The output shown is from a real run.

        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> t = pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": np.tile(t, 2), "resource_id": np.repeat(["node-1", "node-2"], 4),
        ...                       "device": 0, "consumer": ["train", "train", "infer", "infer"] * 2, "share": 1.0,
        ...                       "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> from pyspark.sql import SparkSession
        >>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
        >>> result = gpucost.spark.allocate(spark.createDataFrame(costs), spark.createDataFrame(usage),
        ...                                 inventory)  # doctest: +SKIP
        >>> result[["consumer", "cost", "gpu_hours"]]  # doctest: +SKIP
           consumer  cost  gpu_hours
        0  __idle__   0.0        0.0
        1     infer   7.0        2.0
        2     train   7.0        2.0
        >>> result.attrs["diagnostics"]["samples_used"]  # doctest: +SKIP
        8
    """
    spark: SparkSession = usage.sparkSession
    strict = bool(policy.pop("strict", False))
    by = policy.get("by", ("consumer",))
    by = [by] if isinstance(by, str) else list(by)
    if "currency" in costs.columns and "currency" not in by:
        by = by + ["currency"]  # the result's key (SEMANTICS 4); allocate appends it the same way
    has_list_cost = "list_cost" in costs.columns
    n = int(buckets or int(spark.conf.get("spark.sql.shuffle.partitions")))
    inventory_pd, workloads_pd = _local(inventory, "inventory"), _local(workloads, "workloads")

    def bucketed(df: DataFrame) -> DataFrame:
        return df.withColumn(BUCKET, F.pmod(F.xxhash64(F.col("resource_id").cast("string")), F.lit(n)))

    metrics = _metrics(has_list_cost, usage.columns, policy, "embodied_kg_per_gpu_hour" in inventory_pd.columns)
    schema = _schema(by, metrics)
    usage = bucketed(_instants_as_nanos(usage, "usage"))
    costs = bucketed(_instants_as_nanos(costs, "costs"))
    if policy.get("interval") is None and "duration" not in usage.columns:
        # One interval for every group (SEMANTICS 4, Distribution): the
        # median over all series, each whole in its group.
        def spacings(pdf: pd.DataFrame) -> pd.DataFrame:
            return pd.DataFrame({"spacing": series_spacings(pdf.drop(columns=[BUCKET])) if len(pdf) else []})

        found = usage.groupBy(BUCKET).applyInPandas(spacings, schema="spacing double")
        policy = dict(policy, interval=infer_interval(_to_pandas(found)["spacing"].to_numpy()))
    partial = (usage.groupBy(BUCKET).cogroup(costs.groupBy(BUCKET))
               .applyInPandas(_partition_function(inventory_pd, workloads_pd, policy, by, metrics),
                              schema=schema))
    # One group may have costs without samples or samples without costs;
    # cogroup gives the missing side as an empty frame, which is valid input.
    rows = partial.filter(F.col(KIND) == "row").groupBy(*by).agg(*[F.sum(m).alias(m) for m in metrics])
    if "period" in by:
        rows = rows.withColumn("period", F.unix_micros(F.col("period")))
    diag = partial.filter(F.col(KIND) == "diag").agg(*[F.sum(d).alias(d) for d in DIAGNOSTICS],
                                                     F.first(INTERVAL, ignorenulls=True).alias(INTERVAL))
    join = _to_pandas(partial.filter(F.col(KIND) == "join").select(*[c for c in schema.fieldNames()
                                                                     if c.startswith(JOIN)]))
    result = _to_pandas(rows)
    totals = diag.collect()[0].asDict()
    if "period" in by:
        result["period"] = pd.to_datetime(result["period"].astype("int64"), unit="us", utc=True) \
            .astype("datetime64[ns, UTC]")
    result = result.sort_values(by, kind="stable").reset_index(drop=True)
    for name in by:
        if name != "period":
            result[name] = result[name].astype("str")
    with np.errstate(all="ignore"):
        result["cost_per_effective_gpu_hour"] = np.where(result["effective_gpu_hours"] == 0, np.nan,
                                                         result["cost"] / result["effective_gpu_hours"])
    result.attrs["diagnostics"] = {name: int(totals[name] or 0) for name in DIAGNOSTICS}
    result.attrs["diagnostics"]["interval"] = totals[INTERVAL]
    result.attrs["join"] = _join_frame(join)
    # gpucost.allocate's join rule, once, over the whole result (each group's allocation is quiet).
    check_public_call(result, None, None, strict=strict, workloads=workloads)
    return result


def _join_frame(join: pd.DataFrame) -> pd.DataFrame:
    """The groups' join rows as one join table (docs/semantics.md)."""
    frame = join.rename(columns=lambda c: c[len(JOIN):])
    for name in JOIN_TIMES:
        frame[name] = pd.DatetimeIndex(frame[name].astype("int64").to_numpy().view("datetime64[ns]")).tz_localize("UTC")
    for name in JOIN_STRINGS:
        frame[name] = frame[name].astype("str")
    frame["in_inventory"] = frame["in_inventory"].astype(bool)
    for name in JOIN_COUNTS:
        frame[name] = frame[name].astype("int64")
    return combine_joins([frame])
