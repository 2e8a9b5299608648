"""gpucost export-metrics under slow and vanishing clients (127.0.0.1 only,
bounded loops, a few seconds): scrapes keep answering, a client that goes
away is not an error, nothing but one-line errors ever reaches stderr."""

from __future__ import annotations

import http.client
import io
import socket
import statistics
import struct
import time

import pytest

import gpucost
from gpucost import metrics

# Large enough (1 MiB) that a client resetting mid-answer breaks the server's write.
TEXT = "# HELP gpucost_x x\n# TYPE gpucost_x gauge\n" + "".join(
    f'gpucost_x{{team="t{i}"}} {i}.5\n' for i in range(40_000))


def _scrape(address, path="/metrics", timeout=5.0) -> tuple[int, bytes, float]:
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(*address, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        return response.status, body, time.perf_counter() - t0
    finally:
        conn.close()


def _connect(address) -> socket.socket:
    s = socket.create_connection(address, timeout=5)
    return s


def _reset(s: socket.socket) -> None:
    """Closes with a TCP reset (SO_LINGER 0), as a killed client does."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def test_slow_and_vanishing_clients_do_not_disturb_scrapes(capfd):
    server = metrics.MetricsServer(lambda: TEXT, "127.0.0.1", 0, max_connections=1024, read_timeout=3.0).start()
    address = server.address
    slow: list[socket.socket] = []
    latencies: list[float] = []
    held: list[int] = []  # connections the server held at each scrape
    try:
        for _ in range(300):  # hold a connection, send half a request, never finish it
            s = _connect(address)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(s)
        for i in range(300):  # vanish: before the request, after it, or in the middle of the answer
            if i % 30 == 0:
                held.append(server.active)
                status, body, seconds = _scrape(address)
                assert status == 200 and body == TEXT.encode()
                latencies.append(seconds)
            s = _connect(address)
            if i % 3 == 0:
                _reset(s)
                continue
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            if i % 3 == 1:
                s.close()
            else:
                s.recv(1024)
                _reset(s)
        for _ in range(10):
            status, body, seconds = _scrape(address)
            assert status == 200 and body == TEXT.encode()
            latencies.append(seconds)
        assert max(held) >= 300  # scrapes were answered while the 300 slow clients were held
        deadline = time.monotonic() + 15
        while server.active and time.monotonic() < deadline:  # past the read timeout they are dropped
            time.sleep(0.05)
        assert server.active == 0
        status, _, seconds = _scrape(address)
        assert status == 200
        latencies.append(seconds)
    finally:
        for s in slow:
            s.close()
        server.stop()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
    assert server.stats["timeouts"] >= 300
    assert server.stats["errors"] == 0
    assert server.stats["disconnects"] >= 100
    # Scrapes answer within 100 ms (a 1 MiB answer on 127.0.0.1); the median, so
    # that one scheduler hiccup of a shared CI machine does not fail the test.
    assert statistics.median(latencies) < 0.1, latencies


def test_connection_cap_answers_503_and_recovers():
    log = io.StringIO()
    server = metrics.MetricsServer(lambda: "x 1\n", "127.0.0.1", 0, max_connections=4, read_timeout=5.0,
                                   log=log).start()
    held = [_connect(server.address) for _ in range(4)]
    try:
        deadline = time.monotonic() + 5
        while server.active < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        status, body, _ = _scrape(server.address)
        assert status == 503 and b"too many connections" in body
        for s in held:
            s.close()
        deadline = time.monotonic() + 5
        while server.active and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _scrape(server.address)[:2] == (200, b"x 1\n")
    finally:
        for s in held:
            s.close()
        server.stop()
    assert server.stats["refused"] == 1
    assert log.getvalue() == ""


def test_paths_methods_and_access_log(tmp_path):
    access = tmp_path / "access.log"
    server = metrics.MetricsServer(lambda: "x 1\n", "127.0.0.1", 0, access_log=access).start()
    try:
        assert _scrape(server.address, "/metrics?x=1")[:2] == (200, b"x 1\n")
        assert _scrape(server.address, "/nope")[0] == 404
        conn = http.client.HTTPConnection(*server.address, timeout=5)
        conn.request("POST", "/metrics", body=b"")
        assert conn.getresponse().status == 405
        conn.close()
        with _connect(server.address) as s:
            s.sendall(b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n")
            assert s.recv(64).startswith(b"HTTP/1.1 431")
    finally:
        server.stop()
    lines = access.read_text().splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("127.0.0.1 - - [") and lines[0].endswith('"GET /metrics?x=1 HTTP/1.1" 200 4')
    assert ' 404 ' in lines[1] and ' 405 ' in lines[2] and ' 431 ' in lines[3]


def test_render_failure_is_one_line_and_a_500():
    calls = []

    def render():
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("bill unreadable\nsecond line")
        return "x 1\n"

    log = io.StringIO()
    server = metrics.MetricsServer(render, "127.0.0.1", 0, refresh=0.0, log=log).start()
    try:
        assert _scrape(server.address)[0] == 500
    finally:
        server.stop()
    assert log.getvalue() == ("gpucost export-metrics: rendering the metrics failed: RuntimeError: bill unreadable "
                              "second line\n")


def test_error_log_is_rate_limited():
    out = io.StringIO()
    log = metrics._ErrorLog(out, burst=3, period=0.2)
    for i in range(10):
        log(f"error {i}\nwith a second line")
    time.sleep(0.25)
    log("error after the window")
    lines = out.getvalue().splitlines()
    assert lines == ["gpucost export-metrics: error 0 with a second line",
                     "gpucost export-metrics: error 1 with a second line",
                     "gpucost export-metrics: error 2 with a second line",
                     "gpucost export-metrics: 7 more errors in the last 0.2 s not shown",
                     "gpucost export-metrics: error after the window"]


def test_bad_settings_and_busy_port(tmp_path):
    with pytest.raises(gpucost.InvalidInputError, match="max_connections"):
        metrics.MetricsServer(lambda: "", "127.0.0.1", 0, max_connections=0)
    with pytest.raises(gpucost.InvalidInputError, match="read_timeout"):
        metrics.MetricsServer(lambda: "", "127.0.0.1", 0, read_timeout=0)
    server = metrics.MetricsServer(lambda: "", "127.0.0.1", 0)
    try:
        with pytest.raises(gpucost.InvalidInputError, match="--listen 127.0.0.1:"):
            metrics.MetricsServer(lambda: "", "127.0.0.1", server.address[1], access_log=tmp_path / "a.log")
    finally:
        server.stop()


def test_stop_without_start_and_twice():
    server = metrics.MetricsServer(lambda: "x 1\n", "127.0.0.1", 0)
    server.stop()
    server.stop()
    with pytest.raises(OSError):
        _connect(server.address)


def test_export_metrics_command_stops_on_ctrl_c_quietly(tmp_path):
    """The command as an operator runs it: serves, takes a vanishing client,
    and a Ctrl-C (SIGINT) ends it with exit 0 and no traceback."""
    import signal
    import subprocess
    import sys
    (tmp_path / "costs.csv").write_text("resource_id,start,end,cost\n"
                                        "i-1,2026-03-01T00:00:00Z,2026-03-01T01:00:00Z,3.0\n")
    (tmp_path / "usage.csv").write_text("timestamp,resource_id,device,consumer,share,util,mem_used\n"
                                        "2026-03-01T00:00:00Z,i-1,0,job-a,1.0,0.5,10.0\n")
    (tmp_path / "inventory.csv").write_text("resource_id,device,mem_capacity\ni-1,0,80.0\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "gpucost.cli", "export-metrics", "--costs",
                             str(tmp_path / "costs.csv"), "--usage", str(tmp_path / "usage.csv"), "--inventory",
                             str(tmp_path / "inventory.csv"), "--interval", "3600", "--by", "consumer",
                             "--listen", f"127.0.0.1:{port}", "--no-progress"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status, body, _ = _scrape(("127.0.0.1", port))
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.1)
        assert status == 200 and b'consumer="job-a"' in body
        s = _connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        _reset(s)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    proc.stderr.close()
    assert err.startswith("gpucost: serving http://127.0.0.1:") and err.count("\n") == 1, err


def test_stop_drops_held_clients_quietly(capfd):
    log = io.StringIO()
    server = metrics.MetricsServer(lambda: "x 1\n", "127.0.0.1", 0, read_timeout=30.0, log=log).start()
    held = [_connect(server.address) for _ in range(50)]
    try:
        for s in held:
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
        deadline = time.monotonic() + 5
        while server.active < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.active == 50
        server.stop()
        for s in held:  # dropped (closed or reset), not left hanging
            try:
                assert s.recv(16) == b""
            except ConnectionResetError:
                pass
    finally:
        for s in held:
            s.close()
        server.stop()
    assert log.getvalue() == "" and capfd.readouterr().err == ""
