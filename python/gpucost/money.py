"""Numbers finance can book: money rounded to the currency's minor unit so the
rounded rows add up exactly to the rounded total (docs/semantics.md,
"Numbers you can book").

The engine keeps exact float sums; this module is the one place where output
is rounded for people and journals (the CLI's table, CSV, JSON and XLSX, the
HTML report, SQL when asked). It uses **largest-remainder rounding**: each part
is rounded down to the minor unit, then the units still missing to reach the
rounded total go, one each, to the parts with the largest remainders. Every
part thus stays within one minor unit of its exact value, and the parts add up
to the rounded total to the cent: per currency, and per cost line when the
rows say which line they belong to.

>>> round_parts([1/3, 1/3, 1/3], 2)
array([0.34, 0.33, 0.33])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpucost.errors import InvalidInputError

__all__ = ["MINOR_UNITS", "minor_unit", "round_half_away", "round_parts", "book", "frame_currency",
           "parse_decimals", "money_decimals", "column_kinds", "exact_decimals", "split_exact", "MONEY_COLUMNS", "HOURS_COLUMNS", "RATE_COLUMNS"]

#: ISO 4217 minor units (digits after the decimal point) of the active
#: currencies. A currency missing here is an error, not a guess: pass decimals.
MINOR_UNITS: dict[str, int] = {
    **dict.fromkeys(
        "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF "
        "CHF CNY COP CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL "
        "HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MKD MMK MNT MOP MRU "
        "MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR "
        "SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD UYU UZS VES "
        "WST XCD YER ZAR ZMW ZWG".split(), 2),
    **dict.fromkeys("BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF".split(), 0),
    **dict.fromkeys("BHD IQD JOD KWD LYD OMR TND".split(), 3),
    **dict.fromkeys("CLF UYW".split(), 4),
}
DEFAULT_CURRENCY = "USD"

#: allocation result columns: money that adds up, hours that add up, rates.
MONEY_COLUMNS = ("cost", "idle_cost", "list_cost")
HOURS_COLUMNS = ("gpu_hours", "effective_gpu_hours", "mem_gib_hours")
RATE_COLUMNS = ("cost_per_effective_gpu_hour",)
HOURS_DECIMALS = 3  # a thousandth of an hour is 3.6 s: below any telemetry interval
RATIO_DECIMALS = 4
_MONEY_WORDS = ("cost", "dollar", "saving", "waste", "amount", "spend", "forecast", "budget", "price", "monthly",
                "month_to_date", "upfront")
_RATIO_WORDS = ("ratio", "util", "share", "efficiency", "fraction", "pct", "percent", "coverage", "demand")


def minor_unit(currency: Any) -> int:
    """The ISO 4217 minor unit of ``currency`` (e.g. ``"JPY"`` -> 0).

    Examples:
        >>> gpucost.money.minor_unit("USD"), gpucost.money.minor_unit("jpy"), gpucost.money.minor_unit("KWD")
        (2, 0, 3)
        >>> gpucost.money.minor_unit(None)   # no currency: USD
        2
        >>> gpucost.money.minor_unit("XYZ")
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: currency 'XYZ': not an ISO 4217 code gpucost knows; choose the decimals (--decimals N)
    """
    code = DEFAULT_CURRENCY if currency is None or (isinstance(currency, float) and np.isnan(currency)) \
        else str(currency).strip().upper()
    if code == "":
        code = DEFAULT_CURRENCY
    if code not in MINOR_UNITS:
        raise InvalidInputError(f"currency {str(currency)!r}: not an ISO 4217 code gpucost knows; "
                                "choose the decimals (--decimals N)")
    return MINOR_UNITS[code]


def parse_decimals(value: Any) -> int | str | None:
    """``None``/``"auto"`` (the currency's minor unit), ``"raw"`` (no
    rounding) or an integer 0..9, from a flag or a parameter.

    Examples:
        >>> [gpucost.money.parse_decimals(v) for v in ("auto", "raw", "4", 0)]
        [None, 'raw', 4, 0]
        >>> gpucost.money.parse_decimals("12")
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: decimals: 12 is outside 0-9
    """
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    if isinstance(value, str) and value.strip().lower() == "raw":
        return "raw"
    try:
        n = int(value)
        if isinstance(value, float) and value != n:
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidInputError(f"decimals: expected auto, raw or an integer 0-9, got {value!r}") from None
    if not 0 <= n <= 9:
        raise InvalidInputError(f"decimals: {n} is outside 0-9")
    return n


def _snap(scaled: np.ndarray) -> np.ndarray:
    # Float noise such as 0.29 * 100 = 28.999999999999996 is not a remainder.
    return np.round(scaled, 6)


def round_half_away(values: Any, decimals: Any = 2) -> np.ndarray:
    """Rounds each value to ``decimals`` (scalar or per value), halves away
    from zero (1.005 -> 1.01, as on an invoice); NaN stays NaN.

    Examples:
        >>> gpucost.money.round_half_away([1.005, -1.005, 2.5, np.nan], [2, 2, 0, 2])
        array([ 1.01, -1.01,  3.  ,   nan])
        >>> float(np.round(1.005, 2)), float(np.round(2.5))   # numpy: half to even, on the binary value
        (1.0, 2.0)
    """
    v = np.asarray(values, dtype=np.float64)
    scale = np.power(10.0, np.asarray(decimals, dtype=np.float64))
    scaled = _snap(v * scale)
    return (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)) / scale + 0.0  # + 0.0: no -0.0


def _codes(labels: Any, n: int) -> tuple[np.ndarray, int]:
    if labels is None:
        return np.zeros(n, dtype=np.int64), 1
    codes, uniques = pd.factorize(pd.Series(np.asarray(labels, dtype=object)), use_na_sentinel=False)
    if len(codes) != n:
        raise InvalidInputError(f"round_parts: {len(codes)} group labels for {n} values")
    return codes.astype(np.int64), max(len(uniques), 1)


def _largest_remainder(scaled: np.ndarray, group: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Whole units per part, ``floor`` or ``floor + 1``, adding up to
    ``target[g]`` in each group ``g`` (ties: the earlier row first)."""
    floors = np.floor(scaled)
    rem = scaled - floors
    ngroups = len(target)
    missing = np.rint(target - np.bincount(group, weights=floors, minlength=ngroups)).astype(np.int64)
    order = np.lexsort((np.arange(len(scaled)), -rem, group))
    sorted_group = group[order]
    rank = np.arange(len(scaled)) - np.searchsorted(sorted_group, sorted_group, side="left")
    bump = np.zeros(len(scaled))
    bump[order] = rank < missing[sorted_group]
    return floors + bump


