"""The ``gpucost`` command (docs/cli.md).

    gpucost demo                         the demo month: showback table + HTML report
    gpucost check    --config gpucost.toml   what the inputs hold and how they join (exit 0, 1 warnings, 2 errors)
    gpucost check    --config gpucost.toml --plan   the plan of sources, nothing read
    gpucost allocate --bill B --telemetry T --pods P [--format csv|json|xlsx|table] [--decimals N|raw] [--sql URL]
    gpucost report   --config gpucost.toml --output showback.html [--xlsx showback.xlsx]
    gpucost idle | spot | advise | budget | buy-vs-rent   the analyses
    gpucost catalog  [--provider aws] [--gpu A100]
    gpucost export-metrics --listen 127.0.0.1:9108 | --textfile /var/lib/node_exporter/gpucost.prom

Every subcommand reads one TOML config (``--config``) and takes every one of
its keys as a flag too (flags win). ``--demo`` runs any subcommand on the
built-in demo month.

Exit codes: 0 success; 2 bad input or usage (one line on stderr naming the
file, line or row, and column); 1 internal error or a capability this build
lacks. ``--debug`` prints the full trace instead.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

import gpucost
from gpucost.attribution import SPLITS
from gpucost.model import Purchase
from gpucost import money, sheets
from gpucost.config import Config, Tables, attribute, load_config
from gpucost.join import join_report
from gpucost.plan import (USAGE_KEYS, PlanError, _give_back_freed_memory, _map_large_blocks, load_tables, plan_sources,
                          read_table, streams)
from gpucost.allocation import resolve_threads
from gpucost.chunks import close_items, read_ahead, relocate_error
from gpucost.stream import add_chunks
from gpucost.frames import for_export

__all__ = ["main", "build_parser", "format_money_table", "EXIT_OK", "EXIT_ERROR", "EXIT_BAD_INPUT"]

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT = 0, 1, 2
DEMO_TODAY = "2026-03-20"  # the demo's budgets are looked at mid-month, so the forecast has work to do
_NAMES = {"cost": "cost $", "own_cost": "own $", "shared_cost": "shared $", "gpu_cost": "GPU $",
          "tagged_cost": "tagged $", "unattributed_cost": "unattributed $", "idle_cost": "idle $",
          "list_cost": "list $", "gpu_hours": "GPU-h",
          "effective_gpu_hours": "effective GPU-h", "mem_gib_hours": "GiB-h",
          "cost_per_effective_gpu_hour": "$ / effective GPU-h", "energy_kwh": "kWh",
          "energy_estimated_kwh": "estimated kWh", "facility_energy_kwh": "facility kWh", "co2e_kg": "kg CO2e",
          "embodied_co2e_kg": "embodied kg CO2e"}
# Quantities shown with one decimal and totalled, like hours (docs/semantics.md, 9).
_QUANTITIES = ("gpu_hours", "effective_gpu_hours", "mem_gib_hours", "energy_kwh", "energy_estimated_kwh",
               "facility_energy_kwh", "co2e_kg", "embodied_co2e_kg")


_BUDGETS_HELP = "budgets CSV: key, value, amount[, thresholds] (key: a label column, e.g. team)"


class UsageError(Exception):
    """Bad usage of the command (exit 2)."""


# ---- terminal tables ----------------------------------------------------------------

def format_money_table(frame: pd.DataFrame, money: Sequence[str] = (), hours: Sequence[str] = (),
                       total_columns: Sequence[str] = (), total_label: str = "TOTAL", decimals: int = 2,
                       total_by: str | None = None) -> str:
    """A terminal table: money with thousands separators and `decimals`
    (the currency's minor unit), hours with one decimal, NaN as '-', and a
    total row over `total_columns` when given (one per `total_by` value,
    e.g. per currency, when that column has several)."""
    frame = frame.copy()
    if total_columns and len(frame):
        groups = [(None, frame)] if total_by is None or frame[total_by].nunique() < 2 \
            else list(frame.groupby(total_by, sort=True))
        totals = []
        for key, part in groups:
            total = {c: part[c].sum() for c in total_columns}
            total[frame.columns[0]] = total_label if key is None else f"{total_label} {key}"
            totals.append(total)
        frame = pd.concat([frame, pd.DataFrame(totals)], ignore_index=True)
    formatters = {c: (lambda v: "-" if pd.isna(v) else f"{v + 0.0:,.{decimals}f}") for c in money}
    formatters |= {c: (lambda v: "-" if pd.isna(v) else f"{v:,.1f}") for c in hours}
    return frame.to_string(index=False, formatters=formatters, na_rep="-")


def allocation_table(result: pd.DataFrame, total: bool = True, decimals: int = 2) -> str:
    """An allocation result as a readable terminal table (money rounded by
    the caller: :func:`gpucost.money.book`, so the rows add up to the total)."""
    metrics = [c for c in _NAMES if c in result.columns]
    keys = [c for c in result.columns if c not in _NAMES]
    renamed = result[keys + metrics].rename(columns=_NAMES)
    money = [_NAMES[c] for c in ("cost", "own_cost", "shared_cost", "gpu_cost", "tagged_cost", "unattributed_cost",
                                 "idle_cost", "list_cost", "cost_per_effective_gpu_hour") if c in metrics]
    hours = [_NAMES[c] for c in _QUANTITIES if c in metrics]
    totals = [_NAMES[c] for c in ("cost", "own_cost", "shared_cost", "gpu_cost", "tagged_cost", "unattributed_cost",
                                  "idle_cost", "list_cost", *_QUANTITIES) if c in metrics] if total else ()
    for k in keys:
        if pd.api.types.is_datetime64_any_dtype(renamed[k]):
            renamed[k] = renamed[k].dt.strftime("%Y-%m-%d %H:%M").str.replace(" 00:00", "", regex=False)
        else:
            renamed[k] = renamed[k].astype(str)
    return format_money_table(renamed, money=money, hours=hours, total_columns=totals, decimals=decimals,
                              total_by="currency" if "currency" in renamed.columns else None)


def frame_table(frame: pd.DataFrame, max_rows: int = 40, decimals: int = 2) -> str:
    """Any analysis result as a terminal table (money-looking columns with cents)."""
    shown = frame.head(max_rows).copy()
    money = [c for c in shown.columns if pd.api.types.is_float_dtype(shown[c]) and any(
        w in c for w in ("cost", "dollar", "saving", "waste", "amount", "spend", "forecast"))]
    text = format_money_table(shown, money=money, hours=[c for c in shown.columns if c.endswith("hours")
                                                         and pd.api.types.is_float_dtype(shown[c])],
                              decimals=decimals)
    if len(frame) > max_rows:
        text += f"\n... {len(frame) - max_rows} more rows (--format csv for all)"
    return text


# ---- output ----------------------------------------------------------------------

def _print_decimals(frame: pd.DataFrame, booked: pd.DataFrame, currency, decimals) -> dict:
    """Column -> decimals (one, or one per row) to write the booked columns
    with, so 12.30 stays 12.30 in a CSV; nothing for raw output."""
    if money.parse_decimals(decimals) == "raw":
        return {}
    codes = money.frame_currency(frame, currency)
    chosen = money.parse_decimals(decimals)
    if isinstance(codes, str):
        dec = chosen if isinstance(chosen, int) else money.minor_unit(codes)
    else:
        dec = np.full(len(frame), chosen) if isinstance(chosen, int) else \
            np.array([money.minor_unit(c) for c in codes], dtype=np.int64)
    out = {}
    for c, kind in money.column_kinds(frame).items():
        out[c] = {"money": dec, "rate": np.asarray(dec) + 2, "hours": money.HOURS_DECIMALS,
                  "ratio": money.RATIO_DECIMALS}[kind]
    return out


def write_frame(frame: pd.DataFrame, fmt: str, output: str | None, *, decimals=None, currency: str | None = None,
                raw_csv: bool = False) -> None:
    """Writes a result as CSV, JSON, XLSX, Parquet or a table, to a file
    (atomically) or stdout. Money is rounded to the currency's minor unit
    (``decimals``: None, an integer or "raw"), an allocation's rows by
    largest remainder so they add up to its total (docs/semantics.md);
    Parquet keeps full precision unless decimals are chosen. CSV text
    cells a spreadsheet would run are neutralised unless ``raw_csv``."""
    from gpucost.demo import atomic_write
    additive = "cost" in frame.columns and "gpu_hours" in frame.columns
    if fmt == "parquet" and decimals is None:
        decimals = "raw"
    booked = money.book(frame, decimals=decimals, currency=currency, additive=additive)
    if fmt == "table":
        dec = money.money_decimals(frame, currency, None if money.parse_decimals(decimals) == "raw" else decimals)
        text = allocation_table(booked, decimals=dec) if additive else frame_table(booked, decimals=dec)
        data = (text + "\n").encode()
    elif fmt == "csv":
        data = sheets.to_csv_bytes(booked, decimals_of=_print_decimals(frame, booked, currency, decimals),
                                   raw=raw_csv)
    elif fmt == "json":
        data = (booked.to_json(orient="records", date_format="iso", indent=1) + "\n").encode()
    elif fmt == "xlsx":
        if not output:
            raise UsageError("--format xlsx needs --output FILE")
        sheets.write_xlsx(frame, output, currency=currency, decimals=decimals)
        return
    elif fmt == "parquet":
        if not output:
            raise UsageError("--format parquet needs --output FILE")
        atomic_write(output, lambda f: for_export(booked).to_parquet(f, index=False))
        return
    else:  # pragma: no cover - argparse checks choices
        raise UsageError(f"unknown format {fmt!r}")
    if output:
        atomic_write(output, lambda f: f.write(data))
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


# ---- arguments ---------------------------------------------------------------------

def _add_sources(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sources (also [sources] in the config file)")
    g.add_argument("--demo", action="store_true", default=None, help="use the built-in demo month (March 2026)")
    g.add_argument("--bill", metavar="PATH", nargs="+",
                   help="billing export: FOCUS, AWS CUR (legacy or 2.0), GCP or Azure (CSV, gzip, zstd or Parquet, "
                        "found from the bytes); several parts, globs, a directory or a CUR *-Manifest.json")
    g.add_argument("--bill-format", choices=("auto", "focus", "cur", "gcp", "azure"), help="default: from the header")
    g.add_argument("--bill-tz", help="time zone (IANA) of bill timestamps written without one (default UTC)")
    g.add_argument("--dataset", dest="bill_dataset", choices=("auto", "actual", "amortized"),
                   help="which cost dataset the bill is (Azure exports both): default auto, from its content")
    g.add_argument("--costs", metavar="PATH", help="gpucost cost lines table (CSV or Parquet) instead of a bill")
    g.add_argument("--invoice", metavar="PATH", nargs="+",
                   help="a GPU cloud's rate-card invoice (CSV by the GPU- or instance-hour: node, period, quantity, "
                        "rate, amount, currency), beside the bill or alone; column names in [sources.invoice]")
    g.add_argument("--invoice-unit", choices=("gpu_hour", "instance_hour"),
                   help="the invoice's quantity unit where it has no unit column (default: from the column's name)")
    g.add_argument("--telemetry", metavar="PATH", nargs="+",
                   help="saved Prometheus query_range (or query) answers of DCGM exporter metrics (globs allowed)")
    g.add_argument("--dcgm-text", metavar="PATH", nargs="+",
                   help="dcgm-exporter scrapes (curl node:9400/metrics): .prom files or directories; each file's "
                        "instant from its own timestamps, else its name, else its mtime")
    g.add_argument("--nvidia-smi", metavar="PATH", nargs="+",
                   help="nvidia-smi --query-gpu CSV logs (or dmon/pmon -o DT logs), one per host "
                        "(host = file name up to its first dot)")
    g.add_argument("--nvidia-smi-apps", metavar="PATH", nargs="+",
                   help="nvidia-smi --query-compute-apps logs (pmon logs beside dmon logs), paired with the GPU "
                        "log of the same host")
    g.add_argument("--pid-jobs", metavar="PATH", help="pid, job[, host] table naming the processes' workloads")
    g.add_argument("--sacct", metavar="PATH", nargs="+",
                   help="Slurm accounting: sacct --parsable2 -o JobID,User,Account,Submit,Start,End,State,"
                        "NodeList,AllocTRES")
    g.add_argument("--scontrol", metavar="PATH", nargs="+",
                   help="scontrol show job -d output: the GPU indices (IDX) of jobs whose sacct rows have none")
    g.add_argument("--jobstats", metavar="PATH", nargs="+",
                   help="Princeton jobstats GPU exporter scrapes or saved answers (nvidia_gpu_duty_cycle, "
                        "nvidia_gpu_jobId, ...): telemetry whose samples name the Slurm job")
    g.add_argument("--ceems", metavar="PATH", nargs="+",
                   help="CEEMS exporter scrapes or saved answers of ceems_compute_unit_gpu_index_flag: the GPU -> "
                        "Slurm job mapping, applied to the DCGM telemetry")
    g.add_argument("--hosts", metavar="PATH",
                   help="host, resource_id[, tz, gpus] table: nvidia-smi hosts, Slurm nodes and plain DCGM hosts -> "
                        "bill ids (gpus: a Slurm node's GPU count)")
    g.add_argument("--node-events", metavar="PATH", nargs="+",
                   help="Slurm node events (sacctmgr show event -P) or node, start, end[, reason] tables: down time")
    g.add_argument("--timezone", metavar="TZ", help="time zone of nvidia-smi logs and sacct times (default UTC)")
    g.add_argument("--keep-unknown-nodes", action="store_true", default=None,
                   help="DCGM series of a node in no nodes/hosts table keep the node name as resource id")
    g.add_argument("--prometheus", metavar="URL", help="a Prometheus server to query for DCGM metrics")
    g.add_argument("--start", help="first instant to query (with --prometheus), or of the sacct accounting range "
                                   "(GPU time no job held is idle), e.g. 2026-03-01")
    g.add_argument("--end", help="end of the query or accounting range, exclusive")
    g.add_argument("--step", type=float, help="seconds between telemetry points (live queries: default 60; saved answers: default their own "
                        "spacing, and a --step more than 2x away from it is an error)")
    g.add_argument("--usage", metavar="PATH", help="gpucost usage samples table (CSV or Parquet)")
    g.add_argument("--pods", metavar="PATH", nargs="+",
                   help="kubectl get pods -A -o json snapshots (workload labels; several are merged)")
    g.add_argument("--pod-labels", metavar="PATH", nargs="+",
                   help="saved kube-state-metrics kube_pod_labels / kube_pod_info answers over the whole range, "
                        "or 'prometheus' to query --prometheus (pods keep their labels after they end)")
    g.add_argument("--nodes", metavar="PATH", nargs="+",
                   help="kubectl get nodes -o json (node -> instance id), or 'prometheus' for kube-state-metrics' "
                        "kube_node_info from --prometheus")
    g.add_argument("--workloads", metavar="PATH", help="gpucost workloads table: consumer + label columns")
    g.add_argument("--inventory", metavar="PATH",
                   help="resource_id, device, mem_capacity (default: from the bill's instance types)")
    g.add_argument("--label", metavar="COLUMN=KEY", action="append", default=[],
                   help="map a pod label key to a result column, e.g. team=acme.io/team (repeatable)")
    g.add_argument("--namespace-label", metavar="NS:COLUMN=VALUE", action="append", default=[],
                   help="label of the pods of a namespace that lack it, e.g. ml:team=research (repeatable)")
    a = p.add_argument_group("attribution (also [attribution] in the config file)")
    a.add_argument("--tag", metavar="KEY", action="append", default=None,
                   help="charge unattributed lines whose resource carries tag KEY to the group it names "
                        "(repeatable: keys tried in order)")
    a.add_argument("--share", metavar="COLUMN=VALUE", action="append", default=None,
                   help="shared cost lines (all conditions must match; a column repeated is any of its values), "
                        "spread over the groups")
    a.add_argument("--share-split", choices=SPLITS,
                   help="shared lines by GPU cost (weighted, the default), GPU-hours held or used, or evenly")
    a.add_argument("--attribute-by", metavar="COLUMN", help="the group column tags name (default: the first --by)")

def _add_policy(p: argparse.ArgumentParser, by: str | None = "team") -> None:
    g = p.add_argument_group("policy (also [policy] in the config file)")
    g.add_argument("--basis", choices=("allocated", "used", "blended"), help="how a line is split (default allocated)")
    g.add_argument("--idle", choices=("keep", "share"), help="idle cost on its own row (keep) or shared (share)")
    g.add_argument("--alpha", type=float, help="blended: weight of GPU time against memory (default 0.5)")
    g.add_argument("--interval", type=float, help="seconds a sample stands for when it has no duration")
    g.add_argument("--threads", type=int, metavar="N", help="engine threads (default 0: one per core this process may "
                                                            "use, CPU affinity and cgroup limit honoured)")
    e = p.add_argument_group("energy, with power in the telemetry (also [energy] in the config file)")
    e.add_argument("--pue", type=float, help="power usage effectiveness: adds facility_energy_kwh")
    e.add_argument("--carbon-intensity", metavar="G_PER_KWH|CSV",
                   help="grid gCO2e/kWh, or a CSV of start, end, g_per_kwh: adds co2e_kg")
    if by is not None:
        g.add_argument("--by", metavar="COLUMNS", help=f"comma-separated groups: consumer, resource_id, period, labels "
                                                       f"(default {by})")
        g.add_argument("--freq", choices=("h", "D", "MS"), help="period length when --by has period (default D)")


def _add_output(p: argparse.ArgumentParser, formats=("table", "csv", "json", "xlsx", "parquet")) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--format", choices=formats, default=None, help="default: table on a terminal, csv otherwise "
                                                                   "(xlsx and parquet need --output)")
    g.add_argument("--output", "-o", metavar="PATH", help="write to a file (atomically) instead of stdout")
    _add_money(g)


def _add_money(g) -> None:
    g.add_argument("--decimals", metavar="N|raw", help="money decimals: default the currency's minor unit (USD 2, "
                                                       "JPY 0), rows adding up to the total; raw: full floats")
    g.add_argument("--raw-csv", action="store_true", help="do not neutralise CSV cells a spreadsheet would run "
                                                          "(leading =, +, -, @)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpucost", description="What every GPU-hour you pay for was spent on.",
        epilog="Exit codes: 0 ok, 2 bad input or usage, 1 internal error. Run 'gpucost demo' to start.")
    parser.add_argument("--debug", action="store_true", help="print the full trace on errors")
    parser.add_argument("--version", action="version", version=f"gpucost {gpucost.__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", "-c", metavar="FILE", help="gpucost TOML config (sources, labels, policy, budgets)")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="print the full trace on errors")
    common.add_argument("--no-progress", action="store_true", help="no progress bars")
    common.add_argument("--strict", action="store_true", default=None,
                        help="turn every join warning (bill lines without telemetry, telemetry without bill lines, "
                             "...) into an error (exit 2); also strict = true in [policy]")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", parents=[common], help="the demo month: showback table, data files and HTML report",
                       description="Simulates a month of a small AWS GPU fleet (docs/demo.md), writes it as a FOCUS "
                                   "bill, a CUR 2.0 bill, Prometheus DCGM answers and kubectl JSON into --dir, "
                                   "prints the showback by team and writes the HTML report.")
    p.add_argument("--dir", default="gpucost-demo", help="where to write the files (default ./gpucost-demo)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the simulation")
    p.add_argument("--no-files", action="store_true", help="do not write the bill and telemetry files")
    p.add_argument("--no-report", action="store_true", help="do not write the HTML report")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("allocate", parents=[common], help="prorate a bill over telemetry (CSV, JSON, SQL table)",
                       description="Allocates every cost line of the bill to the workloads that held its GPUs.")
    _add_sources(p)
    _add_policy(p)
    _add_output(p, ("table", "csv", "json", "xlsx", "parquet", "focus"))
    p.add_argument("--sql", metavar="URL", help="write to a SQL table (SQLAlchemy URL): each day's rows replaced")
    p.add_argument("--table", default="gpucost_allocation", help="SQL table name (default gpucost_allocation)")
    p.add_argument("--check", action="store_true", help="print what gpucost check prints first (on stderr)")
    p.set_defaults(func=cmd_allocate)

    p = sub.add_parser("check", parents=[common], help="what the inputs hold and how they join, before allocating",
                       description="Reads every source the config names and prints each source's rows, time range, "
                                   "interval and currency; the join (billed GPU resources with and without telemetry, "
                                   "telemetry without a bill line, in money); label coverage; and one line per "
                                   "problem with the flag or key that fixes it. Exit 0 when clean, 1 with warnings, "
                                   "2 on errors.")
    _add_sources(p)
    _add_policy(p, by=None)
    p.add_argument("--plan", action="store_true",
                   help="print the plan of sources (each source's kind, files and options, and the table it feeds) "
                        "and every problem found without reading data; read nothing (exit 0, or 2 with problems)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("report", parents=[common], help="write the HTML showback report",
                       description="Writes one self-contained HTML file: spend by team and project, idle, "
                                   "efficiency, tagging gaps and the analyses this build has.")
    _add_sources(p)
    _add_policy(p, by="team,project")
    p.add_argument("--output", "-o", metavar="PATH", help="the HTML file (default gpucost-report.html)")
    p.add_argument("--title", help="report title")
    p.add_argument("--xlsx", metavar="PATH", help="also write the report's tables, one sheet each, to PATH (.xlsx)")
    p.add_argument("--budgets", metavar="PATH", help=_BUDGETS_HELP)
    p.add_argument("--today", help="the day budgets are checked on (default: the end of the data)")
    p.add_argument("--rates", metavar="PATH", help="purchase options for the advice section: instance_type, kind, "
                   "hourly, term_years")
    p.add_argument("--existing", metavar="PATH", help="commitments already bought, for the advice section "
                   "(instance_type, kind, count or hourly, rate, start, end[, convertible])")
    p.set_defaults(func=cmd_report)

    for name, function, help_text in (
            ("idle", "find_idle", "idle GPUs and the dollars they cost"),
            (Purchase.SPOT, "spot_runs", "spot training runs: every attempt, the true cost per completed run"),
            ("advise", "advise_commitments", "what reserved capacity / savings plans / spot to buy"),
            ("budget", "budget_status", "budgets: month to date, forecast, alerts"),
            ("buy-vs-rent", "buy_vs_rent", "hardware you own: its cost per GPU-hour used beside the rate of renting "
                                           "the same GPU, and the utilisation at which owning breaks even")):
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text.capitalize() + ".")
        _add_sources(p)
        _add_policy(p, by=None)
        _add_output(p, ("table", "csv", "json", "xlsx"))
        if name == "budget":
            p.add_argument("--budgets", metavar="PATH", help=_BUDGETS_HELP)
            p.add_argument("--today", help="the day to report on (default: the end of the data)")
        if name == Purchase.SPOT:
            p.add_argument("--interruptions", metavar="PATH", help="EventBridge spot interruption events (JSON lines)")
        if name == "buy-vs-rent":
            p.add_argument("--rates", metavar="PATH", help="rates of renting a GPU: gpu_model, hourly (per GPU-hour), "
                           "or instance_type, kind, hourly (default: the bill's rate-card lines, then the catalog)")
        if name == "advise":
            p.add_argument("--rates", metavar="PATH", help="purchase options: instance_type, kind, hourly, term_years")
            p.add_argument("--existing", metavar="PATH", help="commitments already bought (instance_type, kind, "
                           "count or hourly, rate, start, end[, convertible]) instead of the bill's commitment lines")
        p.set_defaults(func=cmd_analysis, analysis=function)

    p = sub.add_parser("catalog", parents=[common], help="instance types and MIG profiles gpucost knows",
                       description="The embedded catalog of GPU instance types (and MIG profiles with --mig).")
    p.add_argument("--provider", choices=("aws", "gcp", "azure"), help="only this provider")
    p.add_argument("--gpu", metavar="TEXT", help="only GPU models containing TEXT (e.g. A100)")
    p.add_argument("--mig", action="store_true", help="list MIG profiles instead")
    _add_output(p, ("table", "csv", "json", "xlsx"))
    p.set_defaults(func=cmd_catalog)

    p = sub.add_parser("export-metrics", parents=[common], help="Prometheus metrics of cost by team/project",
                       description="Serves /metrics (or writes a .prom file for node-exporter's textfile collector): "
                                   "cost, idle cost, GPU-hours, effective GPU-hours and efficiency per group.")
    _add_sources(p)
    _add_policy(p, by="team,project")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--listen", metavar="HOST:PORT", help="serve /metrics here (default 127.0.0.1:9108)")
    g.add_argument("--textfile", metavar="PATH", help="write PATH (.prom) atomically and exit")
    g.add_argument("--stdout", action="store_true", help="print the exposition text and exit")
    p.add_argument("--refresh", type=float, help="recompute at most every N seconds while serving")
    p.add_argument("--prefix", help="metric name prefix (default gpucost)")
    p.add_argument("--max-connections", type=int, default=256, help="connections served at once; more get 503 "
                                                                     "(default 256)")
    p.add_argument("--read-timeout", type=float, default=10.0,
                   help="seconds a client has to send its request and take the answer (default 10)")
    p.add_argument("--access-log", metavar="PATH", help="one line per request to PATH ('-': stderr)")
    p.set_defaults(func=cmd_export_metrics)
    return parser


# ---- configuration from file + flags -------------------------------------------------

_SOURCE_FLAGS = ("demo", "bill", "bill_format", "bill_dataset", "bill_tz", "costs", "telemetry", "prometheus",
                 "start", "end", "step", "usage", "pods", "pod_labels", "nodes", "workloads", "inventory",
                 "interruptions", "rates", "existing", "dcgm_text", "nvidia_smi", "nvidia_smi_apps", "pid_jobs",
                 "sacct", "hosts", "timezone", "keep_unknown_nodes", "node_events", "invoice")
_PATH_FLAGS = {"bill", "costs", "usage", "pods", "pod_labels", "nodes", "workloads", "inventory", "interruptions",
               "rates", "existing", "telemetry", "dcgm_text", "nvidia_smi", "nvidia_smi_apps", "pid_jobs", "sacct",
               "hosts", "node_events", "invoice"}
_DATA_FLAGS = ("bill", "costs", "telemetry", "prometheus", "usage", "dcgm_text", "nvidia_smi", "sacct", "invoice")
# Slurm jobs' GPUs from elsewhere (docs/telemetry.md): scontrol's indices, the jobstats and CEEMS exporters.
_SOURCE_FLAGS += ("scontrol", "jobstats", "ceems")
_PATH_FLAGS |= {"scontrol", "jobstats", "ceems"}
_DATA_FLAGS += ("jobstats",)


def configure(args: argparse.Namespace) -> Config:
    config = load_config(getattr(args, "config", None))
    for key in _SOURCE_FLAGS:
        value = getattr(args, key, None)
        if value is not None and getattr(args, "config", None) and key in _PATH_FLAGS:
            # Paths given as flags are relative to the working directory, not to the config file.
            value = [_absolute(v) for v in value] if isinstance(value, list) else _absolute(value)
        if key == "invoice" and value is not None and isinstance(config.sources.get(key), dict):
            config.sources[key]["path"] = value  # the flag's files, [sources.invoice]'s column names
            continue
        config.set("sources", key, value)
    if getattr(args, "invoice_unit", None):
        invoice = config.sources.get("invoice")
        if invoice is None:
            raise UsageError("--invoice-unit needs an invoice: --invoice PATH or invoice in [sources]")
        config.sources["invoice"] = {**(invoice if isinstance(invoice, dict) else {"path": invoice}),
                                     "unit": args.invoice_unit}
    given = [k for k in _DATA_FLAGS if getattr(args, k, None)]
    if getattr(args, "demo", None) and given:
        raise UsageError(f"--demo cannot be combined with --{given[0].replace('_', '-')}")
    if given and not getattr(args, "demo", None):
        config.sources.pop("demo", None)
    for item in getattr(args, "label", []) or []:
        column, sep, key = item.partition("=")
        if not sep or not column or not key or column == "namespaces":
            raise UsageError(f"--label {item!r}: expected COLUMN=KEY, e.g. team=team-id")
        config.labels[column] = key
    for item in getattr(args, "namespace_label", []) or []:
        ns, sep, rest = item.partition(":")
        column, sep2, value = rest.partition("=")
        if not (sep and sep2 and ns and column and value):
            raise UsageError(f"--namespace-label {item!r}: expected NAMESPACE:COLUMN=VALUE, e.g. ml:team=research")
        config.labels.setdefault("namespaces", {}).setdefault(ns, {})[column] = value
    for key in ("basis", "idle", "alpha", "interval", "freq", "strict", "threads"):
        config.set("policy", key, getattr(args, key, None))
    if "threads" in config.policy:  # the process's setting: every allocation of the command (main restores it)
        threads = config.policy["threads"]
        if threads < 0:
            raise UsageError(f"--threads or threads in [policy]: expected an integer >= 0 (0 = one per core), "
                             f"got {threads}")
        gpucost.set_num_threads(threads)
    if getattr(args, "by", None):
        config.policy["by"] = [b.strip() for b in args.by.split(",") if b.strip()]
    if getattr(args, "budgets", None):
        config.budgets["file"] = str(Path(args.budgets).resolve())
    if getattr(args, "today", None):
        config.budgets["today"] = args.today
    config.set("energy", "pue", getattr(args, "pue", None))
    intensity = getattr(args, "carbon_intensity", None)
    if intensity is not None:
        try:
            config.energy["carbon_intensity"] = float(intensity)
        except ValueError:
            config.energy["carbon_intensity"] = _absolute(intensity)
    config.set("attribution", "tag", getattr(args, "tag", None))
    config.set("attribution", "split", getattr(args, "share_split", None))
    config.set("attribution", "by", getattr(args, "attribute_by", None))
    if getattr(args, "share", None):
        selector: dict[str, list[str]] = {}
        for item in args.share:
            column, sep, value = item.partition("=")
            if not sep or not column:
                raise UsageError(f"--share {item!r}: expected COLUMN=VALUE, e.g. service=AmazonVPC")
            selector.setdefault(column, []).append(value)
        config.attribution["shared"] = selector
    return config


def _absolute(value: str) -> str:
    return value if value == "prometheus" else str(Path(value).absolute())


def _by(config: Config, default: Sequence[str]) -> list[str]:
    by = config.policy.get("by", list(default))
    return [by] if isinstance(by, str) else list(by)


def _policy(config: Config, tables: Tables | None = None) -> dict:
    """The allocation's keyword arguments from ``[policy]`` and ``[energy]``
    (docs/semantics.md, 9), and the down windows (``node_events``:
    docs/semantics.md, 10) when the tables have them."""
    out = {k: config.policy[k] for k in ("basis", "idle", "alpha", "interval") if k in config.policy}
    if "pue" in config.energy:
        out["pue"] = float(config.energy["pue"])
    if "carbon_intensity" in config.energy:
        out["carbon_intensity"] = carbon_intensity_table(config)
    if tables is not None and tables.downtime is not None:
        out["downtime"] = tables.downtime
    return out


def _energy_policy(config: Config) -> dict:
    """``[energy]``'s pue and carbon intensity, as allocate takes them."""
    return {k: v for k, v in _policy(config).items() if k in ("pue", "carbon_intensity")}


def carbon_intensity_table(config: Config) -> float | pd.DataFrame:
    """``carbon_intensity`` of ``[energy]``: a number, or a CSV/Parquet
    table of ``start, end, g_per_kwh`` (read as gpucost's own tables are)."""
    value = config.energy["carbon_intensity"]
    return float(value) if not isinstance(value, str) else read_table(config.path(value), "carbon_intensity")


class _Reported(Exception):
    """The problems were printed on stderr already; exit 2."""


def _check_join(result: pd.DataFrame | None, tables: Tables, config: Config, args, report=None) -> None:
    """The join report's problems on stderr, one line each, before any output:
    warnings keep exit 0; an error (nothing joined), or any problem with
    --strict, exits 2 with no result written."""
    if report is None:
        if result is None:  # an analysis: one quiet allocation tells what joined
            result = gpucost.allocate(tables.costs, tables.usage, tables.inventory, by=["resource_id"],
                                      **{k: v for k, v in _policy(config, tables).items()
                                         if k in ("interval", "downtime")})
        report = join_report(result, tables.costs, tables.usage, caller="cli", workloads=tables.workloads,
                             downtime=tables.downtime)
    strict = bool(config.policy.get("strict", False))
    failed = any(p.error for p in report.problems) or (strict and report.problems)
    for p in report.problems:
        kind = "error" if p.error or strict else "warning"
        print(f"gpucost {args.command}: {kind}: {p.message}", file=sys.stderr)
    if failed:
        raise _Reported()


def _tables(config: Config, args, *, basis: str | None = None, stream: bool = False) -> Tables:
    """The config's tables. What the readers warn about while reading (sacct
    rows read twice, jobs whose GPUs cannot be known) is said like the join
    report's problems: one ``warning:`` line each, exit 2 under --strict.
    ``basis``: readers skip the fields it does not need; ``stream``: where
    the plan streams, the telemetry is left to ``tables.stream``
    (:func:`_allocate`)."""
    with _reader_warnings(config, args):
        tables = load_tables(config, progress=not getattr(args, "no_progress", False) and sys.stderr.isatty(),
                             basis=basis, stream=stream)
    if "interval" not in config.policy and tables.stream is None:
        config.policy["interval"] = tables.interval
    return tables


#: Sample columns neither the report nor the analyses read (the readers' extra DCGM fields and labels).
_UNREAD_SAMPLE_COLUMNS = ("node", "gpu_uuid", "mig_profile", "tensor_active", "mem_copy_util", "mem_free")


def _chunked_tables(config: Config, args) -> Tables:
    """The tables of a command that looks at the samples more than once
    (report, the analyses). Where the plan streams (:func:`streams`), the
    telemetry is read a chunk at a time (a UTC day of saved answers or
    scrapes, a host's nvidia-smi log) into :class:`gpucost.UsageChunks` on
    disk, without the columns these commands never read: each use reads it
    back a chunk at a time, so the peak is a chunk and the results, not the
    month (issue 29). The interval is the stated one, else the first
    chunk's spacing, as for ``allocate``. Otherwise read whole."""
    tables = _tables(config, args, stream=True)
    if tables.stream is None:
        return tables
    stream = tables.stream
    with _reader_warnings(config, args):
        # Chunks not known to keep time order (a usage table's) are found so from their instants, or not.
        tables.usage = gpucost.UsageChunks.spill(stream, leave_out=_UNREAD_SAMPLE_COLUMNS,
                                                 ordered=True if stream.ordered_chunks else None)
    # From here each use's large buffers go back to the system when freed, not kept in glibc's arenas
    # beside the next use's (set after the read: mapping each of the read's blocks costs it 4 s of 7).
    _give_back_freed_memory()
    _map_large_blocks()
    tables.usage.attrs = stream.usage().attrs
    tables.stream = None
    if stream.interval is not None:
        tables.interval = stream.interval
    config.policy.setdefault("interval", tables.interval)
    return tables


@contextlib.contextmanager
def _reader_warnings(config: Config, args):
    """The readers' (and the analyses') JoinWarnings as ``warning:`` lines on
    stderr, each once, after the work; under --strict, exit 2."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", gpucost.JoinWarning)
        yield
    said: set[str] = set()
    for w in caught:
        if issubclass(w.category, gpucost.JoinWarning):
            message = cli_message(str(w.message))
            if message not in said:  # the same input seen by several passes (a report's allocations)
                print(f"gpucost {args.command}: warning: {message}", file=sys.stderr)
                said.add(message)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if said and config.policy.get("strict", False):
        raise _Reported()


def _allocate(config: Config, args, tables: Tables, by: list[str], freq: str | None, policy: dict,
              observe: Callable[[pd.DataFrame], None] | None = None) -> pd.DataFrame:
    """The allocation of the tables: in memory, or (``tables.stream``) each
    day of telemetry allocated as it is read, so that the month is never
    held; ``observe`` sees each day too. The interval is the stated one,
    else the first day's spacing; the tables then carry it and the merged
    reader report (``usage``) for the join report."""
    if tables.stream is None:
        try:
            return gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads, by=by,
                                    freq=freq, **policy)
        except gpucost.InvalidInputError as exc:  # a row of gpucost's own usage table: its file and line
            if tables.usage_file is None:
                raise
            raise relocate_error(exc, "usage", tables.usage_file, 0) from None
    policy = dict(policy)
    stream = tables.stream
    # The days come in time order, checked, not trusted: no record of earlier days' rows is kept. A usage
    # table's order is put on trial: the file is read again without the promise once a chunk goes back.
    on_trial = stream.can_read_again

    def start(ordered: bool) -> gpucost.Allocator:  # after the first day: its spacing is the interval unless stated
        policy.setdefault("interval", stream.interval or tables.interval)
        return gpucost.Allocator(tables.costs, tables.inventory, tables.workloads, by=by, freq=freq,
                                 ordered_chunks=ordered, **policy)

    def add(allocator: gpucost.Allocator, chunk: pd.DataFrame, rows_before: int) -> None:
        try:
            allocator.add(chunk)
        except gpucost.InvalidInputError as exc:  # a usage table's row: its file and line
            raise stream.relocate(exc) from None

    with _reader_warnings(config, args):
        # The next day read on a second thread while this one is allocated (the readers and the engine release the GIL).
        days = read_ahead(iter(stream)) if resolve_threads() > 1 else iter(stream)
        try:
            first = next(days, None)
            allocator = start(stream.ordered_chunks or on_trial)  # no telemetry at all: the allocation of no samples
            if first is not None:
                chunks = _observed(itertools.chain([first], days), observe)
                del first  # a day is held while it is allocated, not to the end
                allocator = add_chunks(allocator, chunks, add, read_again=stream.read_again if on_trial else None,
                                       unordered=lambda: start(False))
        finally:
            close_items(days)  # its files and read ahead let go now, also on an error
    tables.interval = policy["interval"]
    config.policy.setdefault("interval", tables.interval)
    tables.usage = tables.stream.usage()
    try:
        result = allocator.finish()
    except gpucost.InvalidInputError as exc:
        raise tables.stream.relocate(exc) from None
    if _memory_unread(tables.usage) and "mem_gib_hours" in result.columns:
        result["mem_gib_hours"] = np.nan  # not read, not zero (basis blended reads it)
    return result


def _observed(chunks: Iterator[pd.DataFrame], observe: Callable[[pd.DataFrame], None] | None,
              ) -> Iterator[pd.DataFrame]:
    """``chunks``, each seen by ``observe`` once allocated (not when read again)."""
    for chunk in chunks:
        yield chunk
        if observe is not None:
            observe(chunk)
        del chunk  # not held while the next one is read


def _memory_unread(usage: pd.DataFrame) -> bool:
    """Whether the reader skipped the memory series (for a basis that does not read them)."""
    from gpucost.prometheus import _MEMORY_METRICS
    skipped = usage.attrs.get("telemetry", {}).get("skipped_fields", {})
    return any(name in skipped for name in _MEMORY_METRICS)


def _format(args) -> str:
    if args.format is None and args.output and str(args.output).lower().endswith(".xlsx"):
        return "xlsx"
    return args.format or ("table" if sys.stdout.isatty() and not args.output else "csv")


def _currency(tables: Tables) -> str | None:
    """The bill's currency when it has one (results without a currency
    column are rounded in it); None: USD."""
    bill = tables.bill
    if bill is None or "currency" not in getattr(bill, "columns", ()):
        return None
    codes = pd.unique(bill["currency"].dropna().astype(str))
    return str(codes[0]) if len(codes) == 1 else None


def _write(args, frame: pd.DataFrame, tables: Tables | None) -> None:
    write_frame(frame, _format(args), args.output, decimals=args.decimals,
                currency=None if tables is None else _currency(tables), raw_csv=args.raw_csv)


# ---- subcommands --------------------------------------------------------------------

def cmd_demo(args: argparse.Namespace) -> int:
    from gpucost.demo import demo_fleet, write_demo_files
    fleet = demo_fleet(args.seed)
    out = Path(args.dir)
    tables = Tables(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, bill=fleet.bill,
                    budgets=fleet.budgets, interruptions=fleet.interruptions, rates=fleet.rates,
                    interval=fleet.interval)
    source = "simulated in memory"
    if not args.no_files:
        paths = write_demo_files(out, fleet, progress=not args.no_progress and sys.stderr.isatty())
        if all(hasattr(gpucost, name) for name in ("read_focus", "prometheus", "kubernetes")):
            # Read the files back the way a user's own would be: the bill, DCGM series and pod labels.
            tables = load_tables(load_config(paths["config"]), progress=not args.no_progress and sys.stderr.isatty())
            tables.rates = fleet.rates
            source = "read back from the FOCUS bill, Prometheus DCGM answers and kubectl JSON"
    showback = gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads, by=["team"])
    bill = float(tables.costs["cost"].sum())
    gpus = len(tables.inventory)
    print(f"gpucost demo: {fleet.resources['resource_id'].nunique()} AWS instances ({gpus} GPUs), "
          f"{fleet.start:%b %d} - {(fleet.end - pd.Timedelta(seconds=1)):%b %d, %Y}, "
          f"{len(tables.usage):,} DCGM samples, bill ${bill:,.2f} ({source})")
    print("Showback by team (idle capacity and non-GPU costs on their own rows):\n")
    table = money.book(showback, currency=_currency(tables)).sort_values("cost", ascending=False)
    print(allocation_table(table[["team", "cost", "gpu_hours", "effective_gpu_hours",
                                  "cost_per_effective_gpu_hour"]]))
    print(f"\nAllocated ${showback['cost'].sum():,.2f} of ${bill:,.2f} billed.")
    _demo_onprem(fleet)
    if not args.no_report:
        path = out / "report.html"
        gpucost.report(tables.costs, tables.usage, tables.inventory, tables.workloads, path=path,
                       title="GPU showback — demo fleet, March 2026", interval=tables.interval, bill=tables.bill,
                       budgets=tables.budgets, interruptions=tables.interruptions, rates=tables.rates,
                       today=DEMO_TODAY)
        print(f"Report: {path}")
    if not args.no_files:
        print(f"Bill and telemetry: {out}/ (FOCUS, CUR 2.0, Prometheus DCGM JSON, kubectl JSON); try\n"
              f"  gpucost allocate --config {out}/gpucost.toml --by team,project")
    return EXIT_OK


def _demo_onprem(fleet) -> None:
    """The demo's owned Slurm cluster beside the cloud fleet: its cost model's
    lines (docs/onprem.md) split by account, with energy and CO2e."""
    from gpucost.demo import ONPREM_ENERGY, demo_onprem
    onprem = demo_onprem(fleet.start, fleet.end)
    result = gpucost.allocate(onprem["costs"], onprem["usage"], onprem["inventory"], onprem["workloads"],
                              by=["account"], pue=ONPREM_ENERGY["pue"],
                              carbon_intensity=ONPREM_ENERGY["carbon_intensity"])
    total = float(onprem["costs"]["cost"].sum())
    print(f"\nOn-prem Slurm cluster beside it: 2 owned DGX H100 nodes (16 GPUs), capex, power, facility and "
          f"support by the hour, ${total:,.2f} (PUE {ONPREM_ENERGY['pue']:g}, ${ONPREM_ENERGY['tariff']:g}/kWh, "
          f"{ONPREM_ENERGY['carbon_intensity']:g} gCO2e/kWh; docs/onprem.md):\n")
    table = money.book(result).sort_values("cost", ascending=False)
    print(allocation_table(table[["account", "cost", "gpu_hours", "energy_kwh", "co2e_kg"]]))


def cmd_check(args: argparse.Namespace) -> int:
    from gpucost.check import check_tables
    config = configure(args)
    if args.plan:
        plan = plan_sources(config)
        print("\n".join(cli_message(line) for line in plan.lines()))  # problems in flags' and keys' words
        return EXIT_BAD_INPUT if plan.problems else EXIT_OK
    stated = "interval" in config.policy or "step" in config.sources
    tables = _tables(config, args, stream=True)  # where the plan streams, a day at a time, as allocate
    per_consumer = telemetry = None
    if tables.stream is not None:
        from gpucost.check import TelemetrySummary, check_policy
        telemetry = TelemetrySummary()
        policy = check_policy(tables, config.policy.get("interval"), _energy_policy(config))
        per_consumer = _allocate(config, args, tables, ["consumer"], None, policy, observe=telemetry.add)
    result = check_tables(tables, names=_source_names(config), interval=config.policy.get("interval"),
                          stated=stated, energy=_energy_policy(config), per_consumer=per_consumer,
                          telemetry=telemetry)
    print("\n".join(result.lines))
    return result.exit_code


def _source_names(config: Config) -> dict:
    """Which file each table came from, as the user named it."""
    s = config.sources
    invoice = s.get("invoice")
    names = {"bill": s.get("bill") or s.get("costs") or ("demo" if s.get("demo") else None),
             "invoice": invoice.get("path") if isinstance(invoice, dict) else invoice,
             "telemetry": s.get("prometheus") or s.get("telemetry") or s.get("usage"),
             "workloads": s.get("pods") or s.get("workloads")}
    return {k: ", ".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in names.items() if v}


def cmd_allocate(args: argparse.Namespace) -> int:
    config = configure(args)
    stated = "interval" in config.policy or "step" in config.sources
    # The allocation alone streams the telemetry a day at a time, reading only the fields its basis needs
    # (where the plan streams); --check, --sql and --format focus (an allocation per cost line) read every sample.
    whole = bool(args.check or args.sql or _format(args) == "focus")
    tables = _tables(config, args, basis=None if whole else config.policy.get("basis", "allocated"),
                     stream=not whole)
    if args.check:
        from gpucost.check import check_tables
        checked = check_tables(tables, names=_source_names(config), interval=config.policy.get("interval"),
                               stated=stated, energy=_energy_policy(config))
        print("\n".join(checked.lines), file=sys.stderr)
    by = _by(config, ["team"] if tables.workloads is not None else ["consumer"])
    policy = _policy(config, tables)
    if args.sql:
        if config.attribution.get("tag") or config.attribution.get("shared"):
            raise UsageError("--sql writes the GPU allocation day by day; [attribution] (--tag, --share) applies to "
                             "a whole allocation: run allocate without --sql for it")
        from gpucost import pipeline
        _check_join(None, tables, config, args)
        decimals = money.parse_decimals(args.decimals)  # SQL keeps full precision unless asked
        days = pd.to_datetime(tables.costs["start"], utc=True).dt.floor("D").drop_duplicates().sort_values()
        rows = 0
        for day in days:
            result = pipeline.allocate_day(day, tables.costs, tables.usage, tables.inventory, tables.workloads,
                                           by=by, **policy)
            if args.decimals is not None and decimals != "raw":  # each day's rows add up to its rounded bill
                result = money.book(result, decimals=decimals, currency=_currency(tables))
            rows += pipeline.write_day(result, args.sql, day, table=args.table)
        print(f"gpucost: wrote {rows} rows for {len(days)} days to table {args.table}", file=sys.stderr)
        return EXIT_OK
    if _format(args) == "focus":
        return _write_focus(args, config, tables, policy)
    freq = config.policy.get("freq", "D") if "period" in by else None
    result = _allocate(config, args, tables, by, freq, policy)
    _check_join(result, tables, config, args)
    result = attribute(config, tables, result, by)
    _write(args, result, tables)
    return EXIT_OK


def _write_focus(args: argparse.Namespace, config: Config, tables: Tables, policy: dict) -> int:
    """``allocate --format focus``: the bill with each split charge as its
    FOCUS 1.3 allocated charges (docs/focus.md), CSV or Parquet by the
    output's name."""
    if not args.output:
        raise UsageError("--format focus needs --output FILE (.csv or .parquet)")
    if config.attribution.get("tag") or config.attribution.get("shared"):
        raise UsageError("--format focus writes the GPU split of each charge; [attribution] (--tag, --share) "
                         "applies to a whole allocation: run allocate without --format focus for it")
    from gpucost.demo import atomic_write
    from gpucost.focus import write_focus_split
    kept = {k: v for k, v in policy.items() if k in ("basis", "alpha", "idle", "interval", "downtime")}
    suffix = ".parquet" if str(args.output).lower().endswith(".parquet") else ".csv"
    rows: list[int] = []  # streamed a batch of origin charges at a time (docs/focus.md)
    atomic_write(args.output, lambda f: rows.append(write_focus_split(
        tables.costs, tables.usage, tables.inventory, tables.workloads, path=f, suffix=suffix, **kept)))
    print(f"gpucost: wrote {args.output} ({rows[0]} FOCUS rows)", file=sys.stderr)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    config = configure(args)
    tables = _chunked_tables(config, args)
    output = args.output or config.report.get("output") or "gpucost-report.html"
    title = args.title or config.report.get("title") or "GPU showback"
    policy = _policy(config, tables)
    by = _by(config, ["team", "project"])
    attributed = bool(config.attribution.get("tag") or config.attribution.get("shared"))
    with _reader_warnings(config, args):
        report = gpucost.report(tables.costs, tables.usage, tables.inventory, tables.workloads,
                                path=None, title=title, by=by, bill=tables.bill,
                                budgets=tables.budgets, interruptions=tables.interruptions, rates=tables.rates,
                                existing=tables.existing, today=config.budgets.get("today"), **policy)
    _check_join(None, tables, config, args, report=report.join)
    if attributed:
        _attribution_section(report, config, tables, by, policy, title)
    report.save(output)
    if args.xlsx:
        sheets.write_xlsx(report.data, args.xlsx, currency=_currency(tables))
        print(f"gpucost: wrote {args.xlsx} ({len(report.data)} sheets)", file=sys.stderr)
    print(f"gpucost: wrote {output} ({len(report.sections)} sections"
          + (f"; not included: {', '.join(report.omitted)}" if report.omitted else "") + ")", file=sys.stderr)
    return EXIT_OK


