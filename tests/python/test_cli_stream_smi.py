"""The CLI streams nvidia-smi logs (issue 29, item 1): a host's log (with its
compute-apps log) at a time into an Allocator, each sample standing for its
own duration (the gap to its GPU's next reading), so the result and stderr
equal the in-memory path's, which reads every log at once."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import cli, plan

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


def run(config, capsys) -> tuple[pd.DataFrame, str]:
    code = cli.main(["allocate", "-c", str(config), "--format", "csv", "--decimals", "raw"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return pd.read_csv(StringIO(out), keep_default_na=False, na_values=[""], dtype={"consumer": str}), err


def test_nvidia_smi_logs_stream_a_host_at_a_time(config, capsys, monkeypatch):
    seen = {"added": 0, "ordered": []}
    add, init = gpucost.Allocator.add, gpucost.Allocator.__init__
    monkeypatch.setattr(gpucost.Allocator, "add", lambda self, chunk: seen.__setitem__("added", seen["added"] + 1)
                        or add(self, chunk))
    monkeypatch.setattr(gpucost.Allocator, "__init__", lambda self, *a, **kw: seen["ordered"].append(
        kw.get("ordered_chunks")) or init(self, *a, **kw))
    streamed, streamed_err = run(config, capsys)
    assert seen == {"added": len(HOSTS), "ordered": [False]}  # a host's log a chunk; hosts are not in time order
    monkeypatch.setattr(plan, "streams", lambda p: False)  # the in-memory path: every log at once
    whole, whole_err = run(config, capsys)
    assert streamed_err == whole_err
    streamed = streamed.sort_values("consumer").reset_index(drop=True)
    whole = whole.sort_values("consumer").reset_index(drop=True)
    assert list(streamed.columns) == list(whole.columns)
    assert streamed["consumer"].tolist() == whole["consumer"].tolist()
    assert set(streamed["consumer"]) >= {"pid:4000", "pid:4001", "pid:4010", "pid:4011", "__idle__"}
    for column in streamed.columns.drop("consumer"):
        np.testing.assert_allclose(streamed[column].astype(float), whole[column].astype(float), rtol=1e-9,
                                   atol=1e-9, err_msg=column)
    assert streamed["cost"].sum() == pytest.approx(HOURS * (30.0 + 31.0), rel=1e-12)


def test_check_streams_the_logs_and_says_what_the_whole_read_says(config, capsys, monkeypatch):
    code = cli.main(["check", "-c", str(config)])
    streamed = f"{code}\n{capsys.readouterr().out}"
    monkeypatch.setattr(plan, "streams", lambda p: False)
    code = cli.main(["check", "-c", str(config)])
    assert streamed == f"{code}\n{capsys.readouterr().out}" and "samples" in streamed
