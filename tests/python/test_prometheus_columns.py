"""Saved query_range answers read by C++ from their files, in parallel, into
columns (issue 29, item 2): exactly the samples of the reading before it
(bodies passed from Python, parsed one by one), on every real answer in
tests/data/real and on a generated month; the memory series skipped for the
bases that do not read memory; a wrong step refused on the first file."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

import gpucost
from gpucost import _core
from gpucost import prometheus as prom

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real"
sys.path.insert(0, str(ROOT / "benchmarks"))
from prometheus_month import write_month  # noqa: E402  (the benchmark's generator, small)

ANSWERS = sorted(REAL.glob("query_*.json"))


def bodies_read(paths, step=None, metric=""):
    """The reading before: every body read by Python and parsed in turn."""
    options = prom._options(nodes=None, node_labels=prom.DEFAULT_NODE_LABELS, keep_unknown_nodes=False,
                            units="auto", mig_shares=None, mig_basis="compute", interval=step,
                            exporter_names=prom.DEFAULT_EXPORTER_NAMES, instant_tolerance=30.0, interval_name="step")
    inputs = [(Path(p).read_text(), str(p), metric) for p in paths]
    return prom.telemetry_report(prom.usage_frame(_core.dcgm_usage(inputs, True, None, options)), "prometheus answers")


def same(new: pd.DataFrame, old: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(new, old, check_exact=True)
    report = dict(new.attrs["telemetry"])
    report.pop("warnings")
    assert report == old.attrs["telemetry"]
    assert new.attrs["diagnostics"] == old.attrs["diagnostics"]


@pytest.mark.parametrize("path", ANSWERS, ids=lambda p: p.name)
def test_every_real_answer_reads_as_before(path):
    same(gpucost.prometheus.read_query_range(path, allow_partial=True), bodies_read([path]))


def test_real_answers_together_read_as_before():
    paths = [p for p in ANSWERS if "step300" in p.name]
    same(gpucost.prometheus.read_query_range(paths, step=300), bodies_read(paths, step=300))


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    return write_month(tmp_path_factory.mktemp("month"), days=2, nodes=4, mig_nodes=1)


def held(frame: pd.DataFrame) -> pd.DataFrame:
    """GPU-seconds and busy GPU-seconds per (resource, device, pod)."""
    gpu_s = frame["share"] * frame["duration"]
    return frame.assign(gpu_s=gpu_s, busy_s=gpu_s * frame["util"]).groupby(
        ["resource_id", "device", "consumer"], observed=True)[["gpu_s", "busy_s"]].sum()


def test_generated_month_reads_as_before_on_any_thread_count(month):
    old = bodies_read(month.files, step=60)
    for threads in (1, 2, 3):
        same(gpucost.prometheus.read_query_range(month.files, step=60, threads=threads), old)


def test_allocated_basis_skips_memory_but_not_a_mig_instances(month):
    everything = gpucost.prometheus.read_query_range(month.files, step=60)
    allocated = gpucost.prometheus.read_query_range(month.files, step=60, basis=gpucost.Basis.ALLOCATED)
    # Whole GPUs' memory series skipped unparsed; MIG instances' kept (their only series here).
    assert allocated.attrs["telemetry"]["skipped_fields"]["DCGM_FI_DEV_FB_USED"] > 0
    assert (allocated["mem_used"][allocated["mig_profile"] == ""] == 0).all()
    assert (allocated["mem_used"][allocated["mig_profile"] != ""] > 0).any()
    # The same samples in another order (the memory answers came first): sums equal to rounding.
    pd.testing.assert_frame_equal(held(allocated), held(everything), check_exact=False, rtol=1e-12)
    assert len(allocated) == len(everything)
    blended = gpucost.prometheus.read_query_range(month.files, step=60, basis="blended")
    pd.testing.assert_frame_equal(blended, everything)
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'basis': 'held' is not one of allocated"):
        gpucost.prometheus.read_query_range(month.files, basis="held")


def test_memory_only_answers_are_read_whatever_the_basis():
    path = REAL / "query_range_step300_fb_used.json"
    same(gpucost.prometheus.read_query_range(path, basis="allocated"), bodies_read([path]))


def test_wrong_step_refused_on_the_first_file_before_the_rest(month, tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text("not JSON")
    first = month.files[0]
    with pytest.raises(gpucost.InvalidInputError,
                       match=rf"{first.name}: series DCGM_FI_DEV_\w+\{{.*\}}: the data's spacing is 60 s but "
                             r"step=300 s was given \(more than 2x apart\)"):
        gpucost.prometheus.read_query_range([*month.files, junk], step=300)


def test_bad_files_name_the_file_and_the_place(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"status":"success",\n"data":{"resultType":"matrix","result":[}}')
    with pytest.raises(gpucost.InvalidInputError, match=r"bad\.json: byte 61 \(line 2, column 41\): not valid JSON"):
        gpucost.prometheus.read_query_range(bad)
    with pytest.raises(FileNotFoundError):
        gpucost.prometheus.read_query_range([REAL / "query_range_step300_fb_used.json", tmp_path / "absent.json"])
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'threads'"):
        gpucost.prometheus.read_query_range(bad, threads=0)
