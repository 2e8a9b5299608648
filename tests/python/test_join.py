"""Never silently wrong: the join report, the one warning rule and its CLI
form (issue 20). Each case is the input shape that used to give a plausible
wrong table with exit code 0; each asserts the warning (or error) text and the
numbers after repair."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import gpucost
from gpucost import cli

GIB = 2.0**30
T0 = pd.Timestamp("2026-03-02 10:00", tz="UTC")


def costs_table(rows) -> pd.DataFrame:
    """rows: (resource_id, start hour offset, hours, cost[, currency])."""
    out = []
    for row in rows:
        rid, h0, hours, cost = row[:4]
        for h in range(hours):
            line = {"resource_id": rid, "start": T0 + pd.Timedelta(hours=h0 + h),
                    "end": T0 + pd.Timedelta(hours=h0 + h + 1), "cost": cost}
            if len(row) > 4:
                line["currency"] = row[4]
            out.append(line)
    return pd.DataFrame(out)


def inventory_table(devices: dict) -> pd.DataFrame:
    rows = [{"resource_id": r, "device": d, "mem_capacity": 80 * GIB} for r, n in devices.items() for d in range(n)]
    return pd.DataFrame(rows)


def usage_table(series, start=T0, minutes=120, step_s=60) -> pd.DataFrame:
    """series: (resource_id, device, consumer, util); one sample a step."""
    times = start + pd.to_timedelta(np.arange(0, minutes * 60, step_s), unit="s")
    frames = [pd.DataFrame({"timestamp": times, "resource_id": r, "device": d, "consumer": c, "share": 1.0,
                            "util": u, "mem_used": 10 * GIB}) for r, d, c, u in series]
    return pd.concat(frames, ignore_index=True)


WORKLOADS = pd.DataFrame({"consumer": ["train-a", "nb-b"], "team": ["vision", "research"]})


@pytest.fixture
def fleet():
    costs = costs_table([("i-1", 0, 2, 8.0), ("i-2", 0, 2, 4.0)])
    inventory = inventory_table({"i-1": 2, "i-2": 1})
    usage = usage_table([("i-1", 0, "train-a", 0.9), ("i-1", 1, "", 0.0), ("i-2", 0, "nb-b", 0.5)])
    return costs, usage, inventory


def join_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, gpucost.JoinWarning)]


def test_clean_join_warns_nothing(fleet):
    costs, usage, inventory = fleet
    result = gpucost.allocate(costs, usage, inventory)  # filterwarnings=error: any warning fails
    report = gpucost.join_report(result, costs, usage)
    assert report.ok and report.problems == []
    assert float(result["cost"].sum()) == pytest.approx(24.0)
    summary = report.summary()
    assert float(summary["cost_observed"].sum()) == pytest.approx(24.0)
    assert float(summary["cost_unobserved"].sum()) == 0.0


def test_billed_instance_without_telemetry_is_unobserved_not_idle(fleet):
    costs, usage, inventory = fleet
    usage = usage[usage["resource_id"] != "i-2"]
    with pytest.warns(gpucost.JoinWarning) as record:
        result = gpucost.allocate(costs, usage, inventory)
    messages = join_warnings(record)
    assert len(messages) == 1
    assert "1 billed GPU resource(s) have lines without any telemetry (i-2): $8.00 is on __unobserved__" in messages[0]
    assert "Fix: give their telemetry" in messages[0]
    rows = result.set_index("consumer")
    assert rows.loc["__unobserved__", "cost"] == pytest.approx(8.0)
    assert rows.loc["__unobserved__", "gpu_hours"] == pytest.approx(2.0)
    assert rows.loc["__idle__", "cost"] == pytest.approx(8.0)  # i-1's free device 1, measured idle
    with pytest.raises(gpucost.JoinError, match=r"i-2.*\[strict=True\]"):
        gpucost.allocate(costs, usage, inventory, strict=True)


def test_find_idle_never_terminates_what_it_did_not_measure(fleet):
    costs, usage, inventory = fleet
    usage = usage[usage["resource_id"] != "i-2"]
    idle = gpucost.find_idle(usage, costs, inventory)
    mine = idle.findings[idle.findings["resource_id"] == "i-2"]
    assert list(mine["action"]) == ["no telemetry"]
    assert not mine["flagged"].any()
    assert float(mine["dollars_wasted"].sum()) == 0.0
    assert float(mine["dollars_unobserved"].sum()) == pytest.approx(8.0)
    assert float(idle.daily["unobserved_cost"].sum()) == pytest.approx(8.0)
    assert float(idle.daily["idle_cost"].sum()) == pytest.approx(float(idle.findings.query("flagged")
                                                                         ["dollars_wasted"].sum()))
    assert not (idle.findings["action"] == "terminate").any()


def test_bill_and_telemetry_of_different_months_is_an_error(fleet):
    costs, _, inventory = fleet
    october = usage_table([("i-1", 0, "train-a", 0.9), ("i-2", 0, "nb-b", 0.5)], start=T0 + pd.Timedelta(days=30))
    with pytest.raises(gpucost.JoinError, match="no usage sample joined a billed GPU line .*the periods do not meet"):
        gpucost.allocate(costs, october, inventory)


def test_telemetry_named_by_node_without_mapping_is_an_error(fleet):
    costs, usage, inventory = fleet
    nodes = usage.assign(resource_id=usage["resource_id"].map({"i-1": "ip-10-0-0-1", "i-2": "ip-10-0-0-2"}))
    with pytest.raises(gpucost.JoinError, match=r"no id in common\. Fix: map nodes or hosts to the bill's "
                                                r"instance ids \(nodes="):
        gpucost.allocate(costs, nodes, inventory)


def test_telemetry_of_an_instance_not_in_the_bill(fleet):
    costs, usage, inventory = fleet
    extra = usage_table([("i-3", 0, "etl", 0.7)])
    with pytest.warns(gpucost.JoinWarning, match=r"telemetry of 1 resource\(s\) that the bill does not name "
                                                 r"\(i-3; 2\.0 GPU-hours held\) joined nothing"):
        result = gpucost.allocate(costs, pd.concat([usage, extra], ignore_index=True), inventory)
    assert "etl" not in set(result["consumer"])
    assert float(result["cost"].sum()) == pytest.approx(24.0)


def test_samples_outside_every_line(fleet):
    costs, usage, inventory = fleet
    late = usage_table([("i-1", 0, "train-a", 0.9)], start=T0 + pd.Timedelta(hours=2), minutes=60)
    with pytest.warns(gpucost.JoinWarning, match=r"60 samples \(1\.0 GPU-hours held\) on 1 billed GPU resource\(s\) "
                                                 r"fall outside every bill line: bill 2026-03-02 10:00 \.\. "
                                                 r"2026-03-02 12:00 UTC"):
        gpucost.allocate(costs, pd.concat([usage, late], ignore_index=True), inventory)


def test_two_currencies_are_never_added(fleet):
    _, usage, inventory = fleet
    costs = costs_table([("i-1", 0, 2, 10.0, "USD"), ("i-2", 0, 2, 10.0, "EUR")])
    result = gpucost.allocate(costs, usage, inventory)
    assert "currency" in result.columns
    per = result.groupby("currency")["cost"].sum()
    assert per["USD"] == pytest.approx(20.0) and per["EUR"] == pytest.approx(20.0)
    with pytest.raises(gpucost.InvalidInputError, match="the bill has amounts in EUR and USD"):
        gpucost.report(costs, usage, inventory, WORKLOADS, by=["team"])
    rates = pd.DataFrame({"currency": ["EUR"], "date": ["2026-03-01"], "rate": [1.25]})
    usd = gpucost.convert_currency(costs, rates, to="USD")
    assert set(usd["currency"]) == {"USD"}
    assert float(usd["cost"].sum()) == pytest.approx(20.0 + 25.0)
    with pytest.raises(gpucost.InvalidInputError, match=r"costs: row 2, column 'start': no EUR rate on or before 2026-03-02"):
        gpucost.convert_currency(costs, rates.assign(date="2026-04-01"), to="USD")
    r = gpucost.report(costs, usage, inventory, WORKLOADS, by=["team"], exchange_rates=rates, analyses=[])
    assert r.data["kpis"]["total"].iloc[0] == pytest.approx(45.0)
    assert "All amounts in USD." in r.html


def test_oversubscription_names_the_replica_label(fleet):
    costs, usage, inventory = fleet
    twice = usage[usage["resource_id"] == "i-2"].assign(consumer="nb-b-replica")
    both = pd.concat([usage, twice], ignore_index=True)
    both.attrs["telemetry"] = {"replica_labels": ["prometheus_replica"]}
    with pytest.warns(gpucost.JoinWarning) as record:
        gpucost.allocate(costs, both, inventory)
    messages = join_warnings(record)
    assert any("2 bill lines of 1 resource(s) (i-2) were held beyond their GPUs' capacity" in m
               and "prometheus_replica" in m for m in messages), messages


@pytest.mark.parametrize("kind", ["pandas", "arrow", "polars"])
def test_gpu_lines_without_resource_ids(fleet, kind):
    costs, usage, inventory = fleet
    costs = costs.assign(gpu=True)
    costs.loc[costs["resource_id"] == "i-2", "resource_id"] = ""
    inventory = inventory[inventory["resource_id"] != "i-2"]
    usage = usage[usage["resource_id"] != "i-2"]
    if kind == "arrow":  # costs read through Arrow are checked too
        costs = pa.Table.from_pandas(costs, preserve_index=False)
    elif kind == "polars":
        costs = pytest.importorskip("polars").from_pandas(costs)
    for output in ("pandas", "arrow"):
        with pytest.warns(gpucost.JoinWarning, match=r"2 GPU usage lines carry no resource id: \$8\.00 stays "
                                                     r"__unattributed__"):
            gpucost.allocate(costs, usage, inventory, output=output)


def test_inner_calls_stay_quiet_and_the_report_warns_once(fleet):
    costs, usage, inventory = fleet
    usage = usage[usage["resource_id"] != "i-2"]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        report = gpucost.report(costs, usage, inventory, WORKLOADS, by=["team"], analyses=["idle"])
    assert len(join_warnings(record)) == 1
    assert report.sections[0].key == "join"
    assert "What did not line up" in report.html and "i-2" in report.html
    assert report.data["kpis"]["unobserved"].iloc[0] == pytest.approx(8.0)


# ---- the command line: one stderr line per problem, exit codes, --strict ----------------

@pytest.fixture
def files(tmp_path, fleet):
    costs, usage, inventory = fleet
    paths = {}
    for name, frame in (("costs", costs), ("usage", usage[usage["resource_id"] != "i-2"]), ("inventory", inventory)):
        paths[name] = tmp_path / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    return paths


def test_cli_warns_on_stderr_and_exits_0(files, capsys):
    code = cli.main(["allocate", "--costs", str(files["costs"]), "--usage", str(files["usage"]), "--inventory",
                     str(files["inventory"]), "--by", "consumer", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("gpucost allocate: warning: 1 billed GPU resource(s) have lines without any "
                               "telemetry (i-2): $8.00 is on __unobserved__")
    assert "(--telemetry / --prometheus)" in lines[0]
    assert "__unobserved__" in out


def test_cli_strict_exits_2_and_writes_nothing(files, capsys):
    code = cli.main(["allocate", "--costs", str(files["costs"]), "--usage", str(files["usage"]), "--inventory",
                     str(files["inventory"]), "--by", "consumer", "--format", "csv", "--strict"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("gpucost allocate: error: 1 billed GPU resource(s) have lines without any telemetry")


def test_cli_nothing_joined_exits_2(files, fleet, tmp_path, capsys):
    _, usage, _ = fleet
    renamed = tmp_path / "nodes.csv"
    usage.assign(resource_id="node-" + usage["resource_id"]).to_csv(renamed, index=False)
    code = cli.main(["allocate", "--costs", str(files["costs"]), "--usage", str(renamed), "--inventory",
                     str(files["inventory"]), "--format", "csv", "--by", "consumer"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "error: no usage sample joined a billed GPU line ($24.00 billed)" in err
    assert "(--nodes FILE, or nodes in [sources])" in err


def test_cli_idle_says_no_telemetry(files, capsys):
    code = cli.main(["idle", "--costs", str(files["costs"]), "--usage", str(files["usage"]), "--inventory",
                     str(files["inventory"]), "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "no telemetry" in out and "terminate" not in out
    assert "warning: 1 billed GPU resource(s) have lines without any telemetry" in err


def test_check_clean_exits_0(files, fleet, tmp_path, capsys):
    _, usage, _ = fleet
    full = tmp_path / "full.csv"
    usage.to_csv(full, index=False)
    code = cli.main(["check", "--costs", str(files["costs"]), "--usage", str(full), "--inventory",
                     str(files["inventory"])])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "billed GPU resources with telemetry:    2 ($24.00)" in out
    assert "billed GPU resources without telemetry: 0 ($0.00)" in out
    assert out.rstrip().endswith("problems: none")


def test_check_names_each_problem_and_exits_1(files, capsys):
    code = cli.main(["check", "--costs", str(files["costs"]), "--usage", str(files["usage"]), "--inventory",
                     str(files["inventory"])])
    out, err = capsys.readouterr()
    assert code == 1
    assert "billed GPU resources without telemetry: 1 ($8.00)" in out
    assert "  warning: 1 billed GPU resource(s) have lines without any telemetry (i-2)" in out
    assert "(--telemetry / --prometheus)" in out


def test_check_nothing_joined_exits_2(files, fleet, tmp_path, capsys):
    _, usage, _ = fleet
    renamed = tmp_path / "nodes.csv"
    usage.assign(resource_id="node-" + usage["resource_id"]).to_csv(renamed, index=False)
    code = cli.main(["check", "--costs", str(files["costs"]), "--usage", str(renamed), "--inventory",
                     str(files["inventory"])])
    out, _ = capsys.readouterr()
    assert code == 2
    assert "  error: no usage sample joined a billed GPU line ($24.00 billed)" in out


def test_allocate_check_prints_the_check_first(files, capsys):
    code = cli.main(["allocate", "--check", "--costs", str(files["costs"]), "--usage", str(files["usage"]),
                     "--inventory", str(files["inventory"]), "--by", "consumer", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0
    assert err.startswith("sources\n  bill")
    assert "warning: 1 billed GPU resource(s)" in err
    assert out.startswith("consumer,")
