"""gpucost: what every GPU-hour you pay for was spent on.

Join a cloud bill (cost lines) with GPU telemetry (usage samples) and
workload labels, and prorate every cost line to the workloads that held or
used the GPUs. See docs/guide.md.
"""

from __future__ import annotations

from gpucost.errors import Error, InvalidInputError
from gpucost.model import Basis, ChargeCategory, CostDriver, IdleMode, MigBasis, Payment, Provider, Purchase, Reserved
from gpucost.allocation import Allocator, allocate, available_cores, get_num_threads, set_num_threads
from gpucost.frames import result_attrs
from gpucost.join import JoinError, JoinReport, JoinWarning, check_join, join_report
from gpucost.currency import convert_currency
from gpucost import catalog
from gpucost.catalog import inventory
from gpucost import kubernetes, prometheus
from gpucost.hosts import read_nvidia_smi, read_nvidia_smi_mon, read_scontrol_jobs, read_slurm_events, read_slurm_sacct
from gpucost.analyses import (
    IdleReport,
    SpotRuns,
    diagnose,
    find_idle,
    idle_policy,
    kpis,
    queue_waits,
    rightsize,
    spot_interruptions,
    spot_runs,
    token_costs,
    unit_costs,
    usage_profile,
    vllm_tokens,
)
from gpucost.analyses import (
    advise_commitments,
    amortize,
    autoscaling_estimate,
    budget_status,
    buy_vs_rent,
    commitment_coverage,
    commitment_utilization,
    forecast_spend,
    hourly_demand,
    read_spot_prices,
    spend_anomalies,
    spot_move_savings,
    spot_placement,
    spot_savings,
    spread_over_days,
    workload_classes,
)
from gpucost.billing import read_azure_costs, read_cur, read_focus, read_gcp_billing
from gpucost.invoice import read_invoice
from gpucost.attribution import attribute_tagged, share_costs
from gpucost.owned import owned_costs
from gpucost.focus import to_focus
from gpucost.energy import estimate_power
from gpucost.stream import allocate_stream
from gpucost.spill import UsageChunks
from gpucost import plot
from gpucost.report import report
from gpucost import money, sheets

from gpucost import _core

# The one version, from CMakeLists.txt's project(VERSION) via the compiled core.
__version__: str = _core.__version__

# Submodules with heavy dependencies (dask, pyspark, SQLAlchemy, ...) load on
# first use, so `import gpucost` stays fast and `gpucost.dask.allocate` works
# after a plain `import gpucost`.
_LAZY = ("dask", "spark", "pipeline", "metrics", "demo", "simulate", "config", "plan", "sources", "cli", "stream",
         "chunks", "hosts", "billing", "invoice", "attribution", "frames", "slurm")


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"gpucost.{name}")
    raise AttributeError(f"module 'gpucost' has no attribute {name!r}")


__all__ = ["Allocator", "Error", "InvalidInputError", "allocate", "__version__"]
__all__ += ["Basis", "ChargeCategory", "CostDriver", "IdleMode", "MigBasis", "Payment", "Provider", "Purchase", "Reserved"]
__all__ += ["catalog", "inventory"]
__all__ += ["kubernetes", "prometheus", "read_nvidia_smi", "read_nvidia_smi_mon", "read_slurm_sacct",
            "read_slurm_events", "read_scontrol_jobs"]
__all__ += ["IdleReport", "SpotRuns", "diagnose", "find_idle", "idle_policy", "kpis", "queue_waits", "rightsize",
            "spot_interruptions", "spot_runs", "token_costs", "unit_costs", "usage_profile", "vllm_tokens"]
# Purchasing advice, what was bought, budgets and forecasts (docs/advisor.md).
__all__ += ["buy_vs_rent"]
__all__ += ["advise_commitments", "amortize", "autoscaling_estimate", "budget_status", "commitment_coverage",
            "commitment_utilization", "forecast_spend", "hourly_demand", "read_spot_prices", "spend_anomalies",
            "spot_move_savings", "spot_placement", "spot_savings", "spread_over_days", "workload_classes"]
__all__ += ["read_azure_costs", "read_cur", "read_focus", "read_gcp_billing", "read_invoice", "to_focus"]
__all__ += ["attribute_tagged", "share_costs", "owned_costs", "estimate_power"]
__all__ += ["plot", "report"]
__all__ += ["UsageChunks", "allocate_stream", "available_cores", "get_num_threads", "result_attrs", "set_num_threads"]
# What joined and what did not, and the one warning rule (docs/semantics.md).
__all__ += ["JoinError", "JoinReport", "JoinWarning", "check_join", "join_report", "convert_currency"]
__all__ += ["money", "sheets"]
