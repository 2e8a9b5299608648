"""The gpucost command on the demo fleet: every subcommand, --help, the
config file and flags, output formats, exit codes and one-line errors."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import cli
from gpucost.demo import demo_fleet

SUBCOMMANDS = ["demo", "check", "allocate", "report", "idle", "spot", "advise", "budget", "catalog", "export-metrics"]
ANALYSES = {"idle": "find_idle", "spot": "spot_runs", "advise": "advise_commitments", "budget": "budget_status"}


@pytest.fixture(scope="module")
def fleet():
    return demo_fleet()


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def library(fleet, by, **policy) -> pd.DataFrame:
    return gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=by, **policy)


@pytest.mark.parametrize("command", [None, *SUBCOMMANDS])
def test_help_everywhere(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"] if command else ["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: gpucost")
    if command in ("allocate", "report", "export-metrics", "idle"):
        assert "--config" in out and "--bill" in out and "--demo" in out


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["allocate", "--basis", "nope"])
    assert exc.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    code, _, err = run(capsys, "allocate", "--demo", "--costs", "x.csv")
    assert code == 2 and err.count("\n") == 1 and "--demo cannot be combined with --costs" in err
    code, _, err = run(capsys, "allocate", "--costs", "nope.csv", "--usage", "nope.csv")
    assert code == 2 and err == ("gpucost allocate: error: nope.csv: no such file (costs)\n"  # every problem, at once
                                 "gpucost allocate: error: nope.csv: no such file (usage)\n")


def test_demo_prints_showback_and_writes_files(tmp_path, capsys, fleet):
    code, out, err = run(capsys, "demo", "--dir", str(tmp_path / "demo"), "--no-progress")
    assert code == 0, err
    bill = float(fleet.costs["cost"].sum())
    assert f"bill ${bill:,.2f}" in out
    total_line = next(line for line in out.splitlines() if line.strip().startswith("TOTAL"))
    assert f"{bill:,.2f}" in total_line
    by_team = library(fleet, ["team"])
    for team, cost in zip(by_team["team"], by_team["cost"]):
        assert any(line.split()[:1] == [team] and f"{cost:,.2f}" in line for line in out.splitlines()), team
    names = {p.name for p in (tmp_path / "demo").iterdir()}
    assert {"focus.csv.gz", "cur2.csv.gz", "prometheus", "pods.json", "nodes.json", "report.html", "budgets.csv",
            "gpucost.toml", "spot_interruptions.jsonl"} <= names
    assert (tmp_path / "demo" / "report.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_allocate_formats_equal_the_library(fmt, tmp_path, capsys, fleet):
    out_path = tmp_path / f"alloc.{fmt}"
    code, _, err = run(capsys, "allocate", "--demo", "--by", "team,project", "--format", fmt, "-o", str(out_path))
    assert code == 0, err
    got = pd.read_csv(out_path) if fmt == "csv" else pd.DataFrame(json.loads(out_path.read_text()))
    expected = library(fleet, ["team", "project"])
    assert list(got["team"]) == list(expected["team"])
    booked = gpucost.money.book(expected)  # cents, adding up to the bill (docs/semantics.md)
    np.testing.assert_array_equal(got["cost"], booked["cost"])
    np.testing.assert_array_equal(got["gpu_hours"], booked["gpu_hours"])
    code, _, err = run(capsys, "allocate", "--demo", "--by", "team,project", "--format", fmt, "-o", str(out_path),
                       "--decimals", "raw")
    assert code == 0, err
    got = pd.read_csv(out_path) if fmt == "csv" else pd.DataFrame(json.loads(out_path.read_text()))
    np.testing.assert_allclose(got["cost"], expected["cost"], rtol=1e-12)
    np.testing.assert_allclose(got["gpu_hours"], expected["gpu_hours"], rtol=1e-12)


def test_allocate_table_and_period(capsys, fleet):
    code, out, _ = run(capsys, "allocate", "--demo", "--by", "period", "--freq", "MS", "--format", "table")
    assert code == 0
    assert "2026-03-01" in out and "TOTAL" in out and f"{fleet.costs['cost'].sum():,.2f}" in out


def test_allocate_from_gpucost_tables_and_config(tmp_path, capsys, fleet):
    fleet.costs.to_parquet(tmp_path / "costs.parquet")
    fleet.usage.to_parquet(tmp_path / "usage.parquet")
    fleet.inventory.to_csv(tmp_path / "inventory.csv", index=False)
    fleet.workloads.to_csv(tmp_path / "workloads.csv", index=False)
    (tmp_path / "gpucost.toml").write_text(
        '[sources]\ncosts = "costs.parquet"\nusage = "usage.parquet"\ninventory = "inventory.csv"\n'
        'workloads = "workloads.csv"\n[policy]\nby = ["team"]\nidle = "share"\n')
    out_path = tmp_path / "out.csv"
    code, _, err = run(capsys, "allocate", "-c", str(tmp_path / "gpucost.toml"), "-o", str(out_path))
    assert code == 0, err
    got = pd.read_csv(out_path)
    expected = library(fleet, ["team"], idle="share")
    np.testing.assert_allclose(got["cost"], expected["cost"], rtol=0, atol=0.01)  # rounded to cents
    # Flags win over the file.
    code, _, err = run(capsys, "allocate", "-c", str(tmp_path / "gpucost.toml"), "--idle", "keep", "--by", "project",
                       "-o", str(out_path))
    assert code == 0, err
    got = pd.read_csv(out_path)
    assert "__idle__" in set(got["project"])


def test_allocate_to_sql_is_idempotent(tmp_path, capsys, fleet):
    pytest.importorskip("sqlalchemy")
    url = f"sqlite:///{tmp_path / 'gpucost.db'}"
    for _ in range(2):
        code, _, err = run(capsys, "allocate", "--demo", "--by", "team", "--sql", url, "--table", "showback")
        assert code == 0, err
    from gpucost.pipeline import read_sink
    rows = read_sink(url, table="showback")
    assert len(rows["day"].unique()) == 31
    assert not rows.duplicated(["day", "team"]).any()
    assert rows["cost"].sum() == pytest.approx(fleet.costs["cost"].sum(), rel=1e-9)


def test_bad_input_one_line_naming_file_line_column(tmp_path, capsys, fleet):
    costs = fleet.costs.head(50).copy()
    costs["cost"] = costs["cost"].astype(object)
    costs.loc[7, "cost"] = "abc"
    costs.to_csv(tmp_path / "costs.csv", index=False)
    fleet.usage.head(10).to_csv(tmp_path / "usage.csv", index=False)
    code, _, err = run(capsys, "allocate", "--costs", str(tmp_path / "costs.csv"), "--usage",
                       str(tmp_path / "usage.csv"), "--inventory", str(tmp_path / "costs.csv"))
    assert code == 2
    assert err == f"gpucost allocate: error: {tmp_path / 'costs.csv'}: line 9, column 'cost': 'abc' is not a number\n"
    # Engine errors name the usage table's file, the sample's line and the column.
    usage = fleet.usage.head(10).copy()
    usage.loc[3, "share"] = 1.5
    usage.to_csv(tmp_path / "usage.csv", index=False)
    fleet.costs.head(50).to_csv(tmp_path / "costs.csv", index=False)
    fleet.inventory.to_csv(tmp_path / "inventory.csv", index=False)
    code, _, err = run(capsys, "allocate", "--costs", str(tmp_path / "costs.csv"), "--usage",
                       str(tmp_path / "usage.csv"), "--inventory", str(tmp_path / "inventory.csv"), "-o",
                       str(tmp_path / "out.csv"))
    assert code == 2 and err.count("\n") == 1
    assert f"{tmp_path / 'usage.csv'}: line 5, column 'share': 1.5 is outside (0, 1]" in err
    assert not (tmp_path / "out.csv").exists()  # no partial output
    # A broken config file names the file and the key.
    (tmp_path / "bad.toml").write_text("[sources]\nbil = 'focus.csv'\n")
    code, _, err = run(capsys, "allocate", "-c", str(tmp_path / "bad.toml"))
    assert code == 2 and f"{tmp_path / 'bad.toml'}: [sources]: unknown key 'bil'" in err
    (tmp_path / "bad.toml").write_text("[sources\n")
    code, _, err = run(capsys, "report", "-c", str(tmp_path / "bad.toml"))
    assert code == 2 and "bad.toml" in err and "line 1" in err


def test_internal_errors_exit_1_and_debug_shows_the_trace(capsys, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("engine exploded")
    monkeypatch.setattr(gpucost, "allocate", boom)
    code, _, err = run(capsys, "allocate", "--demo")
    assert code == 1
    assert err == "gpucost allocate: internal error: RuntimeError: engine exploded (--debug for the trace)\n"
    with pytest.raises(RuntimeError, match="engine exploded"):
        cli.main(["allocate", "--demo", "--debug"])


def test_report_command(tmp_path, capsys, fleet):
    out = tmp_path / "r.html"
    code, _, err = run(capsys, "report", "--demo", "-o", str(out), "--title", "March showback")
    assert code == 0, err
    text = out.read_text()
    assert "<title>March showback</title>" in text and text.count('<figure class="chart"') == 5
    assert f"${fleet.costs['cost'].sum():,.0f}" in text


@pytest.mark.parametrize("command", sorted(ANALYSES))
def test_analysis_commands(command, capsys, tmp_path):
    code, out, err = run(capsys, command, "--demo", "--format", "csv")
    if hasattr(gpucost, ANALYSES[command]):
        assert code == 0, err
        assert len(pd.read_csv(io.StringIO(out))) > 0
    else:  # not merged in this build: a clear error, exit 1, no output
        assert code == 1 and out == ""
        assert f"no gpucost.{ANALYSES[command]}" in err and err.count("\n") == 1


def test_catalog_command(capsys):
    code, out, _ = run(capsys, "catalog", "--provider", "aws", "--gpu", "A100", "--format", "table")
    assert code == 0
    assert "p4d.24xlarge" in out and "$32.770" in out and "g5.xlarge" not in out
    code, out, _ = run(capsys, "catalog", "--mig", "--gpu", "A100 40GB", "--format", "csv")
    got = pd.read_csv(io.StringIO(out))
    assert "3g.20gb" in set(got["profile"])


def test_export_metrics_stdout_and_textfile(tmp_path, capsys, fleet):
    code, out, err = run(capsys, "export-metrics", "--demo", "--stdout")
    assert code == 0, err
    expected = library(fleet, ["team", "project"], idle="share")
    samples = {}
    for line in out.splitlines():
        if line.startswith("gpucost_cost_dollars{"):
            labels, value = line.rsplit(" ", 1)
            samples[labels] = float(value)
    assert len(samples) == len(expected)
    for team, project, cost in zip(expected["team"], expected["project"], expected["cost"]):
        key = f'gpucost_cost_dollars{{team="{team}",project="{project}",window="2026-03-01/2026-03-31"}}'
        assert samples[key] == pytest.approx(cost, rel=1e-15)
    prom = tmp_path / "gpucost.prom"
    code, _, err = run(capsys, "export-metrics", "--demo", "--textfile", str(prom))
    assert code == 0 and prom.read_text().endswith("\n") and "# TYPE gpucost_idle_cost_dollars gauge" in prom.read_text()
    code, _, err = run(capsys, "export-metrics", "--demo", "--textfile", str(tmp_path / "gpucost.txt"))
    assert code == 2 and "only files ending in .prom" in err


def test_console_script():
    exe = Path(sys.executable).with_name("gpucost")
    if not exe.exists():
        exe = shutil.which("gpucost")
    if not exe:
        pytest.skip("the gpucost console script is not installed")
    proc = subprocess.run([str(exe), "catalog", "--gpu", "H100", "--format", "csv"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "p5.48xlarge" in proc.stdout
    proc = subprocess.run([str(exe), "allocate", "--usage", "missing.parquet", "--costs", "missing.parquet"],
                          capture_output=True, text=True, timeout=120)
    lines = proc.stderr.splitlines()  # one line per problem, both found before reading
    assert proc.returncode == 2 and len(lines) == 2 and all(x.startswith("gpucost allocate: error: ") for x in lines)


@pytest.mark.skipif(shutil.which("prometheus") is None or shutil.which("promtool") is None,
                    reason="Debian's prometheus is not installed (make test installs it)")
def test_allocate_from_a_prometheus_url(tmp_path, capsys):
    import time as _time

    import services
    import telemetry_sim as sim
    t0 = (_time.time_ns() - 26 * sim.HOUR_NS) // sim.HOUR_NS * sim.HOUR_NS  # inside the TSDB's retention
    start = pd.Timestamp(t0, tz="UTC")
    costs, inventory, workloads = sim.costs(t0), sim.inventory(), sim.workloads()
    costs.to_csv(tmp_path / "costs.csv", index=False)
    inventory.to_csv(tmp_path / "inventory.csv", index=False)
    workloads.to_csv(tmp_path / "workloads.csv", index=False)
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {}},
              "spec": {"providerID": f"aws:///us-east-1a/{r}"}} for n, r in zip(sim.NODES["node"], sim.NODES["resource_id"])]
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    with services.prometheus([], openmetrics=sim.openmetrics(t0)) as url:
        code, out, err = run(capsys, "allocate", "--prometheus", url, "--start", start.isoformat(),
                             "--end", (start + pd.Timedelta(hours=1)).isoformat(), "--step", "60",
                             "--nodes", str(tmp_path / "nodes.json"), "--costs", str(tmp_path / "costs.csv"),
                             "--inventory", str(tmp_path / "inventory.csv"), "--workloads",
                             str(tmp_path / "workloads.csv"), "--by", "team,consumer", "--format", "csv",
                             "--decimals", "raw")
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out), keep_default_na=False)
    want = gpucost.allocate(costs, sim.expected_usage(t0), inventory, workloads, by=["team", "consumer"])
    assert list(got["consumer"]) == list(want["consumer"])
    np.testing.assert_allclose(got["cost"], want["cost"], rtol=1e-9)
    assert got["cost"].sum() == pytest.approx(costs["cost"].sum(), rel=1e-12)


def test_rolling_windows_of_cost_and_idle_cost():
    from gpucost import metrics
    t = pd.to_datetime(["2026-03-10 23:00", "2026-03-10 00:00", "2026-03-05 12:00", "2026-03-01 00:00"], utc=True)
    hourly = pd.DataFrame({"team": ["a", "a", "b", "b"], "project": ["x", "x", "y", "y"], "period": t,
                           "cost": [5.0, 7.0, 11.0, 13.0], "idle_cost": [1.0, 0.0, 2.0, 0.0]})
    text = metrics.rolling_exposition(hourly, ["team", "project"])
    got = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
           if not line.startswith("#")}
    # The data ends at 2026-03-11 00:00: the last hour holds a's 5; the last 24 h a's 5 + 7; the last
    # 7 days (from 03-04 00:00) also b's 11 but not its 13 of 03-01. Every group in every range.
    expected = {("a", "1h"): (5, 1), ("b", "1h"): (0, 0), ("a", "24h"): (12, 1), ("b", "24h"): (0, 0),
                ("a", "7d"): (12, 1), ("b", "7d"): (11, 2)}
    for (team, rng), (cost, idle) in expected.items():
        project = "x" if team == "a" else "y"
        labels = f'{{team="{team}",project="{project}",range="{rng}"}}'
        assert got[f"gpucost_cost_last_dollars{labels}"] == cost
        assert got[f"gpucost_idle_cost_last_dollars{labels}"] == idle
    assert len(got) == 12 and "# TYPE gpucost_cost_last_dollars gauge" in text


def test_export_metrics_has_the_rolling_windows(capsys):
    code, out, err = run(capsys, "export-metrics", "--demo", "--stdout")
    assert code == 0, err
    ranges = {line.split('range="')[1].split('"')[0] for line in out.splitlines()
              if line.startswith("gpucost_cost_last_dollars{")}
    assert ranges == {"1h", "24h", "7d"}
