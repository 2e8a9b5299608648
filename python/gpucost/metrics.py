"""Prometheus exposition of allocation results, so Grafana can show cost next
to DCGM utilisation (docs/metrics.md).

``gpucost export-metrics`` serves it on ``/metrics`` or writes it for
node-exporter's textfile collector. Every value is a column of a
:func:`gpucost.allocate` result; this module only formats them (text format
0.0.4: ``# HELP``/``# TYPE`` before the samples, escaped label values, a
final newline).
"""

from __future__ import annotations

import asyncio
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from gpucost.errors import InvalidInputError

__all__ = ["exposition", "rolling_exposition", "write_textfile", "MetricsServer", "METRICS", "CONTENT_TYPE",
           "ROLLING_WINDOWS"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_HEAD_LIMIT = 16 * 1024  # a scrape's request head is a few hundred bytes
#: metric suffix -> (allocation column, help text)
METRICS = {
    "cost_dollars": ("cost", "Cost allocated to the group over the window, idle share included (label currency; USD without it)."),
    "idle_cost_dollars": ("idle_cost", "Part of the cost that paid for idle GPU capacity (label currency; USD without it)."),
    "gpu_hours": ("gpu_hours", "GPU-hours held by the group over the window (idle GPU-hours on group __idle__)."),
    "effective_gpu_hours": ("effective_gpu_hours", "GPU-hours held times utilisation over the window."),
    "efficiency_ratio": (None, "Effective GPU-hours over GPU-hours held (0-1)."),
    "cost_per_effective_gpu_hour_dollars": ("cost_per_effective_gpu_hour",
                                            "Cost per effective GPU-hour (label currency; USD without it); absent when no GPU time was used."),
    # With power readings (docs/energy.md): absent without them.
    "energy_kilowatt_hours": ("energy_kwh", "GPU energy the group drew over the window (idle GPUs' on group __idle__)."),
    "facility_energy_kilowatt_hours": ("facility_energy_kwh", "The group's GPU energy times the PUE over the window."),
    "co2e_kilograms": ("co2e_kg", "CO2e of the group's energy over the window at the grid's intensity (location-based)."),
    # With the inventory's embodied_kg_per_gpu_hour: absent without it.
    "embodied_co2e_kilograms": ("embodied_co2e_kg", "Embodied (scope 3) CO2e of the GPU-hours the group held over the "
                                                    "window (idle capacity's on group __idle__)."),
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
    ``window`` when given), plus ``<prefix>_last_update_timestamp_seconds``.
    When the allocation has a ``currency`` column (bills that carry one), every
    series is also labelled with it: money in two currencies is never one value."""
    by = list(by)
    if "currency" in allocation.columns and "currency" not in by:
        by.append("currency")
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


class _ErrorLog:
    """One line per error, at most ``burst`` lines per ``period`` seconds;
    the count of lines held back is printed when the next one may go out."""

    def __init__(self, stream: TextIO | None, burst: int = 5, period: float = 60.0):
        self._stream = stream
        self._burst, self._period = burst, period
        self._window = -math.inf
        self._sent = self._held = 0
        self._lock = threading.Lock()

    def __call__(self, message: str) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        line = " ".join(str(message).split())  # one line, whatever the exception said
        with self._lock:
            now = time.monotonic()
            if now - self._window >= self._period:
                if self._held:
                    print(f"gpucost export-metrics: {self._held} more errors in the last {self._period:g} s "
                          "not shown", file=stream, flush=True)
                self._window, self._sent, self._held = now, 0, 0
            if self._sent >= self._burst:
                self._held += 1
                return
            self._sent += 1
            print(f"gpucost export-metrics: {line}", file=stream, flush=True)


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
            503: "Service Unavailable"}
_QUIET = (ConnectionError, TimeoutError, asyncio.TimeoutError, asyncio.IncompleteReadError)


class MetricsServer:
    """Serves ``/metrics`` on ``host:port`` (port 0 picks a free one) from
    ``render()``, re-rendered at most every ``refresh`` seconds (``None``:
    render once). ``start()`` runs in a thread; ``serve_forever()`` blocks.

    Bounded and quiet: one event loop holds every connection (a slow client
    costs a socket, not a thread); at most ``max_connections`` at once (more
    are answered 503 at once); a client has ``read_timeout`` seconds to send
    its request head (at most 16 KiB) and to take the answer; a client that
    goes away is not an error. Errors are one line each on ``log`` (stderr),
    at most 5 a minute; ``access_log`` (a path, ``"-"`` for stderr, or a
    text stream) gets one line per request."""

    def __init__(self, render: Callable[[], str], host: str = "127.0.0.1", port: int = 9108,
                 refresh: float | None = None, *, max_connections: int = 256, read_timeout: float = 10.0,
                 access_log: str | Path | TextIO | None = None, log: TextIO | None = None):
        if not isinstance(max_connections, int) or max_connections < 1:
            raise InvalidInputError(f"max_connections: expected an integer >= 1, got {max_connections!r}")
        if not read_timeout > 0:
            raise InvalidInputError(f"read_timeout: expected seconds > 0, got {read_timeout!r}")
        self._render = render
        self._refresh = refresh
        self._text = render()
        self._stamp = time.monotonic()
        self._lock = threading.Lock()
        self._max = max_connections
        self._timeout = float(read_timeout)
        self._error = _ErrorLog(log)
        named = isinstance(access_log, (str, Path))
        self._own_access = named and str(access_log) != "-"
        if access_log is None:
            self._access: TextIO | None = None
        elif named and str(access_log) == "-":
            self._access = sys.stderr
        elif self._own_access:
            try:
                self._access = open(access_log, "a", encoding="utf-8")  # noqa: SIM115 - closed in stop()
            except OSError as exc:
                raise InvalidInputError(f"{access_log}: {exc.strerror or exc} (access log)") from None
        else:
            self._access = access_log  # type: ignore[assignment]
        self.active = 0
        self.stats = {"requests": 0, "refused": 0, "timeouts": 0, "disconnects": 0, "errors": 0}
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(self._loop_error)
        try:
            self._server = self._loop.run_until_complete(asyncio.start_server(
                self._client, host, port, limit=_HEAD_LIMIT, backlog=max(128, min(max_connections, 4096))))
        except OSError as exc:
            self._loop.close()
            if self._own_access and self._access is not None:
                self._access.close()
            raise InvalidInputError(f"--listen {host}:{port}: {exc.strerror or exc}") from None
        self._address = self._server.sockets[0].getsockname()[:2]
        self.thread: threading.Thread | None = None
        self._done = threading.Event()  # set when the loop's thread has stopped
        self._writers: set[asyncio.StreamWriter] = set()  # the connections being served

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        exc = context.get("exception")
        if isinstance(exc, (asyncio.CancelledError, *_QUIET)):
            return  # a connection that ended or was dropped at stop(): not an error
        self._error(f"{context.get('message', 'error')}: {exc!r}")

    @property
    def address(self) -> tuple[str, int]:
        return self._address

    def text(self) -> str:
        with self._lock:
            if self._refresh is not None and time.monotonic() - self._stamp >= self._refresh:
                self._text = self._render()
                self._stamp = time.monotonic()
            return self._text

    async def _body(self) -> str:
        if self._refresh is not None and time.monotonic() - self._stamp >= self._refresh:
            return await self._loop.run_in_executor(None, self.text)  # a render never blocks other clients
        return self._text

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else str(peer)
        if self.active >= self._max:
            self.stats["refused"] += 1
            try:
                await self._answer(writer, host, "-", 503, b"gpucost: too many connections, retry\n")
            except _QUIET:
                pass
            finally:
                self._close(writer)
            return
        self.active += 1
        self._writers.add(writer)
        request = "-"
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self._timeout)
            except asyncio.TimeoutError:
                self.stats["timeouts"] += 1
                return
            except (asyncio.LimitOverrunError, ValueError):
                await self._answer(writer, host, request, 431, b"gpucost: request head over 16 KiB\n")
                return
            request = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = request.split()
            if len(parts) != 3 or not parts[2].startswith("HTTP/"):
                await self._answer(writer, host, request, 400, b"gpucost: not an HTTP request\n")
                return
            method, target = parts[0], parts[1]
            if method not in ("GET", "HEAD"):
                await self._answer(writer, host, request, 405, b"gpucost serves GET /metrics\n")
                return
            if target.split("?")[0] not in ("/metrics", "/"):
                await self._answer(writer, host, request, 404, b"gpucost serves /metrics\n")
                return
            try:
                body = (await self._body()).encode("utf-8")
            except Exception as exc:  # noqa: BLE001 - the scrape fails, the server stays up
                self.stats["errors"] += 1
                self._error(f"rendering the metrics failed: {type(exc).__name__}: {exc}")
                await self._answer(writer, host, request, 500, b"gpucost: rendering the metrics failed\n")
                return
            await self._answer(writer, host, request, 200, body, head_only=method == "HEAD")
        except _QUIET:
            self.stats["disconnects"] += 1  # the client went away or stalled: its business, not an error
        except Exception as exc:  # noqa: BLE001 - one line, never a traceback
            self.stats["errors"] += 1
            self._error(f"{host}: {request}: {type(exc).__name__}: {exc}")
        finally:
            self.active -= 1
            self._writers.discard(writer)
            self._close(writer)

    @staticmethod
    def _close(writer: asyncio.StreamWriter) -> None:
        if writer.transport.get_write_buffer_size():
            writer.transport.abort()  # a client that stopped reading gets no more of our memory
        else:
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, host: str, request: str, status: int, body: bytes,
                      head_only: bool = False) -> None:
        content_type = CONTENT_TYPE if status == 200 else "text/plain; charset=utf-8"
        head = (f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("latin-1")
        self.stats["requests"] += 1
        try:
            writer.transport.set_write_buffer_limits(high=0)  # drain() returns once all of it is sent
            writer.write(head if head_only else head + body)
            await asyncio.wait_for(writer.drain(), self._timeout)
        except _QUIET:
            self.stats["disconnects"] += 1
            return
        finally:
            if self._access is not None:
                stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime())
                safe = request.encode("unicode_escape").decode("ascii").replace('"', '\\"')
                try:
                    print(f'{host} - - [{stamp}] "{safe}" {status} {len(body)}', file=self._access, flush=True)
                except (OSError, ValueError) as exc:
                    self._error(f"access log: {exc}")

    def start(self) -> MetricsServer:
        self.thread = threading.Thread(target=self._run, name="gpucost-metrics", daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            self._loop.run_forever()
        finally:
            self._done.set()

    def serve_forever(self) -> None:
        if self.thread is None:
            self.start()
        # time.sleep, not Thread.join: a Ctrl-C inside join() can leave the
        # thread looking dead to is_alive() (CPython 3.11).
        while not self._done.is_set():
            time.sleep(0.2)

    def stop(self) -> None:
        if self._loop.is_closed():
            return

        async def close() -> None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()  # slow clients still held are dropped; their handlers end quietly
            clients = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            try:
                await asyncio.wait_for(asyncio.gather(*clients, return_exceptions=True), 5)
            except asyncio.TimeoutError:
                pass
            for _ in range(3):  # closed transports release their sockets on the next turns of the loop
                await asyncio.sleep(0)

        if self.thread is not None and not self._done.is_set():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._done.wait(10)
        else:
            self._loop.run_until_complete(close())
        self._loop.run_until_complete(self._loop.shutdown_default_executor())  # the render thread, if any
        self._loop.close()
        if self._own_access and self._access is not None:
            self._access.close()
