"""The true cost of a training run on spot: every attempt of a job, the
interrupted ones included (docs/analyses.md, "Spot runs").

:func:`spot_interruptions` reads an interruptions table, AWS EventBridge events
(``EC2 Spot Instance Interruption Warning`` and rebalance recommendations),
GCP preemption audit-log entries and Azure Spot evictions; :func:`spot_runs`
groups the allocation's rows into attempts and jobs through the ``job`` label.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from gpucost.model import Purchase
from gpucost.analyses._common import (
    NS_PER_S,
    as_frame,
    datetime_ns,
    labels_frame,
    optional_instants_ns,
    require_columns,
    seconds,
    strings,
    to_datetime,
)
from gpucost.analyses.profile import usage_profile
from gpucost.errors import InvalidInputError
from gpucost.frames import Table

__all__ = ["SpotRuns", "spot_interruptions", "spot_runs", "ATTEMPT_STATES"]

INTERRUPTION_WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE = ("EC2 Instance Rebalance Recommendation", "EC2 Spot Instance Rebalance Recommended")

#: Workload end states (the ``state`` column, case-insensitive) and the
#: attempt outcome each means.
ATTEMPT_STATES = {
    **dict.fromkeys(("completed", "complete", "succeeded", "success", "done", "finished"), "completed"),
    **dict.fromkeys(("interrupted", "preempted", "spot_interrupted", "evicted", "reclaimed"), "interrupted"),
    **dict.fromkeys(("failed", "error", "crashed", "oomkilled", "cancelled", "canceled", "killed"), "failed"),
    **dict.fromkeys(("running", "pending"), "running"),
}
_MIN = np.iinfo(np.int64).min


def _events_from(source: Any) -> list:
    """Events as parsed objects from dicts, JSON strings, a JSON array,
    object or JSON-lines text, or the path of such a file."""
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        if not text.lstrip().startswith(("{", "[")):
            with open(source, encoding="utf-8") as f:
                text = f.read()
        stripped = text.strip()
        if not stripped:
            return []
        try:
            value = json.loads(stripped)
            return value if isinstance(value, list) else [value]
        except json.JSONDecodeError:
            pass  # JSON lines: one event a line
        out = []
        for number, line in enumerate(stripped.splitlines(), start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InvalidInputError(f"interruptions: line {number}: not JSON ({exc.msg})") from None
        return out
    out = []
    for k, item in enumerate(source):
        if isinstance(item, (str, bytes)):
            try:
                item = json.loads(item)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"interruptions: event {k}: not JSON ({exc.msg})") from None
        out.append(item)
    return out


GCP_PREEMPTED = "compute.instances.preempted"
AZURE_EVICTION = "microsoft.compute/virtualmachines/evictspotvm/action"
_COLUMNS = ["resource_id", "time", "kind", "action", "region", "account", "id"]


def _instant(value: Any, k: int, field: str) -> pd.Timestamp:
    if not value:
        raise InvalidInputError(f"interruptions: event {k}, field '{field}': missing")
    try:
        t = pd.Timestamp(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"interruptions: event {k}, field '{field}': {value!r} is not an instant") from None
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def _event_rows(e: dict, k: int) -> list[tuple] | None:
    """The interruption rows of one event (AWS EventBridge, a GCP audit-log
    preemption, an Azure Activity Log Spot eviction or a Scheduled Events
    document with Preempt events); None for events of other kinds."""
    kind = e.get("detail-type")
    if kind == INTERRUPTION_WARNING or kind in REBALANCE:
        kind = "interruption" if kind == INTERRUPTION_WARNING else "rebalance"
        detail = e.get("detail")
        if not isinstance(detail, dict) or not detail.get("instance-id"):
            raise InvalidInputError(f"interruptions: event {k}, field 'detail.instance-id': missing")
        t = _instant(e.get("time"), k, "time")
        return [(str(detail["instance-id"]), t, kind,
                 str(detail.get("instance-action", "")) if kind == "interruption" else "",
                 str(e.get("region", "")), str(e.get("account", "")), str(e.get("id", "")))]
    payload = e.get("protoPayload")
    if isinstance(payload, dict) and payload.get("methodName") == GCP_PREEMPTED:
        # The billing export's resource.global_name for the instance.
        labels = (e.get("resource") or {}).get("labels") or {}
        missing = [f for f in ("project_id", "zone", "instance_id") if not labels.get(f)]
        if missing:
            raise InvalidInputError(f"interruptions: event {k}, field 'resource.labels.{missing[0]}': missing")
        rid = (f"//compute.googleapis.com/projects/{labels['project_id']}/zones/{labels['zone']}/instances/"
               f"{labels['instance_id']}")
        return [(rid, _instant(e.get("timestamp"), k, "timestamp"), "interruption", "terminate", str(labels["zone"]),
                 str(labels["project_id"]), str(e.get("insertId", "")))]
    operation = e.get("operationName")
    operation = operation.get("value") if isinstance(operation, dict) else operation
    if isinstance(operation, str) and operation.lower() == AZURE_EVICTION:
        if not e.get("resourceId"):
            raise InvalidInputError(f"interruptions: event {k}, field 'resourceId': missing")
        return [(str(e["resourceId"]), _instant(e.get("eventTimestamp") or e.get("time"), k, "eventTimestamp"),
                 "interruption", "evict", "", str(e.get("subscriptionId", "")), str(e.get("eventDataId", "")))]
    if isinstance(e.get("Events"), list):  # Azure Scheduled Events (IMDS)
        rows = []
        for j, item in enumerate(e["Events"]):
            if isinstance(item, dict) and item.get("EventType") == "Preempt":
                t = _instant(item.get("NotBefore"), k, f"Events[{j}].NotBefore")
                for vm in item.get("Resources") or []:
                    rows.append((str(vm), t, "interruption", "evict", "", "", str(item.get("EventId", ""))))
        return rows or None
    return None


def _interruptions_from_table(data: Any) -> pd.DataFrame:
    """A table of interruptions (resource_id, time, optional kind, action)."""
    t = Table(data, "interruptions")
    n = len(t)
    kind = strings(t, "kind") if t.has("kind") else np.full(n, "interruption", dtype=object)
    bad = ~np.isin(kind, ["interruption", "rebalance"])
    if bad.any():
        raise t._first_bad_row("kind", bad, f"{kind[bad][0]!r} is not 'interruption' or 'rebalance'")
    times = optional_instants_ns(t, "time")
    if (times == _MIN).any():
        raise t._first_bad_row("time", times == _MIN, "missing instant")
    rid = strings(t, "resource_id")
    if pd.isna(rid).any() or (rid == "").any():
        raise t._first_bad_row("resource_id", pd.isna(rid) | (rid == ""), "missing value")
    out = pd.DataFrame({"resource_id": rid, "time": to_datetime(times), "kind": kind})
    for c in _COLUMNS[3:]:
        out[c] = strings(t, c) if t.has(c) else ""
    out = out.sort_values(["time", "resource_id"], kind="stable").reset_index(drop=True)
    out.attrs["events_ignored"] = 0
    return out


def spot_interruptions(events: Any) -> pd.DataFrame:
    """Spot interruptions as a table, from the table itself or the events
    each cloud records.

    Args:
        events: a table (DataFrame or Arrow) with ``resource_id``, ``time``
            and optionally ``kind`` (``interruption``, the default, or
            ``rebalance``) and ``action``; or events as dicts, JSON strings,
            a JSON array or JSON-lines text, or the path of such a file:
            AWS EventBridge events (``EC2 Spot Instance Interruption
            Warning``, rebalance recommendations), GCP Cloud Audit Log
            entries with ``protoPayload.methodName``
            ``compute.instances.preempted`` (resource id as the billing
            export's ``resource.global_name``), Azure Activity Log entries
            of ``Microsoft.Compute/virtualMachines/evictSpotVM/action``
            (the ARM ``resourceId``) and Azure Scheduled Events documents
            (``Preempt`` events; the VM names). Events of other types are
            counted in ``attrs["events_ignored"]`` and left out.

    Returns:
        ``resource_id``, ``time`` (UTC), ``kind`` (``interruption`` or
        ``rebalance``), ``action`` (``terminate``, ``stop`` or ``hibernate``
        for AWS interruptions, ``evict`` for Azure; "" for rebalance),
        ``region``, ``account``, ``id``, sorted by time.

    Raises:
        gpucost.InvalidInputError: malformed JSON, or an interruption event
        without its time or instance, naming the event (0-based); a table
        row without ``resource_id`` or ``time``, naming row and column.

    Examples:
        An EC2 Spot Instance Interruption Warning as EventBridge delivers it:

        >>> event = {"version": "0", "id": "e-1", "detail-type": "EC2 Spot Instance Interruption Warning",
        ...          "source": "aws.ec2", "account": "111122223333", "time": "2026-03-02T01:58:00Z",
        ...          "region": "us-east-1", "resources": ["arn:aws:ec2:us-east-1a:instance/i-0aaa"],
        ...          "detail": {"instance-id": "i-0aaa", "instance-action": "terminate"}}
        >>> gpucost.spot_interruptions([event])
          resource_id                      time          kind     action     region       account   id
        0      i-0aaa 2026-03-02 01:58:00+00:00  interruption  terminate  us-east-1  111122223333  e-1
        >>> gpucost.spot_interruptions(pd.DataFrame({"resource_id": ["i-0bbb"],
        ...                                          "time": pd.to_datetime(["2026-03-02 03:10"], utc=True)})
        ...                            )[["resource_id", "time", "kind"]]
          resource_id                      time          kind
        0      i-0bbb 2026-03-02 03:10:00+00:00  interruption
    """
    if isinstance(events, dict) and {"detail-type", "protoPayload", "operationName", "Events"} & set(events):
        events = [events]  # one event, not a table of columns
    if isinstance(events, (pd.DataFrame, dict)) or hasattr(events, "column_names"):
        return _interruptions_from_table(events)
    rows = []
    ignored = 0
    for k, e in enumerate(_events_from(events)):
        if not isinstance(e, dict):
            raise InvalidInputError(f"interruptions: event {k}: expected a JSON object, got {type(e).__name__}")
        found = _event_rows(e, k)
        if found is None:
            ignored += 1
        else:
            rows.extend(found)
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    frame["time"] = pd.to_datetime(frame["time"], utc=True).astype("datetime64[ns, UTC]")
    frame = frame.sort_values(["time", "resource_id"], kind="stable").reset_index(drop=True)
    frame.attrs["events_ignored"] = ignored
    return frame


class SpotRuns(NamedTuple):
    """What :func:`spot_runs` returns.

    Attributes:
        jobs: one row per job (see :func:`spot_runs`).
        attempts: one row per attempt: ``job, attempt, consumers, resources,
            start, end, hours, pricing, outcome, source, interrupted, cost``
            [, ``list_cost``], ``zero_cost`` [, ``lost_hours, lost_cost``].
        fleet: the totals as a dict, with ``failed_attempt_share``: the share
            of the GPU bill (the allocation's cost outside
            ``__unattributed__``) spent on attempts that did not complete.

    Examples:
        Job ``train`` ran on spot g5.xlarge instances ($0.40/h against
        $1.006 on demand): its first attempt was interrupted after 2 hours,
        the second one completed.

        >>> hours = pd.date_range("2026-03-02", periods=4, freq="h", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": ["i-0aaa", "i-0aaa", "i-0bbb", "i-0bbb"], "instance_type": "g5.xlarge",
        ...                       "start": hours, "end": hours + pd.Timedelta("1h"), "cost": 0.40, "list_cost": 1.006,
        ...                       "pricing": gpucost.Purchase.SPOT})
        >>> t = pd.date_range("2026-03-02", periods=8, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": np.repeat(["i-0aaa", "i-0bbb"], 4), "device": 0,
        ...                       "consumer": np.repeat(["train-1", "train-2"], 4), "share": 1.0, "util": 0.9,
        ...                       "mem_used": 0.0, "duration": 1800.0})
        >>> workloads = pd.DataFrame({"consumer": ["train-1", "train-2"], "job": "train", "team": "nlp"})
        >>> allocation = gpucost.allocate(costs, usage, gpucost.inventory(costs), workloads,
        ...                               by=["consumer", "resource_id"])
        >>> events = pd.DataFrame({"resource_id": ["i-0aaa"], "time": [pd.Timestamp("2026-03-02 01:58", tz="UTC")]})
        >>> runs = gpucost.spot_runs(allocation, workloads, gpucost.spot_interruptions(events), costs=costs)
        >>> runs.attempts[["attempt", "resources", "start", "end", "outcome", "source", "cost"]]
           attempt resources                     start                       end      outcome    source  cost
        0  train-1    i-0aaa 2026-03-02 00:00:00+00:00 2026-03-02 02:00:00+00:00  interrupted     event   0.8
        1  train-2    i-0bbb 2026-03-02 02:00:00+00:00 2026-03-02 04:00:00+00:00    completed  presumed   0.8
        >>> runs.fleet["failed_attempt_share"], runs.fleet["wasted_cost"]
        (0.5, 0.8)
    """

    jobs: pd.DataFrame
    attempts: pd.DataFrame
    fleet: dict


def _interruptions_table(interruptions: Any) -> pd.DataFrame:
    if interruptions is None:
        return pd.DataFrame({"resource_id": pd.Series([], dtype=object), "time_ns": pd.Series([], dtype=np.int64),
                             "kind": pd.Series([], dtype=object)})
    if not isinstance(interruptions, (pd.DataFrame, dict)) and not hasattr(interruptions, "column_names"):
        interruptions = spot_interruptions(interruptions)
    t = Table(interruptions, "interruptions")
    kind = strings(t, "kind") if t.has("kind") else np.full(len(t), "interruption", dtype=object)
    bad = ~np.isin(kind, ["interruption", "rebalance"])
    if bad.any():
        raise t._first_bad_row("kind", bad, f"{kind[bad][0]!r} is not 'interruption' or 'rebalance'")
    times = optional_instants_ns(t, "time")
    if (times == _MIN).any():
        raise t._first_bad_row("time", times == _MIN, "missing instant")
    return pd.DataFrame({"resource_id": strings(t, "resource_id"), "time_ns": times, "kind": kind})


def _workload_table(workloads: Any) -> tuple[pd.DataFrame, list[str]]:
    """consumer, job, attempt, state, start_ns, end_ns (+ label columns)."""
    t = Table(workloads, "workloads")
    for c in ("consumer", "job"):
        if not t.has(c):
            raise InvalidInputError(f"workloads: missing required column '{c}' (spot_runs groups attempts by job)")
    w = pd.DataFrame({"consumer": strings(t, "consumer"), "job": strings(t, "job")})
    w["attempt"] = strings(t, "attempt") if t.has("attempt") else ""
    w["state"] = strings(t, "state") if t.has("state") else ""
    state = w["state"].str.strip().str.lower()
    outcome = state.map(ATTEMPT_STATES)
    bad = (state != "") & outcome.isna()
    if bad.any():
        raise t._first_bad_row("state", bad.to_numpy(), f"unknown state {w['state'][bad].iloc[0]!r} (expected one of "
                               f"{', '.join(sorted(ATTEMPT_STATES))})")
    w["state_outcome"] = outcome.fillna("").astype(object)
    w["start_ns"] = optional_instants_ns(t, "start") if t.has("start") else _MIN
    w["end_ns"] = optional_instants_ns(t, "end") if t.has("end") else _MIN
    w["resource_id"] = strings(t, "resource_id") if t.has("resource_id") else ""
    skip = {"consumer", "job", "attempt", "state", "start", "end", "resource_id"}
    label_cols = [c for c in t.columns if c not in skip]
    if label_cols:
        labels = labels_frame(pd.DataFrame({"consumer": w["consumer"], **{c: strings(t, c) for c in label_cols}}))
        w = w.merge(labels, on="consumer", how="left")
    w = w[(w["job"] != "") & (w["job"] != "__unlabelled__")]
    return w.reset_index(drop=True), label_cols


def spot_runs(allocation: pd.DataFrame, workloads: Any, interruptions: Any = None, checkpoints: Any = None, *,
              costs: Any = None, usage: Any = None, inventory: Any = None, slack: Any = "10min",
              interval: float = 60) -> SpotRuns:
    """Every attempt of every job, its outcome and cost, and what the runs
    really cost.

    Attempts: workloads carry ``job`` and optionally ``attempt``; an attempt
    is ``(job, attempt)``, or ``(job, consumer)`` without an attempt column,
    so pods on replacement instances join their job through the label. An
    attempt's cost (and ``list_cost``) is the sum of its consumers' rows in
    ``allocation`` (from ``gpucost.allocate(..., by=["consumer",
    "resource_id"])``). An attempt with no row (AWS did not bill a spot
    instance it interrupted in the first hour) costs 0: it is counted, never
    given an invented cost. Its instances are those of its allocation rows,
    of a ``resource_id`` column in workloads, and of its samples when
    ``usage`` and ``inventory`` are given. Its times are the workloads'
    ``start``/``end`` when present, else its first and last sample (with
    ``usage``), else the span of its instances' cost lines in ``costs``.

    Outcome of an attempt, first rule that applies:

    1. the workloads' ``state`` (see :data:`ATTEMPT_STATES`): completed,
       interrupted, failed or running;
    2. an ``interruption`` event on one of its instances between its start
       and ``slack`` after its end: interrupted (source ``event``);
    3. a later attempt of the same job exists (one that starts after this
       one ended, within ``slack``: replicas running side by side are not
       retries): interrupted when its
       instances' lines are ``pricing == Purchase.SPOT`` in ``costs`` (source
       ``billing``: the lines stopped while the job had not finished), or
       when a ``rebalance`` recommendation hit one of its instances (source
       ``rebalance``); failed otherwise (source ``restart``);
    4. the job's last attempt: completed (source ``presumed``).

    Per job (``jobs``): ``attempts, interrupted_attempts, failed_attempts,
    completed, cost, interrupted_cost, wasted_cost`` (interrupted and failed
    attempts), ``waste_pct``, ``list_cost`` and ``on_demand_equivalent`` (the
    list price of the useful work: all attempts but the wasted part),
    ``spot_savings`` (on-demand equivalent minus cost: negative when
    interruptions ate the discount), ``cost_per_completed_run`` (cost when
    completed), and with ``checkpoints`` (``job, time``) ``lost_hours,
    lost_cost``: the part of each interrupted or failed attempt after the last
    checkpoint before its end (cost spread evenly over the attempt), which
    then replaces whole attempts as the wasted part. Job-level labels
    (constant over the job's workloads, e.g. team) are kept.

    Examples:
        Job ``train`` ran on spot g5.xlarge instances ($0.40/h against
        $1.006 on demand): its first attempt was interrupted after 2 hours,
        the second one completed.

        >>> hours = pd.date_range("2026-03-02", periods=4, freq="h", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": ["i-0aaa", "i-0aaa", "i-0bbb", "i-0bbb"], "instance_type": "g5.xlarge",
        ...                       "start": hours, "end": hours + pd.Timedelta("1h"), "cost": 0.40, "list_cost": 1.006,
        ...                       "pricing": gpucost.Purchase.SPOT})
        >>> t = pd.date_range("2026-03-02", periods=8, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": np.repeat(["i-0aaa", "i-0bbb"], 4), "device": 0,
        ...                       "consumer": np.repeat(["train-1", "train-2"], 4), "share": 1.0, "util": 0.9,
        ...                       "mem_used": 0.0, "duration": 1800.0})
        >>> workloads = pd.DataFrame({"consumer": ["train-1", "train-2"], "job": "train", "team": "nlp"})
        >>> allocation = gpucost.allocate(costs, usage, gpucost.inventory(costs), workloads,
        ...                               by=["consumer", "resource_id"])
        >>> events = pd.DataFrame({"resource_id": ["i-0aaa"], "time": [pd.Timestamp("2026-03-02 01:58", tz="UTC")]})
        >>> runs = gpucost.spot_runs(allocation, workloads, gpucost.spot_interruptions(events), costs=costs)
        >>> runs.jobs[["job", "attempts", "interrupted_attempts", "cost", "wasted_cost", "waste_pct", "spot_savings"]]
             job  attempts  interrupted_attempts  cost  wasted_cost  waste_pct  spot_savings
        0  train         2                     1   1.6          0.8       50.0         0.412
    """
    alloc = as_frame(allocation, "allocation")
    require_columns(alloc, "allocation", ["consumer", "resource_id", "cost"],
                    " (use gpucost.allocate(..., by=['consumer', 'resource_id']))")
    slack_ns = int(round(seconds(slack, "slack") * NS_PER_S))
    has_list = "list_cost" in alloc.columns
    w, label_cols = _workload_table(workloads)
    w["key"] = np.where(w["attempt"].to_numpy() != "", w["attempt"].to_numpy(), w["consumer"].to_numpy())

    # Cost and instances per consumer, from the allocation.
    metrics = ["cost"] + (["list_cost"] if has_list else [])
    a = alloc[["consumer", "resource_id", *metrics]].copy()
    a["consumer"] = a["consumer"].astype(str)
    a["resource_id"] = a["resource_id"].astype(str)
    a = a[a["consumer"].isin(w["consumer"])]
    per_consumer = a.groupby("consumer")[metrics].sum()

    lines = _lines(costs)
    # Attempt rows: consumers grouped by (job, key).
    w = w.join(per_consumer, on="consumer")
    for m in metrics:
        w[m] = w[m].fillna(0.0)
    # The instances of each consumer: its allocation rows, the workloads'
    # resource_id, and its samples (an attempt AWS did not bill has no row).
    known = [a[["consumer", "resource_id"]], w.loc[w["resource_id"] != "", ["consumer", "resource_id"]]]
    if usage is not None:
        if inventory is None:
            raise InvalidInputError("parameter 'inventory': required with usage=")
        prof = usage_profile(usage, inventory, fields=[], interval=interval)
        prof = prof[prof["consumer"].isin(w["consumer"])]
        known.append(prof[["consumer", "resource_id"]])
        seen = prof.groupby("consumer").agg(first=("first", "min"), last=("last", "max"))
        seen_first = w["consumer"].map(pd.Series(datetime_ns(seen["first"]), index=seen.index))
        seen_last = w["consumer"].map(pd.Series(datetime_ns(seen["last"]), index=seen.index))
        fill = (w["start_ns"] == _MIN) & seen_first.notna()
        w.loc[fill, "start_ns"] = seen_first[fill].astype(np.int64)
        fill = (w["end_ns"] == _MIN) & seen_last.notna()
        w.loc[fill, "end_ns"] = seen_last[fill].astype(np.int64)
    pairs = pd.concat(known, ignore_index=True).astype(str).drop_duplicates().merge(
        w[["consumer", "job", "key"]], on="consumer")
    grouped = w.groupby(["job", "key"], sort=True)
    att = grouped.agg(
        consumers=("consumer", lambda s: ",".join(sorted(set(s)))),
        state_outcome=("state_outcome", _combine_outcomes),
        start_ns=("start_ns", lambda s: s[s != _MIN].min() if (s != _MIN).any() else _MIN),
        end_ns=("end_ns", lambda s: s[s != _MIN].max() if (s != _MIN).any() else _MIN),
        **{m: (m, "sum") for m in metrics},
    ).reset_index()
    res = pairs.groupby(["job", "key"])["resource_id"].agg(lambda s: ",".join(sorted(set(s))))
    att = att.join(res.rename("resources"), on=["job", "key"])
    att["resources"] = att["resources"].fillna("")

    # Times from the cost lines of the attempt's instances when workloads lack them.
    pricing = pd.Series("", index=att.index, dtype=object)
    if lines is not None:
        span = pairs.merge(lines, on="resource_id").groupby(["job", "key"]).agg(
            line_start=("start_ns", "min"), line_end=("end_ns", "max"),
            pricing=("pricing", lambda s: ",".join(sorted(set(s) - {""}))))
        att = att.join(span, on=["job", "key"])
        for col, src in (("start_ns", "line_start"), ("end_ns", "line_end")):
            fill = (att[col] == _MIN) & att[src].notna()
            att.loc[fill, col] = att.loc[fill, src].astype(np.int64)
        pricing = att["pricing"].fillna("").astype(object)
        att = att.drop(columns=["line_start", "line_end", "pricing"])
    att["pricing"] = pricing.to_numpy()
    att["start_ns"] = att["start_ns"].astype(np.int64)
    att["end_ns"] = att["end_ns"].astype(np.int64)

    # Order of the attempts within a job: by start when every attempt of the
    # job has one, else by attempt key (numbers numerically).
    known = (att["start_ns"] != _MIN).groupby(att["job"]).transform("all").to_numpy()
    number = pd.to_numeric(att["key"], errors="coerce")
    key_rank = pd.DataFrame({"n": number.fillna(np.inf), "k": att["key"]}).sort_values(["n", "k"]).index
    rank = np.empty(len(att), dtype=np.int64)
    rank[key_rank.to_numpy()] = np.arange(len(att))
    att = att.assign(_order=np.where(known, att["start_ns"].to_numpy(), rank))
    att = att.sort_values(["job", "_order", "key"], kind="stable").reset_index(drop=True)
    # A later attempt is a retry only when it starts after this one ended
    # (within the slack): replicas of one service running side by side under
    # one job id are not retries of each other. Without times: by order.
    later_by_order = att.groupby("job").cumcount(ascending=False).to_numpy() > 0
    start = att["start_ns"].to_numpy(np.int64)
    end = np.where(att["end_ns"].to_numpy(np.int64) == _MIN, start, att["end_ns"].to_numpy(np.int64))
    first_max = att.groupby("job")["start_ns"].transform("max").to_numpy(np.int64)
    ties = (att["start_ns"] == first_max).groupby(att["job"]).transform("sum").to_numpy()
    second = att["start_ns"].where(att["start_ns"] != first_max).groupby(att["job"]).transform("max")
    second = second.fillna(_MIN).to_numpy(np.int64)
    others_max = np.where((start == first_max) & (ties == 1), second, first_max)
    others = att.groupby("job")["key"].transform("size").to_numpy() > 1
    later_by_time = others & (others_max != _MIN) & (others_max >= end - slack_ns)
    att["later_exists"] = np.where(known, later_by_time, later_by_order)

    events = _interruptions_table(interruptions)
    hit_interruption, hit_rebalance = _event_hits(att, pairs, events, slack_ns)

    outcome = np.full(len(att), "", dtype=object)
    source = np.full(len(att), "", dtype=object)
    state = att["state_outcome"].to_numpy()
    rules = [
        (state != "", state, "state"),
        (hit_interruption, "interrupted", "event"),
        (att["later_exists"].to_numpy() & (att["pricing"].str.contains(Purchase.SPOT).to_numpy()), "interrupted",
         "billing"),
        (att["later_exists"].to_numpy() & hit_rebalance, "interrupted", "rebalance"),
        (att["later_exists"].to_numpy(), "failed", "restart"),
        (np.ones(len(att), dtype=bool), "completed", "presumed"),
    ]
    for mask, value, name in rules:
        take = mask & (outcome == "")
        outcome[take] = value[take] if isinstance(value, np.ndarray) else value
        source[take] = name
    att["outcome"] = outcome
    att["source"] = source
    att["interrupted"] = outcome == "interrupted"
    wasted = np.isin(outcome, ["interrupted", "failed"])
    att["zero_cost"] = att["cost"].to_numpy() == 0

    has_times = (att["start_ns"] != _MIN) & (att["end_ns"] != _MIN)
    hours = np.where(has_times, (att["end_ns"] - att["start_ns"]) / (3600 * NS_PER_S), np.nan)
    lost_fraction = None
    if checkpoints is not None:
        lost_fraction = _lost_fraction(att, checkpoints, wasted, has_times.to_numpy())
        att["lost_hours"] = hours * lost_fraction
        att["lost_cost"] = att["cost"].to_numpy() * lost_fraction
    waste_fraction = lost_fraction if lost_fraction is not None else wasted.astype(np.float64)

    attempts = pd.DataFrame({
        "job": att["job"].astype(str),
        "attempt": att["key"].astype(str),
        "consumers": att["consumers"].astype(str),
        "resources": att["resources"].astype(str),
        "start": to_datetime(att["start_ns"].to_numpy()),
        "end": to_datetime(att["end_ns"].to_numpy()),
        "hours": hours,
        "pricing": att["pricing"].astype(str),
        "outcome": att["outcome"].astype(str),
        "source": att["source"].astype(str),
        "interrupted": att["interrupted"].to_numpy(),
        "cost": att["cost"].to_numpy(),
    })
    if has_list:
        attempts["list_cost"] = att["list_cost"].to_numpy()
    attempts["zero_cost"] = att["zero_cost"].to_numpy()
    if lost_fraction is not None:
        attempts["lost_hours"] = att["lost_hours"].to_numpy()
        attempts["lost_cost"] = att["lost_cost"].to_numpy()

    jobs = _jobs(attempts, att, wasted, waste_fraction, has_list, lost_fraction is not None)
    if label_cols:
        constant = w.groupby("job")[label_cols].nunique()
        keep = [c for c in label_cols if (constant[c] <= 1).all()]
        if keep:
            jobs = jobs.merge(w.groupby("job")[keep].first().reset_index(), on="job", how="left")
    fleet = _fleet(alloc, jobs, attempts, has_list)
    return SpotRuns(jobs, attempts, fleet)


def _combine_outcomes(s: pd.Series) -> str:
    """One attempt's outcome from its consumers' states (a multi-pod attempt
    is completed only when no pod reports another outcome)."""
    values = set(s) - {""}
    for outcome in ("interrupted", "failed", "running", "completed"):
        if outcome in values:
            return outcome
    return ""


def _lines(costs: Any) -> pd.DataFrame | None:
    if costs is None:
        return None
    t = Table(costs, "costs")
    start = optional_instants_ns(t, "start")
    end = optional_instants_ns(t, "end")
    if (start == _MIN).any():
        raise t._first_bad_row("start", start == _MIN, "missing instant")
    if (end == _MIN).any():
        raise t._first_bad_row("end", end == _MIN, "missing instant")
    pricing = strings(t, "pricing") if t.has("pricing") else np.full(len(t), "", dtype=object)
    return pd.DataFrame({"resource_id": strings(t, "resource_id"), "start_ns": start, "end_ns": end,
                         "pricing": pricing})


def _event_hits(att: pd.DataFrame, pairs: pd.DataFrame, events: pd.DataFrame, slack_ns: int):
    """Whether an interruption / a rebalance recommendation hit one of each
    attempt's instances between its start and `slack` after its end."""
    hit_i = np.zeros(len(att), dtype=bool)
    hit_r = np.zeros(len(att), dtype=bool)
    if len(events) == 0 or len(pairs) == 0:
        return hit_i, hit_r
    idx = att[["job", "key", "start_ns", "end_ns"]].reset_index().rename(columns={"index": "row"})
    m = pairs.merge(idx, on=["job", "key"]).merge(events, on="resource_id")
    after_start = (m["start_ns"] == _MIN) | (m["time_ns"] >= m["start_ns"] - slack_ns)
    before_end = (m["end_ns"] == _MIN) | (m["time_ns"] <= m["end_ns"] + slack_ns)
    m = m[after_start & before_end]
    hit_i[m.loc[m["kind"] == "interruption", "row"].to_numpy()] = True
    hit_r[m.loc[m["kind"] == "rebalance", "row"].to_numpy()] = True
    return hit_i, hit_r


