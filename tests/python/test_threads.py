"""gpucost.set_num_threads: the engine's thread count, and results that do
not depend on it (to 1e-12) on inputs large enough to be split."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpucost
from gpucost.simulate import simulate_fleet
from reference import assert_frames_close
from test_properties import POLICIES, scenarios


@pytest.fixture(scope="module", autouse=True)
def _engine_numbers_only():
    """These tests check the engine's numbers on any input (unobserved lines,
    unknown resources, random joins); the join rule is tested in test_join.py."""
    with gpucost.join.checks(False):
        yield

# The engine gives each thread at least 2**18 samples: two threads need twice that.
SPLIT_ROWS = 2 * 2**18 + 1000


@pytest.fixture(autouse=True)
def restore_threads():
    before = gpucost.get_num_threads()
    yield
    gpucost.set_num_threads(before)


def test_default_and_round_trip():
    assert gpucost.get_num_threads() == 0
    gpucost.set_num_threads(2)
    assert gpucost.get_num_threads() == 2
    gpucost.set_num_threads(np.int64(1))
    assert gpucost.get_num_threads() == 1


@pytest.mark.parametrize("bad", [-1, 1.5, "2", None, True])
def test_rejects_bad_counts(bad):
    with pytest.raises(gpucost.InvalidInputError, match="threads"):
        gpucost.set_num_threads(bad)
    assert gpucost.get_num_threads() == 0


def allocate_with(threads: int, *tables, **policy) -> pd.DataFrame:
    gpucost.set_num_threads(threads)
    return gpucost.allocate(*tables, **policy)


def repeated(costs: pd.DataFrame, usage: pd.DataFrame, rows: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scenario repeated every 8 hours until usage has `rows` rows: as
    many samples per line as the scenario has, many lines (sums of few
    terms, as in real telemetry, where rounding cannot reach 1e-12)."""
    copies = -(-rows // len(usage))
    shifts = pd.to_timedelta(np.arange(copies) * 8, unit="h")

    def repeat(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
        out = frame.iloc[np.tile(np.arange(len(frame)), copies)].reset_index(drop=True)
        offset = np.repeat(shifts.to_numpy(), len(frame))
        return out.assign(**{c: out[c] + offset for c in columns}).astype(
            {"resource_id": "category", **({"consumer": "category"} if "consumer" in out else {})})

    return repeat(costs, ("start", "end")), repeat(usage, ("timestamp",))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.filter_too_much])
@given(scenarios(), POLICIES)
def test_thread_count_does_not_change_random_results(scenario, policy):
    costs, usage, inventory, workloads = scenario
    # Fewer rows would need copies beyond the engine's last instant (2200).
    assume(len(usage) >= 4)
    costs, usage = repeated(costs, usage, SPLIT_ROWS)
    one = allocate_with(1, costs, usage, inventory, workloads, **policy)
    two = allocate_with(2, costs, usage, inventory, workloads, **policy)
    assert_frames_close(two, one, rel=1e-12, abs_=1e-12)
    assert two.attrs["diagnostics"] == one.attrs["diagnostics"]


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**16), st.sampled_from([{}, {"basis": "used", "idle": "share"},
                                                {"by": ["team", "period"], "freq": "D"}]))
def test_thread_count_does_not_change_a_fleet(seed, policy):
    fleet = simulate_fleet(gpus=480, hours=24, seed=seed)
    assert len(fleet.usage) > SPLIT_ROWS
    tables = (fleet.costs, fleet.usage, fleet.inventory, fleet.workloads)
    one = allocate_with(1, *tables, **policy)
    assert_frames_close(allocate_with(2, *tables, **policy), one, rel=1e-12, abs_=1e-12)


def test_streaming_allocator_uses_the_setting():
    fleet = simulate_fleet(gpus=320, hours=24, seed=3)
    gpucost.set_num_threads(2)
    streamed = gpucost.Allocator(fleet.costs, fleet.inventory).add_all([fleet.usage]).finish()
    gpucost.set_num_threads(1)
    assert_frames_close(streamed, gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory), rel=1e-12,
                        abs_=1e-12)


