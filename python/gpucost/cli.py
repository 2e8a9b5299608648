"""The ``gpucost`` command.

Exit codes: 0 success, 1 internal error, 2 bad input or usage (one line on
stderr; ``--debug`` prints the trace).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import pandas as pd

import gpucost
from gpucost.simulate import simulate_fleet

__all__ = ["main", "format_money_table"]

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT = 0, 1, 2


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


def showback_by_team(fleet) -> pd.DataFrame:
    """Cost by team with idle cost shared over the teams that used each line."""
    result = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"],
                              idle="share")
    return result[["team", "cost", "idle_cost", "gpu_hours", "effective_gpu_hours", "cost_per_effective_gpu_hour"]]


def cmd_demo(args: argparse.Namespace) -> int:
    fleet = simulate_fleet(gpus=args.gpus, hours=args.hours, seed=args.seed)
    table = showback_by_team(fleet)
    bill = fleet.costs["cost"].sum()
    instances = fleet.inventory["resource_id"].nunique()
    print(f"gpucost demo: {instances} x p4d.24xlarge ({args.gpus} GPUs), {args.hours} h, "
          f"{len(fleet.usage):,} usage samples, bill ${bill:,.2f}")
    print("Showback by team (idle cost shared over the teams that held each line):\n")
    renamed = table.rename(columns={"cost": "cost $", "idle_cost": "idle $", "gpu_hours": "GPU-h",
                                    "effective_gpu_hours": "effective GPU-h",
                                    "cost_per_effective_gpu_hour": "$ / effective GPU-h"})
    print(format_money_table(renamed, money=["cost $", "idle $", "$ / effective GPU-h"],
                             hours=["GPU-h", "effective GPU-h"], total_columns=["cost $", "idle $", "GPU-h",
                                                                                  "effective GPU-h"]))
    print(f"\nAllocated ${table['cost'].sum():,.2f} of ${bill:,.2f} billed "
          f"(unused instances stay on __idle__).")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpucost", description="What every GPU-hour you pay for was spent on.")
    parser.add_argument("--debug", action="store_true", help="print the full trace on errors")
    parser.add_argument("--version", action="version", version=f"gpucost {gpucost.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="allocate a simulated fleet and print showback by team")
    demo.add_argument("--gpus", type=int, default=40, help="GPUs in the simulated fleet (multiple of 8)")
    demo.add_argument("--hours", type=int, default=24, help="hours simulated")
    demo.add_argument("--seed", type=int, default=0, help="random seed of the simulation")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (gpucost.InvalidInputError, ValueError, FileNotFoundError) as exc:
        if args.debug:
            raise
        print(f"gpucost: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - one clear line; --debug shows the trace
        if args.debug:
            raise
        print(f"gpucost: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
