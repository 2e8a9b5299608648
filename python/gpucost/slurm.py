"""Slurm jobs joined to the telemetry of their GPUs (docs/telemetry.md,
"Slurm jobs and their GPUs' telemetry").

Slurm accounting (:func:`gpucost.read_slurm_sacct`) says *who* held each GPU:
the job, its user, account, partition. DCGM or nvidia-smi says *how busy* it
was, and on bare metal usually not who. :func:`join_jobs` joins them per GPU
and instant, in C++ (``io/job_join.h``): the job that held the GPU is the
consumer of the telemetry's samples, so its utilisation is measured.

Which job held which GPU, in this order:

1. the telemetry's own label: dcgm-exporter's ``hpc_job`` (its
   ``--hpc-job-mapping-dir``, written by a Slurm prolog), read by the DCGM
   readers as the sample's consumer; Princeton jobstats' ``nvidia_gpu_jobId``
   (:func:`gpucost.prometheus.read_jobstats`); CEEMS' GPU -> job mapping
   applied to DCGM samples (:func:`apply_gpu_map`);
2. the GPU indices Slurm gives: ``IDX:`` in sacct's Gres/AllocGRES column,
   else in ``scontrol show job -d`` (:func:`gpucost.read_scontrol_jobs`);
3. else the jobs placed on their node's GPUs in start order, lowest free
   index first (as :func:`gpucost.read_slurm_sacct` does), said in the report.

A job's GPU time that no telemetry covers stays *assumed* busy (as sacct's
samples say, ``utilization_source`` "assumed"); telemetry of a GPU no job
held is free; telemetry that names a job on a GPU (or node) sacct does not
give it is a warning naming both. The join also compares the jobs' starts
and ends with the GPUs' busy/free edges: when another UTC offset fits the
sacct times clearly better than the time zone they were read in, it warns
with the offset that fits and the money that moves.

Example: job 7 held GPU 0 of ``gpu01`` for an hour; DCGM without job labels
saw it 90 % busy:

>>> t0 = pd.Timestamp("2026-03-02 10:00", tz="UTC")
>>> telemetry = pd.DataFrame({"timestamp": pd.date_range(t0, periods=3, freq="30min"), "resource_id": "gpu01",
...                           "device": 0, "consumer": "", "share": 1.0, "util": [0.9, 0.9, 0.0],
...                           "mem_used": 0.0, "duration": 1800.0})
>>> sacct = pd.DataFrame({"timestamp": [t0], "resource_id": ["gpu01"], "device": [0], "consumer": ["7"],
...                       "share": [1.0], "util": [1.0], "mem_used": [0.0], "duration": [3600.0]})
>>> joined = gpucost.slurm.join_jobs(telemetry, sacct)
>>> joined.usage[["timestamp", "consumer", "util", "duration"]]
                  timestamp consumer  util  duration
0 2026-03-02 10:00:00+00:00        7   0.9    1800.0
1 2026-03-02 10:30:00+00:00        7   0.9    1800.0
2 2026-03-02 11:00:00+00:00            0.0    1800.0
>>> joined.report["jobs"][["consumer", "held_gpu_hours", "measured_gpu_hours", "assumed_gpu_hours", "placement"]]
  consumer  held_gpu_hours  measured_gpu_hours  assumed_gpu_hours    placement
0        7             1.0                 1.0                0.0  start order

The report names what placed each job (:data:`PLACEMENTS`).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.errors import InvalidInputError
from gpucost.frames import Table, usage_frame

__all__ = ["JobJoin", "join_jobs", "fit_job_times", "sacct_job_labels", "with_job_labels", "apply_gpu_map",
           "PROCESS_PREFIXES", "PLACEMENTS"]

#: Telemetry consumers that name a process, not a job (nvidia-smi apps without pid_jobs).
PROCESS_PREFIXES = ("pid:",)
#: How the join report names what placed each job on its GPUs (``report["jobs"]["placement"]``), in the
#: order they are tried: the telemetry's own job label (dcgm-exporter's hpc_job, jobstats, CEEMS), the GPU
#: indices Slurm gives (sacct's IDX, scontrol's), else start order; "none": no telemetry joined to it.
LABEL_SOURCES = ("hpc_job label", "jobstats nvidia_gpu_jobId", "CEEMS")
PLACEMENTS = (*LABEL_SOURCES, "sacct IDX", "scontrol IDX", "start order", "none")
#: A telemetry sample is busy when it names a holder, or its utilisation or memory says so.
BUSY_UTIL = 0.02
BUSY_MEMORY = 256 * 2**20
_SHOWN = 3
#: Zones named as examples of an offset that fits (the first one with that offset at the time).
_ZONES = ("UTC", "Europe/London", "Europe/Berlin", "Europe/Helsinki", "Europe/Moscow", "Asia/Dubai",
          "Asia/Kolkata", "Asia/Shanghai", "Asia/Tokyo", "Australia/Sydney", "Pacific/Auckland",
          "America/Sao_Paulo", "America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
          "America/Anchorage", "Pacific/Honolulu")


class JobJoin(NamedTuple):
    """What :func:`join_jobs` returns: the joined ``usage`` (allocate it with
    the ``workloads``), the jobs' labels with ``utilization_source`` set per
    job (measured, assumed, or mixed when part of its time had no telemetry),
    and the ``report`` (also ``usage.attrs["slurm_join"]``)."""

    usage: pd.DataFrame
    workloads: pd.DataFrame | None
    report: dict


def _codes(values: Any, index: pd.Index) -> np.ndarray:
    """Positions of a string column's values in ``index`` (categorical
    columns through their categories, no per-row hashing)."""
    s = pd.Series(values) if not isinstance(values, pd.Series) else values
    if isinstance(s.dtype, pd.CategoricalDtype):
        lookup = np.append(index.get_indexer(s.cat.categories.astype(str)), -1)
        codes = s.cat.codes.to_numpy()
        return lookup[np.where(codes < 0, len(lookup) - 1, codes)]
    return index.get_indexer(s.astype(str).to_numpy())


def _categories(*columns: Any) -> pd.Index:
    parts = []
    for c in columns:
        s = pd.Series(c) if not isinstance(c, pd.Series) else c
        parts.append(s.cat.categories.astype(str).to_numpy() if isinstance(s.dtype, pd.CategoricalDtype)
                     else pd.unique(s.astype(str).to_numpy()))
    return pd.Index(pd.unique(np.concatenate(parts) if parts else np.array([], dtype=object)))


def _map_job_ids(telemetry: pd.DataFrame, job_ids: Any) -> pd.DataFrame:
    """Telemetry consumers renamed through ``job_ids`` (raw id -> job id,
    e.g. Slurm's JobIDRaw ``4105`` -> JobID ``4103_2``: the mapping files
    hold the raw id); on the consumers' categories only."""
    if job_ids is None or "consumer" not in telemetry.columns:
        return telemetry
    if isinstance(job_ids, Mapping):
        mapping = {str(k): str(v) for k, v in job_ids.items()}
    else:
        t = Table(job_ids, "job_ids")
        mapping = dict(zip(np.asarray(t.column("raw"), dtype=object).astype(str),
                           np.asarray(t.column("consumer"), dtype=object).astype(str)))
    if not mapping:  # no array job: every raw id is its JobID already
        return telemetry
    consumer = telemetry["consumer"]
    cats = consumer.astype("category")
    names = pd.Series(cats.cat.categories.astype(str), dtype=object)
    renamed = np.asarray([mapping.get(name, name) for name in names], dtype=object)  # one per distinct consumer
    out = telemetry.copy()
    out["consumer"] = pd.Categorical(np.append(renamed, "")[np.where(cats.cat.codes.to_numpy() < 0, len(renamed),
                                                                      cats.cat.codes.to_numpy())])
    return out


