"""Checks that the sdist in DIST_DIR holds every file the checkout tracks
(git ls-files) except pyproject.toml's sdist.exclude, so a source build from
it has what the wheel's build (from the checkout, Makefile) had.

usage: sdist_contents.py DIST_DIR SOURCE_DIR
"""

import fnmatch
import pathlib
import subprocess
import sys
import tarfile
import tomllib


def excluded(path: str, patterns: list[str]) -> bool:
    """True where a pattern of sdist.exclude (gitignore style) covers path."""
    for pattern in patterns:
        if pattern.endswith("/"):
            if path.startswith(pattern) or f"/{pattern}" in f"/{path}":
                return True
        elif fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path.rsplit("/", 1)[-1], pattern):
            return True
    return False


def main(dist: pathlib.Path, source: pathlib.Path) -> int:
    sdists = sorted(dist.glob("gpucost-*.tar.gz"))
    if len(sdists) != 1:
        print(f"sdist_contents: expected one sdist in {dist} (make sdist), found {len(sdists)}", file=sys.stderr)
        return 1
    with tarfile.open(sdists[0]) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    patterns = tomllib.loads((source / "pyproject.toml").read_text())["tool"]["scikit-build"]["sdist"]["exclude"]
    tracked = subprocess.run(["git", "-C", str(source), "ls-files", "-z"], check=True, capture_output=True,
                             text=True).stdout.split("\0")
    expected = {path for path in tracked if path and not excluded(path, patterns)}
    missing = sorted(expected - members)
    leaked = sorted(path for path in members & set(tracked) if excluded(path, patterns))
    if "PKG-INFO" not in members:
        missing.append("PKG-INFO")
    for path in missing:
        print(f"sdist_contents: {sdists[0].name} lacks {path}", file=sys.stderr)
    for path in leaked:
        print(f"sdist_contents: {sdists[0].name} holds {path}, which sdist.exclude leaves out", file=sys.stderr)
    if missing or leaked:
        return 1
    print(f"{sdists[0].name}: {len(expected)} tracked files, none missing")
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])))
