"""The namespace of the docstring examples (``pytest --doctest-modules
python/gpucost``, ctest's ``python_doctests``).

Every example may use ``gpucost``, ``pd`` (pandas) and ``np`` (numpy)
without importing them, as docs/api.md says; anything else it imports
itself. Each example runs in a fresh temporary directory (files it writes
vanish) with pandas' display options fixed, so the shown output does not
depend on the terminal.
"""

from __future__ import annotations

import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")  # charts render without a display

# Wide enough for the examples' tables on one line each, never the terminal's width.
DISPLAY = {"display.width": 120, "display.max_columns": 20, "display.max_colwidth": 50,
           "display.precision": 6, "display.max_rows": 20}


@pytest.fixture(autouse=True)
def _doctest_setup(doctest_namespace, tmp_path, monkeypatch):
    import gpucost

    # __name__: the examples run as a user's script does, not as code inside
    # gpucost (whose own calls skip the join warnings, gpucost.join.check_public_call).
    doctest_namespace.update(gpucost=gpucost, pd=pd, np=np, __name__="__main__")
    monkeypatch.chdir(tmp_path)
    with pd.option_context(*[x for kv in DISPLAY.items() for x in kv]):
        yield
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        plt.close("all")