def _columns(usage: pd.DataFrame, name: str) -> dict:
    from gpucost.allocation import usage_columns
    try:
        return usage_columns(usage)
    except InvalidInputError as exc:
        raise InvalidInputError(str(exc).replace("usage", name, 1)) from None


def _join(telemetry: pd.DataFrame, jobs: pd.DataFrame, *, exact: bool, interval_ns: int, shift_ns: int = 0) -> dict:
    return _core.join_jobs(_columns(telemetry, "telemetry"), _columns(jobs, "jobs"), int(interval_ns), bool(exact),
                           120 * 10**9, int(shift_ns), list(PROCESS_PREFIXES))


def _usage(raw: dict, telemetry: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """The joined samples as a usage frame; the telemetry's other columns
    (power_w, node, gpu_model, ...) carried to the samples that came from it."""
    frame = usage_frame(raw["usage"])
    origin, row = raw["origin"], raw["row"]
    core = {"timestamp", "resource_id", "device", "consumer", "share", "util", "mem_used", "duration"}
    from_tel = origin == 0
    for name in [c for c in telemetry.columns if c not in core]:
        column = telemetry[name]
        taken = column.iloc[np.where(from_tel, row, 0)].reset_index(drop=True) if len(telemetry) else None
        if taken is None:
            continue
        if isinstance(column.dtype, pd.CategoricalDtype):
            frame[name] = taken.where(from_tel)
        elif pd.api.types.is_float_dtype(column.dtype):
            frame[name] = np.where(from_tel, taken.to_numpy(), np.nan)
        else:
            frame[name] = taken.astype(object).where(from_tel, None).to_numpy()
    frame.attrs = {k: v for k, v in telemetry.attrs.items() if k not in ("slurm_join",)}
    if "diagnostics" in telemetry.attrs or "diagnostics" in jobs.attrs:
        frame.attrs["diagnostics"] = {"telemetry": dict(telemetry.attrs.get("diagnostics", {})),
                                      "jobs": dict(jobs.attrs.get("diagnostics", {})),
                                      "join": dict(raw["diagnostics"])}
    return frame


def _hours(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64) / 3600.0


def _label_source(telemetry: pd.DataFrame) -> pd.Series:
    """Per consumer the telemetry names, which mapping named it: the
    ``job_mapping`` column the jobstats and CEEMS readers write, else
    dcgm-exporter's ``hpc_job`` label."""
    consumer = telemetry["consumer"].astype(str)
    if "job_mapping" not in telemetry.columns:
        return pd.Series(LABEL_SOURCES[0], index=pd.Index(pd.unique(consumer.to_numpy())))
    source = telemetry["job_mapping"].astype(object).where(telemetry["job_mapping"].notna(), LABEL_SOURCES[0])
    return pd.Series(source.to_numpy(), index=consumer.to_numpy()).groupby(level=0).first()


def _jobs_table(raw: dict, exact: bool, telemetry: pd.DataFrame | None = None,
                indexed: Mapping[str, str] | None = None) -> pd.DataFrame:
    j = raw["jobs"]
    codes, values = j["consumer"]
    out = pd.DataFrame({
        "consumer": np.asarray(values, dtype=object)[codes] if len(codes) else np.array([], dtype=object),
        "held_gpu_hours": _hours(j["held_seconds"]),
        "measured_gpu_hours": _hours(j["measured_seconds"]),
        "assumed_gpu_hours": _hours(j["assumed_seconds"]),
        "labelled": j["labelled"].astype(bool),
        "in_sacct": j["in_jobs"].astype(bool),
    })
    measured = out["measured_gpu_hours"].to_numpy() > 1e-9
    consumer = out["consumer"].astype(str)
    label = (consumer.map(_label_source(telemetry)) if telemetry is not None and len(telemetry)
             else pd.Series(LABEL_SOURCES[0], index=out.index)).fillna(LABEL_SOURCES[0]).to_numpy(dtype=object)
    # Slurm's own indices per job (sacct IDX, scontrol IDX); without the reader's lists, all or none.
    index = (consumer.map(dict(indexed)).to_numpy(dtype=object) if indexed is not None
             else np.full(len(out), "sacct IDX" if exact else None, dtype=object))
    index = np.where(pd.isna(index), "start order", index)
    out["placement"] = np.where(out["labelled"], label, np.where(~measured, "none", index)).astype(object)
    assumed = out["assumed_gpu_hours"].to_numpy() > 1e-9
    out["utilization_source"] = np.where(measured & assumed, "mixed", np.where(measured, "measured", "assumed"))
    return out


def _mismatches(raw: dict, jobs: pd.DataFrame, job_table: pd.DataFrame) -> pd.DataFrame:
    m = raw["mismatches"]
    names = (lambda pair: np.asarray(pair[1], dtype=object)[pair[0]] if len(pair[0]) else np.array([], dtype=object))
    out = pd.DataFrame({"consumer": names(m["consumer"]), "resource_id": names(m["resource_id"]),
                        "device": m["device"].astype(np.int64),
                        "first": pd.to_datetime(m["first_ns"], utc=True), "last": pd.to_datetime(m["last_ns"], utc=True),
                        "gpu_hours": _hours(m["seconds"])})
    known = set(job_table.loc[job_table["in_sacct"], "consumer"])
    out["in_sacct"] = out["consumer"].isin(known)
    # What sacct gives each of these jobs: its nodes, GPUs and times (a handful of jobs: per-row is fine).
    where = []
    if len(out):
        mine = jobs[jobs["consumer"].astype(str).isin(set(out["consumer"])).to_numpy()]
        start = pd.to_datetime(mine["timestamp"], utc=True)
        end = start + pd.to_timedelta(mine["duration"].astype(float), unit="s")
        grouped = pd.DataFrame({"consumer": mine["consumer"].astype(str).to_numpy(),
                                "resource_id": mine["resource_id"].astype(str).to_numpy(),
                                "device": mine["device"].to_numpy(), "start": start.to_numpy(), "end": end.to_numpy()})
        for consumer in out["consumer"]:
            g = grouped[grouped["consumer"] == consumer]
            if not len(g):
                where.append("not in sacct")
                continue
            parts = []
            for rid, h in g.groupby("resource_id", sort=True):
                devices = ",".join(str(d) for d in sorted(set(h["device"])))
                parts.append(f"'{rid}' GPU {devices} {_span(h['start'].min(), h['end'].max())}")
            where.append("sacct gives it " + "; ".join(parts))
    out["sacct"] = pd.Series(where, dtype=object)
    return out


def _span(lo: Any, hi: Any) -> str:
    lo, hi = pd.Timestamp(lo), pd.Timestamp(hi)
    lo = lo.tz_localize("UTC") if lo.tzinfo is None else lo
    hi = hi.tz_localize("UTC") if hi.tzinfo is None else hi
    return f"{lo:%Y-%m-%d %H:%M} .. {hi:%Y-%m-%d %H:%M} UTC"


# ---- a GPU -> job mapping beside the telemetry (CEEMS) ------------------------------------------


def apply_gpu_map(telemetry: pd.DataFrame, mapping: pd.DataFrame, *, source: str = "CEEMS") -> pd.DataFrame:
    """DCGM (or other) samples of free GPUs given the jobs a separate GPU ->
    job mapping names at that instant (:func:`gpucost.prometheus.read_ceems_gpu_map`):
    a sample with no consumer becomes one sample per job on its GPU then
    (share and memory split by the mapping's shares, utilisation the GPU's,
    the rest free), ``job_mapping`` = ``source``; :func:`join_jobs` then
    treats these jobs as labelled by the telemetry. GPUs are matched by GPU
    UUID (the telemetry's ``gpu_uuid`` and the mapping's) when both have
    them, else by node and GPU index (the telemetry's ``node``, or
    ``resource_id``, and ``device``). A sample takes the mapping of its GPU
    whose instant is the latest at or before it and whose duration still
    covers it (so a job's last mapping does not outlive it). Samples that
    already name a consumer (a pod, an ``hpc_job``) are left as they are.
    ``attrs["gpu_map"]``: samples mapped, mapping rows matched and unmatched.

    Examples:
        GPU 0 of gpu01 read by DCGM without job labels; CEEMS says job 7
        held it at 10:00 (not at 10:01):

        >>> t0 = pd.Timestamp("2026-03-02 10:00", tz="UTC")
        >>> dcgm = pd.DataFrame({"timestamp": [t0, t0 + pd.Timedelta("1min")], "resource_id": "gpu01", "device": 0,
        ...                      "consumer": "", "share": 1.0, "util": [0.9, 0.0], "mem_used": [4e10, 0.0],
        ...                      "duration": 60.0, "node": "gpu01", "gpu_uuid": "GPU-0aaa"})
        >>> ceems = pd.DataFrame({"timestamp": [t0], "node": ["gpu01"], "device": [0], "gpu_uuid": ["GPU-0aaa"],
        ...                       "job": ["7"], "share": [1.0], "duration": [60.0]})
        >>> gpucost.slurm.apply_gpu_map(dcgm, ceems)[["timestamp", "consumer", "share", "util", "job_mapping"]]
                          timestamp consumer  share  util job_mapping
        0 2026-03-02 10:00:00+00:00        7    1.0   0.9       CEEMS
        1 2026-03-02 10:01:00+00:00             1.0   0.0         NaN
    """
    for column in ("timestamp", "device", "job", "share", "duration"):
        if column not in mapping.columns:
            raise InvalidInputError(f"mapping: missing column '{column}' (read_ceems_gpu_map's table: timestamp, "
                                    "node, device, gpu_uuid, job, share, duration)")
    tel = telemetry.reset_index(drop=True)
    by_uuid = ("gpu_uuid" in tel.columns and "gpu_uuid" in mapping.columns
               and (mapping["gpu_uuid"].astype(str) != "").all() and (tel["gpu_uuid"].astype(str) != "").any())
    node_col = "node" if "node" in tel.columns else "resource_id"

    def gpu_keys(frame: pd.DataFrame, node: str) -> np.ndarray:
        if by_uuid:
            return frame["gpu_uuid"].astype(str).to_numpy(dtype=object)
        return (frame[node].astype(str) + "/" + frame["device"].astype(np.int64).astype(str)).to_numpy(dtype=object)

    keys = pd.Index(pd.unique(gpu_keys(mapping, "node")))
    t_gpu = keys.get_indexer(gpu_keys(tel, node_col))
    free = (tel["consumer"].astype(str) == "").to_numpy() & (t_gpu >= 0)
    m_gpu = keys.get_indexer(gpu_keys(mapping, "node"))
    m_ts = _seconds_of(mapping["timestamp"])  # whole seconds: scrapes and queries are never finer
    # The mapping's instants per GPU (one per GPU and time), then each free sample's latest one at or before it.
    inst = pd.DataFrame({"gpu": m_gpu, "ts": m_ts, "duration": mapping["duration"].to_numpy(dtype=np.float64)})
    inst = inst.drop_duplicates(["gpu", "ts"]).sort_values(["gpu", "ts"]).reset_index(drop=True)
    t_ts = _seconds_of(tel["timestamp"])
    query = np.flatnonzero(free)
    inst_key = inst["gpu"].to_numpy(np.int64) * (1 << 34) + inst["ts"].to_numpy(np.int64)
    q_key = t_gpu[query].astype(np.int64) * (1 << 34) + t_ts[query]
    at = np.searchsorted(inst_key, q_key, side="right") - 1
    ok = at >= 0
    ok[ok] = (inst["gpu"].to_numpy()[at[ok]] == t_gpu[query[ok]]) & (
        t_ts[query[ok]] < inst["ts"].to_numpy()[at[ok]] + inst["duration"].to_numpy()[at[ok]])
    hit, which = query[ok], at[ok]
    # Every job of that instant: one piece each; the rest of the GPU stays free.
    pieces = pd.DataFrame({"row": hit, "gpu": inst["gpu"].to_numpy()[which], "ts": inst["ts"].to_numpy()[which]})
    jobs = pd.DataFrame({"gpu": m_gpu, "ts": m_ts, "job": mapping["job"].astype(str).to_numpy(dtype=object),
                         "jshare": mapping["share"].to_numpy(dtype=np.float64)})
    pieces = pieces.merge(jobs, on=["gpu", "ts"], how="inner")
    total = pieces.groupby("row")["jshare"].transform("sum").to_numpy()
    jshare = np.where(total > 1, pieces["jshare"].to_numpy() / total, pieces["jshare"].to_numpy())  # k whole jobs: 1/k
    rest = pd.Series(1 - np.minimum(total, 1), index=pieces["row"]).groupby(level=0).first()
    rest = rest[rest > 1e-9]
    held = tel.iloc[pieces["row"].to_numpy()].reset_index(drop=True)
    held["consumer"] = pieces["job"].to_numpy(dtype=object)
    held["share"] = held["share"].to_numpy(dtype=np.float64) * jshare
    held["mem_used"] = held["mem_used"].to_numpy(dtype=np.float64) * jshare
    held["job_mapping"] = source
    left = tel.iloc[rest.index.to_numpy()].reset_index(drop=True)
    left["share"] = left["share"].to_numpy(dtype=np.float64) * rest.to_numpy()
    left["mem_used"] = left["mem_used"].to_numpy(dtype=np.float64) * rest.to_numpy()
    untouched = tel.drop(index=np.unique(hit))
    # Each sample's pieces where the sample was: its jobs, then its free rest.
    out = pd.concat([untouched.assign(_o=untouched.index.to_numpy(), _p=0),
                     held.assign(_o=pieces["row"].to_numpy(), _p=1), left.assign(_o=rest.index.to_numpy(), _p=2)],
                    ignore_index=True)
    out = out.sort_values(["_o", "_p"], kind="stable").drop(columns=["_o", "_p"]).reset_index(drop=True)
    for column in ("consumer", "job_mapping"):
        out[column] = pd.Categorical(out[column].astype(object).where(out[column].notna(), "" if column == "consumer"
                                                                       else None))
    out.attrs = dict(telemetry.attrs)
    matched = pd.Series(False, index=inst.index)
    matched[np.unique(which)] = True
    out.attrs["gpu_map"] = {"source": source, "samples_mapped": int(len(hit)), "matched_by": "gpu_uuid" if by_uuid
                            else "node and GPU index",
                            "mapping_instants_unmatched": int((~matched).sum())}
    return out


# ---- what else sacct says about a job ----------------------------------------------------

#: sacct columns read as job labels, and their names in the workloads table.
SACCT_LABELS = {"JobName": "job_name", "Partition": "partition", "QOS": "qos"}


def sacct_job_labels(paths: Any) -> pd.DataFrame:
    """The jobs' other labels in ``sacct --parsable2`` exports: ``consumer``
    (JobID), ``raw`` (JobIDRaw, the id a prolog sees as ``SLURM_JOB_ID``,
    when exported) and ``job_name``, ``partition``, ``qos`` for the columns
    the export has (``-o ...,JobName,Partition,QOS,JobIDRaw``). Job steps
    and repeated header lines are skipped; a job in several exports keeps
    the values of the last one that names it.

    Examples:
        >>> from pathlib import Path
        >>> _ = Path("sacct.txt").write_text(
        ...     "JobID|JobIDRaw|JobName|Partition|QOS|User|Account|Start|End|NodeList|AllocTRES\\n"
        ...     "4103_2|4105|sweep|gpu|normal|carol|nlp|2026-03-01T10:00:00|2026-03-01T11:00:00|gpu01|gres/gpu=1\\n"
        ...     "4103_2.batch|4105.batch|batch|||||2026-03-01T10:00:00|2026-03-01T11:00:00|gpu01|gres/gpu=1\\n")
        >>> gpucost.slurm.sacct_job_labels(["sacct.txt"])
          consumer   raw job_name partition     qos
        0   4103_2  4105    sweep       gpu  normal
    """
    files = [paths] if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__") else list(paths)
    frames = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            header = [c.strip() for c in f.readline().rstrip("\r\n").split("|")]
        if "JobID" not in header:
            continue
        wanted = [c for c in ("JobID", "JobIDRaw", *SACCT_LABELS) if c in header]
        table = pd.read_csv(path, sep="|", dtype=str, keep_default_na=False, usecols=wanted, index_col=False)
        ids = table["JobID"].str.strip()
        table = table[(ids != "JobID").to_numpy() & ~ids.str.contains(".", regex=False).to_numpy()
                      & (ids != "").to_numpy()]
        out = pd.DataFrame({"consumer": table["JobID"].str.strip().to_numpy(dtype=object)})
        if "JobIDRaw" in table:
            out["raw"] = table["JobIDRaw"].str.strip().to_numpy(dtype=object)
        for column, name in SACCT_LABELS.items():
            if column in table:
                out[name] = table[column].str.strip().replace("", None).to_numpy(dtype=object)
        frames.append(out)
    if not frames:
        return pd.DataFrame({"consumer": pd.Series([], dtype=object)})
    both = pd.concat(frames, ignore_index=True)
    return both.drop_duplicates("consumer", keep="last").reset_index(drop=True)


def with_job_labels(workloads: pd.DataFrame | None, labels: pd.DataFrame) -> pd.DataFrame | None:
    """``workloads`` with the sacct labels it lacks (job_name, partition,
    qos), by consumer; a column it has already is kept as it is."""
    extra = [c for c in labels.columns if c not in ("consumer", "raw")]
    if workloads is None or not extra:
        return workloads
    extra = [c for c in extra if c not in workloads.columns]
    if not extra:
        return workloads
    lookup = labels.set_index("consumer")[extra]
    keys = workloads["consumer"].astype(str)
    out = workloads.copy()
    for column in extra:
        out[column] = keys.map(lookup[column]).astype(object).where(lambda v: v.notna(), None).to_numpy()
    return out


# ---- the time zone the sacct times fit -------------------------------------------------


def _busy(usage: pd.DataFrame) -> np.ndarray:
    consumer = usage["consumer"]
    if isinstance(consumer.dtype, pd.CategoricalDtype):
        named = np.append(consumer.cat.categories.astype(str) != "", False)
        codes = consumer.cat.codes.to_numpy()
        holder = named[np.where(codes < 0, len(named) - 1, codes)]
    else:
        holder = consumer.fillna("").astype(str).to_numpy() != ""
    util = np.nan_to_num(usage["util"].to_numpy(dtype=np.float64))
    mem = np.nan_to_num(usage["mem_used"].to_numpy(dtype=np.float64))
    return holder | (util >= BUSY_UTIL) | (mem >= BUSY_MEMORY)


def _seconds_of(column: Any) -> np.ndarray:
    """Whole seconds since the epoch, whatever the column's unit."""
    times = pd.Series(pd.to_datetime(column, utc=True))
    return ((times - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(seconds=1)).to_numpy(dtype=np.int64)


def _offset_text(minutes: int) -> str:
    sign = "+" if minutes >= 0 else "-"
    h, m = divmod(abs(int(minutes)), 60)
    return f"UTC{sign}{h}" + (f":{m:02d}" if m else "")


def _zone_offset(tz: str | None, at: pd.Timestamp) -> int | None:
    if tz is None:
        return None
    try:
        offset = at.tz_convert(zoneinfo.ZoneInfo(str(tz))).utcoffset()
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None
    return int(offset.total_seconds() // 60) if offset is not None else None


def _zones_with(minutes: int, at: pd.Timestamp) -> list[str]:
    return [z for z in _ZONES if _zone_offset(z, at) == minutes]


def fit_job_times(telemetry: pd.DataFrame, jobs: pd.DataFrame, tz: str | None = None, *,
                  tolerance: float | None = None) -> dict | None:
    """How well the jobs' starts and ends meet the GPUs' busy/free edges, as
    read (``tz``) and at every other UTC offset (-12:00 .. +14:00, quarter
    hours). A GPU's telemetry turns busy (a holder named, or utilisation or
    memory in use) at a *rise* and free at a *fall*; a job start meets a rise
    of its node within ``tolerance`` seconds (default: twice the telemetry's
    spacing, at least 5 and at most 15 minutes), an end a fall.

    Returns None when no job edge falls on a node with telemetry, else a
    dict: ``edges`` (job starts and ends considered), ``matched_given`` and
    ``matched_best`` (how many meet an edge as read and at the best offset),
    ``shift_seconds`` (best minus as read: what to add to the sacct times),
    ``given_offset`` / ``best_offset`` (minutes east of UTC, when ``tz``
    names a zone), ``zones`` (common zones at the best offset then), and
    ``clear`` (the best offset is clearly better: at least half the edges
    meet there, and a quarter of them (3 at least) more than as read)."""
    held = jobs[(jobs["consumer"].astype(str) != "").to_numpy()]
    if not len(held) or not len(telemetry):
        return None
    nodes = _categories(telemetry["resource_id"], held["resource_id"])
    t_node = _codes(telemetry["resource_id"], nodes)
    t_dev = telemetry["device"].to_numpy(dtype=np.int64)
    t_sec = _seconds_of(telemetry["timestamp"])
    busy = _busy(telemetry)
    order = np.lexsort((t_sec, t_dev, t_node))
    n, d, s, b = t_node[order], t_dev[order], t_sec[order], busy[order]
    same = np.zeros(len(n), dtype=bool)
    same[1:] = (n[1:] == n[:-1]) & (d[1:] == d[:-1])
    rise = same & b & ~np.roll(b, 1)
    fall = same & ~b & np.roll(b, 1)
    base = int(min(s.min(), _seconds_of(held["timestamp"]).min())) - 3 * 86400
    key = lambda node, sec: node.astype(np.int64) * (1 << 40) + (sec - base)  # noqa: E731
    rises, falls = np.sort(key(n[rise], s[rise])), np.sort(key(n[fall], s[fall]))
    # Job edges on nodes with telemetry, inside the span the telemetry covers there (one per job, node, time).
    j_node = _codes(held["resource_id"], nodes)
    j_start = _seconds_of(held["timestamp"])
    j_end = j_start + np.rint(held["duration"].to_numpy(dtype=np.float64)).astype(np.int64)
    first = np.full(len(nodes), np.iinfo(np.int64).max)
    last = np.full(len(nodes), np.iinfo(np.int64).min)
    np.minimum.at(first, n, s)
    np.maximum.at(last, n, s)
    starts = np.unique(np.stack([j_node, j_start]), axis=1)
    ends = np.unique(np.stack([j_node, j_end]), axis=1)
    spacing = np.diff(s)[same[1:]]
    spacing = float(np.median(spacing[spacing > 0])) if (spacing > 0).any() else 60.0
    tol = int(tolerance if tolerance is not None else min(max(2 * spacing, 300.0), 900.0))

    def meet(edges: np.ndarray, tel: np.ndarray, shift: int) -> tuple[int, int, int]:
        """(edges meeting a telemetry edge, edges inside the node's telemetry, their total distance)."""
        node, sec = edges[0], edges[1] + shift
        inside = (sec >= first[node] - tol) & (sec <= last[node] + tol)
        if not inside.any() or not len(tel):
            return 0, int(inside.sum()), 0
        q = key(node[inside], sec[inside])
        j = np.searchsorted(tel, q)
        after = np.abs(tel[np.minimum(j, len(tel) - 1)] - q)
        before = np.abs(q - tel[np.maximum(j - 1, 0)])
        distance = np.minimum(after, before)
        hit = distance <= tol
        return int(hit.sum()), int(inside.sum()), int(distance[hit].sum())

    def score(shift: int) -> tuple[int, int, int]:
        a, na, da = meet(starts, rises, shift)
        c, nc, dc = meet(ends, falls, shift)
        return a + c, na + nc, da + dc

    at = pd.Timestamp(int(np.median(j_start)), unit="s", tz="UTC")
    given = _zone_offset(tz, at)
    g = 0 if given is None else given
    shifts = [(g - o) * 60 for o in range(-12 * 60, 14 * 60 + 1, 15)]
    if 0 not in shifts:
        shifts.append(0)
    scores = {sh: score(sh) for sh in shifts}
    # The best: most edges met, then the nearest, then a whole-hour offset, then the least shift.
    best = max(shifts, key=lambda sh: (scores[sh][0], -scores[sh][2], sh % 3600 == 0, -abs(sh)))
    matched_given, matched_best, edges = scores[0][0], scores[best][0], scores[best][1]
    if max(scores[0][1], edges) == 0:
        return None
    edges = max(edges, scores[0][1])
    clear = best != 0 and matched_best >= 0.5 * edges and matched_best - matched_given >= max(3, 0.25 * edges)
    out = {"edges": edges, "matched_given": matched_given, "matched_best": matched_best, "shift_seconds": best,
           "tolerance_seconds": tol, "clear": bool(clear), "tz": tz, "given_offset": given,
           "best_offset": None if given is None else given - best // 60}
    out["zones"] = _zones_with(out["best_offset"], at) if out["best_offset"] is not None else []
    return out


# ---- the join -----------------------------------------------------------------------------


def join_jobs(telemetry: pd.DataFrame, jobs: Any, workloads: pd.DataFrame | None = None, *,
              exact_devices: bool | None = None, job_ids: Any = None, tz: str | None = None, costs: Any = None,
              inventory: Any = None, interval: float | None = None, check_times: bool = True) -> JobJoin:
    """Slurm jobs joined to their GPUs' telemetry (see the module's documentation).

    Args:
        telemetry: usage samples of DCGM (with ``hpc_job`` read as the
            consumer, or none), nvidia-smi, or gpucost's own table.
        jobs: what :func:`gpucost.read_slurm_sacct` returned (its usage and
            workloads are taken), or job samples (consumer = job id).
        workloads: the jobs' labels, when ``jobs`` is a usage table.
        exact_devices: whether the jobs' GPU indices are Slurm's own (``IDX``);
            default: from the sacct reader's diagnostics (no index assigned
            in start order).
        job_ids: raw id -> job id, as a mapping or a ``raw, consumer`` table
            (the mapping files hold ``SLURM_JOB_ID``; sacct's JobID of an
            array task is ``123_4``).
        tz: the time zone the sacct times were read in (for the time check's
            message).
        costs, inventory: the bill and its GPUs: the time check then prices
            what would move at the offset that fits.
        interval: seconds a telemetry sample stands for when it has no
            ``duration`` (default 60).
        check_times: compare job starts and ends with the GPUs' busy/free edges.

    Returns:
        A :class:`JobJoin`; its ``report`` has ``jobs`` (per job: GPU-hours
        held, measured, assumed; ``placement``: what placed it, one of
        :data:`PLACEMENTS`), ``mismatches`` (telemetry of a job on a GPU sacct does not give
        it), ``time_fit`` (:func:`fit_job_times`), counts, and ``problems``.
    """
    diagnostics: dict = {}
    if hasattr(jobs, "usage") and hasattr(jobs, "workloads"):
        diagnostics = dict(getattr(jobs, "diagnostics", {}) or {})
        workloads = jobs.workloads if workloads is None else workloads
        jobs = jobs.usage
    elif isinstance(jobs, pd.DataFrame):
        diagnostics = dict(jobs.attrs.get("diagnostics", {}) or {})
    if exact_devices is None:
        in_order = _sum_key(diagnostics, "gpus_assigned_in_order")
        exact_devices = in_order == 0 and bool(diagnostics) and len(jobs) > 0
    telemetry = _map_job_ids(telemetry, job_ids)
    interval_ns = int(round(float(interval if interval is not None else 60.0) * 1e9))
    raw = _join(telemetry, jobs, exact=exact_devices, interval_ns=interval_ns)
    usage = _usage(raw, telemetry, jobs)
    table = _jobs_table(raw, exact_devices, telemetry, _indexed_jobs(jobs))
    mismatches = _mismatches(raw, jobs, table)
    report: dict[str, Any] = {
        "jobs": table, "mismatches": mismatches, "exact_devices": bool(exact_devices),
        "diagnostics": dict(raw["diagnostics"]), "time_fit": None, "problems": [],
    }
    in_sacct = table[table["in_sacct"]]
    report.update({
        "jobs_total": int(len(in_sacct)),
        "jobs_measured": int((in_sacct["utilization_source"] == "measured").sum()),
        "jobs_mixed": int((in_sacct["utilization_source"] == "mixed").sum()),
        "jobs_assumed": int((in_sacct["utilization_source"] == "assumed").sum()),
        "placements": {p: int((in_sacct["placement"] == p).sum()) for p in PLACEMENTS},
        "jobs_by_label": int(in_sacct["placement"].isin(LABEL_SOURCES).sum()),
        "jobs_by_index": int(in_sacct["placement"].isin(("sacct IDX", "scontrol IDX")).sum()),
        "jobs_in_start_order": int((in_sacct["placement"] == "start order").sum()),
        "jobs_not_in_sacct": int((~table["in_sacct"]).sum()),
        "measured_gpu_hours": float(in_sacct["measured_gpu_hours"].sum()),
        "assumed_gpu_hours": float(in_sacct["assumed_gpu_hours"].sum()),
        "unplaced_gpu_hours": float(table.loc[~table["in_sacct"], "measured_gpu_hours"].sum()),
    })
    if len(mismatches):
        report["problems"].append(_mismatch_problem(mismatches))
    if check_times:
        fit = fit_job_times(telemetry, jobs, tz)
        report["time_fit"] = fit
        if fit is not None and fit["clear"]:
            moved, hours = _moved(telemetry, jobs, fit["shift_seconds"], exact_devices, interval_ns, usage, costs,
                                  inventory)
            fit["cost_moved"], fit["gpu_hours_moved"] = moved, hours
            report["problems"].append(_time_problem(fit))
    usage.attrs["slurm_join"] = report
    if "slurm" in getattr(jobs, "attrs", {}):  # the sacct reader's report (rows read twice, jobs' GPUs unknown)
        usage.attrs["slurm"] = jobs.attrs["slurm"]
    return JobJoin(usage, _label_sources(workloads, table), report)


def _indexed_jobs(jobs: Any) -> dict[str, str] | None:
    """JobID -> "sacct IDX" / "scontrol IDX" for the jobs whose GPU indices
    the sacct reader read (``attrs["slurm"]``, one report or one per
    source); None when the jobs did not come from it."""
    attrs = getattr(jobs, "attrs", None)
    report = attrs.get("slurm") if isinstance(attrs, dict) else None
    if not isinstance(report, dict):
        return None
    reports = [report] if "jobs_idx_sacct" in report else [r for r in report.values() if isinstance(r, dict)]
    if not reports or not all("jobs_idx_sacct" in r for r in reports):
        return None
    out: dict[str, str] = {}
    for r in reports:
        out.update({job: "sacct IDX" for job in r["jobs_idx_sacct"]})
        out.update({job: "scontrol IDX" for job in r.get("jobs_idx_scontrol", [])})
    return out


def _sum_key(diagnostics: Mapping, key: str) -> int:
    """A count from a reader's diagnostics, or summed over per-file ones."""
    if key in diagnostics:
        return int(diagnostics[key] or 0)
    return sum(int(v.get(key, 0) or 0) for v in diagnostics.values() if isinstance(v, Mapping))


def _label_sources(workloads: pd.DataFrame | None, table: pd.DataFrame) -> pd.DataFrame | None:
    """The jobs' ``utilization_source``: measured, mixed or assumed, per job."""
    if workloads is None:
        return None
    out = workloads.copy()
    index = pd.Index(table["consumer"].astype(str).to_numpy(dtype=object))
    found = index.get_indexer(out["consumer"].astype(str).to_numpy(dtype=object))
    values = np.asarray(table["utilization_source"].to_numpy(), dtype=object)
    before = (out["utilization_source"].to_numpy(dtype=object) if "utilization_source" in out.columns
              else np.full(len(out), "measured", dtype=object))
    out["utilization_source"] = pd.Series(np.where(found >= 0, values[np.maximum(found, 0)] if len(values) else None,
                                                   before), index=out.index, dtype=object)
    return out


def _moved(telemetry: pd.DataFrame, jobs: pd.DataFrame, shift: int, exact: bool, interval_ns: int,
           usage: pd.DataFrame, costs: Any, inventory: Any) -> tuple[float | None, float]:
    """Money (when costs and inventory are given) and GPU-hours that change
    hands between the join as read and at ``shift`` seconds: half the sum
    of every consumer's change (idle included)."""
    other = _usage(_join(telemetry, jobs, exact=exact, interval_ns=interval_ns, shift_ns=shift * 10**9),
                   telemetry, jobs)
    held = lambda u: (u["share"] * u["duration"]).groupby(u["consumer"].astype(str).to_numpy()).sum() / 3600  # noqa
    a, b = held(usage), held(other)
    hours = float((a.sub(b, fill_value=0.0)).abs().sum() / 2)
    if costs is None or inventory is None:
        return None, hours
    import gpucost
    # gpucost's own allocations are quiet: the join rule runs at the user's entry only.
    x = gpucost.allocate(costs, usage, inventory, by=["consumer"]).set_index("consumer")["cost"]
    y = gpucost.allocate(costs, other, inventory, by=["consumer"]).set_index("consumer")["cost"]
    return float(x.sub(y, fill_value=0.0).abs().sum() / 2), hours


def _money(amount: float | None) -> str:
    from gpucost.money import format_money
    return "" if amount is None else format_money(amount)


def _mismatch_problem(m: pd.DataFrame) -> dict:
    shown = []
    for _, row in m.head(_SHOWN).iterrows():
        shown.append(f"job {row['consumer']} on GPU {row['device']} of '{row['resource_id']}' "
                     f"({_span(row['first'], row['last'])}, {row['gpu_hours']:,.1f} GPU-hours; {row['sacct']})")
    more = f" and {len(m) - _SHOWN} more" if len(m) > _SHOWN else ""
    hours = float(m["gpu_hours"].sum())
    text = (f"the telemetry names {m['consumer'].nunique()} job(s) on GPUs sacct does not give them: "
            f"{'; '.join(shown)}{more}. Their {hours:,.1f} GPU-hours are charged as the telemetry says")
    fix = ("check that every node's Slurm prolog writes, and its epilog removes, the GPU -> job mapping files "
           "(docs/telemetry.md), and that the sacct export covers the telemetry's range")
    return {"kind": "job_gpu_mismatch", "amount": 0.0, "text": text,
            "fix": {"python": fix + " (read_slurm_sacct's start/end)", "cli": fix + " (--sacct; start/end)"}}


def _time_problem(fit: dict) -> dict:
    best = fit["best_offset"]
    fits = _offset_text(best) if best is not None else f"{fit['shift_seconds'] / 3600:+g} h from the times as read"
    zones = f" ({', '.join(fit['zones'][:2])})" if fit.get("zones") else ""
    given = (f"{_offset_text(fit['given_offset'])} as given (time zone '{fit['tz']}')"
             if fit["given_offset"] is not None else "the times as read")
    money = _money(fit.get("cost_moved"))
    moved = (f"{money} ({fit['gpu_hours_moved']:,.1f} GPU-hours)" if money
             else f"{fit['gpu_hours_moved']:,.1f} GPU-hours")
    text = (f"sacct times fit {fits}{zones}, not {given}: {fit['matched_best']} of {fit['edges']} job starts "
            f"and ends meet a busy/free edge of their GPUs at {fits}, {fit['matched_given']} as read; "
            f"{moved} would move between jobs and idle")
    zone = fit["zones"][0] if fit.get("zones") else "the Slurm controller's zone"
    return {"kind": "job_times_offset", "amount": float(fit.get("cost_moved") or 0.0), "text": text,
            "fix": {"python": f"read sacct in the controller's time zone (read_slurm_sacct(path, tz=\"{zone}\"))",
                    "cli": f"set timezone = \"{zone}\" in [sources] (--timezone {zone}), the Slurm controller's "
                           "time zone"}}


def problems(usage: Any, caller: str = "python") -> list[tuple[str, str, float]]:
    """The join's problems as (kind, message with its fix, amount), in the
    words of ``caller`` ("python" or "cli"); none when ``usage`` did not
    come from :func:`join_jobs` (the join report's own reading of them)."""
    from gpucost.join import slurm_join_problems
    return slurm_join_problems(usage, caller)


def report_lines(usage: Any) -> list[str]:
    """What ``gpucost check`` prints about the Slurm join (empty when the
    usage did not come from :func:`join_jobs`)."""
    attrs = getattr(usage, "attrs", None)
    r = attrs.get("slurm_join") if isinstance(attrs, dict) else None
    if not isinstance(r, dict):
        return []
    lines = ["slurm join"]
    measured = r["jobs_measured"] + r["jobs_mixed"]
    placed = r.get("placements") or {}
    by = ", ".join(f"{placed[p]:,} by {p}" for p in (*LABEL_SOURCES, "sacct IDX", "scontrol IDX") if placed.get(p))
    lines.append(f"  jobs with telemetry:  {measured:,} of {r['jobs_total']:,} ({r['measured_gpu_hours']:,.1f} "
                 f"GPU-hours measured; {by + ', ' if by else ''}{r['jobs_in_start_order']:,} placed in start order)")
    lines.append(f"  assumed busy:         {r['jobs_assumed'] + r['jobs_mixed']:,} jobs "
                 f"({r['assumed_gpu_hours']:,.1f} GPU-hours without telemetry, utilisation assumed; "
                 f"{r['jobs_mixed']:,} of them partly measured)")
    lines.append(f"  unplaced:             {r['jobs_not_in_sacct']:,} jobs the telemetry names that sacct does not "
                 f"list ({r['unplaced_gpu_hours']:,.1f} GPU-hours), {len(r['mismatches']):,} job/GPU pairs sacct "
                 "does not give")
    if r["jobs_in_start_order"]:
        lines.append("  placed in start order: sacct and scontrol give no GPU index (IDX) and the telemetry no job "
                     "label (hpc_job, jobstats, CEEMS) on their nodes: which job held which GPU there is a guess")
    fit = r.get("time_fit")
    if fit is not None:
        best = _offset_text(fit["best_offset"]) if fit.get("best_offset") is not None else None
        lines.append(f"  times: {fit['matched_given']} of {fit['edges']} job starts/ends meet a GPU busy/free edge "
                     "as read" + (f"; {fit['matched_best']} at {best}" if fit["clear"] and best else ""))
    return lines
