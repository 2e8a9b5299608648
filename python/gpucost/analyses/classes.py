"""Workload classes: training, inference, development, from labels or from
how a workload used its GPUs, with the evidence (docs/advisor.md §1).

The three classes buy differently: training is bursty and interruptible
(spot plus, at most, a small flexible commitment), steady inference suits
reservations and committed use, development stays on demand with idle
shutdown. A label wins when present; otherwise, over the hours of the
table (the observation window), in this order:

1. **inference**: present in at least ``min_presence`` of the window's hours
   (a window of a day or more) and either with a daily or weekly rhythm
   (hour-of-day profile amplitude >= ``rhythm``, or weekend load <=
   ``weekend_drop`` of weekday load) or with a utilisation below
   ``training_util``: steady serving;
2. **training**: utilisation >= ``training_util`` and a run of at least
   ``min_training_hours`` consecutive hours: long, busy jobs;
3. **development**: the rest. ``confidence`` is ``strong`` when the sessions
   look interactive (utilisation < ``development_util`` and median session
   <= ``max_session_hours``), ``weak`` when development is only what is left.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpucost.analyses._common import RESERVED
from gpucost.analyses._tables import NANOS_PER_HOUR, finite_floats, instants_ns, row_error, strings, table
from gpucost.errors import InvalidInputError

__all__ = ["workload_classes", "CLASSES", "RESERVED_CONSUMERS"]

CLASSES = ("training", "inference", "development")
RESERVED_CONSUMERS = RESERVED
# Label values accepted for each class (case-insensitive).
_ALIASES = {
    "training": "training", "train": "training", "batch": "training",
    "inference": "inference", "serving": "inference", "serve": "inference",
    "development": "development", "dev": "development", "experimentation": "development",
    "experiment": "development", "notebook": "development", "interactive": "development",
}


def _pct(x: pd.Series) -> pd.Series:
    return (x * 100).round(0).astype("Int64").astype(str) + "%"


def _num(x: pd.Series, digits: int = 2) -> pd.Series:
    return x.round(digits).astype(str)


def _labels(workloads: Any, label: str) -> pd.Series:
    """consumer -> class from the label column (when the table has it)."""
    if workloads is None or not table(workloads, "workloads").has(label):
        return pd.Series(dtype=object)
    consumer = strings(workloads, "workloads", "consumer")
    raw = pd.Series(strings(workloads, "workloads", label), dtype=object)
    given = raw.notna() & (raw.str.strip() != "")
    normal = raw.str.strip().str.lower().map(_ALIASES)
    bad = (given & normal.isna()).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise row_error("workloads", row, label, f"'{raw.iat[row]}' is not a workload class "
                        "(training, inference or development)")
    keep = given.to_numpy()
    return pd.Series(normal.to_numpy()[keep], index=consumer[keep]).groupby(level=0).first()


def workload_classes(hourly: Any, workloads: Any = None, *, label: str = "workload-class",
                     min_presence: float = 0.9, rhythm: float = 0.2, weekend_drop: float = 0.8,
                     training_util: float = 0.6, min_training_hours: float = 2,
                     development_util: float = 0.3, max_session_hours: float = 8) -> pd.DataFrame:
    """The class of every workload, from its label or inferred with evidence.

    Args:
        hourly: hourly usage per consumer: ``consumer, period`` (hour starts),
            ``gpu_hours, effective_gpu_hours``, as from
            ``gpucost.allocate(..., by=["consumer", "period"], freq="h")`` or
            :func:`gpucost.hourly_demand`. Rows of one consumer and hour add up.
        workloads: optional; its ``label`` column, when present, gives the
            class (``training``, ``inference``, ``development`` or an alias
            such as ``serving``, ``dev``, ``train``).
        The other parameters are the thresholds of the rules above.

    Returns:
        One row per consumer (the reserved ``__idle__``/``__unattributed__``
        rows excluded): ``class, source`` (``label`` or ``inferred``),
        ``confidence`` (``label``, ``strong``, ``weak``), ``inferred_class``
        (what the rules say, also for labelled workloads), ``evidence`` (in
        words) and the numbers behind it: ``hours, window_hours, presence,
        gpu_hours, mean_gpus, util, longest_run_hours, median_run_hours,
        ended, daily_rhythm, weekend_ratio``.

    Examples:
        Two days of hourly usage, as ``gpucost.allocate(..., by=["consumer",
        "period"], freq="h")`` gives it: a server running all the time with a
        daily rhythm, a busy 30-hour job, and a few notebook sessions.

        >>> hours = pd.date_range("2026-03-02", periods=48, freq="h", tz="UTC")
        >>> hourly = pd.concat([
        ...     pd.DataFrame({"consumer": "llm-serve", "period": hours, "gpu_hours": 4.0,
        ...                   "effective_gpu_hours": np.where(hours.hour < 8, 0.4, 1.6)}),
        ...     pd.DataFrame({"consumer": "pretrain", "period": hours[:30], "gpu_hours": 8.0, "effective_gpu_hours": 7.2}),
        ...     pd.DataFrame({"consumer": "notebook", "period": hours[[9, 10, 11, 33, 34]], "gpu_hours": 1.0,
        ...                   "effective_gpu_hours": 0.1})])
        >>> classes = gpucost.workload_classes(hourly)
        >>> classes[["consumer", "class", "source", "confidence", "presence", "util"]]
            consumer        class    source confidence  presence  util
        0  llm-serve    inference  inferred     strong  1.000000   0.3
        1   notebook  development  inferred     strong  0.104167   0.1
        2   pretrain     training  inferred     strong  0.625000   0.9
        >>> for row in classes.itertuples():
        ...     print(f"{row.consumer}: {row.evidence}")
        llm-serve: steady serving: present 100% of 48 h, daily rhythm 0.6, util 0.3
        notebook: sessions: median 2.5 h, util 0.1, present 10%
        pretrain: busy long job: util 0.9 over runs up to 30 h, 8.0 GPUs, ended
    """
    for name, value in (("min_presence", min_presence), ("training_util", training_util),
                        ("development_util", development_util), ("weekend_drop", weekend_drop),
                        ("rhythm", rhythm)):
        if not 0 <= value <= 1:
            raise InvalidInputError(f"parameter '{name}': {value} is not in [0, 1]")
    name = "hourly"
    period = instants_ns(hourly, name, "period")
    frame = pd.DataFrame({
        "consumer": strings(hourly, name, "consumer"),
        "period": period,
        "gpu_hours": finite_floats(hourly, name, "gpu_hours", minimum=0),
        "effective_gpu_hours": finite_floats(hourly, name, "effective_gpu_hours", minimum=0),
    })
    if frame["consumer"].isna().any():
        raise row_error(name, int(np.flatnonzero(frame["consumer"].isna())[0]), "consumer", "missing consumer")
    window_start = int(period.min()) // NANOS_PER_HOUR * NANOS_PER_HOUR if len(period) else 0
    window_end = (int(period.max()) // NANOS_PER_HOUR + 1) * NANOS_PER_HOUR if len(period) else 0
    window_hours = (window_end - window_start) / NANOS_PER_HOUR

    frame = frame[~frame["consumer"].isin(RESERVED_CONSUMERS)]
    frame = frame.assign(period=frame["period"] // NANOS_PER_HOUR * NANOS_PER_HOUR)
    per_hour = frame.groupby(["consumer", "period"], sort=True, as_index=False)[
        ["gpu_hours", "effective_gpu_hours"]].sum()
    per_hour = per_hour[per_hour["gpu_hours"] > 0]

    grouped = per_hour.groupby("consumer", sort=True)
    out = pd.DataFrame({
        "hours": grouped.size().astype(np.float64),
        "gpu_hours": grouped["gpu_hours"].sum(),
        "effective": grouped["effective_gpu_hours"].sum(),
        "last": grouped["period"].max(),
    })
    out["window_hours"] = window_hours
    out["presence"] = out["hours"] / window_hours if window_hours else np.nan
    out["mean_gpus"] = out["gpu_hours"] / out["hours"]
    out["util"] = out["effective"] / out["gpu_hours"]
    out["ended"] = out["last"] + NANOS_PER_HOUR < window_end

    # Runs of consecutive hours (sessions, jobs).
    new_run = (per_hour["consumer"] != per_hour["consumer"].shift()) | \
              (per_hour["period"].diff() != NANOS_PER_HOUR)
    runs = per_hour.assign(run=new_run.cumsum()).groupby(["consumer", "run"]).size()
    out["longest_run_hours"] = runs.groupby(level=0).max().astype(np.float64)
    out["median_run_hours"] = runs.groupby(level=0).median().astype(np.float64)

    # Rhythm: hour-of-day profile of the load (effective GPU-hours), and the
    # weekend against weekdays.
    hour_of_day = (per_hour["period"] // NANOS_PER_HOUR) % 24
    weekday = ((per_hour["period"] // (24 * NANOS_PER_HOUR)) + 3) % 7
    profile = per_hour.groupby(["consumer", hour_of_day.rename("hod")])["effective_gpu_hours"].mean()
    hours_seen = profile.groupby(level=0).size()
    top, bottom = profile.groupby(level=0).max(), profile.groupby(level=0).min()
    amplitude = ((top - bottom) / (top + bottom)).where(top + bottom > 0, 0.0)
    out["daily_rhythm"] = amplitude.where(hours_seen == 24)
    weekend = weekday >= 5
    load = per_hour["effective_gpu_hours"]
    on_weekend = load[weekend].groupby(per_hour["consumer"][weekend]).mean()
    on_weekdays = load[~weekend].groupby(per_hour["consumer"][~weekend]).mean()
    out["weekend_ratio"] = (on_weekend / on_weekdays).where(on_weekdays > 0)

    has_rhythm = (out["daily_rhythm"] >= rhythm) | (out["weekend_ratio"] <= weekend_drop)
    is_inference = (window_hours >= 24) & (out["presence"] >= min_presence) & \
                   (has_rhythm | (out["util"] < training_util))
    is_training = ~is_inference & (out["util"] >= training_util) & (out["longest_run_hours"] >= min_training_hours)
    interactive = (out["util"] < development_util) & (out["median_run_hours"] <= max_session_hours)
    out["inferred_class"] = np.where(is_inference, "inference", np.where(is_training, "training", "development"))
    out["confidence"] = np.where(is_inference | is_training | interactive, "strong", "weak")

    rhythm_words = np.where(
        out["daily_rhythm"].notna(), ", daily rhythm " + _num(out["daily_rhythm"]), "") + \
        np.where(out["weekend_ratio"].notna(), ", weekend/weekday load " + _num(out["weekend_ratio"]), "")
    evidence = pd.Series(np.select(
        [is_inference, is_training],
        ["steady serving: present " + _pct(out["presence"]) + " of " + out["window_hours"].round(0).astype(int)
         .astype(str) + " h" + rhythm_words + ", util " + _num(out["util"]),
         "busy long job: util " + _num(out["util"]) + " over runs up to " + out["longest_run_hours"].astype(int)
         .astype(str) + " h, " + _num(out["mean_gpus"], 1) + " GPUs" + np.where(out["ended"], ", ended", ", running")],
        "sessions: median " + _num(out["median_run_hours"], 1) + " h, util " + _num(out["util"]) +
        ", present " + _pct(out["presence"]) + np.where(interactive, "", " (no rule matched better)"),
    ), index=out.index, dtype=object)

    labels = _labels(workloads, label).reindex(out.index)
    labelled = labels.notna()
    out["class"] = labels.where(labelled, out["inferred_class"])
    out["source"] = np.where(labelled, "label", "inferred")
    out["confidence"] = out["confidence"].where(~labelled, "label")
    out["evidence"] = evidence.where(~labelled, f"label {label}=" + labels.astype(str) + "; usage says " +
                                     out["inferred_class"] + " (" + evidence + ")")
    out = out.reset_index(names="consumer")
    return out[["consumer", "class", "source", "confidence", "inferred_class", "evidence", "hours", "window_hours",
                "presence", "gpu_hours", "mean_gpus", "util", "longest_run_hours", "median_run_hours", "ended",
                "daily_rhythm", "weekend_ratio"]]
