"""gpucost.spark.allocate in Spark local mode: equal to gpucost.allocate
(1e-9) whatever the session time zone, bad rows rejected with a clear error."""

from __future__ import annotations

import os
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

pyspark = pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

import gpucost  # noqa: E402
import gpucost.spark  # noqa: E402
from gpucost.simulate import simulate_fleet  # noqa: E402
from reference import assert_frames_close  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _engine_numbers_only():
    """These tests check the engine's numbers on any input (unobserved lines,
    unknown resources, random joins); the join rule is tested in test_join.py."""
    with gpucost.join.checks(False):
        yield


# PySpark 4 warns that pandas 3 is not fully supported; the results are
# checked against the engine here.
pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

POLICIES = [{}, {"basis": "used", "idle": "share", "by": ["team", "consumer"]},
            {"basis": "blended", "by": ["resource_id", "period"], "freq": "h"}]


@pytest.fixture(scope="module")
def spark():
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable  # workers use this venv
    session = (SparkSession.builder.master("local[2]").appName("gpucost-tests")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               # A zone with daylight saving: results must not depend on it.
               .config("spark.sql.session.timeZone", "America/New_York")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def fleet():
    # 2026-03-08 02:00 does not exist in New York: the fleet spans it.
    return simulate_fleet(gpus=24, hours=8, seed=5, start="2026-03-08 04:00", strings="str")


def frames(spark, fleet):
    usage = fleet.usage.astype({"resource_id": object, "consumer": object})
    costs = fleet.costs.astype({"resource_id": object})
    return spark.createDataFrame(costs), spark.createDataFrame(usage)


@pytest.mark.parametrize("policy", POLICIES)
def test_equals_single_machine(spark, fleet, policy):
    costs, usage = frames(spark, fleet)
    result = gpucost.spark.allocate(costs, usage, fleet.inventory, fleet.workloads, **policy)
    expected = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, **policy)
    assert_frames_close(result, expected, rel=1e-9, abs_=1e-9)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]
    assert_frames_close(result.attrs["join"], expected.attrs["join"])


def test_spark_inventory_and_missing_resources(spark, fleet):
    costs = pd.concat([fleet.costs.astype({"resource_id": object}),
                       fleet.costs.iloc[:1].astype({"resource_id": object}).assign(resource_id="ghost")],
                      ignore_index=True)
    costs_sp, usage_sp = spark.createDataFrame(costs), frames(spark, fleet)[1]
    result = gpucost.spark.allocate(costs_sp, usage_sp, spark.createDataFrame(fleet.inventory), by="consumer",
                                    buckets=3)
    expected = gpucost.allocate(costs, fleet.usage, fleet.inventory)
    assert_frames_close(result, expected)
    assert result.attrs["diagnostics"]["lines_unattributed"] == 1


def test_bad_row_is_rejected(spark, fleet):
    usage = fleet.usage.astype({"resource_id": object, "consumer": object})
    usage.loc[usage.index[77], "util"] = 1.5
    costs = spark.createDataFrame(fleet.costs.astype({"resource_id": object}))
    with pytest.raises(Exception, match=r"usage: the row with timestamp=.*column 'util': 1.5 is outside"):
        gpucost.spark.allocate(costs, spark.createDataFrame(usage), fleet.inventory)


def test_warns_once_as_allocate_does(spark, fleet):
    """gpucost.allocate's join rule, once, on the driver (issue 29): a quarter of
    the workloads labelled, so most of the GPU cost is on __unlabelled__."""
    workloads = fleet.workloads.iloc[: len(fleet.workloads) // 4]
    costs, usage = frames(spark, fleet)
    with gpucost.join.checks(True):
        with pytest.warns(gpucost.JoinWarning) as local:
            gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, workloads, by="team")
        with pytest.warns(gpucost.JoinWarning) as distributed:
            gpucost.spark.allocate(costs, usage, fleet.inventory, workloads, by="team")
    expected = [str(w.message) for w in local if w.category is gpucost.JoinWarning]
    assert [str(w.message) for w in distributed if w.category is gpucost.JoinWarning] == expected
    assert any(m.startswith("labels cover too little") for m in expected)


def test_energy_columns_equal_single_machine(spark, fleet):
    """docs/semantics.md, 9: with power_w, pue and a carbon intensity the
    runner gives the energy columns, summed over partitions as allocate does."""
    rng = np.random.default_rng(3)
    with_power = fleet.usage.assign(power_w=rng.uniform(60.0, 700.0, len(fleet.usage)))
    usage = spark.createDataFrame(with_power.astype({"resource_id": object, "consumer": object}))
    costs = spark.createDataFrame(fleet.costs.astype({"resource_id": object}))
    policy = dict(by=["team"], pue=1.25, carbon_intensity=300.0)
    result = gpucost.spark.allocate(costs, usage, fleet.inventory, fleet.workloads, **policy)
    with gpucost.join.checks(False):
        expected = gpucost.allocate(fleet.costs, with_power, fleet.inventory, fleet.workloads, **policy)
    assert {"energy_kwh", "facility_energy_kwh", "co2e_kg"} <= set(result.columns)
    assert_frames_close(result, expected[result.columns], rel=1e-9, abs_=1e-9)
