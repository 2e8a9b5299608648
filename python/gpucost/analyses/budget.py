"""Budgets, forecasts and spend anomalies (docs/advisor.md §6).

Daily spend comes from an allocation grouped by day
(``gpucost.allocate(..., by=["team", "period"], freq="D")``). The forecast
is least squares on daily spend with a trend and weekday terms, fitted in
C++ with Eigen (``gpucost::ForecastDaily``); the prediction interval of the
month's remaining days carries both day-to-day noise and the uncertainty of
the fit. Anomalies are days above the one-step-ahead band fitted on the days
before them (``gpucost::DailyBands``).
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.allocation import RESULT_METRICS
from gpucost.analyses._tables import (
    NANOS_PER_DAY,
    finite_floats,
    frame,
    instant_ns,
    instants_ns,
    row_error,
    strings,
    table,
    to_utc,
)
from gpucost.errors import InvalidInputError

__all__ = ["budget_status", "forecast_spend", "spend_anomalies", "spread_over_days", "DEFAULT_THRESHOLDS"]

DEFAULT_THRESHOLDS = (0.5, 0.8, 1.0)
_MODELS = {0: "none", 1: "mean", 2: "trend", 3: "trend+weekday"}
# Days of history before a trend, and weekday terms, are fitted. A forecast
# extrapolates weeks ahead: a trend fitted on one week (its last day often a
# partial one) swings a month's forecast by more than the trend it measured,
# so forecasts want two weeks. An anomaly band predicts one day ahead, where
# a week's trend is fine.
_FORECAST_MIN_DAYS = (14, 21)
_BAND_MIN_DAYS = (7, 21)  # min_days_trend, min_days_weekday
_NAME = "allocation_by_day"


def _daily(allocation_by_day: Any) -> tuple[pd.DataFrame, Any]:
    """The allocation with a `day` column (days since the epoch) and `cost`."""
    t = table(allocation_by_day, _NAME)
    day = instants_ns(t, _NAME, "period") // NANOS_PER_DAY
    cost = finite_floats(t, _NAME, "cost")
    return pd.DataFrame({"day": day, "cost": cost}), t


def _day_of(value: Any, parameter: str) -> int:
    return instant_ns(value, parameter) // NANOS_PER_DAY


def _month_bounds(day: int) -> tuple[int, int]:
    """First and last day of the calendar month of `day`."""
    ts = to_utc([day * NANOS_PER_DAY])[0]
    first = ts.replace(day=1)
    last = first + pd.offsets.MonthEnd(0)
    return int(first.value // NANOS_PER_DAY), int(last.value // NANOS_PER_DAY)


def _series(days: np.ndarray, spend: np.ndarray, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense daily spend over [first, last], days without rows at 0."""
    grid = np.arange(first, last + 1, dtype=np.int64)
    inside = (days >= first) & (days <= last)
    values = np.bincount((days[inside] - first).astype(np.int64), weights=spend[inside],
                         minlength=grid.size)[: grid.size]
    return grid, values


