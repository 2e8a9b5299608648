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
"""

from __future__ import annotations

from gpucost.analyses.diagnose import diagnose
from gpucost.analyses.idle import IdleReport, find_idle, idle_policy
from gpucost.analyses.kpis import kpis, queue_waits
from gpucost.analyses.profile import usage_profile
from gpucost.analyses.rightsizing import rightsize
from gpucost.analyses.spot import SpotRuns, spot_interruptions, spot_runs
from gpucost.analyses.units import token_costs, unit_costs, vllm_tokens

__all__ = ["IdleReport", "SpotRuns", "diagnose", "find_idle", "idle_policy", "kpis", "queue_waits", "rightsize",
           "spot_interruptions", "spot_runs", "token_costs", "unit_costs", "usage_profile", "vllm_tokens"]
