"""Rate-card invoices of GPU clouds as cost lines (docs/formats.md, "Rate-card
invoices"): a plain CSV billed by the instance- or GPU-hour, one row per
invoice line, its columns found by their usual names or mapped by hand.

A line names a node or instance, a period (``start`` and ``end``, or a
``date``: the whole UTC day, or the day in ``tz``), a quantity and its unit
(GPU-hours, instance-hours, or minutes, seconds, milliseconds of either), a
rate, an amount and a currency. It becomes one cost line (SEMANTICS 1.1) with
``pricing`` :attr:`gpucost.Purchase.RATE_CARD`: ``cost`` is the amount (or
rate x quantity when the line has no amount), ``quantity_hours`` the
instance-hours billed within the period (GPU-hours divided by the node's
GPUs), ``primary`` true for lines that bill time. Node names become the
bill's ids through the hosts table, as sacct's and nvidia-smi's do.

Bad input is an :class:`gpucost.InvalidInputError` naming the file, the
line and the column; an amount that differs from rate x quantity by more
than one minor unit of its currency (a cent) is one too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.errors import InvalidInputError
from gpucost.frames import Table
from gpucost.model import Purchase
from gpucost.money import minor_unit

__all__ = ["read_invoice", "INVOICE_COLUMNS", "GPU_HOUR", "INSTANCE_HOUR"]

GPU_HOUR = "gpu_hour"
INSTANCE_HOUR = "instance_hour"

#: Each role of an invoice column and the names it is found by, first match
#: wins (compared lower case, runs of other characters as one "_").
INVOICE_COLUMNS: dict[str, tuple[str, ...]] = {
    "resource": ("instance", "instance_id", "instance_name", "node", "node_name", "hostname", "host", "resource",
                 "resource_id", "resource_name", "machine", "server", "vm", "pod_id", "podid"),
    "start": ("start", "period_start", "usage_start", "start_time", "starttime", "usage_start_time",
              "billing_period_start", "from"),
    "end": ("end", "period_end", "usage_end", "end_time", "endtime", "usage_end_time", "billing_period_end", "to"),
    "date": ("date", "usage_date", "day", "billing_date", "time"),
    "quantity": ("quantity", "hours", "qty", "usage_hours", "gpu_hours", "instance_hours", "node_hours",
                 "usage_quantity", "billed_hours", "usage"),
    "unit": ("unit", "units", "unit_of_measure", "uom", "pricing_unit", "usage_unit"),
    "rate": ("rate", "unit_price", "price", "hourly_rate", "price_per_hour", "rate_per_hour"),
    "amount": ("amount", "total", "cost", "line_total", "amount_usd", "charge", "charges", "subtotal"),
    "currency": ("currency", "currency_code"),
    "description": ("description", "sku", "product", "item", "line_item"),
    "gpu_type": ("gpu_type", "gpu", "gpu_model", "gpu_type_id", "gputypeid"),
    "gpus": ("gpus", "gpu_count", "num_gpus", "gpus_per_instance", "gpus_per_node"),
}

# Time units: the letters of a unit (GPU, instance and "per" taken out) -> hours per unit.
_TIME_UNITS = {**dict.fromkeys(("hour", "hours", "hr", "hrs", "h"), 1.0),
               **dict.fromkeys(("minute", "minutes", "min", "mins"), 1 / 60),
               **dict.fromkeys(("second", "seconds", "sec", "secs", "s"), 1 / 3600),
               **dict.fromkeys(("millisecond", "milliseconds", "ms"), 1 / 3_600_000)}
_NOT_UNIT = re.compile(r"gpus?|instances?|nodes?|servers?|machines?|per|usage|billed|[^a-z]")
_OFFSET = r"(?:Z|[+-]\d\d:?\d\d)$"
_GROUPED = r"-?\d{1,3}(?:,\d{3})+(?:\.\d*)?"  # 1,234.56: thousands separators, never a decimal comma


def read_invoice(source: Any, *, columns: Mapping[str, str] | None = None, unit: str | None = None,
                 currency: str | None = None, tz: str | None = None, hosts: Any = None, gpus: Any = None,
                 date_format: str | None = None) -> pd.DataFrame:
    """A GPU cloud's rate-card invoice (CSV) as cost lines, one per invoice line.

    Args:
        source: a CSV path (``.gz`` too), a list of them, or a DataFrame of
            the invoice's text.
        columns: role -> the invoice's column, for names the defaults do not
            know (:data:`INVOICE_COLUMNS`: ``resource``, ``start``, ``end``,
            ``date``, ``quantity``, ``unit``, ``rate``, ``amount``,
            ``currency``, ``description``, ``gpu_type``, ``gpus``).
            Required: ``resource``; ``start`` and ``end``, or ``date``;
            ``amount``, or ``rate`` and ``quantity``.
        unit: the quantity's unit where the invoice has no ``unit`` column or
            leaves it empty: ``"gpu_hour"`` or ``"instance_hour"`` (default: GPU-hours
            when the quantity column is named so, ``gpu_hours``, else instance-hours).
        currency: the currency (ISO 4217) where the invoice has no
            ``currency`` column or leaves it empty; without either, the
            lines have no ``currency`` column.
        tz: the time zone (IANA) of times written without an offset and of
            dates (default UTC). A ``date`` line spans that whole day.
        hosts: a ``host`` (or ``node``), ``resource_id`` table: invoice names
            -> the ids telemetry knows; names not in it stay as written.
        gpus: each node's GPU count, to turn GPU-hours into instance-hours: a
            number, a mapping of name or resource id -> count, or a table with
            ``gpus`` (the hosts table's); an invoice ``gpus`` column wins.
        date_format: a ``strftime`` format of the dates and times (default ISO 8601).

    Rules: ``quantity_hours`` is the instance-hours a line bills within its
    period (GPU-hours / the node's GPUs; more than the period is an error);
    lines whose unit is no time (GiB-months, fees) keep their money with
    ``primary`` false, as do lines of quantity 0 or less; a line without a
    quantity bills its whole period. ``gpus`` is each line's node GPU count
    where known (NaN otherwise): with ``gpu_model`` it lists the node's
    devices when no inventory does (the CLI's plan). A line with an amount, a rate and a
    quantity whose amount differs from rate x quantity by more than one
    minor unit of its currency (a cent) is an error naming the file, the
    line and the columns. ``attrs["invoice"]`` reports the files, lines,
    totals per currency, the period, the columns read and the names the
    hosts table joined or not.

    Examples:
        A burst week's first day: two 8-GPU nodes by the GPU-hour, one by
        start and end, one by date and hours; the hosts table names their ids.

        >>> from pathlib import Path
        >>> _ = Path("burst.csv").write_text(
        ...     "Instance,Period Start,Period End,Date,GPU Type,Quantity,Unit,Unit Price,Amount,Currency\\n"
        ...     "burst-01,2026-03-02T00:00:00Z,2026-03-02T12:00:00Z,,H100,96,GPU-hour,2.49,239.04,USD\\n"
        ...     "burst-02,,,2026-03-02,H100,80,GPU-hour,2.49,199.20,USD\\n")
        >>> hosts = pd.DataFrame({"host": ["burst-01", "burst-02"], "resource_id": ["cw-01", "cw-02"]})
        >>> lines = gpucost.read_invoice("burst.csv", hosts=hosts, gpus=8)
        >>> lines[["resource_id", "start", "end", "cost", "quantity_hours", "pricing", "primary"]]
          resource_id                     start                       end    cost  quantity_hours    pricing  primary
        0       cw-01 2026-03-02 00:00:00+00:00 2026-03-02 12:00:00+00:00  239.04            12.0  rate_card     True
        1       cw-02 2026-03-02 00:00:00+00:00 2026-03-03 00:00:00+00:00  199.20            10.0  rate_card     True
        >>> lines.attrs["invoice"]["total"], lines.attrs["invoice"]["names_unjoined"]
        ({'USD': 438.24}, [])

        An amount that is not rate x quantity is an error naming the line:

        >>> _ = Path("bad.csv").write_text("node,date,hours,rate,amount\\ngpu1,2026-03-02,24,2.49,61.00\\n")
        >>> gpucost.read_invoice("bad.csv", currency="USD")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: bad.csv: line 2, column 'amount': 61.00 is not rate 2.49 x quantity 24 = 59.76 ...
    """
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    if not items:
        raise InvalidInputError("read_invoice: no invoice given")
    if unit is not None and unit not in (GPU_HOUR, INSTANCE_HOUR):
        raise InvalidInputError(f"parameter 'unit': {unit!r} is not one of {GPU_HOUR}, {INSTANCE_HOUR}")
    frames = [_one(item, dict(columns or {}), unit, currency, tz or "UTC", hosts, gpus, date_format)
              for item in items]
    stated = ["currency" in f.columns for f in frames]
    if any(stated) and not all(stated):  # two invoices, one without a currency: never added as if one
        raise InvalidInputError(f"{frames[stated.index(False)].attrs['source']}: states no currency while "
                                f"{frames[stated.index(True)].attrs['source']} does: give currency=")
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    for column in ("resource_id", "resource_name", "currency", "pricing", "sku", "gpu_model", "unit"):
        if column in out.columns:
            out[column] = out[column].astype("category")
    out.attrs["invoice"] = _report(out, frames, hosts)
    out.attrs["source"] = ", ".join(f.attrs["source"] for f in frames)
    return out


# ---- one file -------------------------------------------------------------------------------


class _Where:
    """Where a cell is, in the words of the errors: a file's 1-based line or a frame's row."""

    def __init__(self, name: str, is_file: bool):
        self.name, self.is_file = name, is_file

    def error(self, row: int, column: str, what: str) -> InvalidInputError:
        kind, number = ("line", row + 2) if self.is_file else ("row", row)
        return InvalidInputError(f"{self.name}: {kind} {number}, column '{column}': {what}", table=self.name,
                                 column=column, reason=what, **{kind: number})

    def first(self, mask: Any, column: str, values: pd.Series, what: str) -> InvalidInputError:
        """The error at the first line ``mask`` marks (``values``' index: the lines' own numbers)."""
        pos = int(np.flatnonzero(np.asarray(mask))[0])
        return self.error(int(values.index[pos]), column, f"{values.iloc[pos]!r} {what}")


def _text(item: Any) -> tuple[pd.DataFrame, _Where]:
    """The invoice's cells as stripped text (a BOM and blank lines dropped)."""
    if isinstance(item, pd.DataFrame):
        frame = item.reset_index(drop=True).astype(object)
        frame, where = frame.where(frame.notna(), ""), _Where("invoice", False)
    elif isinstance(item, (str, os.PathLike)):
        where = _Where(os.fspath(item), True)
        try:
            frame = pd.read_csv(item, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                                skip_blank_lines=False)
        except FileNotFoundError:
            raise InvalidInputError(f"{where.name}: no such file (invoice)") from None
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
            raise InvalidInputError(f"{where.name}: {str(exc).strip().splitlines()[0]}") from None
    else:
        raise TypeError(f"read_invoice: expected a path or a DataFrame, got {type(item).__name__}")
    return frame.astype(str).apply(lambda c: c.str.strip()) if len(frame.columns) else frame, where


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_")


def _find_columns(header: Sequence[str], given: Mapping[str, str], where: _Where) -> dict[str, str]:
    """role -> the invoice's column: the mapping given, else the first known name present."""
    unknown = sorted(set(given) - set(INVOICE_COLUMNS))
    if unknown:
        raise InvalidInputError(f"parameter 'columns': unknown role '{unknown[0]}' (one of "
                                f"{', '.join(INVOICE_COLUMNS)})")
    by_norm: dict[str, str] = {}
    for name in header:
        by_norm.setdefault(_norm(name), name)
    found: dict[str, str] = {}
    for role, names in INVOICE_COLUMNS.items():
        if role in given:
            wanted = by_norm.get(_norm(given[role]))
            if wanted is None:
                raise InvalidInputError(f"{where.name}: missing required column '{given[role]}' (mapped as the "
                                        f"invoice's {role}; its columns are {', '.join(map(str, header))})",
                                        table=where.name, column=str(given[role]))
            found[role] = wanted
        else:
            hit = next((by_norm[n] for n in names if n in by_norm and by_norm[n] not in found.values()), None)
            if hit is not None:
                found[role] = hit
    return found


def _missing(where: _Where, column: str, what: str) -> InvalidInputError:
    return InvalidInputError(f"{where.name}: missing required column '{column}' ({what})", table=where.name,
                             column=column)


def _required(found: Mapping[str, str], where: _Where) -> None:
    """The roles every invoice needs, named as the defaults spell them."""
    if "resource" not in found:
        raise _missing(where, "instance", "the node or instance: instance, node, hostname, resource, ...; or map "
                                          "yours with columns: resource = \"...\"")
    if "date" not in found and not ("start" in found and "end" in found):
        raise _missing(where, "end" if "start" in found else "start",
                       "the period: start and end, or date (a whole day) with quantity")
    if "amount" not in found and not ("rate" in found and "quantity" in found):
        raise _missing(where, "amount", "or rate and quantity to compute it from")


def _numbers(frame: pd.DataFrame, column: str | None, where: _Where) -> pd.Series:
    """A numeric column (NaN where empty); '$1,234.50' reads as 1234.5, anything else not a number is an error."""
    if column is None:
        return pd.Series(np.nan, index=frame.index)
    text = frame[column].str.replace(r"^(-?)[$€£]", r"\1", regex=True)
    text = text.where(~text.str.fullmatch(_GROUPED), text.str.replace(",", "", regex=False))
    values = pd.to_numeric(text.mask(text == ""), errors="coerce")
    bad = (values.isna() & (text != "")) | np.isinf(values)
    if bad.any():
        raise where.first(bad, column, frame[column], "is not a number")
    return values.astype(float)


def _instants(frame: pd.DataFrame, column: str, tz: str, fmt: str | None, where: _Where) -> pd.Series:
    """A date or time column as UTC instants: offsets as written, other values in ``tz``."""
    text = frame[column]
    if (text == "").any():
        raise where.first(text == "", column, text, "is empty (expected a date or time)")
    out = pd.Series(pd.NaT, index=text.index, dtype="datetime64[ns, UTC]")
    aware = text.str.contains(_OFFSET, regex=True) if fmt is None else pd.Series(False, index=text.index)
    if aware.any():
        out[aware] = pd.to_datetime(text[aware], utc=True, errors="coerce", format="ISO8601")
    naive = ~aware
    if naive.any():
        local = pd.to_datetime(text[naive], errors="coerce", format=fmt or "ISO8601")
        out[naive] = local.dt.tz_localize(tz, ambiguous="NaT", nonexistent="NaT").dt.tz_convert("UTC")
    bad = out.isna()
    if bad.any():
        form = "ISO 8601, e.g. 2026-03-02 or 2026-03-02T10:00:00Z" if fmt is None else f"format {fmt!r}"
        raise where.first(bad, column, text, f"is not a date or time ({form}; a local time that a clock change "
                                             "skips or repeats needs an offset)")
    return out.astype("datetime64[ns, UTC]")


def _period(frame: pd.DataFrame, found: Mapping[str, str], tz: str, fmt: str | None,
            where: _Where) -> tuple[pd.Series, pd.Series]:
    """Each line's [start, end): its start and end, or (both empty, or no such
    columns) its date's whole day in tz, from midnight to the next midnight
    (23 or 25 h across a clock change)."""
    ranged = "start" in found and "end" in found
    by_date = pd.Series(not ranged, index=frame.index)
    if ranged and "date" in found:
        by_date = (frame[found["start"]] == "") & (frame[found["end"]] == "") & (frame[found["date"]] != "")
    start = pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns, UTC]")
    end = start.copy()
    if (~by_date).any():
        lines = frame[~by_date.to_numpy()]
        first, last = (_instants(lines, found[k], tz, fmt, where) for k in ("start", "end"))
        bad = last <= first
        if bad.any():
            raise where.first(bad, found["end"], lines[found["end"]], "is not after the line's start")
        start[~by_date], end[~by_date] = first, last
    if by_date.any():
        local = _instants(frame[by_date.to_numpy()], found["date"], tz, fmt, where).dt.tz_convert(tz)
        day = local.dt.tz_localize(None).dt.normalize()
        start[by_date] = day.dt.tz_localize(tz).dt.tz_convert("UTC")
        end[by_date] = (day + pd.Timedelta(days=1)).dt.tz_localize(tz).dt.tz_convert("UTC")
    return start, end


def _units(frame: pd.DataFrame, found: Mapping[str, str], default: str | None) -> tuple[np.ndarray, np.ndarray,
                                                                                      np.ndarray]:
    """Per line: its unit as read (``gpu_hour``, ``instance_hour`` or the text of
    another unit), whether it counts GPUs, and hours per unit (NaN: no time)."""
    if default is None:
        default = GPU_HOUR if "gpu" in _norm(found.get("quantity", "")) else INSTANCE_HOUR
    text = frame[found["unit"]] if "unit" in found else pd.Series("", index=frame.index)
    values = pd.unique(text)
    known: dict[str, tuple[str, bool, float]] = {"": (default, default == GPU_HOUR, 1.0)}
    for value in values:  # few distinct units: a loop over them, not the lines
        if value in known:
            continue
        letters = value.lower()
        per_gpu = "gpu" in letters
        hours = _TIME_UNITS.get(_NOT_UNIT.sub("", letters), np.nan)
        name = (GPU_HOUR if per_gpu else INSTANCE_HOUR) if hours == 1.0 else value
        known[value] = (name, per_gpu, hours)
    codes = pd.Categorical(text, categories=list(known)).codes
    table = list(known.values())
    return (np.array([t[0] for t in table], dtype=object)[codes], np.array([t[1] for t in table])[codes],
            np.array([t[2] for t in table], dtype=float)[codes])


def _hosts_map(hosts: Any) -> tuple[pd.Series, set[str]]:
    """name -> resource id of the hosts table, and every name and id it knows."""
    if hosts is None:
        return pd.Series(dtype=object), set()
    t = Table(hosts, "hosts")
    key = "host" if t.has("host") else "node"
    names = pd.Series(np.asarray(t.column(key), dtype=object)).astype(str)
    ids = pd.Series(np.asarray(t.column("resource_id"), dtype=object)).astype(str)
    mapping = pd.Series(ids.to_numpy(), index=names.to_numpy())
    return mapping[~mapping.index.duplicated(keep="last")], set(names) | set(ids)


def _gpu_counts(gpus: Any, names: pd.Series, ids: pd.Series) -> pd.Series:
    """Each line's node GPU count from ``gpus`` (by name, then by resource id)."""
    if gpus is None:
        return pd.Series(np.nan, index=names.index)
    if isinstance(gpus, (int, float, np.integer, np.floating)) and not isinstance(gpus, bool):
        return pd.Series(float(gpus), index=names.index)
    if not isinstance(gpus, Mapping):
        t = Table(gpus, "gpus")
        key = next((k for k in ("resource_id", "host", "node") if t.has(k)), "resource_id")
        gpus = dict(zip(np.asarray(t.column(key), dtype=object).astype(str),
                        pd.to_numeric(pd.Series(t.column("gpus")), errors="coerce").to_numpy(float)))
    counts = pd.Series({str(k): float(v) for k, v in gpus.items()}, dtype=float)
    return names.map(counts).fillna(ids.map(counts)).astype(float)


def _one(item: Any, given: dict, unit: str | None, currency: str | None, tz: str, hosts: Any, gpus: Any,
         fmt: str | None) -> pd.DataFrame:
    frame, where = _text(item)
    found = _find_columns(list(frame.columns), given, where)
    _required(found, where)
    if len(frame):  # rows left empty by a spreadsheet (every cell blank) are no lines
        frame = frame[(frame != "").any(axis=1).to_numpy()]
    names = frame[found["resource"]]

    start, end = _period(frame, found, tz, fmt, where)

    quantity = _numbers(frame, found.get("quantity"), where)
    rate = _numbers(frame, found.get("rate"), where)
    amount = _numbers(frame, found.get("amount"), where)
    codes = _currencies(frame, found.get("currency"), currency, where)

    computed = rate * quantity
    cost = amount.fillna(computed)
    if cost.isna().any():
        row = int(cost.index[np.flatnonzero(cost.isna().to_numpy())[0]])
        raise where.error(row, found.get("amount") or found["rate"], "no amount, and no rate and quantity to compute "
                                                                    "it from")
    tolerance = _minor(codes, found.get("currency"), frame, where)
    off = (amount - computed).abs() > tolerance + 1e-9
    if off.any():
        row = int(np.flatnonzero(off.to_numpy())[0])
        raise where.error(int(frame.index[row]), found["amount"], f"{frame[found['amount']].iloc[row]} is not rate "
                          f"{frame[found['rate']].iloc[row]} x quantity {frame[found['quantity']].iloc[row]} = "
                          f"{computed.iloc[row]:.{_decimals(tolerance.iloc[row])}f} (columns '{found['amount']}', "
                          f"'{found['rate']}', '{found['quantity']}' differ by more than "
                          f"{tolerance.iloc[row]:g}{' ' + codes.iloc[row] if codes is not None else ''})")

    mapping, known = _hosts_map(hosts)
    ids = names.map(mapping).fillna(names).astype(str) if len(mapping) else names
    quantity_hours, primary, unit_read, counts = _hours(frame, found, unit, quantity, cost.to_numpy(float), start,
                                                        end, names, ids, gpus, where)

    out = pd.DataFrame({
        "resource_id": ids.to_numpy(dtype=object), "start": start.to_numpy(), "end": end.to_numpy(),
        "cost": cost.to_numpy(float), "pricing": str(Purchase.RATE_CARD), "primary": primary,
        "quantity_hours": quantity_hours, "resource_name": names.to_numpy(dtype=object),
        "sku": frame[found["description"]].to_numpy(dtype=object) if "description" in found else None,
        "gpu_model": frame[found["gpu_type"]].to_numpy(dtype=object) if "gpu_type" in found else None,
        "gpus": counts,
        "quantity": quantity.to_numpy(float), "unit": unit_read, "rate": rate.to_numpy(float),
        "invoice": where.name, "invoice_line": (frame.index.to_numpy() + (2 if where.is_file else 0)),
    })
    out["start"] = out["start"].dt.tz_localize("UTC") if out["start"].dt.tz is None else out["start"]
    out["end"] = out["end"].dt.tz_localize("UTC") if out["end"].dt.tz is None else out["end"]
    if codes is not None:
        out.insert(4, "currency", codes.to_numpy(dtype=object))
    out.attrs["source"] = where.name
    out.attrs["columns"] = dict(found)
    out.attrs["names"] = sorted(set(names))
    out.attrs["joined"] = sorted(set(names) & known) if hosts is not None else None
    return out


def _currencies(frame: pd.DataFrame, column: str | None, default: str | None, where: _Where) -> pd.Series | None:
    """Each line's ISO 4217 code (upper case): the column, empty cells the default; None when neither says."""
    if column is None and default is None:
        return None
    codes = frame[column].str.upper() if column is not None else pd.Series("", index=frame.index)
    if default is not None:
        codes = codes.mask(codes == "", str(default).upper())
    if (codes == "").any():
        raise where.first(codes == "", column, frame[column], "is empty (give the invoice's currency: currency=)")
    return codes


def _minor(codes: pd.Series | None, column: str | None, frame: pd.DataFrame, where: _Where) -> pd.Series:
    """One minor unit of each line's currency (a cent; 0.01 when the invoice states none)."""
    if codes is None:
        return pd.Series(0.01, index=frame.index)
    units = {}
    for code in pd.unique(codes):  # few currencies: a loop over them
        try:
            units[code] = 10.0 ** -minor_unit(code)
        except InvalidInputError:
            if column is None:
                raise InvalidInputError(f"parameter 'currency': {code!r} is not an ISO 4217 code") from None
            raise where.first(codes == code, column, frame[column], "is not an ISO 4217 currency code") from None
    return codes.map(units).astype(float)


def _decimals(unit: float) -> int:
    return max(0, int(round(-np.log10(unit))))


def _hours(frame: pd.DataFrame, found: Mapping[str, str], unit: str | None, quantity: pd.Series, cost: np.ndarray,
           start: pd.Series, end: pd.Series, names: pd.Series, ids: pd.Series, gpus: Any,
           where: _Where) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each line's instance-hours within its period, whether it bills time
    (primary), its unit as read, and its node's GPU count (NaN: unknown)."""
    unit_read, per_gpu, per_unit = _units(frame, found, unit)
    timed = ~np.isnan(per_unit)
    hours = quantity.to_numpy(float) * np.where(timed, per_unit, np.nan)
    counts = _numbers(frame, found.get("gpus"), where).fillna(_gpu_counts(gpus, names, ids)).to_numpy(float)
    unit_column = found.get("unit") or found.get("quantity") or "unit"
    unknown = timed & per_gpu & ~np.isnan(hours) & ~(counts > 0)
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise where.error(int(names.index[row]), unit_column,
                          f"GPU-hours of '{names.iloc[row]}', whose GPU count is unknown: give a gpus column, the "
                          "node's gpus in the hosts table, or an inventory")
    hours = np.where(per_gpu, hours / np.where(counts > 0, counts, 1.0), hours)
    period = (end - start).dt.total_seconds().to_numpy() / 3600
    beyond = hours > period * (1 + 1e-9)
    if beyond.any():
        row = int(np.flatnonzero(beyond)[0])
        what = (f"{quantity.iloc[row]:g} {'GPU-hours' if per_gpu[row] else 'instance-hours'}"
                + (f" / {counts[row]:g} GPUs" if per_gpu[row] else "")
                + f" = {hours[row]:g} instance-hours, more than the line's period of {period[row]:g} h")
        hint = "" if per_gpu[row] else " (GPU-hours? say so in a unit column or unit = \"gpu_hour\")"
        raise where.error(int(names.index[row]), found["quantity"], what + hint)
    # A quantity of 0, a negative one or a negative amount (a refund, a credit) bills money, not time.
    primary = timed & ~(hours <= 0) & ~(cost < 0)
    return np.where(hours > 0, hours, np.nan), primary, unit_read, np.where(counts > 0, counts, np.nan)


def _report(out: pd.DataFrame, frames: Sequence[pd.DataFrame], hosts: Any) -> dict:
    """What ``attrs["invoice"]`` says: files, lines, money, period, columns, names joined."""
    if "currency" in out.columns:
        total = {str(c): round(float(v), 10) for c, v in out.groupby("currency", observed=True)["cost"].sum().items()}
    else:
        total = {"": round(float(out["cost"].sum()), 10)}
    names = sorted(set().union(*(f.attrs["names"] for f in frames)))
    joined = None if hosts is None else sorted(set().union(*(f.attrs["joined"] for f in frames)))
    return {"files": [f.attrs["source"] for f in frames], "lines": len(out), "time_lines": int(out["primary"].sum()),
            "total": total, "start": out["start"].min() if len(out) else None,
            "end": out["end"].max() if len(out) else None, "columns": [f.attrs["columns"] for f in frames],
            "names": names, "hosts": hosts is not None,
            "names_joined": joined, "names_unjoined": None if joined is None else sorted(set(names) - set(joined))}
