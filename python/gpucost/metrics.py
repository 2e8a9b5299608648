"""Prometheus exposition of allocation results, so Grafana can show cost next
to DCGM utilisation (docs/metrics.md).

``gpucost export-metrics`` serves it on ``/metrics`` or writes it for
node-exporter's textfile collector. Every value is a column of a
:func:`gpucost.allocate` result; this module only formats them (text format
0.0.4: ``# HELP``/``# TYPE`` before the samples, escaped label values, a
final newline).
"""

from __future__ import annotations

import http.server
import math
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gpucost.errors import InvalidInputError

__all__ = ["exposition", "rolling_exposition", "write_textfile", "MetricsServer", "METRICS", "CONTENT_TYPE",
           "ROLLING_WINDOWS"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: metric suffix -> (allocation column, help text)
METRICS = {
    "cost_dollars": ("cost", "Cost allocated to the group over the window, idle share included (USD)."),
    "idle_cost_dollars": ("idle_cost", "Part of the cost that paid for idle GPU capacity (USD)."),
    "gpu_hours": ("gpu_hours", "GPU-hours held by the group over the window (idle GPU-hours on group __idle__)."),
    "effective_gpu_hours": ("effective_gpu_hours", "GPU-hours held times utilisation over the window."),
    "efficiency_ratio": (None, "Effective GPU-hours over GPU-hours held (0-1)."),
    "cost_per_effective_gpu_hour_dollars": ("cost_per_effective_gpu_hour",
                                            "Cost per effective GPU-hour (USD); absent when no GPU time was used."),
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def exposition(allocation: pd.DataFrame, by: Sequence[str] = ("team", "project"), *, prefix: str = "gpucost",
               window: str = "", extra_labels: dict[str, str] | None = None,
               generated_at: float | None = None) -> str:
    """The allocation (one row per ``by`` group) as exposition text: one
    gauge per metric of :data:`METRICS`, labelled by the ``by`` columns (and
    ``window`` when given), plus ``<prefix>_last_update_timestamp_seconds``."""
    by = list(by)
    for c in [*by, "cost", "gpu_hours", "effective_gpu_hours"]:
        if c not in allocation.columns:
            raise InvalidInputError(f"allocation: missing required column '{c}'")
    if not prefix.replace("_", "").isalnum() or prefix[0].isdigit():
        raise InvalidInputError(f"parameter 'prefix': {prefix!r} is not a metric name prefix")
    const = dict(extra_labels or {})
    if window:
        const["window"] = window
    label_sets = []
    for row in allocation[by].astype(str).itertuples(index=False):
        pairs = {**dict(zip(by, row)), **const}
        label_sets.append(",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items()))
    held = allocation["gpu_hours"].to_numpy(dtype=np.float64)
    used = allocation["effective_gpu_hours"].to_numpy(dtype=np.float64)
    lines: list[str] = []
    for suffix, (column, help_text) in METRICS.items():
        if column is None:
            values = np.divide(used, held, out=np.full_like(used, np.nan), where=held > 0)
        elif column in allocation.columns:
            values = allocation[column].to_numpy(dtype=np.float64)
        else:
            continue
        name = f"{prefix}_{suffix}"
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        for labels, v in zip(label_sets, values):
            if np.isnan(v):
                continue  # absent rather than NaN: no GPU time, no ratio
            lines.append(f"{name}{{{labels}}} {_number(v)}")
    name = f"{prefix}_last_update_timestamp_seconds"
    lines += [f"# HELP {name} When gpucost computed these metrics (Unix time).", f"# TYPE {name} gauge",
              f"{name} {_number(time.time() if generated_at is None else generated_at)}"]
    return "\n".join(lines) + "\n"


#: the trailing windows of rolling_exposition, as Prometheus range labels
ROLLING_WINDOWS = ("1h", "24h", "7d")
_RANGE_HOURS = {"1h": 1, "24h": 24, "7d": 168}


def rolling_exposition(hourly: pd.DataFrame, by: Sequence[str] = ("team", "project"), *, prefix: str = "gpucost",
                       end: object = None, windows: Sequence[str] = ROLLING_WINDOWS) -> str:
    """Cost and idle cost per group over trailing windows ending at ``end``
    (default: the end of the data's last hour), so a Grafana panel shows
    trends without recomputing: ``<prefix>_cost_last_dollars`` and
    ``<prefix>_idle_cost_last_dollars``, labelled by the ``by`` columns and
    ``range`` (``1h``, ``24h``, ``7d``). ``hourly`` is an allocation by
    ``[*by, "period"]`` with ``freq="h"``; an hour counts in a window when it
    starts in [end - range, end). Every group appears in every window (0 when
    it spent nothing there)."""
    by = list(by)
    for c in [*by, "period", "cost"]:
        if c not in hourly.columns:
            raise InvalidInputError(f"allocation: missing required column '{c}' (allocate by [*by, 'period'], "
                                    "freq='h')")
    period = pd.to_datetime(hourly["period"], utc=True)
    stop = period.max() + pd.Timedelta(hours=1) if end is None else pd.Timestamp(end)
    stop = stop.tz_localize("UTC") if stop.tzinfo is None else stop.tz_convert("UTC")
    groups = hourly[by].astype(str).drop_duplicates().sort_values(by).reset_index(drop=True)
    metrics = [("cost_last_dollars", "cost", "Cost allocated to the group over the trailing range (USD)."),
               ("idle_cost_last_dollars", "idle_cost", "Part of it that paid for idle GPU capacity (USD).")]
    lines: list[str] = []
    for suffix, column, help_text in metrics:
        if column not in hourly.columns:
            continue
        name = f"{prefix}_{suffix}"
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for window in windows:
            length = pd.Timedelta(_RANGE_HOURS[window], unit="h") if window in _RANGE_HOURS else \
                pd.Timedelta(window)
            inside = ((period >= stop - length) & (period < stop)).to_numpy()
            sums = hourly[inside].astype({c: str for c in by}).groupby(by)[column].sum()
            values = groups.join(sums, on=by)[column].fillna(0.0).to_numpy(np.float64)
            for row, v in zip(groups.itertuples(index=False), values):
                labels = ",".join(f'{k}="{_escape(str(x))}"' for k, x in zip(by, row))
                lines.append(f'{name}{{{labels},range="{window}"}} {_number(v)}')
    return "\n".join(lines) + "\n" if lines else ""


def write_textfile(text: str, path: str | Path) -> Path:
    """Writes exposition text for node-exporter's textfile collector: a
    ``.prom`` file replaced atomically (the collector never reads half a file)."""
    from gpucost.demo import atomic_write
    path = Path(path)
    if path.suffix != ".prom":
        raise InvalidInputError(f"{path}: the textfile collector reads only files ending in .prom")
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


class MetricsServer:
    """Serves ``/metrics`` on ``host:port`` (port 0 picks a free one) from
    ``render()``, re-rendered at most every ``refresh`` seconds (``None``:
    render once). ``start()`` runs in a thread; ``serve_forever()`` blocks."""

    def __init__(self, render: Callable[[], str], host: str = "127.0.0.1", port: int = 9108,
                 refresh: float | None = None):
        self._render = render
        self._refresh = refresh
        self._text = render()
        self._stamp = time.monotonic()
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404, "gpucost serves /metrics")
                    return
                body = server.text().encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # quiet: one line per scrape is noise
                pass

        try:
            self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            raise InvalidInputError(f"--listen {host}:{port}: {exc.strerror or exc}") from None
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        return self.httpd.server_address[:2]

    def text(self) -> str:
        with self._lock:
            if self._refresh is not None and time.monotonic() - self._stamp >= self._refresh:
                self._text = self._render()
                self._stamp = time.monotonic()
            return self._text

    def start(self) -> MetricsServer:
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="gpucost-metrics", daemon=True)
        self.thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
