"""The exceptions gpucost raises.

Bad input (a missing column, a value out of range, an unknown option) raises
:class:`InvalidInputError`, which is both a :class:`gpucost.Error` and a
:class:`ValueError`; its message names the table or file, the row and the
column. Anything else the library reports is a :class:`gpucost.Error`.
"""

from __future__ import annotations

__all__ = ["Error", "InvalidInputError"]


class Error(RuntimeError):
    """Base class of every error gpucost raises on purpose."""


class InvalidInputError(Error, ValueError):
    """Bad input: the message names the table, the row and the column."""