# ---- threads= per call, and what 0 means ----------------------------------------------------------------------


@pytest.fixture
def engine_threads(monkeypatch):
    """The thread counts the engine is given, call by call."""
    from gpucost import _core
    seen: list[int] = []
    allocate, allocator = _core.allocate, _core.Allocator

    def record_allocate(*args, **kwargs):
        seen.append(kwargs["threads"])
        return allocate(*args, **kwargs)

    def record_allocator(*args, **kwargs):
        seen.append(kwargs["threads"])
        return allocator(*args, **kwargs)

    monkeypatch.setattr(_core, "allocate", record_allocate)
    monkeypatch.setattr(_core, "Allocator", record_allocator)
    return seen


def test_threads_keyword_reaches_the_engine(engine_threads):
    fleet = simulate_fleet(gpus=8, hours=2)
    tables = (fleet.costs, fleet.usage, fleet.inventory)
    gpucost.allocate(*tables, threads=1)
    gpucost.allocate(*tables, threads=3)
    gpucost.set_num_threads(2)
    gpucost.allocate(*tables)  # None: the module setting
    gpucost.allocate(*tables, threads=1)  # the keyword wins
    gpucost.allocate(*tables, threads=0)
    gpucost.set_num_threads(0)
    gpucost.allocate(*tables)
    cores = gpucost.available_cores()
    assert engine_threads == [1, 3, 2, 1, cores, cores]
    engine_threads.clear()
    gpucost.Allocator(fleet.costs, fleet.inventory, threads=2).add_all([fleet.usage]).finish()
    gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory, threads=1)
    gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory)
    assert engine_threads == [2, 1, cores]
    assert gpucost.get_num_threads() == 0  # a keyword changes no setting


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_bad_threads_keyword_is_refused(bad):
    fleet = simulate_fleet(gpus=8, hours=1)
    message = r"^threads: expected an integer >= 0 \(0 = one per core\)"
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, threads=bad)
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.Allocator(fleet.costs, fleet.inventory, threads=bad)
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory, threads=bad)


def test_threads_keyword_does_not_change_a_split_result():
    """threads=1 and threads=2 on input the engine splits (Arrow in and out)."""
    import pyarrow as pa
    fleet = simulate_fleet(gpus=480, hours=24, seed=5)
    assert len(fleet.usage) > SPLIT_ROWS
    usage = pa.Table.from_pandas(fleet.usage, preserve_index=False)
    one = gpucost.allocate(fleet.costs, usage, fleet.inventory, fleet.workloads, by=["team"], threads=1,
                           output="arrow")
    two = gpucost.allocate(fleet.costs, usage, fleet.inventory, fleet.workloads, by=["team"], threads=2,
                           output="arrow")
    assert_frames_close(two.to_pandas(), one.to_pandas(), rel=1e-12, abs_=1e-12)
    assert gpucost.result_attrs(two)["diagnostics"] == gpucost.result_attrs(one)["diagnostics"]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_available_cores_honours_affinity_and_the_cgroup_limit():
    """The engine's count (C++): this thread pinned to one CPU gives 1; unpinned,
    its affinity mask capped by the cgroup limit."""
    from gpucost import allocation
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    try:
        pinned = gpucost.available_cores()
    finally:
        os.sched_setaffinity(0, before)
    assert pinned == 1
    limit = allocation.cgroup_cpu_limit()
    assert gpucost.available_cores() == (min(len(before), limit) if limit is not None else len(before))
    assert allocation.resolve_threads(0) == gpucost.available_cores()
    assert allocation.resolve_threads(4) == 4  # explicit counts as given


def test_available_cores_is_the_engines():
    from gpucost import _core
    assert gpucost.available_cores() == _core.available_cores() >= 1