def _lost_fraction(att: pd.DataFrame, checkpoints: Any, wasted: np.ndarray, has_times: np.ndarray) -> np.ndarray:
    t = Table(checkpoints, "checkpoints")
    ck = pd.DataFrame({"job": strings(t, "job"), "time_ns": optional_instants_ns(t, "time")})
    if (ck["time_ns"] == _MIN).any():
        raise t._first_bad_row("time", (ck["time_ns"] == _MIN).to_numpy(), "missing instant")
    need = wasted & ~has_times
    if need.any():
        job = att["job"].to_numpy()[need][0]
        raise InvalidInputError(f"checkpoints: job {job!r} has an attempt without start and end times; give "
                                "workloads 'start'/'end' columns or costs= to price work lost since a checkpoint")
    left = pd.DataFrame({"row": np.arange(len(att)), "job": att["job"].to_numpy(),
                         "end_ns": att["end_ns"].to_numpy()}).sort_values("end_ns")
    last = pd.merge_asof(left, ck.sort_values("time_ns"), left_on="end_ns", right_on="time_ns", by="job",
                         direction="backward").sort_values("row")
    ckpt = last["time_ns"].fillna(_MIN).to_numpy(dtype=np.float64)
    start = att["start_ns"].to_numpy(dtype=np.float64)
    end = att["end_ns"].to_numpy(dtype=np.float64)
    resume = np.maximum(start, ckpt)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(end > start, (end - resume) / (end - start), 1.0)
    return np.where(wasted, np.clip(frac, 0.0, 1.0), 0.0)


