"""gpucost.pipeline: a day's rows written idempotently to SQLite, a real
PostgreSQL server and a Parquet dataset: run twice, crash in the middle,
no duplicates and no loss."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import gpucost
import gpucost.pipeline as gp
from gpucost.demo import demo_fleet
import services

DAY1, DAY2 = "2026-03-02", "2026-03-03"


@pytest.fixture(scope="module")
def fleet():
    return demo_fleet()


@pytest.fixture(scope="module")
def postgres_url():
    if not services.postgres_bin("initdb"):
        pytest.skip("Debian's postgresql is not installed (make test installs it)")
    with services.postgres() as url:
        yield url


def day_total(fleet, day) -> float:
    start = pd.Timestamp(day, tz="UTC")
    mask = (fleet.costs["start"] >= start) & (fleet.costs["start"] < start + pd.Timedelta(days=1))
    return float(fleet.costs.loc[mask, "cost"].sum())


@pytest.fixture(params=["sqlite", "postgresql", "parquet"])
def sink(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'showback.db'}"
    if request.param == "parquet":
        return str(tmp_path / "showback")
    url = request.getfixturevalue("postgres_url")
    import sqlalchemy as sa
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # a fresh table per test
        conn.execute(sa.text("DROP TABLE IF EXISTS gpucost_allocation"))
    engine.dispose()
    return url


def test_allocate_day_is_the_days_share_of_the_month(fleet):
    result = gp.allocate_day(DAY1, fleet.costs, fleet.usage, fleet.inventory, fleet.workloads)
    assert list(result.columns[:3]) == ["day", "team", "project"]
    assert set(result["day"]) == {pd.Timestamp(DAY1).date()}
    assert result["cost"].sum() == pytest.approx(day_total(fleet, DAY1), rel=1e-12)
    # The same as allocating the month by day and taking that day.
    month = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads,
                             by=["period", "team", "project"], freq="D")
    month = month[month["period"] == pd.Timestamp(DAY1, tz="UTC")].reset_index(drop=True)
    np.testing.assert_allclose(result["cost"].to_numpy(), month["cost"].to_numpy(), rtol=1e-9)
    assert list(result["team"]) == list(month["team"])


def test_run_twice_no_duplicates_no_loss(fleet, sink):
    load = gp.demo_source()
    n1 = gp.run_day(DAY1, load, sink)
    first = gp.read_sink(sink)
    n1_again = gp.run_day(DAY1, load, sink)  # re-run: replaces, never appends
    assert n1 == n1_again == len(first) > 5
    again = gp.read_sink(sink)
    pd.testing.assert_frame_equal(first, again)
    n2 = gp.run_day(DAY2, load, sink)
    both = gp.read_sink(sink)
    assert len(both) == n1 + n2
    assert not both.duplicated(["day", "team", "project"]).any()
    for day in (DAY1, DAY2):
        rows = both[both["day"] == pd.Timestamp(day).date()]
        assert rows["cost"].sum() == pytest.approx(day_total(fleet, day), rel=1e-9)
        assert gp.check_day(day, load, sink) == pytest.approx(day_total(fleet, day), rel=1e-9)
    only2 = gp.read_sink(sink, start=DAY2, end="2026-03-04")
    assert set(only2["day"]) == {pd.Timestamp(DAY2).date()}


def test_rerun_with_changed_data_replaces_the_day(fleet, sink):
    load = gp.demo_source()
    gp.run_day(DAY1, load, sink)
    gp.run_day(DAY2, load, sink)
    # A corrected bill for DAY1 (a credit halves it): the re-run replaces DAY1 only.
    costs = fleet.costs.copy()
    costs["cost"] = costs["cost"] * 0.5
    gp.run_day(DAY1, lambda s, e: (costs, fleet.usage, fleet.inventory, fleet.workloads), sink)
    rows = gp.read_sink(sink)
    d1 = rows[rows["day"] == pd.Timestamp(DAY1).date()]
    d2 = rows[rows["day"] == pd.Timestamp(DAY2).date()]
    assert d1["cost"].sum() == pytest.approx(0.5 * day_total(fleet, DAY1), rel=1e-9)
    assert d2["cost"].sum() == pytest.approx(day_total(fleet, DAY2), rel=1e-9)


CRASH = textwrap.dedent("""
    import os, sys
    import gpucost.pipeline as gp
    sink, day, where = sys.argv[1], sys.argv[2], sys.argv[3]
    if where == "sql":
        import sqlalchemy.engine.base as base
        original = base.Connection.execute
        def execute(self, statement, parameters=None, *args, **kwargs):
            if getattr(statement, "is_insert", False) and parameters:
                original(self, statement, parameters[: len(parameters) // 2], *args, **kwargs)
                os._exit(3)  # the process dies half-way through the insert, transaction open
            return original(self, statement, parameters, *args, **kwargs)
        base.Connection.execute = execute
    else:
        import pyarrow.parquet as pq
        def write_table(table, where, **kwargs):
            where.write(b"PAR1 half a file")
            where.flush()
            os._exit(3)  # the process dies while writing the new file
        pq.write_table = write_table
    gp.run_day(day, gp.demo_source(), sink)
""")


def test_crash_in_the_middle_keeps_the_previous_rows(fleet, sink, tmp_path):
    load = gp.demo_source()
    gp.run_day(DAY1, load, sink)
    gp.run_day(DAY2, load, sink)
    before = gp.read_sink(sink)
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    where = "parquet" if "://" not in sink else "sql"
    proc = subprocess.run([sys.executable, str(script), sink, DAY1, where], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 3, proc.stderr
    after = gp.read_sink(sink)
    pd.testing.assert_frame_equal(before, after)  # nothing lost, nothing half-written
    # And the next run of that day completes normally.
    gp.run_day(DAY1, load, sink)
    pd.testing.assert_frame_equal(before, gp.read_sink(sink))


def test_failed_write_raises_and_keeps_previous_rows(fleet, sink):
    load = gp.demo_source()
    gp.run_day(DAY1, load, sink)
    before = gp.read_sink(sink)
    good = gp.allocate_day(DAY1, fleet.costs, fleet.usage, fleet.inventory, fleet.workloads)
    bad = good.copy()
    bad["cost"] = bad["cost"].astype(object)
    bad.loc[len(bad) // 2, "cost"] = "not a number"  # fails half-way through the rows
    with pytest.raises((gpucost.Error, ValueError, TypeError)):
        gp.write_day(bad, sink, DAY1)
    pd.testing.assert_frame_equal(before, gp.read_sink(sink))


def test_bad_input_is_one_clear_error(fleet, tmp_path):
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'day'"):
        gp.day_bounds("2026-03-02 10:00")
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'day'"):
        gp.day_bounds("yesterday-ish")
    result = gp.allocate_day(DAY1, fleet.costs, fleet.usage, fleet.inventory, fleet.workloads)
    with pytest.raises(gpucost.InvalidInputError, match="column 'day'.*2026-03-02.*2026-03-03"):
        gp.write_day(result, str(tmp_path / "ds"), DAY2)
    url = f"sqlite:///{tmp_path / 'x.db'}"
    gp.write_day(result, url, DAY1)
    other = gp.allocate_day(DAY1, fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["user"])
    with pytest.raises(gpucost.InvalidInputError, match="table gpucost_allocation: missing column 'user'"):
        gp.write_day(other, url, DAY1)
    with pytest.raises(gpucost.InvalidInputError, match="table nope: not found"):
        gp.read_sink(url, table="nope")