def _attribution_section(report, config: Config, tables: Tables, by: list[str], policy: dict, title: str) -> None:
    """[attribution] in the report: the GPU allocation by the attribution's
    group with the tagged and shared lines moved to their groups, a section
    before "Method and reconciliation"."""
    from gpucost.report import Section, _page, html_table
    group = config.attribution.get("by") or by[0]
    allocation = gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads, by=[group],
                                  **policy)
    table = attribute(config, tables, allocation, [group])
    money = [c for c in ("cost", "gpu_cost", "tagged_cost", "own_cost", "shared_cost", "unattributed_cost")
             if c in table.columns]
    shown = table[[group, *money, "gpu_hours"]].sort_values("cost", ascending=False, ignore_index=True)
    section = Section("attribution", f"Tagged and shared costs by {group}",
                      "Costs outside the GPUs charged to the group their resource's tag names, and shared lines "
                      "spread over the groups ([attribution] in the config); the total is still the bill's.")
    section.body.append(html_table(shown, key="attribution", money=money, hours=["gpu_hours"],
                                   total=[*money, "gpu_hours"]))
    report.sections.insert(len(report.sections) - 1, section)
    report.data["attribution"] = shown
    start = pd.to_datetime(tables.costs["start"], utc=True).min()
    end = pd.to_datetime(tables.costs["end"], utc=True).max()
    report.html = _page(title, start, end, report.data["kpis"].iloc[0].to_dict(), report.sections, "USD")


