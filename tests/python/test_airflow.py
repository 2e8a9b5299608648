"""docs/examples/airflow_dag.py run for real by Apache Airflow (`airflow dags
test`) for two days and a re-run: the sink holds each day once, adding up to
the day's bill.

Airflow lives in its own virtual environment (``.venv-airflow`` at the
repository root, or ``GPUCOST_AIRFLOW_VENV``) so its pins never constrain
gpucost's; the DAG's tasks run gpucost in this test's interpreter through
Airflow's ExternalPythonOperator. The environment is created on the first
run (a few minutes) and reused afterwards; the test is skipped, saying why,
only when it cannot be created (no network to PyPI).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import gpucost.pipeline as gp
from gpucost.demo import demo_fleet

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("GPUCOST_AIRFLOW_VENV", ROOT / ".venv-airflow"))
READY = VENV / ".gpucost-airflow-ready"
AIRFLOW_SPEC = "apache-airflow>=2.7,<4"
DAG_ID = "gpucost_daily_showback"


def _base_python() -> str:
    # The interpreter the project's venv was made from: the same Python version for both sides of the DAG.
    return getattr(sys, "_base_executable", None) or sys.executable


@pytest.fixture(scope="module")
def airflow() -> Path:
    """The airflow executable of the cached environment, created when missing."""
    exe = VENV / "bin" / "airflow"
    if READY.exists() and exe.exists():
        return exe
    started = time.monotonic()
    try:
        if not (VENV / "bin" / "python").exists():
            subprocess.run([_base_python(), "-m", "venv", str(VENV)], check=True, capture_output=True, timeout=300)
        # --no-compile: bytecode only for the modules the airflow commands import (written as they do).
        pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
               "--no-compile"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True, capture_output=True, timeout=600)
        subprocess.run([*pip, AIRFLOW_SPEC], check=True, capture_output=True, timeout=1500)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        detail = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        pytest.skip(f"cannot create the Airflow environment {VENV} ({type(exc).__name__}): "
                    f"{detail.strip().splitlines()[-1] if detail.strip() else exc}")
    READY.write_text(f"{AIRFLOW_SPEC} installed in {time.monotonic() - started:.0f} s\n")
    return exe


def _env(home: Path, sink: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHON"))}
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "docs" / "examples"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "GPUCOST_PYTHON": sys.executable,
        "GPUCOST_SINK": sink,
        "NO_PROXY": "*",
    })
    return env


def _run(cmd: list, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=env["AIRFLOW_HOME"])
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _day_total(day: str) -> float:
    costs = demo_fleet().costs
    start = pd.Timestamp(day, tz="UTC")
    return float(costs.loc[(costs["start"] >= start) & (costs["start"] < start + pd.Timedelta(days=1)), "cost"].sum())


def test_dag_runs_two_days_and_a_rerun(airflow, tmp_path):
    home = tmp_path / "airflow"
    home.mkdir()
    sink = f"sqlite:///{tmp_path / 'showback.db'}"
    env = _env(home, sink)
    _run([str(airflow), "db", "migrate"], env)
    errors = _run([str(airflow), "dags", "list-import-errors", "-o", "plain"], env)
    assert "airflow_dag.py" not in errors.stdout, errors.stdout + errors.stderr

    def dags_test(day: str) -> None:
        proc = _run([str(airflow), "dags", "test", DAG_ID, day], env)
        out = proc.stdout + proc.stderr
        assert "state=failed" not in out.replace(" ", "") and "Marking task as FAILED" not in out, out[-3000:]
        assert re.search(r"DagRun Finished: dag_id=gpucost_daily_showback, logical_date=" + day, out) \
            or "Marking run" in out and "successful" in out, out[-3000:]
        assert "Returned value was" in out, out[-3000:]  # both tasks ran in gpucost's environment

    dags_test("2026-03-02")
    first = gp.read_sink(sink)
    assert set(first["day"]) == {pd.Timestamp("2026-03-02").date()}
    dags_test("2026-03-03")
    dags_test("2026-03-02")  # the re-run replaces that day's rows
    rows = gp.read_sink(sink)
    assert not rows.duplicated(["day", "team", "project"]).any()
    for day in ("2026-03-02", "2026-03-03"):
        part = rows[rows["day"] == pd.Timestamp(day).date()]
        assert len(part) == len(first) if day == "2026-03-02" else len(part) > 5
        assert part["cost"].sum() == pytest.approx(_day_total(day), rel=1e-9)
    pd.testing.assert_frame_equal(rows[rows["day"] == pd.Timestamp("2026-03-02").date()].reset_index(drop=True),
                                  first)
