"""Workload classes: labels win, the three inference rules with their
evidence, the simulated fleet's roles, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost.simulate import simulate_fleet
from advice_data import T0, Fleet, diurnal

WEEK = 168


def hourly(rows: list[tuple[str, int, float, float]]) -> pd.DataFrame:
    """(consumer, hour from T0, gpu_hours, effective_gpu_hours) rows."""
    frame = pd.DataFrame(rows, columns=["consumer", "hour", "gpu_hours", "effective_gpu_hours"])
    frame["period"] = T0 + pd.to_timedelta(frame.pop("hour"), unit="h")
    return frame


def test_rules_on_hand_built_usage():
    hours = np.arange(2 * WEEK)
    serve_util = diurnal(hours, 0.1, 0.6)
    rows = [("serve", h, 1.0, u) for h, u in zip(hours, serve_util)]
    rows += [("train", h, 8.0, 8 * 0.92) for h in range(30, 30 + 40)]  # 40 h at 92%, then ends
    rows += [("nb", d * 24 + h, 1.0, 0.08) for d in range(5) for h in (9, 10, 11)]
    rows += [("flat-serve", h, 1.0, 0.35) for h in hours]  # 24/7 at a flat low utilisation
    classes = gpucost.workload_classes(hourly(rows)).set_index("consumer")
    assert classes.loc["serve", "class"] == "inference"
    assert classes.loc["serve", "presence"] == 1.0
    assert classes.loc["serve", "daily_rhythm"] == pytest.approx((0.6 - 0.1) / (0.6 + 0.1), rel=1e-6)
    assert "steady serving" in classes.loc["serve", "evidence"]
    assert classes.loc["train", "class"] == "training"
    assert classes.loc["train", "longest_run_hours"] == 40
    assert classes.loc["train", "util"] == pytest.approx(0.92)
    assert bool(classes.loc["train", "ended"])
    assert classes.loc["train", "evidence"].endswith("ended")
    assert classes.loc["nb", "class"] == "development"
    assert classes.loc["nb", "confidence"] == "strong"
    assert classes.loc["nb", "median_run_hours"] == 3
    assert classes.loc["flat-serve", "class"] == "inference"
    assert set(classes["source"]) == {"inferred"}


def test_a_busy_job_running_the_whole_window_is_training_not_serving():
    rows = [("train", h, 8.0, 8 * 0.9) for h in range(WEEK)]
    classes = gpucost.workload_classes(hourly(rows))
    assert classes["class"].iat[0] == "training"
    assert not classes["ended"].iat[0]


def test_labels_win_and_aliases_are_accepted():
    rows = [("a", h, 1.0, 0.9) for h in range(48)] + [("b", h, 1.0, 0.1) for h in range(3)]
    workloads = pd.DataFrame({"consumer": ["a", "b"], "workload-class": ["Serving", "train"], "team": ["x", "y"]})
    classes = gpucost.workload_classes(hourly(rows), workloads).set_index("consumer")
    assert classes.loc["a", "class"] == "inference" and classes.loc["a", "inferred_class"] == "training"
    assert classes.loc["b", "class"] == "training" and classes.loc["b", "confidence"] == "label"
    assert "label workload-class=inference" in classes.loc["a", "evidence"]
    custom = gpucost.workload_classes(hourly(rows), workloads.rename(columns={"workload-class": "kind"}), label="kind")
    assert set(custom["source"]) == {"label"}


def test_the_simulated_fleet_roles():
    fleet = simulate_fleet(gpus=48, hours=72, seed=3)
    by_hour = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, by=["consumer", "period"], freq="h")
    classes = gpucost.workload_classes(by_hour).set_index("consumer")
    role = classes.index.to_series().map(lambda c: "training" if "/train" in c else "inference"
                                         if c.startswith("serving/") or "/mig-" in c else "development")
    agree = (classes["class"] == role).mean()
    assert agree == 1.0, classes[classes["class"] != role][["class", "evidence"]]
    assert "__idle__" not in classes.index


def test_bad_input():
    rows = hourly([("a", 0, 1.0, 0.5)])
    with pytest.raises(gpucost.InvalidInputError, match="hourly: missing required column 'effective_gpu_hours'"):
        gpucost.workload_classes(rows.drop(columns="effective_gpu_hours"))
    with pytest.raises(gpucost.InvalidInputError, match="hourly: row 0, column 'gpu_hours'"):
        gpucost.workload_classes(rows.assign(gpu_hours=-1.0))
    with pytest.raises(gpucost.InvalidInputError, match="workloads: row 1, column 'workload-class': 'gpu'"):
        gpucost.workload_classes(rows, pd.DataFrame({"consumer": ["a", "b"], "workload-class": ["dev", "gpu"]}))
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'training_util'"):
        gpucost.workload_classes(rows, training_util=2)


def test_classes_from_hourly_demand_match_the_allocation():
    f = Fleet()
    f.run("i-1", "g5.xlarge", range(WEEK), "api", diurnal(range(WEEK), 0.1, 0.6), price=1.006)
    demand = gpucost.hourly_demand(f.costs, f.usage, f.inventory, interval=3600)
    assert gpucost.workload_classes(demand)["class"].tolist() == ["inference"]