def cmd_analysis(args: argparse.Namespace) -> int:
    from gpucost.report import analysis
    if getattr(gpucost, args.analysis, None) is None:  # before reading any input
        raise gpucost.Error(f"this build of gpucost has no gpucost.{args.analysis} (an analysis not merged yet)")
    config = configure(args)
    tables = _chunked_tables(config, args)
    key = {"find_idle": "idle", "spot_runs": Purchase.SPOT, "advise_commitments": "advice", "budget_status": "budgets",
           "buy_vs_rent": "buy_vs_rent"}[args.analysis]
    if key == "budgets" and tables.budgets is None:
        raise UsageError("gpucost budget needs budgets: --budgets FILE or [budgets] file in the config")
    if key == "advice" and tables.rates is None:
        raise UsageError("gpucost advise needs purchase options: --rates FILE or rates in [sources]")
    _check_join(None, tables, config, args)
    _give_back_freed_memory()  # the quiet allocation's buffers, before the analysis' own
    with _reader_warnings(config, args):
        result = analysis(key, tables.costs, tables.usage, tables.inventory, tables.workloads, bill=tables.bill,
                          budgets=tables.budgets, interruptions=tables.interruptions, rates=tables.rates,
                          existing=tables.existing, today=config.budgets.get("today"),
                          by=_by(config, ["team", "project"]), **_policy(config, tables))
    _write(args, result, tables)
    return EXIT_OK