def _group_sums(values: np.ndarray, group: np.ndarray, ngroups: int) -> np.ndarray:
    return np.bincount(group, weights=values, minlength=ngroups)


def round_parts(values: Any, decimals: Any = 2, *, by: Any = None, within: Any = None) -> np.ndarray:
    """``values`` rounded to ``decimals`` (scalar, or one per value) by
    largest remainder, so that the rounded values of each ``by`` group (e.g.
    the currency) add up exactly to the group's rounded total, and, with
    ``within`` (e.g. the cost line, nested in ``by``), the rounded values of
    each line add up exactly to that line's rounded total, the lines' totals
    themselves adding up to the group's. NaN and infinite values are left as
    they are and count for no total. ``decimals`` must be constant within a
    ``by`` group.

    Examples:
        Three teams share $10.00; each rounded on its own would add up to $9.99:

        >>> gpucost.money.round_parts([10 / 3, 10 / 3, 10 / 3], 2)
        array([3.34, 3.33, 3.33])
        >>> gpucost.money.round_parts([10 / 3] * 3 + [1000 / 3] * 3, [2, 2, 2, 0, 0, 0], by=["USD"] * 3 + ["JPY"] * 3)
        array([  3.34,   3.33,   3.33, 334.  , 333.  , 333.  ])
    """
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    out = v.copy()
    finite = np.isfinite(v)
    if not finite.any():
        return out
    dec = np.broadcast_to(np.asarray(decimals, dtype=np.int64), (n,))
    scale = np.power(10.0, dec[finite])
    scaled = _snap(v[finite] * scale)
    by_codes, n_by = _codes(None if by is None else np.asarray(by, dtype=object)[finite], int(finite.sum()))
    by_scale = np.ones(n_by)
    by_scale[by_codes] = scale
    if not np.all(by_scale[by_codes] == scale):
        raise InvalidInputError("round_parts: decimals differ within a group")
    group_target = round_half_away(_group_sums(scaled, by_codes, n_by), 0)
    if within is None:
        units = _largest_remainder(scaled, by_codes, group_target)
    else:
        line_codes, n_lines = _codes(within, n)
        line_codes = line_codes[finite]
        # Lines nested in their by-group: one pair code per (group, line).
        pair, n_pairs = _codes(by_codes * max(n_lines, 1) + line_codes, len(line_codes))
        line_scaled = _group_sums(scaled, pair, n_pairs)
        line_group = np.zeros(n_pairs, dtype=np.int64)
        line_group[pair] = by_codes
        line_target = _largest_remainder(line_scaled, line_group, group_target)
        units = _largest_remainder(scaled, pair, line_target)
    out[finite] = units / scale + 0.0
    return out


#: Most decimals :func:`exact_decimals` gives (FOCUS exports write up to ~10).
MAX_EXACT_DECIMALS = 12


