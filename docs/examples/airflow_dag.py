"""A daily showback job for Apache Airflow (2.7+ or 3.x): allocate
yesterday's GPU bill over the telemetry and write it to a SQL table (or a
Parquet dataset) idempotently, then check that the day adds up to the bill.

gpucost runs in its own virtual environment (``GPUCOST_PYTHON``), so
Airflow's pinned dependencies and gpucost's never constrain each other; the
tasks call the plain functions of ``gpucost.pipeline`` there.

Environment:
    GPUCOST_PYTHON  the interpreter of a virtualenv with gpucost installed
    GPUCOST_SINK    SQLAlchemy URL or Parquet directory (default: a SQLite file)
    GPUCOST_CONFIG  a gpucost.toml naming the bill and telemetry; without it
                    the job runs on the built-in demo month (March 2026)

Try it:  airflow dags test gpucost_daily_showback 2026-03-02
Re-running a day replaces that day's rows (no duplicates, nothing lost).
"""

from __future__ import annotations

import os

import pendulum

try:  # Airflow 3
    from airflow.sdk import dag, task
except ImportError:  # Airflow 2
    from airflow.decorators import dag, task

GPUCOST_PYTHON = os.environ.get("GPUCOST_PYTHON", "/opt/gpucost/.venv/bin/python")
SINK = os.environ.get("GPUCOST_SINK", "sqlite:////tmp/gpucost_showback.db")
CONFIG = os.environ.get("GPUCOST_CONFIG", "")


@dag(dag_id="gpucost_daily_showback", schedule="@daily", start_date=pendulum.datetime(2026, 3, 1, tz="UTC"),
     catchup=False, max_active_runs=1, tags=["finops", "gpucost"],
     default_args={"retries": 2, "retry_delay": pendulum.duration(minutes=10)})
def gpucost_daily_showback():
    @task.external_python(python=GPUCOST_PYTHON, expect_airflow=False)
    def allocate_day(day: str, sink: str, config: str) -> int:
        """Allocates the cost lines that start on `day` and replaces that day's rows in `sink`."""
        import gpucost.pipeline as gp

        load = gp.config_source(config) if config else gp.demo_source()
        return gp.run_day(day, load, sink, by=("team", "project"))

    @task.external_python(python=GPUCOST_PYTHON, expect_airflow=False)
    def check_day(day: str, sink: str, config: str, rows: int) -> float:
        """Fails the run unless the day's rows add up to the day's bill."""
        import gpucost.pipeline as gp

        load = gp.config_source(config) if config else gp.demo_source()
        return gp.check_day(day, load, sink, expected_rows=rows)

    rows = allocate_day("{{ ds }}", SINK, CONFIG)
    check_day("{{ ds }}", SINK, CONFIG, rows)


gpucost_daily_showback()
