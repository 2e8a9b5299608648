"""Money has a currency: converting cost lines before they are added
(docs/semantics.md, "Currencies").

gpucost never adds two currencies: results are keyed by ``currency``. Where
one total is wanted, the lines are converted first with the user's own rates
(the finance team's month-end or daily rates), never with rates gpucost makes
up.

Examples: :func:`convert_currency`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpucost.errors import InvalidInputError

__all__ = ["convert_currency", "currencies", "MONEY_COLUMNS"]

#: The money columns of cost lines (gpucost's and the readers'), converted together.
MONEY_COLUMNS = ("cost", "list_cost", "billed_cost", "effective_cost")


def currencies(costs: Any) -> list[str]:
    """The distinct currencies of cost lines, sorted ([] without a currency column)."""
    if "currency" not in getattr(costs, "columns", ()):
        return []
    values = pd.Series(costs["currency"]).astype("string").fillna("")
    return sorted(v for v in values.unique() if v != "")


def convert_currency(costs: pd.DataFrame, rates: Any, to: str) -> pd.DataFrame:
    """Cost lines converted into one currency.

    Args:
        costs: cost lines with a ``currency`` column (ISO 4217 codes).
        rates: a table ``currency, date, rate``: one unit of ``currency`` is
            ``rate`` units of ``to`` from ``date`` on (the latest rate on or
            before each line's start is used).
        to: the target currency (lines already in it keep their amounts).

    Returns:
        A copy with every money column (``cost, list_cost, billed_cost,
        effective_cost`` where present) converted, ``currency`` set to ``to``,
        and the line's ``original_currency`` and ``rate`` kept.

    Raises:
        gpucost.InvalidInputError: a line whose currency has no rate on or
            before its start (naming the row), or a bad rates table.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2", "node-3"], "cost": [10.0, 10.0, 10.0],
        ...                       "currency": ["USD", "EUR", "EUR"],
        ...                       "start": pd.to_datetime(["2026-03-01", "2026-03-01", "2026-03-02"], utc=True),
        ...                       "end": pd.to_datetime(["2026-03-02", "2026-03-02", "2026-03-03"], utc=True)})
        >>> rates = pd.DataFrame({"currency": ["EUR", "EUR"], "date": ["2026-03-01", "2026-03-02"],
        ...                       "rate": [1.08, 1.10]})   # 1 EUR = rate USD from date on
        >>> gpucost.convert_currency(costs, rates, to="USD")[["resource_id", "cost", "currency", "original_currency", "rate"]]
          resource_id  cost currency original_currency  rate
        0      node-1  10.0      USD               USD  1.00
        1      node-2  10.8      USD               EUR  1.08
        2      node-3  11.0      USD               EUR  1.10
        >>> gpucost.convert_currency(costs, rates.iloc[1:], to="USD")
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: costs: row 1, column 'start': no EUR rate on or before 2026-03-01 (the first is 2026-03-02)
    """
    if "currency" not in costs.columns:
        raise InvalidInputError("costs: no 'currency' column: nothing says which currency the amounts are in")
    to = str(to).upper()
    table = _rates_table(rates)
    out = costs.copy()
    original = out["currency"].astype("string").fillna("").str.upper()
    start = pd.to_datetime(out["start"], utc=True).dt.tz_convert(None).astype("datetime64[ns]")
    rate = np.ones(len(out))
    for cur in sorted(set(original) - {to}):
        rows = np.flatnonzero((original == cur).to_numpy())
        mine = table[table["currency"] == cur]
        if cur == "":
            raise InvalidInputError(f"costs: row {rows[0]}, column 'currency': empty currency")
        if len(mine) == 0:
            raise InvalidInputError(f"costs: row {rows[0]}, column 'currency': no rate for {cur} in the rates table "
                                    f"(it has {', '.join(sorted(table['currency'].unique())) or 'none'})")
        dates = mine["date"].to_numpy()
        at = np.searchsorted(dates, start.iloc[rows].to_numpy(), side="right") - 1
        if (at < 0).any():
            bad = rows[np.flatnonzero(at < 0)[0]]
            raise InvalidInputError(f"costs: row {bad}, column 'start': no {cur} rate on or before "
                                    f"{start.iloc[bad]:%Y-%m-%d} (the first is {pd.Timestamp(dates[0]):%Y-%m-%d})")
        rate[rows] = mine["rate"].to_numpy()[at]
    for column in MONEY_COLUMNS:
        if column in out.columns:
            out[column] = out[column].astype(np.float64).to_numpy() * rate
    out["original_currency"] = original.to_numpy(dtype=object)
    out["rate"] = rate
    out["currency"] = to
    return out


def _rates_table(rates: Any) -> pd.DataFrame:
    if not isinstance(rates, pd.DataFrame):
        rates = pd.read_csv(rates)
    missing = [c for c in ("currency", "date", "rate") if c not in rates.columns]
    if missing:
        raise InvalidInputError(f"rates: missing column(s) {', '.join(missing)} (expected currency, date, rate)")
    table = pd.DataFrame({
        "currency": rates["currency"].astype(str).str.upper(),
        "date": pd.to_datetime(rates["date"], utc=True).dt.tz_convert(None).astype("datetime64[ns]"),
        "rate": pd.to_numeric(rates["rate"], errors="coerce"),
    })
    bad = np.flatnonzero(~(np.isfinite(table["rate"].to_numpy()) & (table["rate"].to_numpy() > 0)))
    if len(bad):
        raise InvalidInputError(f"rates: row {bad[0]}, column 'rate': {rates['rate'].iloc[bad[0]]!r} is not a "
                                "positive number")
    return table.sort_values(["currency", "date"], kind="stable").reset_index(drop=True)
