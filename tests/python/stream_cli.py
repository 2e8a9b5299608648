"""Helpers of the CLI streaming tests: a command's showback as a frame, a
record of what the Allocator was fed, and the streamed and whole results
compared."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pandas as pd

import gpucost
from gpucost import cli


def run_allocate(config, capsys) -> tuple[pd.DataFrame, str]:
    """``gpucost allocate -c config`` as a frame (raw decimals) and its stderr."""
    code = cli.main(["allocate", "-c", str(config), "--format", "csv", "--decimals", "raw"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return pd.read_csv(StringIO(out), keep_default_na=False, na_values=[""], dtype={"consumer": str}), err


def run_check(config, capsys) -> str:
    """``gpucost check -c config``: its exit code and stdout."""
    code = cli.main(["check", "-c", str(config)])
    return f"{code}\n{capsys.readouterr().out}"


def record_allocators(monkeypatch) -> dict:
    """Counts the chunks given to gpucost.Allocator and records each one's ordered_chunks."""
    seen = {"added": 0, "ordered": []}
    add, init = gpucost.Allocator.add, gpucost.Allocator.__init__
    monkeypatch.setattr(gpucost.Allocator, "add", lambda self, chunk: seen.__setitem__("added", seen["added"] + 1)
                        or add(self, chunk))
    monkeypatch.setattr(gpucost.Allocator, "__init__", lambda self, *a, **kw: seen["ordered"].append(
        kw.get("ordered_chunks")) or init(self, *a, **kw))
    return seen


def assert_same_showback(streamed: pd.DataFrame, whole: pd.DataFrame) -> None:
    """The same consumers and, to 1e-9, the same numbers in every column."""
    streamed = streamed.sort_values("consumer").reset_index(drop=True)
    whole = whole.sort_values("consumer").reset_index(drop=True)
    assert list(streamed.columns) == list(whole.columns)
    assert streamed["consumer"].tolist() == whole["consumer"].tolist()
    for column in streamed.columns.drop("consumer"):
        np.testing.assert_allclose(streamed[column].astype(float), whole[column].astype(float), rtol=1e-9,
                                   atol=1e-9, err_msg=column)
