"""Packaging: one version everywhere, and type stubs of the C++ extension that
name exactly what the module has (every function, class, method and
parameter), so that a type checker using py.typed sees the real API."""

from __future__ import annotations

import ast
import subprocess
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

import gpucost
from gpucost import _core
from gpucost.cli import main

ROOT = Path(__file__).resolve().parents[2]
STUB = Path(gpucost.__file__).with_name("_core.pyi")


def test_one_version_source(capsys):
    declared = re.search(r"project\(gpucost VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    assert declared, "CMakeLists.txt declares no project(gpucost VERSION ...)"
    assert gpucost.__version__ == _core.__version__ == declared.group(1)
    assert importlib.metadata.version("gpucost") == declared.group(1)
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpucost {declared.group(1)}"


def test_package_is_typed():
    assert Path(gpucost.__file__).with_name("py.typed").is_file()
    assert STUB.is_file()


# ---- the stubs against the module ----

def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(), filename=str(STUB))


def _functions(body: list[ast.stmt]) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in body if isinstance(node, ast.FunctionDef)}


def _stub_params(fn: ast.FunctionDef, *, method: bool) -> list[str]:
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    names = [a.arg for a in args]
    is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    return names[1:] if method and not is_static else names


def _runtime_params(obj: object, *, method: bool) -> list[str] | None:
    """Parameter names from pybind11's signature line; None for overloads."""
    first = (obj.__doc__ or "").lstrip().splitlines()[0] if obj.__doc__ else ""
    match = re.match(r"[\w.]+\((.*)\)\s*->", first)
    if not match:
        return None
    # Split on top-level commas only (defaults and annotations may nest).
    params, depth, current = [], 0, ""
    for ch in match.group(1):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        params.append(current)
    names = [p.split(":")[0].split("=")[0].strip().lstrip("*") for p in params]
    names = [n for n in names if n not in ("/", "")]
    return names[1:] if method and names and names[0] == "self" else names


def _check_params(where: str, runtime: object, stub: ast.FunctionDef, *, method: bool) -> list[str]:
    names = _runtime_params(runtime, method=method)
    if names is None:
        return []
    stub_names = _stub_params(stub, method=method)
    if len(names) != len(stub_names):
        return [f"{where}: the module takes {names}, the stub {stub_names}"]
    if all(re.fullmatch(r"arg\d+", n) for n in names):
        return []  # unnamed pybind11 arguments: only the count is checkable
    return [f"{where}: the module takes {names}, the stub {stub_names}"] if names != stub_names else []


def _runtime_members(cls: type) -> set[str]:
    members = {name for name in vars(cls) if not name.startswith("_")}
    # A class bound without py::init keeps Python's slot wrapper: no constructor.
    init = vars(cls).get("__init__")
    if init is not None and (init.__doc__ or "").startswith("__init__("):
        members.add("__init__")
    return members


def test_core_stubs_match_the_module():
    tree = _stub_tree()
    functions = _functions(tree.body)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    variables = {node.target.id for node in tree.body
                 if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    runtime = {name for name in dir(_core) if not name.startswith("__")} | {"__version__"}

    problems = []
    for name in sorted(runtime):
        obj = getattr(_core, name)
        if isinstance(obj, type):
            if name not in classes:
                problems.append(f"class {name} has no stub")
                continue
            members = _functions(classes[name].body)
            properties = {fn.name for fn in members.values()
                          if any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)}
            for member in sorted(_runtime_members(obj) - set(members)):
                problems.append(f"{name}.{member} has no stub")
            for member in sorted(set(members) - _runtime_members(obj)):
                problems.append(f"{name}.{member} is in the stub, not in the module")
            for member in sorted(set(members) & _runtime_members(obj) - properties):
                attr = vars(obj)[member]
                attr = getattr(attr, "__func__", attr)  # staticmethod
                problems += _check_params(f"{name}.{member}", attr, members[member], method=True)
        elif callable(obj):
            if name not in functions:
                problems.append(f"{name}() has no stub")
            else:
                problems += _check_params(name, obj, functions[name], method=False)
        elif name not in variables:
            problems.append(f"{name} ({type(obj).__name__}) has no stub")
    for name in sorted((set(functions) | set(classes)) - runtime):
        problems.append(f"{name} is in the stub, not in the module")
    assert not problems, "gpucost/_core.pyi differs from the module:\n" + "\n".join(problems)


def test_stub_check_can_fail(monkeypatch):
    # The check above can fail: drop a function from the stub, add one, lose a parameter.
    tree = _stub_tree()
    tree.body = [node for node in tree.body if not (isinstance(node, ast.FunctionDef) and node.name == "allocate")]
    tree.body += ast.parse("def not_in_core() -> None: ...").body
    quantile = _functions(tree.body)["student_t_quantile"]
    quantile.args.args = quantile.args.args[:1]
    monkeypatch.setattr(sys.modules[__name__], "_stub_tree", lambda: tree)
    with pytest.raises(AssertionError) as failure:
        test_core_stubs_match_the_module()
    assert "allocate() has no stub" in str(failure.value)
    assert "not_in_core is in the stub, not in the module" in str(failure.value)
    assert "student_t_quantile: the module takes ['p', 'dof'], the stub ['p']" in str(failure.value)


def test_the_report_templates_are_package_data():
    # The report renders gpucost/templates with Jinja2: both must reach a user's plain `pip install`.
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert any(re.match(r"jinja2\b", d, re.I) for d in project["project"]["dependencies"])
    skbuild = project["tool"]["scikit-build"]
    assert "python/gpucost" in skbuild["wheel"]["packages"]  # the whole directory, data files included
    templates = Path(gpucost.__file__).with_name("templates")
    names = sorted(p.name for p in templates.iterdir())
    assert {"report.html", "table.html", "fragments.html", "report.css"} <= set(names)
    excluded = [*skbuild.get("wheel", {}).get("exclude", []), *skbuild.get("sdist", {}).get("exclude", [])]
    assert not [e for e in excluded if "templates" in e or e.endswith((".html", ".css"))], excluded
    # scikit-build-core leaves out what git ignores.
    ignored = subprocess.run(["git", "check-ignore", *[str(templates / n) for n in names]], cwd=ROOT,
                             capture_output=True, text=True)
    assert ignored.returncode == 1 and not ignored.stdout, ignored.stdout
