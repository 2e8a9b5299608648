"""The exceptions gpucost raises.

Bad input (a missing column, a value out of range, an unknown option) raises
:class:`InvalidInputError`, which is both a :class:`gpucost.Error` and a
:class:`ValueError`; its message names the table or file, the row and the
column. Anything else the library reports is a :class:`gpucost.Error`.
"""

from __future__ import annotations

import re

__all__ = ["Error", "InvalidInputError", "conversion_hint"]


class Error(RuntimeError):
    """Base class of every error gpucost raises on purpose."""


class InvalidInputError(Error, ValueError):
    """Bad input: the message names the table, the row and the column."""


# "usage: row 17, column 'share': ..." (the one format of row errors).
ROW_ERROR = re.compile(r"^(?P<table>[\w.-]+): row (?P<row>\d+), (?P<rest>.*)$", re.DOTALL)


def shift_rows(exc: InvalidInputError, table: str, offset: int) -> InvalidInputError:
    """``exc`` with its row about ``table`` moved by ``offset`` (a chunk's
    rows counted from the first chunk); other errors unchanged."""
    match = ROW_ERROR.match(str(exc))
    if not match or match["table"] != table or offset == 0:
        return exc
    return InvalidInputError(f"{table}: row {int(match['row']) + offset}, {match['rest']}")


def conversion_hint(obj: object) -> str:
    """What to pass instead of a frame gpucost does not take: a Polars
    DataFrame or LazyFrame is converted by the caller (gpucost works on
    pandas and Arrow), so the message says how."""
    module = type(obj).__module__ or ""
    if module.split(".")[0] == "polars":
        lazy = ".collect()" if type(obj).__name__ == "LazyFrame" else ""
        return f" (a Polars frame: pass df{lazy}.to_pandas() or df{lazy}.to_arrow())"
    return ""