def _jobs(attempts: pd.DataFrame, att: pd.DataFrame, wasted: np.ndarray, waste_fraction: np.ndarray,
          has_list: bool, has_lost: bool) -> pd.DataFrame:
    cost = attempts["cost"].to_numpy()
    per = pd.DataFrame({
        "job": attempts["job"],
        "attempts": 1,
        "interrupted_attempts": attempts["interrupted"].astype(np.int64),
        "failed_attempts": (attempts["outcome"] == "failed").astype(np.int64),
        "completed": attempts["outcome"] == "completed",
        "cost": cost,
        "interrupted_cost": np.where(attempts["interrupted"], cost, 0.0),
        "wasted_cost": cost * waste_fraction,
    })
    if has_list:
        lst = attempts["list_cost"].to_numpy()
        per["list_cost"] = lst
        per["on_demand_equivalent"] = lst * (1.0 - waste_fraction)
    if has_lost:
        per["lost_hours"] = attempts["lost_hours"].fillna(0.0)
        per["lost_cost"] = attempts["lost_cost"]
    jobs = per.groupby("job", sort=True).agg({c: ("any" if c == "completed" else "sum")
                                             for c in per.columns if c != "job"}).reset_index()
    with np.errstate(invalid="ignore", divide="ignore"):
        jobs["waste_pct"] = np.where(jobs["cost"] != 0, 100.0 * jobs["wasted_cost"] / jobs["cost"], 0.0)
    if has_list:
        jobs["spot_savings"] = jobs["on_demand_equivalent"] - jobs["cost"]
    else:
        jobs["on_demand_equivalent"] = np.nan
        jobs["spot_savings"] = np.nan
    jobs["cost_per_completed_run"] = np.where(jobs["completed"], jobs["cost"], np.nan)
    front = ["job", "attempts", "interrupted_attempts", "failed_attempts", "completed", "cost", "interrupted_cost",
             "wasted_cost", "waste_pct"]
    rest = [c for c in jobs.columns if c not in front]
    return jobs[front + rest]


