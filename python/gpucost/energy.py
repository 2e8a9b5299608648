"""Power for samples that have no reading (docs/energy.md, "Estimates").

The engine counts the energy of measured draws only (docs/semantics.md, 9):
a sample whose ``power_w`` is NaN adds nothing. :func:`estimate_power` fills
such samples with a documented estimate, the device's nameplate TDP times a
utilisation curve, and marks them ``power_estimated``; :func:`gpucost.allocate`
then reports the part of each row's energy that is estimated in
``energy_estimated_kwh``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.errors import InvalidInputError

__all__ = ["estimate_power", "DEFAULT_POWER_CURVE"]

#: Fraction of TDP a GPU draws at a utilisation (linear between the points):
#: a quarter idle, all of it busy, the shape owned nodes' power lines use too
#: when given a curve (docs/onprem.md).
DEFAULT_POWER_CURVE = ((0.0, 0.25), (1.0, 1.0))


def _tdp_of(usage: pd.DataFrame, tdp_w: Any) -> np.ndarray:
    """Each sample's nameplate TDP in W: one number, a mapping by
    ``gpu_model``, or the catalog's ``gpu_tdp_w`` of the sample's GPU model."""
    if isinstance(tdp_w, int | float) and not isinstance(tdp_w, bool):
        if not tdp_w > 0:
            raise InvalidInputError(f"estimate_power: tdp_w: {tdp_w} is not a positive number of watts")
        return np.full(len(usage), float(tdp_w))
    if "gpu_model" not in usage.columns:
        raise InvalidInputError("usage: missing required column 'gpu_model' (give tdp_w as a number of watts)")
    from gpucost import catalog
    models = usage["gpu_model"].astype("string").fillna("")
    if tdp_w is None:
        rows = catalog.instance_types()
        rows = rows[rows["gpu_tdp_w"].fillna(0) > 0]  # 0: the catalog does not state it
        known = rows.drop_duplicates("gpu_model").set_index("gpu_model")["gpu_tdp_w"]
        lookup = {m: float(known.get(catalog.canonical_gpu_model(m), np.nan)) if m else np.nan
                  for m in models.unique()}
    elif isinstance(tdp_w, Mapping):
        lookup = {m: float(tdp_w.get(m, np.nan)) for m in models.unique()}
    else:
        raise InvalidInputError(f"estimate_power: tdp_w: expected watts or a mapping by gpu_model, "
                                f"got {type(tdp_w).__name__}")
    tdp = models.map(lookup).to_numpy(dtype=float)
    missing = np.isnan(tdp)
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise InvalidInputError(f"usage: row {row}, column 'gpu_model': no nameplate TDP known for "
                                f"{models.iloc[row]!r} (give tdp_w={{model: watts}})")
    return tdp


def _curve(points: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 2 or np.any(np.diff(pts[:, 0]) <= 0) \
            or pts[0, 0] > 0 or pts[-1, 0] < 1 or np.any(pts[:, 1] < 0):
        raise InvalidInputError("estimate_power: curve: expected [[util, fraction of TDP], ...] with util rising "
                                "from 0 to 1 and fractions >= 0")
    return pts[:, 0], pts[:, 1]


def estimate_power(usage: pd.DataFrame, tdp_w: Any = None, *,
                   curve: Sequence[Sequence[float]] = DEFAULT_POWER_CURVE) -> pd.DataFrame:
    """Usage with ``power_w`` estimated where it is NaN or absent, and
    ``power_estimated`` saying which samples were filled.

    A device's estimated draw at an instant is ``tdp × curve(u)``, where
    ``u`` is the device's utilisation then: the sum of ``share × util`` of
    every row of that device and instant (capped at 1), so MIG slices and
    time-sliced holders share one device's draw as measured draws are shared
    (docs/semantics.md, 9). Measured readings are kept.

    Args:
        usage: usage samples (a pandas DataFrame), with ``gpu_model`` unless
            ``tdp_w`` is a number.
        tdp_w: the nameplate TDP in W: a number, a mapping by ``gpu_model``,
            or None for the catalog's (DGX/HGX H100, H200, B200, A100 80GB,
            MI300X).
        curve: ``[[util, fraction of TDP], ...]``, linear between the points,
            from util 0 to 1 (default: a quarter of TDP idle, all of it busy).

    Examples:
        A GPU 80 % busy, its draw not logged, beside one measured at 650 W:

        >>> usage = pd.DataFrame({"timestamp": pd.Timestamp("2026-03-02", tz="UTC"), "resource_id": "n1",
        ...                       "device": [0, 1], "consumer": ["a", "b"], "share": 1.0, "util": [0.8, 0.9],
        ...                       "mem_used": 0.0, "power_w": [np.nan, 650.0]})
        >>> gpucost.estimate_power(usage, tdp_w=700)[["device", "power_w", "power_estimated"]]
           device  power_w  power_estimated
        0       0    595.0             True
        1       1    650.0            False
    """
    if not isinstance(usage, pd.DataFrame):
        raise TypeError(f"usage: expected a pandas DataFrame, got {type(usage).__name__}")
    xs, ys = _curve(curve)
    power = usage["power_w"].to_numpy(dtype=float) if "power_w" in usage.columns else np.full(len(usage), np.nan)
    fill = np.isnan(power)
    out = usage.copy()
    if fill.any():
        keys = [usage["resource_id"], usage["device"], usage["timestamp"]]
        busy = (usage["share"].to_numpy(dtype=float) * usage["util"].to_numpy(dtype=float))
        device_util = pd.Series(busy, index=usage.index).groupby(keys, sort=False, observed=True).transform("sum")
        fraction = np.interp(np.clip(device_util.to_numpy(), 0.0, 1.0), xs, ys)
        tdp = _tdp_of(usage.loc[fill], tdp_w)
        power = power.copy()
        power[fill] = tdp * fraction[fill]
    out["power_w"] = power
    out["power_estimated"] = fill
    return out
