"""The exceptions gpucost raises.

Bad input (a missing column, a value out of range, an unknown option) raises
:class:`InvalidInputError`, which is both a :class:`gpucost.Error` and a
:class:`ValueError`; its message names the table or file, the row and the
column, and its fields (``table``, ``row``, ``line``, ``column``,
``parameter``, ``reason``) hold them. Anything else the library reports is a :class:`gpucost.Error`.
"""

from __future__ import annotations

import re

__all__ = ["Error", "InvalidInputError", "JoinWarning", "JoinError", "conversion_hint"]


class Error(RuntimeError):
    """Base class of every error gpucost raises on purpose.

    Examples:
        >>> issubclass(gpucost.InvalidInputError, gpucost.Error), issubclass(gpucost.JoinError, gpucost.Error)
        (True, True)
        >>> try:
        ...     gpucost.set_num_threads(-1)
        ... except gpucost.Error as e:
        ...     print(type(e).__name__, "-", e)
        InvalidInputError - threads: expected an integer >= 0 (0 = one per core), got -1
    """


class InvalidInputError(Error, ValueError):
    """Bad input: the message names the table or file, the row and the column,
    and so do these fields (None where the error names none):

    - ``table``: the table (``"usage"``) or file (``"bill.csv"``) at fault;
    - ``row``: its 0-based row, as ``iloc`` counts (errors about a table);
    - ``line``: its 1-based line, as editors count (errors about a file);
    - ``column``: the column;
    - ``parameter``: the parameter of the call (``"alpha"``);
    - ``reason``: what is wrong, the message after the location (the whole
      message when it names no location).

    Errors from the C++ core carry the fields their builder was given; errors
    raised in Python give them, or have them read from the message, which
    has one of the forms ``usage: row 17, column 'share': 1.5 is outside (0, 1]``,
    ``bill.csv: line 12, column 'BilledCost': 'abc' is not a number``,
    ``usage: column 'share': not numeric``, ``costs: missing required column 'end'``
    and ``parameter 'alpha': 1.5 is outside [0, 1]``.

    Examples:
        The second sample's share is 1.5: the error names its row and column.

        >>> costs = pd.DataFrame({"resource_id": ["node-1"], "cost": [8.0],
        ...                       "start": [pd.Timestamp("2026-03-01 00:00", tz="UTC")],
        ...                       "end": [pd.Timestamp("2026-03-01 02:00", tz="UTC")]})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=2, freq="h", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": "train",
        ...                       "share": [1.0, 1.5], "util": 0.9, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> try:
        ...     gpucost.allocate(costs, usage, inventory)
        ... except gpucost.InvalidInputError as e:
        ...     print(e)
        ...     print(e.table, e.row, e.column)
        ...     print(usage.iloc[e.row][e.column])
        usage: row 1, column 'share': 1.5 is outside (0, 1]
        usage 1 share
        1.5
        >>> issubclass(gpucost.InvalidInputError, ValueError)
        True
    """

    table: str | None
    row: int | None
    line: int | None
    column: str | None
    parameter: str | None
    reason: str

    def __init__(self, message: str = "", *, table: str | None = None, row: int | None = None,
                 line: int | None = None, column: str | None = None, parameter: str | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        given = {"table": table, "row": row, "line": line, "column": column, "parameter": parameter}
        parsed = _location(str(message))
        fields = given if any(v is not None for v in given.values()) else parsed
        self.table = fields["table"]
        self.row = None if fields["row"] is None else int(fields["row"])
        self.line = None if fields["line"] is None else int(fields["line"])
        self.column = fields["column"]
        self.parameter = fields["parameter"]
        self.reason = reason if reason is not None else parsed.get("reason", str(message))
        if self.column is None and self.table is not None:
            named = _COLUMN_REASON.match(self.reason)
            if named:
                self.column = named["column"]

    def location(self) -> dict:
        """The fields, as keywords for another InvalidInputError."""
        return {"table": self.table, "row": self.row, "line": self.line, "column": self.column,
                "parameter": self.parameter, "reason": self.reason}


# "usage: row 17, column 'share': ..." (the one format of row errors).
ROW_ERROR = re.compile(r"^(?P<table>[\w.-]+): row (?P<row>\d+), (?P<rest>.*)$", re.DOTALL)

# The message forms InvalidInputError reads its fields from (a table or file
# name holds no ": ").
_NAME = r"(?P<table>(?:(?!: ).)+?)"
_AT_ROW = re.compile(_NAME + r": (?P<kind>row|line) (?P<number>-?\d+)(?:, column '(?P<column>.*?)')?: (?P<reason>.*)\Z",
                     re.DOTALL)
_AT_COLUMN = re.compile(_NAME + r": column '(?P<column>.*?)': (?P<reason>.*)\Z", re.DOTALL)
_MISSING = re.compile(_NAME + r": (?P<reason>missing required column .*)\Z", re.DOTALL)
_PARAMETER = re.compile(r"parameter '(?P<parameter>.*?)': (?P<reason>.*)\Z", re.DOTALL)
# A table error's reason that names a column: "missing required column 'end'",
# "column 'spend' has 3 values for 4 rows".
_COLUMN_REASON = re.compile(r"(?:missing required column|column) '(?P<column>[^']*)'")


class JoinWarning(UserWarning):
    """An input that changes the numbers: a bill line without telemetry, telemetry
    without a bill line, periods that do not meet, hours counted twice... The
    message names the cause, the money at stake and the fix.

    Examples:
        ``node-2`` is billed but no sample names it; a warnings filter turns
        the warning into an error:

        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": "train",
        ...                       "share": 1.0, "util": 0.9, "mem_used": 40 * 2**30})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("error", gpucost.JoinWarning)
        ...     gpucost.allocate(costs, usage, inventory)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        gpucost.errors.JoinWarning: 1 billed GPU resource(s) have lines without any telemetry (node-2): $6.00 is on ...
    """


class JoinError(InvalidInputError):
    """Nothing joined (or, under ``strict``, any join warning): no result is
    returned, since every number would be wrong.

    Examples:
        The bill names ``node-1``, the telemetry ``i-0abc``: nothing joins.

        >>> costs = pd.DataFrame({"resource_id": ["node-1"], "cost": [8.0],
        ...                       "start": [pd.Timestamp("2026-03-01 00:00", tz="UTC")],
        ...                       "end": [pd.Timestamp("2026-03-01 02:00", tz="UTC")]})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "i-0abc", "device": 0, "consumer": "train",
        ...                       "share": 1.0, "util": 0.9, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> gpucost.allocate(costs, usage, inventory)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        gpucost.errors.JoinError: no usage sample joined a billed GPU line ($8.00 billed): the telemetry names 1 ...
    """


def _location(message: str) -> dict:
    fields: dict = {"table": None, "row": None, "line": None, "column": None, "parameter": None}
    if match := _AT_ROW.match(message):
        fields.update(table=match["table"], column=match["column"], reason=match["reason"])
        fields[match["kind"]] = int(match["number"])
    elif match := _AT_COLUMN.match(message) or _MISSING.match(message):
        fields.update(table=match["table"], column=match.groupdict().get("column"), reason=match["reason"])
    elif match := _PARAMETER.match(message):
        fields.update(parameter=match["parameter"], reason=match["reason"])
    return fields


def shift_rows(exc: InvalidInputError, table: str, offset: int) -> InvalidInputError:
    """``exc`` with its row about ``table`` moved by ``offset`` (a chunk's
    rows counted from the first chunk); other errors unchanged."""
    match = ROW_ERROR.match(str(exc))
    if not match or match["table"] != table or offset == 0:
        return exc
    row = int(match["row"]) + offset
    return InvalidInputError(f"{table}: row {row}, {match['rest']}", **{**exc.location(), "row": row})


def conversion_hint(obj: object) -> str:
    """What to pass instead of a frame gpucost does not take: a Polars
    DataFrame or LazyFrame is converted by the caller (gpucost works on
    pandas and Arrow), so the message says how."""
    module = type(obj).__module__ or ""
    if module.split(".")[0] == "polars":
        lazy = ".collect()" if type(obj).__name__ == "LazyFrame" else ""
        return f" (a Polars frame: pass df{lazy}.to_pandas() or df{lazy}.to_arrow())"
    return ""
