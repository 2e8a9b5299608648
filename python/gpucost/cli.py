"""The ``gpucost`` command (docs/cli.md).

    gpucost demo                         the demo month: showback table + HTML report
    gpucost allocate --bill B --telemetry T --pods P [--format csv|json|table] [--sql URL]
    gpucost report   --config gpucost.toml --output showback.html
    gpucost idle | spot | advise | budget   the analyses
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
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

import gpucost
from gpucost.config import Config, Tables, load_config, load_tables

__all__ = ["main", "build_parser", "format_money_table", "EXIT_OK", "EXIT_ERROR", "EXIT_BAD_INPUT"]

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT = 0, 1, 2
DEMO_TODAY = "2026-03-20"  # the demo's budgets are looked at mid-month, so the forecast has work to do
_NAMES = {"cost": "cost $", "idle_cost": "idle $", "list_cost": "list $", "gpu_hours": "GPU-h",
          "effective_gpu_hours": "effective GPU-h", "mem_gib_hours": "GiB-h",
          "cost_per_effective_gpu_hour": "$ / effective GPU-h"}


_BUDGETS_HELP = "budgets CSV: key, value, amount[, thresholds] (key: a label column, e.g. team)"


class UsageError(Exception):
    """Bad usage of the command (exit 2)."""


# ---- terminal tables ----------------------------------------------------------------

def format_money_table(frame: pd.DataFrame, money: Sequence[str] = (), hours: Sequence[str] = (),
                       total_columns: Sequence[str] = (), total_label: str = "TOTAL") -> str:
    """A terminal table: money with thousands separators and cents, hours with
    one decimal, NaN as '-', and a total row over `total_columns` when given."""
    frame = frame.copy()
    if total_columns and len(frame):
        total = {c: frame[c].sum() for c in total_columns}
        total[frame.columns[0]] = total_label
        frame = pd.concat([frame, pd.DataFrame([total])], ignore_index=True)
    formatters = {c: (lambda v: "-" if pd.isna(v) else f"{v:,.2f}") for c in money}
    formatters |= {c: (lambda v: "-" if pd.isna(v) else f"{v:,.1f}") for c in hours}
    return frame.to_string(index=False, formatters=formatters, na_rep="-")


def allocation_table(result: pd.DataFrame, total: bool = True) -> str:
    """An allocation result as a readable terminal table."""
    metrics = [c for c in _NAMES if c in result.columns]
    keys = [c for c in result.columns if c not in _NAMES]
    renamed = result[keys + metrics].rename(columns=_NAMES)
    money = [_NAMES[c] for c in ("cost", "idle_cost", "list_cost", "cost_per_effective_gpu_hour") if c in metrics]
    hours = [_NAMES[c] for c in ("gpu_hours", "effective_gpu_hours", "mem_gib_hours") if c in metrics]
    totals = [_NAMES[c] for c in ("cost", "idle_cost", "list_cost", "gpu_hours", "effective_gpu_hours",
                                  "mem_gib_hours") if c in metrics] if total else ()
    for k in keys:
        if pd.api.types.is_datetime64_any_dtype(renamed[k]):
            renamed[k] = renamed[k].dt.strftime("%Y-%m-%d %H:%M").str.replace(" 00:00", "", regex=False)
        else:
            renamed[k] = renamed[k].astype(str)
    return format_money_table(renamed, money=money, hours=hours, total_columns=totals)


def frame_table(frame: pd.DataFrame, max_rows: int = 40) -> str:
    """Any analysis result as a terminal table (money-looking columns with cents)."""
    shown = frame.head(max_rows).copy()
    money = [c for c in shown.columns if pd.api.types.is_float_dtype(shown[c]) and any(
        w in c for w in ("cost", "dollar", "saving", "waste", "amount", "spend", "forecast"))]
    text = format_money_table(shown, money=money, hours=[c for c in shown.columns if c.endswith("hours")
                                                         and pd.api.types.is_float_dtype(shown[c])])
    if len(frame) > max_rows:
        text += f"\n... {len(frame) - max_rows} more rows (--format csv for all)"
    return text


# ---- output ----------------------------------------------------------------------

def write_frame(frame: pd.DataFrame, fmt: str, output: str | None) -> None:
    """Writes a result as CSV, JSON, Parquet or a table, to a file
    (atomically) or stdout."""
    from gpucost.demo import atomic_write
    if fmt == "table":
        text = allocation_table(frame) if "cost" in frame.columns and "gpu_hours" in frame.columns \
            else frame_table(frame)
        data = (text + "\n").encode()
    elif fmt == "csv":
        data = frame.to_csv(index=False, lineterminator="\n").encode()
    elif fmt == "json":
        data = (frame.to_json(orient="records", date_format="iso", indent=1) + "\n").encode()
    elif fmt == "parquet":
        if not output:
            raise UsageError("--format parquet needs --output FILE")
        atomic_write(output, lambda f: frame.to_parquet(f, index=False))
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
    g.add_argument("--bill", metavar="PATH", help="billing export: FOCUS, AWS CUR (legacy or 2.0), GCP or Azure "
                                                  "(CSV, CSV.gz or Parquet)")
    g.add_argument("--bill-format", choices=("auto", "focus", "cur", "gcp", "azure"), help="default: from the header")
    g.add_argument("--costs", metavar="PATH", help="gpucost cost lines table (CSV or Parquet) instead of a bill")
    g.add_argument("--telemetry", metavar="PATH", nargs="+",
                   help="saved Prometheus query_range answers of DCGM exporter metrics (globs allowed)")
    g.add_argument("--prometheus", metavar="URL", help="a Prometheus server to query for DCGM metrics")
    g.add_argument("--start", help="first instant to query (with --prometheus), e.g. 2026-03-01")
    g.add_argument("--end", help="end of the query range, exclusive")
    g.add_argument("--step", type=float, help="seconds between telemetry points (default 60)")
    g.add_argument("--usage", metavar="PATH", help="gpucost usage samples table (CSV or Parquet)")
    g.add_argument("--pods", metavar="PATH", help="kubectl get pods -A -o json (workload labels)")
    g.add_argument("--nodes", metavar="PATH", help="kubectl get nodes -o json (node -> instance id)")
    g.add_argument("--workloads", metavar="PATH", help="gpucost workloads table: consumer + label columns")
    g.add_argument("--inventory", metavar="PATH",
                   help="resource_id, device, mem_capacity (default: from the bill's instance types)")
    g.add_argument("--label", metavar="COLUMN=KEY", action="append", default=[],
                   help="map a pod label key to a result column, e.g. team=acme.io/team (repeatable)")


def _add_policy(p: argparse.ArgumentParser, by: str | None = "team") -> None:
    g = p.add_argument_group("policy (also [policy] in the config file)")
    g.add_argument("--basis", choices=("allocated", "used", "blended"), help="how a line is split (default allocated)")
    g.add_argument("--idle", choices=("keep", "share"), help="idle cost on its own row (keep) or shared (share)")
    g.add_argument("--alpha", type=float, help="blended: weight of GPU time against memory (default 0.5)")
    g.add_argument("--interval", type=float, help="seconds a sample stands for when it has no duration")
    if by is not None:
        g.add_argument("--by", metavar="COLUMNS", help=f"comma-separated groups: consumer, resource_id, period, labels "
                                                       f"(default {by})")
        g.add_argument("--freq", choices=("h", "D", "MS"), help="period length when --by has period (default D)")


def _add_output(p: argparse.ArgumentParser, formats=("table", "csv", "json", "parquet")) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--format", choices=formats, default=None, help="default: table on a terminal, csv otherwise")
    g.add_argument("--output", "-o", metavar="PATH", help="write to a file (atomically) instead of stdout")


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
    _add_output(p)
    p.add_argument("--sql", metavar="URL", help="write to a SQL table (SQLAlchemy URL): each day's rows replaced")
    p.add_argument("--table", default="gpucost_allocation", help="SQL table name (default gpucost_allocation)")
    p.set_defaults(func=cmd_allocate)

    p = sub.add_parser("report", parents=[common], help="write the HTML showback report",
                       description="Writes one self-contained HTML file: spend by team and project, idle, "
                                   "efficiency, tagging gaps and the analyses this build has.")
    _add_sources(p)
    _add_policy(p, by="team,project")
    p.add_argument("--output", "-o", metavar="PATH", help="the HTML file (default gpucost-report.html)")
    p.add_argument("--title", help="report title")
    p.add_argument("--budgets", metavar="PATH", help=_BUDGETS_HELP)
    p.add_argument("--today", help="the day budgets are checked on (default: the end of the data)")
    p.set_defaults(func=cmd_report)

    for name, function, help_text in (
            ("idle", "find_idle", "idle GPUs and the dollars they cost"),
            ("spot", "spot_runs", "spot training runs: every attempt, the true cost per completed run"),
            ("advise", "advise_commitments", "what reserved capacity / savings plans / spot to buy"),
            ("budget", "budget_status", "budgets: month to date, forecast, alerts")):
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text.capitalize() + ".")
        _add_sources(p)
        _add_policy(p, by=None)
        _add_output(p, ("table", "csv", "json"))
        if name == "budget":
            p.add_argument("--budgets", metavar="PATH", help=_BUDGETS_HELP)
            p.add_argument("--today", help="the day to report on (default: the end of the data)")
        if name == "spot":
            p.add_argument("--interruptions", metavar="PATH", help="EventBridge spot interruption events (JSON lines)")
        if name == "advise":
            p.add_argument("--rates", metavar="PATH", help="purchase options: instance_type, kind, hourly, term_years")
            p.add_argument("--existing", metavar="PATH", help="commitments already bought (instance_type, kind, "
                           "count or hourly, rate, start, end) instead of the bill's commitment lines")
        p.set_defaults(func=cmd_analysis, analysis=function)

    p = sub.add_parser("catalog", parents=[common], help="instance types and MIG profiles gpucost knows",
                       description="The embedded catalog of GPU instance types (and MIG profiles with --mig).")
    p.add_argument("--provider", choices=("aws", "gcp", "azure"), help="only this provider")
    p.add_argument("--gpu", metavar="TEXT", help="only GPU models containing TEXT (e.g. A100)")
    p.add_argument("--mig", action="store_true", help="list MIG profiles instead")
    _add_output(p, ("table", "csv", "json"))
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
    p.set_defaults(func=cmd_export_metrics)
    return parser


# ---- configuration from file + flags -------------------------------------------------

def configure(args: argparse.Namespace) -> Config:
    config = load_config(getattr(args, "config", None))
    src = {"demo": "demo", "bill": "bill", "bill_format": "bill_format", "costs": "costs", "telemetry": "telemetry",
           "prometheus": "prometheus", "start": "start", "end": "end", "step": "step", "usage": "usage",
           "pods": "pods", "nodes": "nodes", "workloads": "workloads", "inventory": "inventory",
           "interruptions": "interruptions", "rates": "rates", "existing": "existing"}
    paths = {"bill", "costs", "usage", "pods", "nodes", "workloads", "inventory", "interruptions", "rates",
             "existing"}
    for attr, key in src.items():
        value = getattr(args, attr, None)
        if value is not None and getattr(args, "config", None) and attr in paths | {"telemetry"}:
            # Paths given as flags are relative to the working directory, not to the config file.
            value = [str(Path(v).absolute()) for v in value] if isinstance(value, list) else str(Path(value).absolute())
        config.set("sources", key, value)
    given = [k for k in ("bill", "costs", "telemetry", "prometheus", "usage") if getattr(args, k, None)]
    if getattr(args, "demo", None) and given:
        raise UsageError(f"--demo cannot be combined with --{given[0]}")
    if given and not getattr(args, "demo", None):
        config.sources.pop("demo", None)
    for item in getattr(args, "label", []) or []:
        column, sep, key = item.partition("=")
        if not sep or not column or not key:
            raise UsageError(f"--label {item!r}: expected COLUMN=KEY, e.g. team=team-id")
        config.labels[column] = key
    for key in ("basis", "idle", "alpha", "interval", "freq"):
        config.set("policy", key, getattr(args, key, None))
    if getattr(args, "by", None):
        config.policy["by"] = [b.strip() for b in args.by.split(",") if b.strip()]
    if getattr(args, "budgets", None):
        config.budgets["file"] = str(Path(args.budgets).resolve())
    if getattr(args, "today", None):
        config.budgets["today"] = args.today
    return config


def _by(config: Config, default: Sequence[str]) -> list[str]:
    by = config.policy.get("by", list(default))
    return [by] if isinstance(by, str) else list(by)


def _policy(config: Config) -> dict:
    return {k: config.policy[k] for k in ("basis", "idle", "alpha", "interval") if k in config.policy}


def _tables(config: Config, args) -> Tables:
    tables = load_tables(config, progress=not getattr(args, "no_progress", False) and sys.stderr.isatty())
    if "interval" not in config.policy:
        config.policy["interval"] = tables.interval
    return tables


def _format(args) -> str:
    return args.format or ("table" if sys.stdout.isatty() and not args.output else "csv")


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
    table = showback.sort_values("cost", ascending=False)
    print(allocation_table(table[["team", "cost", "gpu_hours", "effective_gpu_hours",
                                  "cost_per_effective_gpu_hour"]]))
    print(f"\nAllocated ${showback['cost'].sum():,.2f} of ${bill:,.2f} billed.")
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


def cmd_allocate(args: argparse.Namespace) -> int:
    config = configure(args)
    tables = _tables(config, args)
    by = _by(config, ["team"] if tables.workloads is not None else ["consumer"])
    policy = _policy(config)
    if args.sql:
        from gpucost import pipeline
        days = pd.to_datetime(tables.costs["start"], utc=True).dt.floor("D").drop_duplicates().sort_values()
        rows = 0
        for day in days:
            result = pipeline.allocate_day(day, tables.costs, tables.usage, tables.inventory, tables.workloads,
                                           by=by, **policy)
            rows += pipeline.write_day(result, args.sql, day, table=args.table)
        print(f"gpucost: wrote {rows} rows for {len(days)} days to table {args.table}", file=sys.stderr)
        return EXIT_OK
    freq = config.policy.get("freq", "D") if "period" in by else None
    result = gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads, by=by, freq=freq,
                              **policy)
    write_frame(result, _format(args), args.output)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    config = configure(args)
    tables = _tables(config, args)
    output = args.output or config.report.get("output") or "gpucost-report.html"
    title = args.title or config.report.get("title") or "GPU showback"
    policy = _policy(config)
    report = gpucost.report(tables.costs, tables.usage, tables.inventory, tables.workloads, path=output, title=title,
                            by=_by(config, ["team", "project"]), bill=tables.bill, budgets=tables.budgets,
                            interruptions=tables.interruptions, rates=tables.rates,
                            today=config.budgets.get("today"), **policy)
    print(f"gpucost: wrote {output} ({len(report.sections)} sections"
          + (f"; not included: {', '.join(report.omitted)}" if report.omitted else "") + ")", file=sys.stderr)
    return EXIT_OK


def cmd_analysis(args: argparse.Namespace) -> int:
    from gpucost.report import analysis
    if getattr(gpucost, args.analysis, None) is None:  # before reading any input
        raise gpucost.Error(f"this build of gpucost has no gpucost.{args.analysis} (an analysis not merged yet)")
    config = configure(args)
    tables = _tables(config, args)
    key = {"find_idle": "idle", "spot_runs": "spot", "advise_commitments": "advice", "budget_status": "budgets"}[
        args.analysis]
    if key == "budgets" and tables.budgets is None:
        raise UsageError("gpucost budget needs budgets: --budgets FILE or [budgets] file in the config")
    if key == "advice" and tables.rates is None:
        raise UsageError("gpucost advise needs purchase options: --rates FILE or rates in [sources]")
    result = analysis(key, tables.costs, tables.usage, tables.inventory, tables.workloads, bill=tables.bill,
                      budgets=tables.budgets, interruptions=tables.interruptions, rates=tables.rates,
                      existing=tables.existing, today=config.budgets.get("today"),
                      by=_by(config, ["team", "project"]), **_policy(config))
    write_frame(result, _format(args), args.output)
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
        write_frame(frame, fmt, args.output)
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
                                      **_policy(config))
        start = pd.to_datetime(tables.costs["start"], utc=True).min()
        # Both days included: the last day is the one the bill's last instant falls in.
        end = pd.to_datetime(tables.costs["end"], utc=True).max() - pd.Timedelta(1, "ns")
        hourly = gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads,
                                  by=[*by, "period"], freq="h", **_policy(config))
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
    server = metrics.MetricsServer(render, host or "127.0.0.1", int(port), refresh=args.refresh)
    h, p = server.address
    print(f"gpucost: serving http://{h}:{p}/metrics (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return EXIT_OK


# ---- main ----------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors: argparse prints them and exits 2
    try:
        return args.func(args)
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
        print(f"gpucost {args.command}: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `gpucost ... | head`
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - one clear line; --debug shows the trace
        if args.debug:
            raise
        text = str(exc).splitlines()[0] if str(exc) else ""
        kind = "error" if isinstance(exc, gpucost.Error) else f"internal error: {type(exc).__name__}"
        print(f"gpucost {args.command}: {kind}: {text} (--debug for the trace)", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