def _cgroup(tmp_path, proc: str, files: dict[str, str]) -> tuple[str, str]:
    for name, text in files.items():
        path = tmp_path / "fs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "fs").mkdir(exist_ok=True)
    (tmp_path / "cgroup").write_text(proc)
    return str(tmp_path / "fs"), str(tmp_path / "cgroup")


@pytest.mark.parametrize(("proc", "files", "limit"), [
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),  # v2, no limit
    ("0::/\n", {"cpu.max": "200000 100000\n"}, 2),  # a container's --cpus 2
    ("0::/\n", {"cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs: rounded up
    ("0::/\n", {"cpu.max": "50000 100000\n"}, 1),
    ("0::/kubepods/pod1/c1\n", {"kubepods/pod1/c1/cpu.max": "max 100000", "kubepods/pod1/cpu.max": "400000 100000",
                                "kubepods/cpu.max": "1600000 100000"}, 4),  # the tightest of the path
    ("0::/\n", {}, None),  # no cpu controller file
    ("4:memory:/x\n1:cpu,cpuacct:/docker/abc\n0::/\n",  # v1 (hybrid)
     {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000", "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000"}, 3),
    ("1:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, None),  # v1, no limit
    ("0::/\n", {"cpu.max": "garbage"}, None),
])
def test_cgroup_cpu_limit(tmp_path, proc, files, limit):
    from gpucost.allocation import cgroup_cpu_limit  # C++ gpucost::CgroupCpuLimit
    root, proc_file = _cgroup(tmp_path, proc, files)
    assert cgroup_cpu_limit(root, proc_file) == limit


def test_cgroup_cpu_limit_without_proc_reads_the_namespace_root(tmp_path):
    from gpucost.allocation import cgroup_cpu_limit
    root, _ = _cgroup(tmp_path, "", {"cpu.max": "300000 100000"})
    assert cgroup_cpu_limit(root, str(tmp_path / "absent")) == 3
    assert cgroup_cpu_limit(str(tmp_path / "nothing"), str(tmp_path / "absent")) is None


# ---- the command: --threads and threads in [policy] ------------------------------------------------------------


def test_cli_threads_flag_and_config_key(engine_threads, tmp_path, capsys):
    from gpucost import cli
    out = str(tmp_path / "out.csv")
    assert cli.main(["allocate", "--demo", "--threads", "1", "-o", out]) == 0
    assert engine_threads and set(engine_threads) == {1}
    assert gpucost.get_num_threads() == 0  # the command's setting does not outlive it
    config = tmp_path / "gpucost.toml"
    config.write_text("[sources]\ndemo = true\n[policy]\nthreads = 2\n")
    engine_threads.clear()
    assert cli.main(["allocate", "-c", str(config), "-o", out]) == 0
    assert engine_threads and set(engine_threads) == {2}
    engine_threads.clear()
    assert cli.main(["allocate", "-c", str(config), "--threads", "0", "-o", out]) == 0  # the flag wins
    assert set(engine_threads) == {gpucost.available_cores()}
    engine_threads.clear()
    assert cli.main(["report", "--demo", "--threads", "1", "-o", str(tmp_path / "r.html")]) == 0
    assert engine_threads and set(engine_threads) == {1}
    capsys.readouterr()


def test_cli_bad_threads(tmp_path, capsys):
    from gpucost import cli
    assert cli.main(["allocate", "--demo", "--threads", "-2"]) == 2
    assert capsys.readouterr().err == ("gpucost allocate: error: --threads or threads in [policy]: expected an "
                                       "integer >= 0 (0 = one per core), got -2\n")
    config = tmp_path / "gpucost.toml"
    config.write_text("[sources]\ndemo = true\n[policy]\nthreads = true\n")
    assert cli.main(["allocate", "-c", str(config)]) == 2
    assert "[policy]: key 'threads': expected a number, got a boolean" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["allocate", "--demo", "--threads", "two"])
    assert exc.value.code == 2
    assert "--threads: invalid int value: 'two'" in capsys.readouterr().err
