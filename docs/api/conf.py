"""Sphinx configuration of the Python API reference (``make docs``; docs/api.md).

The source directory is docs/ (this file's parent), so the user docs
(docs/*.md, through myst-parser) and the reference pages (docs/api/*.rst)
are one site; the root page is docs/api/index.rst. The reference is
generated from the docstrings (autodoc, Google style through napoleon);
the command-line help from ``gpucost.cli.build_parser()``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

import gpucost

ROOT = Path(__file__).resolve().parents[2]

project = "gpucost"
author = "The gpucost authors"
copyright = "The gpucost authors, Apache-2.0"  # noqa: A001 - Sphinx's name
release = gpucost.__version__
version = release

root_doc = "api/index"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# docs/ holds more than pages: the examples (a notebook, an Airflow DAG, a C++
# project), Grafana JSON and images are linked, not rendered; the C++
# reference's main page is Doxygen's.
exclude_patterns = ["examples/**", "grafana/**", "images/**", "**/__pycache__", "api/cpp-mainpage.md"]

napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}
add_module_names = True

# The user docs link each other as files (guide.md#...); myst makes those
# page links, and gives headings anchors for the #... part.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# Links out of docs/ (../README.md, ../include/...) stay plain links.
suppress_warnings = ["myst.xref_missing", "myst.header", "misc.highlighting_failure"]

html_theme = "alabaster"
html_title = f"gpucost {release}"
html_theme_options = {"description": "What every GPU-hour you pay for was spent on.", "page_width": "1100px"}
html_static_path: list[str] = []


class CliHelp(SphinxDirective):
    """``.. gpucost-cli::`` the command's ``--help`` and every subcommand's,
    from ``gpucost.cli.build_parser()`` (so the page cannot drift from the code)."""

    def run(self) -> list[nodes.Node]:
        from gpucost.cli import build_parser

        parser = build_parser()
        out: list[nodes.Node] = [nodes.literal_block(text=_help(parser))]
        for action in parser._actions:  # argparse keeps subparsers here only
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    section = nodes.section(ids=[f"gpucost-{name}"])
                    section += nodes.title(text=f"gpucost {name}")
                    section += nodes.literal_block(text=_help(sub))
                    out.append(section)
        return out


def _help(parser: argparse.ArgumentParser) -> str:
    import os

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: fix it
    return re.sub(r"[ \t]+\n", "\n", parser.format_help())


def setup(app):
    app.add_directive("gpucost-cli", CliHelp)
    return {"parallel_read_safe": True}
