"""The CLI streams nvidia-smi logs (issue 29, item 1): a host's log (with its
compute-apps log) at a time into an Allocator, each sample standing for its
own duration (the gap to its GPU's next reading), so the result and stderr
equal the in-memory path's, which reads every log at once."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pandas as pd
import pytest

from gpucost import cli, plan
from stream_cli import assert_same_showback, record_allocators, run_allocate, run_check

START = pd.Timestamp("2026-03-01", tz="UTC")
HOURS = 30
HOSTS = {"dgx1": "i-0dgx1", "dgx2": "i-0dgx2"}


def write_logs(folder, host: str, pid: int, rng: np.random.Generator) -> None:
    """A --query-gpu log of 2 GPUs every minute (a few ms apart, some
    minutes missing) and its compute-apps log: GPU 0 runs one process all
    along, GPU 1 a process in the second half only."""
    uuids = [f"GPU-{host}-0000-0000-0000-00000000000{g}" for g in range(2)]
    gpu = ["timestamp, index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    apps = ["timestamp, gpu_uuid, pid, used_gpu_memory [MiB]"]
    for minute in range(HOURS * 60):
        if rng.uniform() < 0.03:
            continue
        at = START + pd.Timedelta(minutes=minute, milliseconds=int(rng.integers(100, 900)))
        stamp = f"{at:%Y/%m/%d %H:%M:%S}.{at.microsecond // 1000:03d}"
        for g, uuid in enumerate(uuids):
            busy = g == 0 or minute >= HOURS * 30
            gpu.append(f"{stamp}, {g}, {uuid}, NVIDIA A100-SXM4-80GB, {int(rng.integers(1, 100)) if busy else 0} %, "
                       f"{int(rng.integers(1000, 70000)) if busy else 0} MiB, 81920 MiB")
            if busy:
                apps.append(f"{stamp}, {uuid}, {pid + g}, 1000 MiB")
    (folder / f"{host}.gpu.csv").write_text("\n".join(gpu) + "\n")
    (folder / f"{host}.apps.csv").write_text("\n".join(apps) + "\n")


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    folder = tmp_path_factory.mktemp("smi")
    rng = np.random.default_rng(29)
    (folder / "smi").mkdir()
    for k, host in enumerate(HOSTS):
        write_logs(folder / "smi", host, 4000 + 10 * k, rng)
    pd.DataFrame({"host": list(HOSTS), "resource_id": list(HOSTS.values())}).to_csv(folder / "hosts.csv", index=False)
    hours = pd.date_range(START, periods=HOURS, freq="h")
    pd.DataFrame([{"resource_id": r, "start": h, "end": h + pd.Timedelta(hours=1), "cost": 30.0 + i}
                  for i, r in enumerate(HOSTS.values()) for h in hours]).to_csv(folder / "costs.csv", index=False)
    pd.DataFrame([{"resource_id": r, "device": g, "mem_capacity": 80 * 2**30}
                  for r in HOSTS.values() for g in range(2)]).to_csv(folder / "inventory.csv", index=False)
    path = folder / "gpucost.toml"
    path.write_text('[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\nhosts = "hosts.csv"\n'
                    'nvidia_smi = "smi/*.gpu.csv"\nnvidia_smi_apps = "smi/*.apps.csv"\n\n[policy]\nby = ["consumer"]\n')
    return path


def test_nvidia_smi_logs_stream_a_host_at_a_time(config, capsys, monkeypatch):
    seen = record_allocators(monkeypatch)
    streamed, streamed_err = run_allocate(config, capsys)
    assert seen == {"added": len(HOSTS), "ordered": [False]}  # a host's log a chunk; hosts are not in time order
    monkeypatch.setattr(plan, "streams", lambda p: False)  # the in-memory path: every log at once
    whole, whole_err = run_allocate(config, capsys)
    assert streamed_err == whole_err
    assert_same_showback(streamed, whole)
    assert set(streamed["consumer"]) >= {"pid:4000", "pid:4001", "pid:4010", "pid:4011", "__idle__"}
    assert streamed["cost"].sum() == pytest.approx(HOURS * (30.0 + 31.0), rel=1e-12)


def test_check_streams_the_logs_and_says_what_the_whole_read_says(config, capsys, monkeypatch):
    streamed = run_check(config, capsys)
    monkeypatch.setattr(plan, "streams", lambda p: False)
    assert streamed == run_check(config, capsys) and "samples" in streamed


def test_idle_over_the_logs_cuts_them_into_days_and_finds_what_the_whole_read_finds(config, capsys, monkeypatch):
    """A host's log a chunk goes back in time from host to host: the idle pass
    gets the samples re-cut into UTC days (two here), not the logs whole."""
    from gpucost import spill
    cut = []
    by_day = spill.UsageChunks.by_day
    monkeypatch.setattr(spill.UsageChunks, "by_day", lambda self: cut.append(self.chunks) or by_day(self))

    def run() -> str:
        code = cli.main(["idle", "-c", str(config), "--format", "csv", "--decimals", "raw"])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    streamed = run()
    assert cut == [len(HOSTS)]
    monkeypatch.setattr(plan, "streams", lambda p: False)
    whole = run()
    findings = pd.read_csv(StringIO(whole))
    assert (findings["action"] == "right-size").any()  # GPU 1 free while GPU 0 works, the first 15 hours
    assert streamed == whole