def _csr(series: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.array([len(d) for d, _ in series], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    day = np.concatenate([d for d, _ in series]) if series else np.empty(0, np.int64)
    spend = np.concatenate([v for _, v in series]) if series else np.empty(0)
    return offsets, day.astype(np.int64), spend.astype(np.float64)


def _thresholds(value: Any, row: int) -> tuple[float, ...]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return DEFAULT_THRESHOLDS
    items = value.replace(";", ",").split(",") if isinstance(value, str) else list(np.atleast_1d(value))
    out = []
    for item in items:
        text = str(item).strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise row_error("budgets", row, "thresholds", f"'{text}' is not a fraction or a percentage") from None
        if not np.isfinite(number) or number <= 0:
            raise row_error("budgets", row, "thresholds", f"'{text}' is not a positive fraction")
        out.append(number)
    return tuple(sorted(out))


def _no_match(row: int, column: str, given: str, existing: Sequence[str], what: str) -> InvalidInputError:
    """A budget key or value that matches nothing: the ones that exist,
    nearest first, and a case-insensitive match offered."""
    existing = sorted({str(x) for x in existing})
    ranked = sorted(existing, key=lambda x: (-difflib.SequenceMatcher(None, given.lower(), x.lower()).ratio(), x))
    same_case = [x for x in existing if x.lower() == given.lower()]
    hint = f" (did you mean '{same_case[0]}'? values match case-sensitively)" if same_case else ""
    shown = ", ".join(f"'{x}'" for x in ranked[:10]) + (f" and {len(ranked) - 10} more" if len(ranked) > 10 else "")
    return row_error("budgets", row, column, f"'{given}' matches no {what}{hint}; there are: {shown or 'none'}")


def spread_over_days(costs: Any) -> Any:
    """Cost lines longer than a UTC day (a monthly-granularity CUR) cut at day
    boundaries, their money spread over the days in proportion to time, so a
    daily allocation and forecast see each day's share and not the whole
    month on its first day. Returns ``costs`` itself when no line crosses a
    day; otherwise the cut lines as a DataFrame, with a ``UserWarning``.

    Examples:
        >>> monthly = pd.DataFrame({"resource_id": ["i-0aaa"], "start": [pd.Timestamp("2026-03-01", tz="UTC")],
        ...                         "end": [pd.Timestamp("2026-03-04", tz="UTC")], "cost": [300.0]})
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     gpucost.spread_over_days(monthly)
          resource_id                     start                       end   cost
        0      i-0aaa 2026-03-01 00:00:00+00:00 2026-03-02 00:00:00+00:00  100.0
        1      i-0aaa 2026-03-02 00:00:00+00:00 2026-03-03 00:00:00+00:00  100.0
        2      i-0aaa 2026-03-03 00:00:00+00:00 2026-03-04 00:00:00+00:00  100.0
        >>> print(caught[0].message)
        costs: 1 lines span more than one day (a bill coarser than daily): their cost is spread over their days in proportion to time for daily budgets and forecasts
    """
    cut, long_lines = cut_at_days(costs)
    if long_lines.any():
        warnings.warn(f"costs: {int(long_lines.sum())} lines span more than one day (a bill coarser than daily): "
                      "their cost is spread over their days in proportion to time for daily budgets and forecasts",
                      UserWarning, stacklevel=2)
    return cut


def cut_at_days(costs: Any) -> tuple[Any, np.ndarray]:
    """:func:`spread_over_days` without its warning, for callers that say it
    themselves (the report's daily charts): the cut lines (``costs`` itself
    when none crosses a day) and which input lines were longer than a day.

    Examples:
        >>> from gpucost.analyses.budget import cut_at_days
        >>> support = pd.DataFrame({"resource_id": [""], "start": [pd.Timestamp("2026-03-01", tz="UTC")],
        ...                         "end": [pd.Timestamp("2026-03-04", tz="UTC")], "cost": [300.0]})
        >>> cut, long_lines = cut_at_days(support)
        >>> cut["cost"].tolist(), long_lines.tolist()
        ([100.0, 100.0, 100.0], [True])
    """
    name = "costs"
    t = table(costs, name)
    start = instants_ns(t, name, "start")
    end = instants_ns(t, name, "end")
    first = start // NANOS_PER_DAY
    last = (np.maximum(end, start + 1) - 1) // NANOS_PER_DAY
    count = (last - first + 1).astype(np.int64)
    if len(start) == 0 or count.max() <= 1:
        return costs, np.zeros(len(start), dtype=bool)
    frame_in = costs.to_pandas() if hasattr(costs, "to_pandas") else pd.DataFrame(costs)
    line = np.repeat(np.arange(len(start)), count)
    k = np.arange(line.size) - np.repeat(np.cumsum(count) - count, count)
    day_start = (first[line] + k) * NANOS_PER_DAY
    piece_start = np.maximum(start[line], day_start)
    piece_end = np.minimum(end[line], day_start + NANOS_PER_DAY)
    span = (end - start)[line]
    fraction = np.where(span > 0, (piece_end - piece_start) / np.where(span > 0, span, 1), 1.0)
    out = frame_in.iloc[line].reset_index(drop=True)
    out["start"] = to_utc(piece_start)
    out["end"] = to_utc(piece_end)
    for column in out.columns:
        if "cost" in str(column) and pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].to_numpy(np.float64) * fraction
    return out, count > 1


def _pct_list(values: list[float]) -> str:
    return ", ".join(f"{v:.0%}" for v in values)


def budget_status(allocation_by_day: Any, budgets: Any, today: Any, *, level: float = 0.90,
                  history_days: int = 91, anomaly_level: float = 0.99, min_history: int = 14,
                  min_relative_excess: float = 0.10) -> pd.DataFrame:
    """Month-to-date spend, the forecast to month end and the thresholds
    crossed, per budget.

    Args:
        allocation_by_day: spend per day: ``period`` (a UTC day, or any instant
            floored to its day), ``cost`` and label columns, as from
            ``gpucost.allocate(..., by=["team", "period"], freq="D")``.
        budgets: one row per budget: ``key`` (a label column), ``value`` (its
            value; ``*`` for all rows), ``amount`` (monthly) and optionally
            ``thresholds`` (fractions of the amount: ``"50%,80%,100%"``,
            ``"0.5,0.8,1"`` or a list; default 50%, 80%, 100%).
        today: the last day with spend to count (inclusive); its month is the
            budget month. Rows after it are ignored (see ``attrs``).
        level: coverage of the forecast interval.
        history_days: days of history (up to today) the forecast is fitted on.
        anomaly_level, min_history, min_relative_excess: as ``level``,
            ``min_history`` and ``min_relative_excess`` of
            :func:`spend_anomalies`; anomalous days count in the month to
            date but are left out of the forecast's fit.

    Returns:
        One row per budget: ``key, value, month, amount, thresholds,
        days_elapsed, days_in_month, month_to_date, mtd_share, forecast,
        forecast_low, forecast_high`` (month totals), ``forecast_share,
        crossed`` (thresholds crossed by month-to-date), ``forecast_crossed``
        (by the forecast), ``at_risk`` (by the interval's upper end only),
        ``status`` (``over``, ``forecast over``, ``at risk``, ``ok``),
        ``model, trend_per_day, anomaly_days`` (days of the month above the
        anomaly band).

    Examples:
        Six weeks of daily spend per team, as ``gpucost.allocate(...,
        by=["team", "period"], freq="D")`` gives it:

        >>> days = pd.date_range("2026-02-02", "2026-03-15", freq="D", tz="UTC")   # six weeks, Monday first
        >>> week = np.array([1000.0, 1100, 1050, 1150, 1000, 500, 450])            # quiet weekends
        >>> daily = pd.DataFrame({"period": np.tile(days, 2), "team": np.repeat(["nlp", "vision"], len(days)),
        ...                       "cost": np.r_[np.tile(week, 6), np.tile(week * 0.3, 6)] + np.arange(84) * 37 % 50})
        >>> budgets = pd.DataFrame({"key": "team", "value": ["nlp", "vision"], "amount": [28_000, 12_000]})
        >>> status = gpucost.budget_status(daily, budgets, today="2026-03-15")
        >>> status[["value", "amount", "month_to_date", "forecast", "crossed", "forecast_crossed", "status"]].round(0)
            value   amount  month_to_date  forecast crossed forecast_crossed         status
        0     nlp  28000.0        13370.0   28386.0           50%, 80%, 100%  forecast over
        1  vision  12000.0         4265.0    9105.0                      50%             ok
    """
    if not 0 < level < 1:
        raise InvalidInputError(f"parameter 'level': {level} is not in (0, 1)")
    if int(history_days) != history_days or history_days < 1:
        raise InvalidInputError(f"parameter 'history_days': {history_days} is not a whole number >= 1")
    data, t = _daily(allocation_by_day)
    today_day = _day_of(today, "today")
    if len(data) == 0:
        raise InvalidInputError(f"{_NAME}: no rows (no spend to check budgets against)")
    data_first, data_last = int(data["day"].min()), int(data["day"].max())
    if not data_first <= today_day <= data_last:
        days = to_utc([data_first * NANOS_PER_DAY, data_last * NANOS_PER_DAY, today_day * NANOS_PER_DAY])
        raise InvalidInputError(f"parameter 'today': {days[2].date()} is outside the data, which runs from "
                                f"{days[0].date()} to {days[1].date()} (a budget checked there would count nothing)")
    month_first, month_last = _month_bounds(today_day)
    ignored = int((data["day"] > today_day).sum())

    name = "budgets"
    b = frame(budgets, name, ["key", "value", "amount"], ["thresholds"])
    b["key"] = strings(budgets, name, "key")
    b["value"] = strings(budgets, name, "value")
    b["amount"] = finite_floats(budgets, name, "amount")
    for column in ("key", "value"):
        missing = b[column].isna().to_numpy()
        if missing.any():
            raise row_error(name, int(np.flatnonzero(missing)[0]), column, "missing value")
    bad = (b["amount"] <= 0).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise row_error(name, row, "amount", f"{b['amount'].iat[row]} is not a positive monthly amount")

    days = data["day"].to_numpy(np.int64)
    spend = data["cost"].to_numpy(np.float64)
    series, thresholds = [], []
    for row, (key, value) in enumerate(zip(b["key"], b["value"])):
        if value == "*":
            mask = np.ones(len(data), dtype=bool)
        else:
            if not t.has(key):
                labels = [c for c in t.columns if c not in (*RESULT_METRICS, "period")]
                raise _no_match(row, "key", key, labels, f"column of {_NAME}")
            column_values = strings(t, _NAME, key)
            mask = column_values == value
            if not mask.any():
                present = pd.unique(column_values[pd.notna(column_values)])
                raise _no_match(row, "value", value, present, f"{key} in {_NAME}")
        group_days = days[mask & (days <= today_day)]
        first = max(int(group_days.min()), today_day - int(history_days) + 1) if group_days.size else today_day + 1
        series.append(_series(group_days, spend[mask & (days <= today_day)], first, today_day))
        thresholds.append(_thresholds(b["thresholds"].iat[row] if "thresholds" in b else None, row))

    offsets, day, values = _csr(series)
    n = len(series)
    bands = _core.daily_bands(offsets, day, values, float(anomaly_level), int(min_history), int(history_days),
                              float(min_relative_excess), *_BAND_MIN_DAYS)
    # The forecast is fitted on the normal days: a one-off spike counts in
    # the month to date, not in the trend.
    normal = bands["anomaly"] == 0
    owner = np.repeat(np.arange(n), np.diff(offsets))
    fit_offsets = np.concatenate([[0], np.cumsum(np.bincount(owner[normal], minlength=n))]).astype(np.int64)
    horizon_first = np.full(n, today_day + 1, dtype=np.int64)
    horizon_last = np.full(n, month_last, dtype=np.int64)
    f = _core.forecast_daily(fit_offsets, day[normal], values[normal], horizon_first, horizon_last, float(level),
                             *_FORECAST_MIN_DAYS)

    in_month = (day >= month_first) & (day <= today_day)
    mtd = np.bincount(owner[in_month], weights=values[in_month], minlength=n)
    anomalies = np.bincount(owner[in_month & (bands["anomaly"] == 1)], minlength=n)
    remaining = np.maximum(f["total"], 0.0)
    low = np.maximum(f["total_lower"], 0.0)
    high = np.maximum(f["total_upper"], 0.0)
    no_horizon = month_last <= today_day
    out = pd.DataFrame({
        "key": b["key"], "value": b["value"],
        "month": to_utc([month_first * NANOS_PER_DAY] * n),
        "amount": b["amount"],
        "thresholds": [_pct_list(list(x)) for x in thresholds],
        "days_elapsed": float(today_day - month_first + 1),
        "days_in_month": float(month_last - month_first + 1),
        "month_to_date": mtd,
    })
    out["mtd_share"] = out["month_to_date"] / out["amount"]
    out["forecast"] = mtd + (0.0 if no_horizon else remaining)
    out["forecast_low"] = mtd + (0.0 if no_horizon else low)
    out["forecast_high"] = mtd + (0.0 if no_horizon else high)
    out["forecast_share"] = out["forecast"] / out["amount"]
    crossed, forecast_crossed, at_risk, status = [], [], [], []
    for i, levels in enumerate(thresholds):
        amount = out["amount"].iat[i]
        now = [x for x in levels if out["month_to_date"].iat[i] >= x * amount]
        ahead = [x for x in levels if out["forecast"].iat[i] >= x * amount]
        upper = out["forecast_high"].iat[i]
        risky = [x for x in levels if x not in ahead and np.isfinite(upper) and upper >= x * amount]
        crossed.append(_pct_list(now))
        forecast_crossed.append(_pct_list(ahead))
        at_risk.append(_pct_list(risky))
        if out["month_to_date"].iat[i] >= amount:
            status.append("over")
        elif out["forecast"].iat[i] >= amount:
            status.append("forecast over")
        elif np.isfinite(upper) and upper >= amount:
            status.append("at risk")
        else:
            status.append("ok")
    out["crossed"] = crossed
    out["forecast_crossed"] = forecast_crossed
    out["at_risk"] = at_risk
    out["status"] = status
    out["model"] = [_MODELS[int(m)] for m in f["model"]]
    out["trend_per_day"] = f["trend"]
    out["anomaly_days"] = anomalies.astype(np.int64)
    out.attrs = {"today": str(to_utc([today_day * NANOS_PER_DAY])[0].date()), "rows_after_today_ignored": ignored,
                 "level": level}
    return out


def forecast_spend(allocation_by_day: Any, *, by: Sequence[str] | str = (), through: Any, today: Any = None,
                   level: float = 0.90, history_days: int = 91) -> pd.DataFrame:
    """Daily spend forecast per group, day by day.

    Args:
        allocation_by_day: as for :func:`budget_status`.
        by: label columns to forecast separately (none: the total).
        through: the last day to forecast.
        today: the last day of history (default: the table's last day).
        level, history_days: as for :func:`budget_status`.

    Returns:
        One row per group and day after ``today`` through ``through``: the
        ``by`` columns, ``day`` (UTC), ``point, lower, upper``, and ``model``.
        ``attrs["fits"]`` has per group the fitted ``intercept``, ``trend``
        and weekday effects (Monday..Sunday).

    Examples:
        Six weeks of daily spend per team, as ``gpucost.allocate(...,
        by=["team", "period"], freq="D")`` gives it:

        >>> days = pd.date_range("2026-02-02", "2026-03-15", freq="D", tz="UTC")   # six weeks, Monday first
        >>> week = np.array([1000.0, 1100, 1050, 1150, 1000, 500, 450])            # quiet weekends
        >>> daily = pd.DataFrame({"period": np.tile(days, 2), "team": np.repeat(["nlp", "vision"], len(days)),
        ...                       "cost": np.r_[np.tile(week, 6), np.tile(week * 0.3, 6)] + np.arange(84) * 37 % 50})
        >>> forecast = gpucost.forecast_spend(daily, by="team", through="2026-03-17", today="2026-03-15")
        >>> forecast[["team", "day", "point", "lower", "upper"]].round({"point": 0, "lower": 0, "upper": 0})
             team                       day   point   lower   upper
        0     nlp 2026-03-16 00:00:00+00:00  1023.0   993.0  1053.0
        1     nlp 2026-03-17 00:00:00+00:00  1127.0  1097.0  1157.0
        2  vision 2026-03-16 00:00:00+00:00   330.0   300.0   360.0
        3  vision 2026-03-17 00:00:00+00:00   355.0   325.0   386.0
    """
    by_list = [by] if isinstance(by, str) else list(by)
    data, t = _daily(allocation_by_day)
    last_day = int(data["day"].max()) if len(data) else 0
    today_day = _day_of(today, "today") if today is not None else last_day
    through_day = _day_of(through, "through")
    for c in by_list:
        data[c] = pd.Series(strings(t, _NAME, c), dtype=object).fillna("(none)").to_numpy()
    data = data[data["day"] <= today_day]
    groups = data.groupby(by_list, sort=True) if by_list else [((), data)]
    keys, series = [], []
    for key, part in groups:
        days = part["day"].to_numpy(np.int64)
        first = max(int(days.min()), today_day - int(history_days) + 1)
        series.append(_series(days, part["cost"].to_numpy(np.float64), first, today_day))
        keys.append(key if isinstance(key, tuple) else (key,))
    offsets, day, values = _csr(series)
    n = len(series)
    f = _core.forecast_daily(offsets, day, values, np.full(n, today_day + 1, np.int64),
                             np.full(n, through_day, np.int64), float(level), *_FORECAST_MIN_DAYS)
    counts = np.diff(f["horizon_offsets"])
    out = pd.DataFrame({c: np.repeat([k[i] for k in keys], counts) for i, c in enumerate(by_list)})
    out["day"] = to_utc(f["day"] * NANOS_PER_DAY)
    out["point"], out["lower"], out["upper"] = f["point"], f["lower"], f["upper"]
    out["model"] = np.repeat([_MODELS[int(m)] for m in f["model"]], counts)
    weekday = f["weekday"].reshape(-1, 7)
    fits = pd.DataFrame({c: [k[i] for k in keys] for i, c in enumerate(by_list)})
    fits["model"] = [_MODELS[int(m)] for m in f["model"]]
    fits["intercept"], fits["trend"], fits["sigma"] = f["intercept"], f["trend"], f["sigma"]
    for i, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")):
        fits[name] = weekday[:, i]
    out.attrs = {"fits": fits.to_dict("list")}
    return out


def _label_columns(t: Any) -> list[str]:
    return [c for c in t.columns if c not in ("period", *RESULT_METRICS)]


def spend_anomalies(allocation_by_day: Any, *, by: Sequence[str] | str | None = None, level: float = 0.99,
                    min_history: int = 14, max_history: int = 91, min_relative_excess: float = 0.10,
                    top: int = 3, all_days: bool = False) -> pd.DataFrame:
    """Days whose total spend is far above its forecast band, and the groups
    that drove them.

    A day is anomalous when its spend is above the ``level`` one-sided
    prediction bound of the model fitted on the ``max_history`` normal days
    before it (at least ``min_history`` of them), and more than
    ``min_relative_excess`` above the expected spend. Anomalous days are left
    out of later fits. The same band is fitted to every group of ``by``
    (default: every label column of the table); a group's excess on a day is
    its spend minus its own expected spend (0 expected before it first
    spent), and the drivers are the groups with the largest excess.

    Returns:
        One row per anomalous day (every judged day with ``all_days``):
        ``day, spend, expected, upper, excess, anomaly, drivers`` (e.g.
        ``"team=nlp +$1,234.00 (82%); team=vision +$270.00 (18%)"``),
        ``top_driver, top_driver_excess``.

    Examples:
        Six weeks of daily spend per team, as ``gpucost.allocate(...,
        by=["team", "period"], freq="D")`` gives it:

        >>> days = pd.date_range("2026-02-02", "2026-03-15", freq="D", tz="UTC")   # six weeks, Monday first
        >>> week = np.array([1000.0, 1100, 1050, 1150, 1000, 500, 450])            # quiet weekends
        >>> daily = pd.DataFrame({"period": np.tile(days, 2), "team": np.repeat(["nlp", "vision"], len(days)),
        ...                       "cost": np.r_[np.tile(week, 6), np.tile(week * 0.3, 6)] + np.arange(84) * 37 % 50})
        >>> daily.loc[(daily["team"] == "nlp") & (daily["period"] == "2026-03-10"), "cost"] += 1500   # a spike
        >>> anomalies = gpucost.spend_anomalies(daily, by="team")
        >>> anomalies[["day", "spend", "expected", "upper", "excess"]].round({"expected": 0, "upper": 0, "excess": 0})
                                day   spend  expected   upper  excess
        0 2026-03-10 00:00:00+00:00  2998.0    1478.0  1557.0  1520.0
        >>> anomalies.loc[0, "drivers"]
        'team=nlp +$1,505.16 (99%); team=vision +$15.16 (1%)'
    """
    if int(top) != top or top < 1:
        raise InvalidInputError(f"parameter 'top': {top} is not a whole number >= 1")
    data, t = _daily(allocation_by_day)
    by_list = _label_columns(t) if by is None else ([by] if isinstance(by, str) else list(by))
    if data.empty:
        return pd.DataFrame(columns=["day", "spend", "expected", "upper", "excess", "anomaly", "drivers",
                                     "top_driver", "top_driver_excess"])
    first, last = int(data["day"].min()), int(data["day"].max())
    days = data["day"].to_numpy(np.int64)
    spend = data["cost"].to_numpy(np.float64)
    series = [_series(days, spend, first, last)]
    labels = ["(total)"]
    if by_list:
        names = [pd.Series(strings(t, _NAME, c), dtype=object).fillna("(none)") for c in by_list]
        label = names[0].radd(f"{by_list[0]}=")
        for c, values in zip(by_list[1:], names[1:]):
            label = label + f", {c}=" + values
        codes, uniques = pd.factorize(label, sort=True)
        labels += list(uniques)
    else:
        codes = np.zeros(0, dtype=np.int64)
    offsets, day, values = _csr(series)
    if by_list:  # every group from its first day to the last, in one pass
        g_first = np.full(len(labels) - 1, last, dtype=np.int64)
        np.minimum.at(g_first, codes, days)
        lengths = last - g_first + 1
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        g_day = np.repeat(g_first, lengths) + (np.arange(lengths.sum()) - np.repeat(starts, lengths))
        g_values = np.bincount(starts[codes] + days - g_first[codes], weights=spend, minlength=int(lengths.sum()))
        offsets = np.concatenate([offsets, offsets[-1] + np.cumsum(lengths)]).astype(np.int64)
        day = np.concatenate([day, g_day]).astype(np.int64)
        values = np.concatenate([values, g_values])
        series += [None] * (len(labels) - 1)
    bands = _core.daily_bands(offsets, day, values, float(level), int(min_history), int(max_history),
                              float(min_relative_excess), *_BAND_MIN_DAYS)
    total = slice(offsets[0], offsets[1])
    out = pd.DataFrame({"day": to_utc(day[total] * NANOS_PER_DAY), "spend": values[total],
                        "expected": bands["expected"][total], "upper": bands["upper"][total],
                        "judged": bands["judged"][total].astype(bool), "anomaly": bands["anomaly"][total] == 1})
    out["excess"] = out["spend"] - out["expected"]
    # Group excess on every day of the total series (0 expected before a
    # group's first day and where its own band has no history yet).
    excess = np.zeros((len(series) - 1, last - first + 1))
    groups = slice(int(offsets[1]), int(offsets[-1]))
    group_of = np.repeat(np.arange(len(series) - 1), np.diff(offsets)[1:])
    excess[group_of, day[groups] - first] = values[groups] - np.nan_to_num(bands["expected"][groups], nan=0.0)
    out["drivers"] = ""
    out["top_driver"] = None
    out["top_driver_excess"] = np.nan
    for i in np.flatnonzero(out["anomaly"].to_numpy()) if excess.size else []:
        column = excess[:, i]
        order = np.argsort(-column, kind="stable")
        positive = order[column[order] > 0]
        if not positive.size:
            continue
        share = column[positive] / column[positive].sum()
        out.loc[i, "drivers"] = "; ".join(f"{labels[1 + g]} +${column[g]:,.2f} ({s:.0%})"
                                          for g, s in zip(positive[:top], share[:top]))
        out.loc[i, "top_driver"] = labels[1 + positive[0]]
        out.loc[i, "top_driver_excess"] = float(column[positive[0]])
    out = out if all_days else out[out["anomaly"]]
    return out[["day", "spend", "expected", "upper", "excess", "anomaly", "drivers", "top_driver",
                "top_driver_excess"]].reset_index(drop=True)
