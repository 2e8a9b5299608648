"""docs/semantics.md section 10, down time: by hand, through every entry point."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpucost

T0 = pd.Timestamp("2026-03-02T00:00Z")


def at(hours: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(hours=hours)


def minutes(resource: str, device: int, consumer: str | None, start: float, end: float, util: float) -> pd.DataFrame:
    ts = pd.date_range(at(start), at(end), freq="1min", inclusive="left")
    return pd.DataFrame({"timestamp": ts, "resource_id": resource, "device": device, "consumer": consumer,
                         "share": 1.0, "util": util, "mem_used": 0.0})


@pytest.fixture
def node():
    """$8 for 4 hours of a 2-GPU node; job A on GPU 0 all along, GPU 1 free;
    the node down [01:00, 02:00)."""
    costs = pd.DataFrame({"resource_id": ["n1"], "start": [at(0)], "end": [at(4)], "cost": [8.0]})
    usage = pd.concat([minutes("n1", 0, "A", 0, 4, 1.0), minutes("n1", 1, None, 0, 4, 0.0)], ignore_index=True)
    inventory = pd.DataFrame({"resource_id": ["n1", "n1"], "device": [0, 1], "mem_capacity": [80 * 2.0**30] * 2})
    downtime = pd.DataFrame({"resource_id": ["n1"], "start": [at(1)], "end": [at(2)], "reason": ["maintenance"]})
    return costs, usage, inventory, downtime


def by_consumer(result: pd.DataFrame) -> dict:
    return dict(zip(result["consumer"], result["cost"]))


def test_down_part_by_hand(node):
    costs, usage, inventory, downtime = node
    # A's samples inside the window are busy while the node is said to be down.
    with pytest.warns(gpucost.JoinWarning, match="60 samples on 1 resource.*inside their down windows"):
        result = gpucost.allocate(costs, usage, inventory, downtime=downtime, interval=60)
    # __down__: 1 h of 4 = $2 and 2 GPU-h; up: a $6 line of 6 GPU-h, A held 3 of them.
    assert by_consumer(result) == {"A": 3.0, "__down__": 2.0, "__idle__": 3.0}
    down = result.set_index("consumer").loc["__down__"]
    assert (down["gpu_hours"], down["idle_cost"]) == (2.0, 0.0)
    d = result.attrs["diagnostics"]
    assert (d["lines_down"], d["samples_in_downtime"], d["samples_used"]) == (1, 60, 180)
    assert d["samples_total"] == sum(d[k] for k in ("samples_duplicate", "samples_no_consumer",
                                                     "samples_unknown_resource", "samples_outside_lines",
                                                     "samples_used", "samples_in_downtime"))
    join = result.attrs["join"]
    assert (join["cost_down"].tolist(), join["samples_in_downtime"].tolist()) == ([2.0], [60])


def test_a_quiet_window_warns_nothing_and_is_said_in_the_report(node):
    costs, usage, inventory, downtime = node
    quiet = usage[~((usage["consumer"] == "A") & (usage["timestamp"] >= at(1)) & (usage["timestamp"] < at(2)))]
    result = gpucost.allocate(costs, quiet, inventory, downtime=downtime, interval=60)  # warnings are errors here
    assert by_consumer(result) == {"A": 3.0, "__down__": 2.0, "__idle__": 3.0}
    text = gpucost.join_report(result, costs, quiet).text()
    assert "down time: 1 lines partly or wholly down" in text and "down $2.00" in text


def test_without_downtime_nothing_changes(node):
    costs, usage, inventory, _ = node
    plain = gpucost.allocate(costs, usage, inventory, interval=60)
    empty = gpucost.allocate(costs, usage, inventory, interval=60, downtime=pd.DataFrame(
        {"resource_id": pd.Series([], dtype=object), "start": pd.Series([], dtype="datetime64[ns, UTC]"),
         "end": pd.Series([], dtype="datetime64[ns, UTC]")}))
    pd.testing.assert_frame_equal(plain, empty)
    assert "lines_down" not in plain.attrs["diagnostics"] and "cost_down" not in plain.attrs["join"].columns


def test_by_label_streamed_and_arrow_agree(node):
    costs, usage, inventory, downtime = node
    usage = usage[~((usage["consumer"] == "A") & (usage["timestamp"] >= at(1)) & (usage["timestamp"] < at(2)))]
    workloads = pd.DataFrame({"consumer": ["A"], "team": ["ml"]})
    one = gpucost.allocate(costs, usage, inventory, workloads, by="team", downtime=downtime, interval=60)
    assert dict(zip(one["team"], one["cost"])) == {"__down__": 2.0, "__idle__": 3.0, "ml": 3.0}
    alloc = gpucost.Allocator(costs, inventory, workloads, by="team", interval=60, downtime=downtime)
    alloc.add_all([usage.iloc[200:], usage.iloc[:200]])
    pd.testing.assert_frame_equal(alloc.finish(), one)
    import pyarrow as pa
    arrow = gpucost.allocate(costs, usage, inventory, workloads, by="team", downtime=pa.table(downtime), interval=60)
    pd.testing.assert_frame_equal(arrow, one)
    streamed = gpucost.allocate_stream(costs, usage, inventory, workloads, by="team", interval=60, chunk_rows=100,
                                       downtime=downtime)
    pd.testing.assert_frame_equal(streamed, one)


def test_bad_windows_name_the_row_and_column(node):
    costs, usage, inventory, downtime = node
    bad = pd.concat([downtime, downtime.assign(start=at(3), end=at(2))], ignore_index=True)
    with pytest.raises(gpucost.InvalidInputError, match="downtime: row 1, column 'end': end is not after start"):
        gpucost.allocate(costs, usage, inventory, downtime=bad, interval=60)
    with pytest.raises(gpucost.InvalidInputError, match="downtime.*'end'"):
        gpucost.allocate(costs, usage, inventory, downtime=downtime.drop(columns="end"), interval=60)


windows = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 59), st.integers(1, 120)), max_size=4)


@settings(max_examples=40, deadline=None)
@given(windows=windows, idle=st.sampled_from(["keep", "share"]), basis=st.sampled_from(["allocated", "used"]))
def test_money_is_conserved_and_down_matches_the_windows(windows, idle, basis):
    costs = pd.DataFrame({"resource_id": ["n1", "n1", "n2"], "start": [at(0), at(3), at(0)],
                          "end": [at(3), at(6), at(6)], "cost": [9.0, 6.0, 12.0]})
    usage = pd.concat([minutes("n1", 0, "A", 0, 6, 0.5), minutes("n2", 0, "B", 1, 5, 0.25)], ignore_index=True)
    inventory = pd.DataFrame({"resource_id": ["n1", "n2"], "device": [0, 0], "mem_capacity": [2.0**30] * 2})
    instants = "datetime64[ns, UTC]"
    downtime = pd.DataFrame({"resource_id": pd.Series(["n1"] * len(windows), dtype=object),
                             "start": pd.Series([at(h) + pd.Timedelta(minutes=m) for h, m, _ in windows], dtype=instants),
                             "end": pd.Series([at(h) + pd.Timedelta(minutes=m + n) for h, m, n in windows],
                                              dtype=instants)})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpucost.JoinWarning)
        result = gpucost.allocate(costs, usage, inventory, downtime=downtime, interval=60, idle=idle, basis=basis)
    assert result["cost"].sum() == pytest.approx(27.0, rel=1e-12)
    # The down money is each line's cost times its share of down time (the union of the windows, clipped).
    down_minutes = np.zeros(6 * 60, dtype=bool)
    for h, m, n in windows:
        down_minutes[h * 60 + m:min(6 * 60, h * 60 + m + n)] = True
    expected = 9.0 * down_minutes[:180].mean() + 6.0 * down_minutes[180:].mean()
    assert by_consumer(result).get("__down__", 0.0) == pytest.approx(expected, abs=1e-9)


def test_find_idle_reports_down_time_as_down_never_as_waste():
    """A g5.xlarge ($1.006 an hour) billed 6 hours, busy the first 2, then
    down [02:00, 04:00) for maintenance, then idle: only [04:00, 06:00) is
    idle (terminate, $2.012); the down 2 hours are a finding with action
    "down", never flagged, $2.012 in dollars_down."""
    hours = pd.date_range(at(0), periods=6, freq="h")
    costs = pd.DataFrame({"resource_id": "i-0aaa", "instance_type": "g5.xlarge", "start": hours,
                          "end": hours + pd.Timedelta("1h"), "cost": 1.006})
    t = pd.date_range(at(0), periods=36, freq="10min")
    busy = np.arange(36) < 12
    usage = pd.DataFrame({"timestamp": t, "resource_id": "i-0aaa", "device": 0,
                          "consumer": np.where(busy, "train", ""), "share": 1.0, "util": np.where(busy, 0.9, 0.0),
                          "mem_used": 0.0, "duration": 600.0})
    downtime = pd.DataFrame({"resource_id": ["i-0aaa"], "start": [at(2)], "end": [at(4)]})
    report = gpucost.find_idle(usage, costs, gpucost.inventory(costs), downtime=downtime)
    f = report.findings.set_index("action")
    assert set(f.index) == {"terminate", "down"}
    assert (f.loc["terminate", "start"], f.loc["terminate", "end"]) == (at(4), at(6))
    assert f.loc["terminate", "dollars_wasted"] == pytest.approx(2.012)
    assert not f.loc["down", "flagged"] and f.loc["down", "dollars_wasted"] == 0
    assert f.loc["down", "dollars_down"] == pytest.approx(2.012)
    assert (f.loc["down", "start"], f.loc["down", "end"]) == (at(2), at(4))
    plain = gpucost.find_idle(usage, costs, gpucost.inventory(costs))
    assert plain.findings["dollars_wasted"].sum() == pytest.approx(4.024)  # without the table: 4 idle hours
    assert "dollars_down" not in plain.findings.columns


def test_the_cli_puts_node_events_on_down(tmp_path, capsys):
    """One node of 2 GPUs at $4 an hour for two days; a job on one GPU 2 hours
    on day 1; sacct gives the free time; the node down 06:00-12:00 on day 2
    (sacctmgr's events): $24 on __down__, never idle, from allocate, check
    and find_idle alike, and the CLI equal to Python's allocate(downtime=)."""
    from gpucost import cli
    from gpucost.config import load_config
    from gpucost.plan import load_tables
    hours = pd.date_range("2026-03-01", periods=48, freq="h", tz="UTC")
    pd.DataFrame({"resource_id": "i-dgx01", "start": hours, "end": hours + pd.Timedelta(hours=1), "cost": 4.0}).to_csv(
        tmp_path / "costs.csv", index=False)
    pd.DataFrame({"resource_id": "i-dgx01", "device": [0, 1], "mem_capacity": 80e9}).to_csv(
        tmp_path / "inventory.csv", index=False)
    (tmp_path / "hosts.csv").write_text("host,resource_id,gpus\ndgx01,i-dgx01,2\n")
    (tmp_path / "sacct.txt").write_text(
        "JobIDRaw|JobID|User|Account|Partition|Start|End|State|NodeList|AllocTRES\n"
        "9001|9001|ana|lab-chen|gpu|2026-03-01T10:00:00|2026-03-01T12:00:00|COMPLETED|dgx01|gres/gpu=1\n")
    (tmp_path / "events.txt").write_text("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
                                         "c|dgx01|2026-03-02T06:00:00|2026-03-02T12:00:00|MAINT|bios|root(0)\n")
    config = tmp_path / "gpucost.toml"
    config.write_text('[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\nsacct = "sacct.txt"\n'
                      'hosts = "hosts.csv"\ntimezone = "UTC"\nstart = "2026-03-01"\nend = "2026-03-03"\n'
                      'node_events = "events.txt"\n')
    out_csv = tmp_path / "out.csv"
    assert cli.main(["allocate", "--config", str(config), "--by", "project", "--output", str(out_csv)]) == 0
    rows = pd.read_csv(out_csv).set_index("project")["cost"]
    # 96 GPU-h at $2: 6 h of the node down (12 GPU-h, $24); lab-chen 2 GPU-h ($4); the other 82 GPU-h ($164) idle.
    assert rows.to_dict() == pytest.approx({"__down__": 24.0, "__idle__": 164.0, "lab-chen": 4.0})
    tables = load_tables(load_config(config))
    python = gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads, by="project",
                              downtime=tables.downtime)
    assert dict(zip(python["project"], python["cost"])) == pytest.approx(rows.to_dict())
    capsys.readouterr()
    assert cli.main(["check", "--config", str(config)]) == 0
    # Hourly lines: 6 wholly down, $24.00 on __down__, no busy sample inside.
    assert "down time: 6 lines partly or wholly down on 1 resources ($24.00 on __down__), 0 busy" in \
        capsys.readouterr().out
    idle = gpucost.find_idle(tables.usage, tables.costs, tables.inventory, tables.workloads,
                             downtime=tables.downtime).findings
    down = idle[idle["action"] == "down"]
    assert down["dollars_down"].sum() == pytest.approx(24.0) and not down["flagged"].any()


def test_windows_naming_no_billed_resource_are_a_warning(node):
    """A node name where the bill has instance ids (the hosts mapping
    forgotten): the window changes nothing, and the user is told so."""
    costs, usage, inventory, downtime = node
    quiet = usage[usage["consumer"] != "A"]
    wrong = downtime.assign(resource_id="dgx01")
    with pytest.warns(gpucost.JoinWarning, match=r"1 down window\(s\) name 1 resource\(s\) no bill line names "
                                                 r"\(dgx01\): they change nothing"):
        result = gpucost.allocate(costs, quiet, inventory, downtime=wrong, interval=60)
    assert "__down__" not in set(result["consumer"])