def exact_decimals(values: Any, least: Any = 2) -> np.ndarray:
    """The fewest decimals, at least ``least`` (scalar or per value), that
    write each value exactly (0.125 -> 3), at most 12 and fewer where the
    value times ``10**decimals`` would pass 2**53 (where a float stops
    counting whole units). What :func:`split_exact` splits each total in.

    Examples:
        >>> gpucost.money.exact_decimals([32.77, 0.125, 1/3, 4.0], [2, 2, 2, 0])
        array([ 2,  3, 12,  0])
        >>> gpucost.money.exact_decimals([1e9 + 0.123456789], 2)   # 2**53 allows 6 decimals here
        array([6])
    """
    v = np.abs(np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0))
    dec = np.broadcast_to(np.asarray(least, dtype=np.int64), v.shape).copy()
    done = np.zeros(v.shape, dtype=bool)
    for d in range(int(dec.min(initial=0)), MAX_EXACT_DECIMALS + 1):
        scaled = v * 10.0 ** d
        fits = scaled < 2.0 ** 53
        exact = np.abs(scaled - np.round(scaled)) <= 1e-6  # float noise is not a digit
        take = ~done & (d >= dec) & (exact | ~fits | (d == MAX_EXACT_DECIMALS))
        dec[take] = np.where(fits[take], d, max(d - 1, 0))
        done |= take
    return dec


def split_exact(totals: Any, fractions: Any, decimals: Any, *, by: Any) -> np.ndarray:
    """Parts ``totals * fractions`` in whole units of ``10**-decimals`` by
    largest remainder, so that the parts of each ``by`` group (one total,
    repeated on each of its rows, split by fractions that add up to 1) add up
    to that total exactly. NaN totals give NaN parts. How a FOCUS origin
    charge is split into allocated charges (:func:`gpucost.to_focus`).

    Examples:
        $10.00 and 1 hour, each split in three:

        >>> gpucost.money.split_exact([10, 10, 10, 1, 1, 1], [1/3] * 6, [2, 2, 2, 6, 6, 6], by=[0, 0, 0, 1, 1, 1])
        array([3.34    , 3.33    , 3.33    , 0.333334, 0.333333, 0.333333])
    """
    total = np.asarray(totals, dtype=np.float64)
    dec = np.broadcast_to(np.asarray(decimals, dtype=np.int64), total.shape)
    out = np.full(total.shape, np.nan)
    ok = np.isfinite(total)
    if not ok.any():
        return out
    group, ngroups = _codes(np.asarray(by, dtype=object)[ok], int(ok.sum()))
    f = np.asarray(fractions, dtype=np.float64)[ok]
    f = f / np.bincount(group, weights=f, minlength=ngroups)[group]  # add up to 1 exactly enough
    scale = 10.0 ** dec[ok]
    units = np.round(total[ok] * scale)
    target = np.zeros(ngroups)
    target[group] = units
    out[ok] = _largest_remainder(units * f, group, target) / scale + 0.0
    return out


def frame_currency(frame: pd.DataFrame, currency: Any = None) -> np.ndarray | str:
    """The currency of each row: the frame's ``currency`` column when it has
    one, else ``currency`` (the bill's), else USD.

    Examples:
        >>> gpucost.money.frame_currency(pd.DataFrame({"cost": [1.0]}))
        'USD'
        >>> gpucost.money.frame_currency(pd.DataFrame({"cost": [1.0, 2.0], "currency": ["EUR", None]}))
        array(['EUR', 'USD'], dtype=object)
    """
    if "currency" in frame.columns:
        return frame["currency"].astype(object).where(frame["currency"].notna(), DEFAULT_CURRENCY).to_numpy()
    return DEFAULT_CURRENCY if currency is None else str(currency)


def _kind(column: str, series: pd.Series) -> str | None:
    if not pd.api.types.is_float_dtype(series):
        return None
    if column in MONEY_COLUMNS:
        return "money"
    if column in HOURS_COLUMNS or column.endswith("hours"):
        return "hours"
    if column in RATE_COLUMNS or column.startswith("cost_per_") or column.endswith(("_per_hour", "_per_day", "hourly", "_rate")) \
            or column == "rate":
        return "rate"
    if any(w in column for w in _RATIO_WORDS):
        return "ratio"
    if any(w in column for w in _MONEY_WORDS):
        return "money"
    return None