def cmd_catalog(args: argparse.Namespace) -> int:
    if args.mig:
        frame = gpucost.catalog.mig_profiles()
    else:
        frame = gpucost.catalog.instance_types()
        if args.provider:
            frame = frame[frame["provider"] == args.provider]
        frame = frame[["provider", "instance_type", "gpu_model", "gpus", "gpu_memory_gib", "vcpus", "memory_gib",
                       "mig_capable", "on_demand_hourly", "price_region"]]
    if args.gpu:
        frame = frame[frame["gpu_model"].str.contains(args.gpu, case=False, regex=False)]
    frame = frame.reset_index(drop=True)
    fmt = _format(args)
    if fmt == "table":
        out = frame.to_string(index=False, na_rep="-", formatters={
            "on_demand_hourly": lambda v: "-" if pd.isna(v) else f"${v:,.3f}"}) + "\n"
        from gpucost.demo import atomic_write
        if args.output:
            atomic_write(args.output, lambda f: f.write(out.encode()))
        else:
            sys.stdout.write(out)
    else:
        write_frame(frame, fmt, args.output, decimals=args.decimals if args.decimals is not None else "raw",
                    raw_csv=args.raw_csv)  # list prices: as the catalog has them
    return EXIT_OK


def cmd_export_metrics(args: argparse.Namespace) -> int:
    from gpucost import metrics
    config = configure(args)
    config.policy.setdefault("idle", "share")  # idle cost per team: each team's share of its lines' idle time
    by = _by(config, ["team", "project"])
    prefix = args.prefix or config.metrics.get("prefix", "gpucost")

    def render() -> str:
        tables = _tables(config, args)
        allocation = gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads, by=by,
                                      **_policy(config, tables))
        _check_join(allocation, tables, config, args)
        start = pd.to_datetime(tables.costs["start"], utc=True).min()
        # Both days included: the last day is the one the bill's last instant falls in.
        end = pd.to_datetime(tables.costs["end"], utc=True).max() - pd.Timedelta(1, "ns")
        hourly = gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads,
                                  by=[*by, "period"], freq="h", **_policy(config, tables))
        return (metrics.exposition(allocation, by, prefix=prefix, window=f"{start:%Y-%m-%d}/{end:%Y-%m-%d}")
                + metrics.rolling_exposition(hourly, by, prefix=prefix))

    textfile = args.textfile or (None if args.listen or args.stdout else config.metrics.get("textfile"))
    if args.stdout:
        sys.stdout.write(render())
        return EXIT_OK
    if textfile:
        path = metrics.write_textfile(render(), textfile)
        print(f"gpucost: wrote {path}", file=sys.stderr)
        return EXIT_OK
    listen = args.listen or config.metrics.get("listen", "127.0.0.1:9108")
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--listen {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:9108")
    server = metrics.MetricsServer(render, host or "127.0.0.1", int(port), refresh=args.refresh,
                                   max_connections=args.max_connections, read_timeout=args.read_timeout,
                                   access_log=args.access_log)
    h, p = server.address
    print(f"gpucost: serving http://{h}:{p}/metrics (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return EXIT_OK


# ---- errors in the command line's words ----------------------------------------------

#: Python argument -> what sets it from the command line.
_CLI_NAMES = {
    "keep_unknown_nodes": ("--keep-unknown-nodes", "keep_unknown_nodes = true in [sources]"),
    "step": ("--step", "step in [sources]"), "start": ("--start", "start in [sources]"),
    "end": ("--end", "end in [sources]"), "url": ("--prometheus", "prometheus in [sources]"),
    "bill_format": ("--bill-format", "bill_format in [sources]"), "tz": ("--timezone", "timezone in [sources]"),
    "interval": ("--interval", "interval in [policy]"), "basis": ("--basis", "basis in [policy]"),
    "idle": ("--idle", "idle in [policy]"), "alpha": ("--alpha", "alpha in [policy]"),
    "by": ("--by", "by in [policy]"), "threads": ("--threads", "threads in [policy]"), "split": ("--share-split", "split in [attribution]"),
    "selector": ("--share", "shared in [attribution]"), "tag": ("--tag", "tag in [attribution]"),
    "labels": ("--label", "[labels]"),
}


def cli_message(message: str) -> str:
    """A library error as the command line's user needs it: the flag or
    config key instead of the Python argument it names."""
    def name(arg: str) -> str:
        flag, key = _CLI_NAMES[arg]
        return f"{flag} or {key}"

    message = re.sub(r"\bpass keep_unknown_nodes\b", "pass " + name("keep_unknown_nodes"), message)
    message = message.replace('use split="even"', 'use --share-split even or split = "even" in [attribution]')
    message = re.sub(r"\bset bill_format\b", "set " + name("bill_format"), message)
    return re.sub(r"\bparameter '(\w+)'",
                  lambda m: f"{_CLI_NAMES[m.group(1)][0]} ({_CLI_NAMES[m.group(1)][1]})" if m.group(1) in _CLI_NAMES
                  else m.group(0), message)


# ---- main ----------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors: argparse prints them and exits 2
    threads = gpucost.get_num_threads()  # --threads sets it for this command only
    try:
        return args.func(args)
    except _Reported:
        return EXIT_BAD_INPUT
    except UsageError as exc:
        if args.debug:
            raise
        print(f"gpucost {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (gpucost.InvalidInputError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
            PermissionError) as exc:
        if args.debug:
            raise
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and exc.filename:
            message = f"{exc.filename}: {exc.strerror}"
        for line in [str(p) for p in exc.problems] if isinstance(exc, PlanError) else [message]:  # one per problem
            print(f"gpucost {args.command}: error: {cli_message(line)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `gpucost ... | head`
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - one clear line; --debug shows the trace
        if args.debug:
            raise
        text = cli_message(str(exc).splitlines()[0]) if str(exc) else ""
        kind = "error" if isinstance(exc, gpucost.Error) else f"internal error: {type(exc).__name__}"
        print(f"gpucost {args.command}: {kind}: {text} (--debug for the trace)", file=sys.stderr)
        return EXIT_ERROR
    finally:
        gpucost.set_num_threads(threads)


if __name__ == "__main__":
    sys.exit(main())
