"""Faults while fetching telemetry: Prometheus going away in the middle of a
fetch (a response cut short, the server gone between queries) ends in a
gpucost.Error and no partial usage table."""

from __future__ import annotations

import http.server
import threading

import pytest

import gpucost
import gpucost.prometheus

EMPTY = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'


class _GoesAway(http.server.BaseHTTPRequestHandler):
    """Answers the first `good` queries, then sends headers and half a body
    and hangs up, as a Prometheus killed mid-response does."""

    good = 1
    calls = 0

    def do_POST(self):  # noqa: N802
        type(self).calls += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(EMPTY)))
        self.end_headers()
        if type(self).calls <= type(self).good:
            self.wfile.write(EMPTY)
        else:
            self.wfile.write(EMPTY[: len(EMPTY) // 2])
            self.wfile.flush()
            self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    _GoesAway.calls = 0
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GoesAway)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_response_cut_short_is_an_error_after_retries(server):
    client = gpucost.prometheus.PrometheusClient(f"http://127.0.0.1:{server.server_port}", retries=2,
                                                 backoff=0.01, timeout=5)
    assert '"status":"success"' in client.query_range("up", 0, 60, 60)
    with pytest.raises(gpucost.Error, match=r"failed after 3 attempts.*IncompleteRead"):
        client.query_range("up", 0, 60, 60)


def test_fetch_ends_in_an_error_not_a_partial_table(server):
    url = f"http://127.0.0.1:{server.server_port}"
    with pytest.raises(gpucost.Error, match="failed after 2 attempts"):
        gpucost.prometheus.fetch_usage(url, "2026-03-01T00:00Z", "2026-03-01T06:00Z", step=60, retries=1,
                                       backoff=0.01, timeout=5)
    assert _GoesAway.calls > 1  # the first query was answered, a later one was cut


def test_server_gone_between_queries(server):
    url = f"http://127.0.0.1:{server.server_port}"
    client = gpucost.prometheus.PrometheusClient(url, retries=1, backoff=0.01, timeout=2)
    _GoesAway.good = 10**6
    try:
        assert '"status":"success"' in client.query_range("up", 0, 60, 60)
    finally:
        _GoesAway.good = 1
    server.shutdown()
    server.server_close()
    with pytest.raises(gpucost.Error, match="failed after 2 attempts"):
        client.query_range("up", 0, 60, 60)