def book(frame: pd.DataFrame, *, decimals: Any = None, currency: Any = None, additive: bool = True,
         line: str | None = None) -> pd.DataFrame:
    """A copy of ``frame`` with money rounded to the currency's minor unit
    (``decimals``: ``None`` for the minor unit, an integer, or ``"raw"`` for
    the frame unchanged), hours to 3 decimals, rates to 2 more decimals
    than money and ratios to 4.

    ``additive``: the rows are parts of one total (an allocation), so money
    and hours are rounded by largest remainder per currency (and per
    ``line`` column when given) and add up to the rounded totals exactly;
    otherwise (an analysis table) each value is rounded on its own.
    Money columns: ``cost``, ``idle_cost``, ``list_cost`` and float columns
    whose name says money (cost, saving, spend, ...).

    Examples:
        An allocation of $10.00 over three teams, booked: the cents add up.

        >>> result = pd.DataFrame({"team": ["a", "b", "c"], "cost": [10 / 3] * 3, "gpu_hours": [1 / 3] * 3,
        ...                        "cost_per_effective_gpu_hour": [12.345678] * 3})
        >>> booked = gpucost.money.book(result)
        >>> booked
          team  cost  gpu_hours  cost_per_effective_gpu_hour
        0    a  3.34      0.334                      12.3457
        1    b  3.33      0.333                      12.3457
        2    c  3.33      0.333                      12.3457
        >>> print(booked["cost"].sum())
        10.0
        >>> gpucost.money.book(result.assign(currency="JPY"))["cost"].tolist()
        [4.0, 3.0, 3.0]
    """
    decimals = parse_decimals(decimals)
    if decimals == "raw" or frame is None or not len(frame):
        return frame
    codes = frame_currency(frame, currency)
    if isinstance(codes, str):
        money_dec: Any = minor_unit(codes) if decimals is None else decimals
        groups = None
    else:
        uniques, inverse = np.unique(codes.astype(str), return_inverse=True)
        units = np.zeros(len(uniques), dtype=np.int64)
        for i, c in enumerate(uniques):  # one look-up per currency, not per row
            try:
                units[i] = minor_unit(c)
            except InvalidInputError as exc:
                row = int(np.argmax(inverse == i))
                raise InvalidInputError(f"result: row {row}, column 'currency': {exc}") from None
        money_dec = units[inverse] if decimals is None else decimals
        groups = codes
    within = frame[line].to_numpy() if line is not None and line in frame.columns else None
    out = frame.copy()
    for column in frame.columns:
        kind = _kind(str(column), frame[column])
        if kind is None:
            continue
        values = frame[column].to_numpy(dtype=np.float64)
        if kind == "money":
            out[column] = round_parts(values, money_dec, by=groups, within=within) if additive \
                else round_half_away(values, money_dec)
        elif kind == "hours":
            out[column] = round_parts(values, HOURS_DECIMALS, by=groups, within=within) if additive \
                else round_half_away(values, HOURS_DECIMALS)
        elif kind == "rate":
            out[column] = round_half_away(values, np.asarray(money_dec) + 2)
        else:
            out[column] = round_half_away(values, RATIO_DECIMALS)
    return out


def money_decimals(frame: pd.DataFrame, currency: Any = None, decimals: Any = None) -> int:
    """The decimals to print money of ``frame`` with (the most any of its
    currencies has; ``decimals`` when chosen).

    Examples:
        >>> gpucost.money.money_decimals(pd.DataFrame({"cost": [1.0, 2.0], "currency": ["JPY", "KWD"]}))
        3
        >>> gpucost.money.money_decimals(pd.DataFrame({"cost": [1.0]}), currency="JPY")
        0
    """
    decimals = parse_decimals(decimals)
    if isinstance(decimals, int):
        return decimals
    codes = frame_currency(frame, currency)
    if isinstance(codes, str):
        return minor_unit(codes)
    return max((minor_unit(c) for c in pd.unique(codes)), default=2)


def column_kinds(frame: pd.DataFrame) -> dict[str, str]:
    """Column -> "money" | "hours" | "rate" | "ratio" for the float columns
    :func:`book` rounds.

    Examples:
        >>> gpucost.money.column_kinds(pd.DataFrame({"team": ["a"], "cost": [1.0], "gpu_hours": [2.0],
        ...                                          "cost_per_effective_gpu_hour": [0.5], "util": [0.4],
        ...                                          "monthly_saving": [30.0], "jobs": [3]}))
        {'cost': 'money', 'gpu_hours': 'hours', 'cost_per_effective_gpu_hour': 'rate', 'util': 'ratio', 'monthly_saving': 'money'}
    """
    return {c: k for c in frame.columns if (k := _kind(str(c), frame[c])) is not None}


# ---- money in messages ---------------------------------------------------------------

_SYMBOLS = {"USD": "$", "": "$"}


def format_money(amount: float, currency: str = "") -> str:
    """``$1,234.56`` for USD (or no currency), ``1,234.56 EUR`` otherwise."""
    amount = float(amount)
    sign = "-" if amount < 0 else ""
    symbol = _SYMBOLS.get(currency or "")
    if symbol is not None:
        return f"{sign}{symbol}{abs(amount):,.2f}"
    return f"{sign}{abs(amount):,.2f} {currency}"
