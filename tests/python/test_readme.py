"""The README's Python example runs as written (and keeps its promise:
money in equals money out)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_ten_lines_of_python_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has no Python example"
    example = blocks[0]
    assert len([line for line in example.splitlines() if line.strip()]) <= 12
    exec(compile(example, "README.md", "exec"), {})  # noqa: S102 - the README's own example
    assert "cost_per_effective_gpu_hour" in capsys.readouterr().out


def test_readme_shows_the_command_and_the_report():
    text = README.read_text()
    assert "gpucost demo" in text and "gpucost allocate" in text
    image = re.search(r"!\[[^\]]*\]\((docs/images/[^)]+\.png)\)", text)
    assert image and (README.parent / image.group(1)).stat().st_size > 20_000
