"""Runs the README's ten-line Python example as a user pastes it (the wheel
tests run it against an installed wheel, from outside the checkout)."""

import re
import sys
from pathlib import Path

readme = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "README.md"
example = re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)[0]
exec(compile(example, str(readme), "exec"), {})  # noqa: S102 - the README's own example
