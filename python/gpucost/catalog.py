"""The instance-type and MIG catalog, and the inventory built from it.

The catalog is compiled into gpucost's C++ core from ``data/catalog/*.csv``:
instance types of AWS, GCP and Azure (GPU model, GPUs, GPU memory, vCPUs,
memory, MIG capability, a reference On-Demand price with its region, date and
source where one is known) and NVIDIA MIG profiles.

Every function takes ``catalog=``: ``None`` for the embedded catalog, a
DataFrame of your own instance-type rows (negotiated prices, on-prem hosts),
or a catalog made by :func:`with_rows`. Your rows replace embedded rows of the
same instance type and add the others.

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

    Examples:
        An on-prem host type of your own, with its price:

        >>> own = gpucost.catalog.with_rows(pd.DataFrame({
        ...     "provider": ["onprem"], "instance_type": ["dgx-a100"], "gpu_model": ["A100 80GB"],
        ...     "gpus": [8], "gpu_memory_gib": [80], "on_demand_hourly": [20.0]}))
        >>> types = gpucost.catalog.instance_types(own)
        >>> print(types[types["instance_type"] == "dgx-a100"][["provider", "gpu_model", "gpus", "on_demand_hourly"]]
        ...       .to_string(index=False))
        provider gpu_model  gpus  on_demand_hourly
          onprem A100 80GB     8              20.0
        >>> gpucost.inventory(pd.DataFrame({"resource_id": ["dgx-01"], "instance_type": ["dgx-a100"]}),
        ...                   catalog=own).head(2)
          resource_id  device  mem_capacity
        0      dgx-01       0  8.589935e+10
        1      dgx-01       1  8.589935e+10
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
    price_date, price_source, and for nodes you own gpu_tdp_w and
    node_max_power_w (nameplate W, 0 where unknown) with spec_source.

    Examples:
        >>> types = gpucost.catalog.instance_types()
        >>> chosen = types[types["instance_type"].isin(["p4d.24xlarge", "a2-highgpu-1g", "Standard_ND96asr_v4"])]
        >>> print(chosen[["provider", "instance_type", "gpu_model", "gpus", "gpu_memory_gib", "mig_capable"]]
        ...       .to_string(index=False))
        provider       instance_type gpu_model  gpus  gpu_memory_gib  mig_capable
             aws        p4d.24xlarge A100 40GB     8            40.0         True
             gcp       a2-highgpu-1g A100 40GB     1            40.0         True
           azure Standard_ND96asr_v4 A100 40GB     8            40.0         True
    """
    columns = resolve(catalog).instance_types()
    frame = pd.DataFrame(columns)
    frame["gpus"] = frame["gpus"].astype(np.int64)
    frame["vcpus"] = frame["vcpus"].astype(np.int64)
    frame["mig_capable"] = frame["mig_capable"].astype(bool)
    frame["on_demand_hourly"] = pd.to_numeric(frame["on_demand_hourly"]).astype(np.float64)
    return frame


def mig_profiles(catalog: Any = None) -> pd.DataFrame:
    """One row per (gpu_model, profile): compute_slices of compute_total,
    memory_slices of memory_total, and memory_gib.

    Examples:
        >>> profiles = gpucost.catalog.mig_profiles()
        >>> a100 = profiles[(profiles["gpu_model"] == "A100 80GB") & profiles["profile"].isin(["1g.10gb", "7g.80gb"])]
        >>> print(a100.to_string(index=False))
        gpu_model profile  compute_slices  compute_total  memory_slices  memory_total  memory_gib
        A100 80GB 1g.10gb               1              7              1             8        10.0
        A100 80GB 7g.80gb               7              7              8             8        80.0
    """
    frame = pd.DataFrame(resolve(catalog).mig_profiles())
    for column in ("compute_slices", "compute_total", "memory_slices", "memory_total"):
        frame[column] = frame[column].astype(np.int64)
    return frame


def mig_share(gpu_model: str, profile: str, basis: str = "compute", catalog: Any = None) -> float:
    """The fraction of a GPU a MIG instance stands for: compute slices over
    the compute total (``basis="compute"``) or memory slices over the memory
    total (``basis="memory"``). ``gpu_model`` may be spelled as nvidia-smi or
    DCGM report it ("NVIDIA A100-SXM4-80GB").

    Examples:
        >>> gpucost.catalog.mig_share("NVIDIA A100-SXM4-80GB", "3g.40gb")   # 3 of 7 compute slices
        0.42857142857142855
        >>> gpucost.catalog.mig_share("A100 80GB", "3g.40gb", basis="memory")   # 4 of 8 memory slices
        0.5
    """
    return float(resolve(catalog).mig_share(str(gpu_model), str(profile), str(basis)))


def canonical_gpu_model(name: str) -> str:
    """The catalog's spelling of a GPU model name ("NVIDIA A100-SXM4-80GB" ->
    "A100 80GB").

    Examples:
        >>> gpucost.catalog.canonical_gpu_model("NVIDIA A100-SXM4-80GB")
        'A100 80GB'
        >>> gpucost.catalog.canonical_gpu_model("NVIDIA H100 80GB HBM3")
        'H100 80GB'
    """
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

    Examples:
        A g5.xlarge has one A10G (24 GiB), a g5.12xlarge four:

        >>> gpucost.inventory(pd.DataFrame({"resource_id": ["i-0aaa", "i-0bbb"],
        ...                                 "instance_type": ["g5.xlarge", "g5.12xlarge"]}))
          resource_id  device  mem_capacity
        0      i-0aaa       0  2.576980e+10
        1      i-0bbb       0  2.576980e+10
        2      i-0bbb       1  2.576980e+10
        3      i-0bbb       2  2.576980e+10
        4      i-0bbb       3  2.576980e+10
        >>> gpucost.inventory(pd.DataFrame({"resource_id": ["i-0ccc"], "instance_type": ["m5.large"]}))
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: inventory: row 0, column 'instance_type': unknown instance type 'm5.large' (not in the catalog; add your own catalog rows for it)
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
    out = pd.DataFrame(
        {"resource_id": pd.Series(ids, dtype="str"), "device": raw["device"], "mem_capacity": raw["mem_capacity"]},
        copy=False,
    )
    if t.has("embodied_kg_per_gpu_hour"):  # owned lines carry their class's (0 where a class has none)
        codes, values = t.strings("resource_id")
        named = codes >= 0
        kg = pd.Series(t.floats("embodied_kg_per_gpu_hour")[named]).groupby(codes[named]).max()
        per_node = pd.Series(kg.to_numpy(), index=np.asarray(values, dtype=object)[kg.index.to_numpy()])
        out["embodied_kg_per_gpu_hour"] = out["resource_id"].map(per_node).fillna(0.0).to_numpy(float)
    return out
