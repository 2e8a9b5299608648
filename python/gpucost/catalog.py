"""The instance-type and MIG catalog, and the inventory built from it.

The catalog is compiled into gpucost's C++ core from ``data/catalog/*.csv``:
instance types of AWS, GCP and Azure (GPU model, GPUs, GPU memory, vCPUs,
memory, MIG capability, a reference On-Demand price with its region, date and
source where one is known) and NVIDIA MIG profiles.

Every function takes ``catalog=``: ``None`` for the embedded catalog, a
DataFrame of your own instance-type rows (negotiated prices, on-prem hosts),
or a catalog made by :func:`with_rows`. Your rows replace embedded rows of the
same instance type and add the others.

>>> import gpucost
>>> gpucost.catalog.mig_share("A100 80GB", "1g.10gb")            # 1/7
0.14285714285714285
>>> gpucost.catalog.mig_share("A100 80GB", "1g.10gb", basis="memory")
0.125
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.frames import Table
from gpucost.errors import conversion_hint

__all__ = ["instance_types", "mig_profiles", "mig_share", "with_rows", "inventory", "canonical_gpu_model"]

_EMBEDDED = None


def _embedded() -> Any:
    global _EMBEDDED
    if _EMBEDDED is None:
        _EMBEDDED = _core.Catalog.embedded()
    return _EMBEDDED


def _to_csv(rows: Any, what: str) -> str:
    if rows is None:
        return ""
    if isinstance(rows, str):
        return rows  # CSV text
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what}: expected a DataFrame, got {type(rows).__name__}{conversion_hint(rows)}")
    return frame.to_csv(index=False, lineterminator="\n")


def with_rows(instance_types: Any = None, mig_profiles: Any = None) -> Any:
    """The embedded catalog with your rows merged over it.

    ``instance_types`` needs the columns ``provider, instance_type,
    gpu_model, gpus, gpu_memory_gib`` (others as in :func:`instance_types` are
    optional); ``mig_profiles`` needs every column of :func:`mig_profiles`.
    Either may be a DataFrame, a dict of columns or CSV text. Bad rows raise
    :class:`gpucost.InvalidInputError` naming the row and the column.
    """
    own = _core.Catalog.from_csv(
        _to_csv(instance_types, "instance_types"),
        _to_csv(mig_profiles, "mig_profiles"),
        "catalog instance_types",
        "catalog mig_profiles",
        not isinstance(instance_types, str) and not isinstance(mig_profiles, str),
    )
    return _embedded().merged_with(own)


def resolve(catalog: Any = None) -> Any:
    """The C++ catalog for a ``catalog=`` argument (internal helper)."""
    if catalog is None:
        return _embedded()
    if isinstance(catalog, _core.Catalog):
        return catalog
    if isinstance(catalog, tuple) and len(catalog) == 2:
        return with_rows(*catalog)
    return with_rows(instance_types=catalog)


def instance_types(catalog: Any = None) -> pd.DataFrame:
    """One row per instance type: provider, instance_type, gpu_model, gpus,
    gpu_fraction, gpu_memory_gib (per device), vcpus, memory_gib,
    mig_capable, on_demand_hourly (NaN where no citable price), price_region,
    price_date, price_source."""
    columns = resolve(catalog).instance_types()
    frame = pd.DataFrame(columns)
    frame["gpus"] = frame["gpus"].astype(np.int64)
    frame["vcpus"] = frame["vcpus"].astype(np.int64)
    frame["mig_capable"] = frame["mig_capable"].astype(bool)
    frame["on_demand_hourly"] = pd.to_numeric(frame["on_demand_hourly"]).astype(np.float64)
    return frame


def mig_profiles(catalog: Any = None) -> pd.DataFrame:
    """One row per (gpu_model, profile): compute_slices of compute_total,
    memory_slices of memory_total, and memory_gib."""
    frame = pd.DataFrame(resolve(catalog).mig_profiles())
    for column in ("compute_slices", "compute_total", "memory_slices", "memory_total"):
        frame[column] = frame[column].astype(np.int64)
    return frame


def mig_share(gpu_model: str, profile: str, basis: str = "compute", catalog: Any = None) -> float:
    """The fraction of a GPU a MIG instance stands for: compute slices over
    the compute total (``basis="compute"``) or memory slices over the memory
    total (``basis="memory"``). ``gpu_model`` may be spelled as nvidia-smi or
    DCGM report it ("NVIDIA A100-SXM4-80GB")."""
    return float(resolve(catalog).mig_share(str(gpu_model), str(profile), str(basis)))


def canonical_gpu_model(name: str) -> str:
    """The catalog's spelling of a GPU model name ("NVIDIA A100-SXM4-80GB" ->
    "A100 80GB")."""
    return _core.canonical_gpu_model(str(name))


def inventory(table: Any, *, catalog: Any = None) -> pd.DataFrame:
    """The inventory of SEMANTICS 1.2 (``resource_id, device, mem_capacity``
    in bytes), one row per GPU device.

    ``table`` is either a resource table (``resource_id, instance_type``;
    every row must name a known instance type) or cost lines from a
    ``gpucost.read_*`` reader (recognised by their ``cost`` column): there,
    lines without a resource or an instance type (storage, networking, tax)
    are skipped, and so are lines whose ``gpu`` column is False. Repeated rows
    of a resource are fine; two instance types for one resource, or an
    instance type the catalog does not know, raise
    :class:`gpucost.InvalidInputError` naming the row, unless ``catalog=``
    supplies rows for it.
    """
    is_cost_lines = isinstance(table, pd.DataFrame | dict) and "cost" in (
        table.columns if isinstance(table, pd.DataFrame) else table
    )
    name = "costs" if is_cost_lines else "inventory"
    t = Table(table, name)
    include = None
    if is_cost_lines and t.has("gpu"):
        include = np.asarray(t.column("gpu"), dtype=bool).astype(np.uint8)
    raw = _core.build_inventory(
        t.strings("resource_id"), t.strings("instance_type"), resolve(catalog), include, name, is_cost_lines
    )
    codes, values = raw["resource_id"]
    ids = np.asarray(values, dtype=object)[codes] if len(values) else np.empty(0, dtype=object)
    return pd.DataFrame(
        {"resource_id": pd.Series(ids, dtype="str"), "device": raw["device"], "mem_capacity": raw["mem_capacity"]},
        copy=False,
    )
