"""Real servers for the tests, on 127.0.0.1 only, each stopped at the end
(also on failure): PostgreSQL (Debian's postgresql, a throw-away cluster made
with initdb), Prometheus (Debian's prometheus), headless Chromium."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited ({proc.returncode}): {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} not ready in {timeout:g} s")
        time.sleep(0.2)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# ---- PostgreSQL ----------------------------------------------------------------------

def postgres_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A PostgreSQL server in a temporary directory; yields a SQLAlchemy URL.

    PostgreSQL refuses to run as root: as root, the cluster belongs to the
    ``postgres`` user (Debian's package creates it) and its commands run
    through ``runuser``."""
    initdb, pg_ctl = postgres_bin("initdb"), postgres_bin("pg_ctl")
    if not (initdb and pg_ctl):
        raise FileNotFoundError("initdb/pg_ctl not found: install Debian's postgresql")
    as_user: list[str] = []
    owner = None
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    work = Path(tempfile.mkdtemp(prefix="gpucost-pg-"))
    data, sock, log = work / "data", work / "sock", work / "postgres.log"
    sock.mkdir()
    if owner:
        for p in (work, sock):
            os.chown(p, owner.pw_uid, owner.pw_gid)
    port = free_port()
    started = False
    try:
        subprocess.run([*as_user, initdb, "-D", str(data), "-U", "gpucost", "--auth=trust", "-E", "UTF8",
                        "--no-sync"], check=True, capture_output=True, timeout=120)
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-l", str(log), "-w", "-t", "60",
                        "-o", f"-h 127.0.0.1 -p {port} -k {sock} -c fsync=off", "start"],
                       check=True, capture_output=True, timeout=90)
        started = True
        yield f"postgresql+psycopg://gpucost@127.0.0.1:{port}/postgres"
    finally:
        if started:
            subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True,
                           timeout=60)
        shutil.rmtree(work, ignore_errors=True)


# ---- Prometheus -----------------------------------------------------------------------

@contextlib.contextmanager
def prometheus(scrape_targets: list[str], *, interval: str = "1s", openmetrics: str | None = None) -> Iterator[str]:
    """A Prometheus scraping ``scrape_targets`` (host:port on 127.0.0.1), its
    TSDB backfilled from ``openmetrics`` text when given (promtool); yields
    its URL."""
    binary = shutil.which("prometheus")
    if not binary:
        raise FileNotFoundError("prometheus not found: install Debian's prometheus")
    work = Path(tempfile.mkdtemp(prefix="gpucost-prom-"))
    targets = ", ".join(f'"{t}"' for t in scrape_targets)
    scrape = (f"scrape_configs:\n  - job_name: gpucost\n    static_configs:\n      - targets: [{targets}]\n"
              if scrape_targets else "")
    (work / "prometheus.yml").write_text(
        f"global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n{scrape}")
    if openmetrics is not None:
        (work / "input.om").write_text(openmetrics)
        subprocess.run([shutil.which("promtool") or "promtool", "tsdb", "create-blocks-from", "openmetrics",
                        str(work / "input.om"), str(work / "data")], check=True, capture_output=True, timeout=120)
    port = free_port()
    log_path = work / "prometheus.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen([binary, f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}",
                             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/-/ready", proc, log_path)
        yield url
    finally:
        stop(proc)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


# ---- Chromium ------------------------------------------------------------------------------

def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None
