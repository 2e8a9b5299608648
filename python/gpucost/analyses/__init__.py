"""The analyses: where GPU money goes to waste and what a unit of work costs.

Every analysis takes plain tables (cost lines, usage samples, inventory,
workloads, allocation results), so it works on any source. See
docs/analyses.md.

- idle GPUs: :func:`find_idle`, :func:`idle_policy` (idle.py)
- spot runs: :func:`spot_runs`, :func:`spot_interruptions` (spot.py)
- right-sizing and cost per useful GPU-hour: :func:`rightsize` (rightsizing.py)
- unit economics: :func:`unit_costs`, :func:`vllm_tokens`, :func:`token_costs` (units.py)
- diagnosis: :func:`diagnose` (diagnose.py); KPIs: :func:`kpis`, :func:`queue_waits` (kpis.py)
- per-workload usage statistics: :func:`usage_profile` (profile.py)

Purchasing (docs/advisor.md):

- workload classes: :func:`workload_classes` (classes.py); hourly demand:
  :func:`hourly_demand` (demand.py)
- commitments: :func:`advise_commitments`, :func:`amortize` (commitments.py)
- what was bought: :func:`commitment_utilization`, :func:`commitment_coverage`,
  :func:`spot_savings` (utilization.py)
- spot placement: :func:`read_spot_prices`, :func:`spot_placement`,
  :func:`spot_move_savings` (spot_placement.py)
- inference autoscaling: :func:`autoscaling_estimate` (autoscaling.py)
- hardware you own, bought or rented: :func:`buy_vs_rent` (owning.py)
- budgets and forecasts: :func:`budget_status`, :func:`forecast_spend`,
  :func:`spend_anomalies` (budget.py)
"""

from __future__ import annotations

from gpucost.analyses.diagnose import diagnose
from gpucost.analyses.idle import IdleReport, find_idle, idle_policy
from gpucost.analyses.kpis import kpis, queue_waits
from gpucost.analyses.profile import usage_profile
from gpucost.analyses.rightsizing import rightsize
from gpucost.analyses.spot import SpotRuns, spot_interruptions, spot_runs
from gpucost.analyses.units import token_costs, unit_costs, vllm_tokens
from gpucost.analyses.autoscaling import autoscaling_estimate
from gpucost.analyses.budget import budget_status, forecast_spend, spend_anomalies, spread_over_days
from gpucost.analyses.classes import workload_classes
from gpucost.analyses.commitments import advise_commitments, amortize
from gpucost.analyses.demand import hourly_demand
from gpucost.analyses.owning import buy_vs_rent
from gpucost.analyses.spot_placement import read_spot_prices, spot_move_savings, spot_placement
from gpucost.analyses.utilization import commitment_coverage, commitment_utilization, spot_savings

__all__ = ["IdleReport", "SpotRuns", "diagnose", "find_idle", "idle_policy", "kpis", "queue_waits", "rightsize",
           "spot_interruptions", "spot_runs", "token_costs", "unit_costs", "usage_profile", "vllm_tokens"]
__all__ += ["advise_commitments", "amortize", "autoscaling_estimate", "budget_status", "buy_vs_rent",
            "commitment_coverage",
            "commitment_utilization", "forecast_spend", "hourly_demand", "read_spot_prices", "spend_anomalies",
            "spot_move_savings", "spot_placement", "spot_savings", "spread_over_days", "workload_classes"]