def _fleet(alloc: pd.DataFrame, jobs: pd.DataFrame, attempts: pd.DataFrame, has_list: bool) -> dict:
    gpu_bill = float(alloc.loc[alloc["consumer"].astype(str) != "__unattributed__", "cost"].sum())
    cost = float(jobs["cost"].sum())
    wasted = float(jobs["wasted_cost"].sum())
    completed = int(jobs["completed"].sum())
    out = {
        "jobs": int(len(jobs)),
        "completed_jobs": completed,
        "attempts": int(len(attempts)),
        "interrupted_attempts": int(attempts["interrupted"].sum()),
        "zero_cost_interrupted_attempts": int((attempts["interrupted"] & attempts["zero_cost"]).sum()),
        "cost": cost,
        "interrupted_cost": float(jobs["interrupted_cost"].sum()),
        "wasted_cost": wasted,
        "waste_pct": 100.0 * wasted / cost if cost else 0.0,
        "gpu_bill": gpu_bill,
        "failed_attempt_share": wasted / gpu_bill if gpu_bill else float("nan"),
        "cost_per_completed_run": cost / completed if completed else float("nan"),
    }
    if has_list:
        out["on_demand_equivalent"] = float(jobs["on_demand_equivalent"].sum())
        out["spot_savings"] = out["on_demand_equivalent"] - cost
    return out

