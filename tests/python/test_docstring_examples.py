"""Every public function and class has a runnable example in its docstring
(ctest's python_doctests runs them: ``pytest --doctest-modules python/gpucost``),
and the API reference (docs/api/, ``make docs``) lists every public name.

Public: what ``gpucost.__all__`` names, the ``__all__`` of the modules it
names (catalog, kubernetes, prometheus, plot, money, sheets), and of the
submodules users import themselves (dask, spark, pipeline, report, analyses).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import gpucost

API_DOCS = Path(__file__).resolve().parents[2] / "docs" / "api"
SUBMODULES = ("catalog", "kubernetes", "prometheus", "plot", "money", "sheets", "dask", "spark", "pipeline",
              "report", "analyses")


def public_callables() -> dict[str, object]:
    """Qualified name -> function or class, for every public one."""
    found = {}
    for name in gpucost.__all__:
        obj = getattr(gpucost, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            found[f"gpucost.{name}"] = obj
    for module_name in SUBMODULES:
        module = importlib.import_module(f"gpucost.{module_name}")
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                found.setdefault(f"gpucost.{module_name}.{name}", obj)
    return found


def test_the_public_api_is_found():
    names = public_callables()
    assert len(names) > 100
    assert "gpucost.allocate" in names and "gpucost.dask.allocate" in names and "gpucost.plot.team_colors" in names


def test_every_public_function_has_an_example():
    missing = sorted(name for name, obj in public_callables().items() if ">>>" not in (inspect.getdoc(obj) or ""))
    assert not missing, f"public functions without a '>>>' example in their docstring: {missing}"


def reference_text() -> str:
    return "\n".join(p.read_text() for p in sorted(API_DOCS.glob("*.rst")))


@pytest.mark.parametrize("name", [n for n in gpucost.__all__ if n != "__version__"])
def test_the_reference_lists_every_public_name(name):
    assert re.search(rf"\bgpucost\.{re.escape(name)}\b", reference_text()), \
        f"gpucost.{name} is in no page of docs/api/ (the API reference)"
