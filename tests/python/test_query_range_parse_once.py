"""The streamed reader parses each saved answer once (issue 29, item 2): the
first file in full before the others are opened, the others' time ranges
from a walk that reads only each point's time, then each file parsed when
the first day reaches it and kept, not parsed again, for the next day's
look-ahead; at most two days' files are held. The days equal the whole read."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

import gpucost
from gpucost import _core, prometheus

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from prometheus_month import write_month  # noqa: E402  (the benchmark's generator, small)

DAYS = 6


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    answers = write_month(tmp_path_factory.mktemp("parse_once"), days=DAYS, nodes=2, gpus_per_node=2, mig_nodes=1)
    return [str(p) for p in answers.files]


@pytest.fixture
def reads(monkeypatch):
    """Every file each reader entry point is given, in call order."""
    calls = {"each": [], "spans": [], "files": []}
    for name, key in (("query_range_each", "each"), ("query_range_spans", "spans"),
                      ("query_range_files", "files"), ("dcgm_usage_files", "files")):
        real = getattr(_core, name)
        monkeypatch.setattr(_core, name, lambda paths, *a, _real=real, _key=key: calls[_key].append(list(paths))
                            or _real(paths, *a))
    return calls


@pytest.mark.parametrize("basis", ["allocated", None])
def test_each_file_is_parsed_once_and_the_days_equal_the_whole_read(files, reads, basis):
    parts = list(prometheus.iter_query_range(files, step=60, basis=basis))
    parsed = [f for call in reads["each"] for f in call]
    assert sorted(parsed) == sorted(files)  # each file parsed in full exactly once
    assert reads["each"][0] == [files[0]]  # the first alone, before the time walk of the others
    assert sorted(f for call in reads["spans"] for f in call) == sorted(files[1:])
    assert reads["files"] == []
    whole = prometheus.read_query_range(files, step=60, basis=basis)
    key = ["timestamp", "resource_id", "device", "consumer"]
    streamed = pd.concat(parts, ignore_index=True).astype({"resource_id": str, "consumer": str})
    expected = whole.astype({"resource_id": str, "consumer": str})
    columns = key + ["share", "util", "duration", "mem_used"]
    pd.testing.assert_frame_equal(streamed.sort_values(key).reset_index(drop=True)[columns],
                                  expected.sort_values(key).reset_index(drop=True)[columns], check_exact=True)


def test_at_most_two_days_of_answers_are_held(files):
    """The answers alive while each day is yielded: that day's and the next day's files (2 metrics each)."""
    import gc
    held = []
    for _ in prometheus.iter_query_range(files, step=60):
        gc.collect()
        held.append(sum(isinstance(o, _core.QueryRangeAnswer) for o in gc.get_objects()))
    assert len(held) == DAYS and max(held) <= 4


def test_a_file_whose_time_a_walk_cannot_read_fast_is_read_in_full(tmp_path):
    """An instant (/api/v1/query) answer is another shape: its range comes from the full read, the same."""
    labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-a", "Hostname": "n1", "pod": "p",
              "namespace": "ml"}
    start = 1772323200
    matrix = tmp_path / "matrix.json"
    matrix.write_text(pd.io.json.ujson_dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": labels, "values": [[start + 3600 * i, "50"] for i in range(30)]}]}}))
    instant = tmp_path / "instant.json"
    instant.write_text(pd.io.json.ujson_dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {**labels, "gpu": "1"}, "value": [start + 86400 + 7200, "20"]}]}}))
    spans = _core.query_range_spans([str(matrix), str(instant)], {})
    assert spans == [(start * 10**9, (start + 29 * 3600) * 10**9), ((start + 86400 + 7200) * 10**9,) * 2]
    days = list(prometheus.iter_query_range([str(matrix), str(instant)], step=3600))
    assert [len(d) for d in days] == [24, 7]


def test_a_bad_value_is_still_an_error_naming_the_file(files, tmp_path):
    """The time walk skips values; the full read of the day that reaches the file names a bad one."""
    text = Path(files[-1]).read_text()
    broken = tmp_path / Path(files[-1]).name
    value = text.index('"values":[[') + len('"values":[[')
    comma = text.index(',"', value) + 2
    broken.write_text(text[:comma] + "oops" + text[comma:])
    with pytest.raises(gpucost.InvalidInputError, match=f"{broken.name}.*is not a number"):
        list(prometheus.iter_query_range(files[:-1] + [str(broken)], step=60))
