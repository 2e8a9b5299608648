"""The command line does the whole job (issue 22): every source kind in one
config gives the same table as the Python API; bills in parts and formats
found from the bytes; labels that outlive their pods; [attribution]; errors
in the CLI's words. Fixtures: tests/data/cli (make_fixtures.py)."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import cli, kubernetes, prometheus, sources
from gpucost.config import instance_ids, load_config
from gpucost.plan import load_tables

DATA = Path(__file__).resolve().parents[1] / "data" / "cli"
BILLING = Path(__file__).resolve().parents[1] / "data" / "billing"
CONFIG = DATA / "gpucost.toml"
PARTS = sorted((DATA / "bill" / "gpucost" / "data" / "BILLING_PERIOD=2026-03").glob("*.csv.gz"))
MANIFEST = DATA / "bill" / "gpucost" / "metadata" / "BILLING_PERIOD=2026-03" / "gpucost-Manifest.json"
LABELS = {"team": "team-id", "project": "project-id", "user": "user-id", "job": "job-id"}


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cli_csv(capsys, *argv) -> pd.DataFrame:
    code, out, err = run(capsys, "allocate", *argv, "--format", "csv", "--decimals", "raw")
    assert code == 0, err
    from io import StringIO
    return pd.read_csv(StringIO(out), keep_default_na=False)


def python_api() -> pd.DataFrame:
    """The same month through the Python API, each reader called as the docs
    show it, the frames joined with plain pandas."""
    costs = instance_ids(pd.concat([gpucost.read_cur(p) for p in PARTS], ignore_index=True))
    inventory = gpucost.inventory(costs)
    hosts = pd.read_csv(DATA / "hosts.csv").rename(columns={"host": "node"})
    nodes = pd.concat([kubernetes.read_nodes(DATA / "k8s" / "nodes.json")[["node", "resource_id"]],
                       hosts[["node", "resource_id"]]], ignore_index=True)
    k8s = prometheus.read_query_range(sorted((DATA / "k8s").glob("DCGM_FI_*.json")), step=60, nodes=nodes)
    scrapes = DATA / "scrapes" / "edge1"
    edge = [prometheus.read_dcgm_text([scrapes / "edge1-20260301T100000Z.prom"], timestamp="2026-03-01T10:00Z",
                                      interval=60, nodes=nodes),
            prometheus.read_dcgm_text([scrapes / "edge1-20260301T102000Z.prom"], timestamp="2026-03-01T10:20Z",
                                      interval=60, nodes=nodes),
            prometheus.read_dcgm_text([scrapes / "edge1-latest.prom"], interval=60, nodes=nodes)]  # own timestamps
    smi = gpucost.read_nvidia_smi(DATA / "smi" / "dgx7.gpu.csv", resource_id="i-0nv7", tz="Europe/Berlin",
                                  apps=DATA / "smi" / "dgx7.apps.csv",
                                  pid_jobs=pd.DataFrame({"pid": [4242], "job": ["etl-7"]}), interval=60)
    slurm = gpucost.read_slurm_sacct(DATA / "sacct.txt", "UTC", nodes=hosts[["node", "resource_id"]])
    frames = [k8s, *edge, smi, slurm.usage]
    usage = pd.concat([f.assign(duration=f["duration"].fillna(60.0)) if "duration" in f else f.assign(duration=60.0)
                       for f in frames], ignore_index=True)
    for column in ("resource_id", "consumer"):
        usage[column] = usage[column].astype(str)
    pods = kubernetes.read_pods(DATA / "k8s" / "pods-1100.json", labels=LABELS)
    ksm = sources.read_pod_labels([DATA / "k8s" / "kube_pod_labels.json"], LABELS)
    pods = pd.concat([ksm, pods], ignore_index=True).drop_duplicates("consumer")
    notebooks = pods["consumer"].str.startswith("notebooks/")
    pods.loc[notebooks, "team"] = "research"
    pods.loc[notebooks, "project"] = "notebooks"
    workloads = pd.concat([pods, slurm.workloads], ignore_index=True)
    result = gpucost.allocate(costs, usage, inventory, workloads, by=["project"], interval=60)
    result = gpucost.attribute_tagged(result, costs, "project", by="project", inventory=inventory)
    return gpucost.share_costs(result, costs, {"service": "AmazonVPC"}, by="project", split="weighted",
                               inventory=inventory)


def same_table(a: pd.DataFrame, b: pd.DataFrame, key: str = "project") -> None:
    a = a.sort_values(key).reset_index(drop=True)
    b = b.sort_values(key).reset_index(drop=True)
    assert list(a.columns) == list(b.columns)
    assert a[key].astype(str).tolist() == b[key].astype(str).tolist()
    for column in a.columns:
        if column == "currency":  # a key too, when the bill carries one
            assert a[column].astype(str).tolist() == b[column].astype(str).tolist()
        elif column != key:
            np.testing.assert_allclose(a[column].astype(float), b[column].astype(float), rtol=1e-9, atol=1e-9,
                                       err_msg=column)


def test_every_source_at_once_cli_equals_python(capsys):
    table = cli_csv(capsys, "-c", CONFIG)
    same_table(table, python_api())
    bill = sum(float(gpucost.read_cur(p)["cost"].sum()) for p in PARTS)
    assert table["cost"].sum() == pytest.approx(bill)  # money in equals money out
    by = table.set_index("project")
    assert by.loc["llm", "tagged_cost"] == pytest.approx(0.30)  # the S3 bucket tagged project=llm
    assert by.loc["__unattributed__", "cost"] == pytest.approx(0.0, abs=1e-9)  # the NAT line shared
    assert by.loc["vision", "gpu_cost"] == pytest.approx(5.672 / 4 * 2 * 0.5)  # Slurm job 2002 on gpu02
    assert by.loc["notebooks", "gpu_cost"] == pytest.approx(32.77 / 8)  # namespace fallback


def test_every_source_kind_reaches_the_usage():
    tables = load_tables(load_config(CONFIG))
    ids = set(tables.usage["resource_id"].astype(str))
    assert {"i-0abc123def4567890", "i-0s1", "i-0s2", "i-0nv7", "i-0ed1"} <= ids
    assert set(tables.usage.attrs["diagnostics"]) == {"telemetry", "dcgm_text", "nvidia_smi", "sacct"}
    assert tables.usage["duration"].notna().all()
    edge = tables.usage[tables.usage["resource_id"] == "i-0ed1"].sort_values("timestamp")
    assert [t.strftime("%H:%M") for t in edge["timestamp"]] == ["10:00", "10:20", "10:40"]
    assert len(tables.costs) == 7 and tables.costs.attrs["parts"].keys() == {str(p) for p in PARTS}


def test_a_pod_that_ended_keeps_its_labels(capsys, tmp_path):
    base = ["--bill", MANIFEST, "--telemetry", *sorted((DATA / "k8s").glob("DCGM_FI_*.json")),
            "--nodes", DATA / "k8s" / "nodes.json", "--by", "project"]
    # The snapshot at the end no longer has train-b-0: its GPU-hours lose their project.
    end_only = cli_csv(capsys, *base, "--pods", DATA / "k8s" / "pods-1100.json").set_index("project")
    assert "detect" not in end_only.index
    assert end_only.loc["__unlabelled__", "gpu_hours"] == pytest.approx(1.5)
    # kube_pod_labels over the range, or two snapshots merged, keep them.
    ksm = cli_csv(capsys, *base, "--pods", DATA / "k8s" / "pods-1100.json",
                  "--pod-labels", DATA / "k8s" / "kube_pod_labels.json").set_index("project")
    two = cli_csv(capsys, *base, "--pods", DATA / "k8s" / "pods-1015.json", DATA / "k8s" / "pods-1100.json")
    for table in (ksm, two.set_index("project")):
        assert table.loc["detect", "gpu_hours"] == pytest.approx(0.5)
        assert table.loc["detect", "cost"] == pytest.approx(32.77 / 8 / 2)
    # A namespace's label for its pods that have none.
    fallback = cli_csv(capsys, *base, "--pods", DATA / "k8s" / "pods-1100.json",
                       "--namespace-label", "notebooks:project=nb").set_index("project")
    assert fallback.loc["nb", "gpu_hours"] == pytest.approx(1.0)


def test_merge_workloads_later_sources_win_and_keep_values():
    a = pd.DataFrame({"consumer": ["ns/p1", "ns/p2"], "team": ["x", None]})
    b = pd.DataFrame({"consumer": ["ns/p2", "ns/p3"], "team": ["y", None], "project": ["q", "r"]})
    merged = sources.merge_workloads([a, b]).set_index("consumer")
    assert merged.loc["ns/p1", "team"] == "x" and merged.loc["ns/p1", "project"] is None
    assert merged.loc["ns/p2", "team"] == "y" and merged.loc["ns/p3", "project"] == "r"


def test_label_key_typo_lists_the_keys_that_exist(capsys):
    code, _, err = run(capsys, "allocate", "--bill", MANIFEST, "--telemetry",
                       *sorted((DATA / "k8s").glob("DCGM_FI_*.json")), "--nodes", DATA / "k8s" / "nodes.json",
                       "--pods", DATA / "k8s" / "pods-1100.json", "--label", "team=team_id", "--by", "team")
    assert code == 2 and err.count("\n") == 1
    assert "label key 'team_id' (column 'team') is on no pod" in err
    assert err.split("label keys are: ")[1].startswith("team-id, ")  # nearest first
    code, _, err = run(capsys, "allocate", "--bill", MANIFEST, "--telemetry",
                       *sorted((DATA / "k8s").glob("DCGM_FI_*.json")), "--nodes", DATA / "k8s" / "nodes.json",
                       "--pod-labels", DATA / "k8s" / "kube_pod_labels.json", "--label", "team=teams")
    assert code == 2 and "label keys are: label_team_id, " in err


def test_bill_parts_list_glob_directory_and_manifest(capsys, tmp_path):
    whole = pd.concat([gpucost.read_cur(p) for p in PARTS], ignore_index=True)
    for bill in ([str(p) for p in PARTS], [str(PARTS[0].parent / "*.csv.gz")], [str(PARTS[0].parent)],
                 [str(MANIFEST)], [str(DATA / "bill")]):
        config = load_config(None)
        config.sources.update(bill=bill, usage=str(tmp_path / "none"))
        parts = sources.bill_parts(config.paths(bill))
        assert parts == PARTS
    from gpucost.plan import read_bill as _read_bill
    config = load_config(None)
    config.sources["bill"] = [str(MANIFEST)]
    costs = _read_bill(config, progress=False)
    assert len(costs) == len(whole) and costs["cost"].sum() == pytest.approx(whole["cost"].sum())
    assert costs.attrs["amount"] == "effective" and len(costs.attrs["parts"]) == 3
    # A part the manifest lists but that is not there is an error naming it.
    copy = tmp_path / "m"
    shutil.copytree(DATA / "bill", copy)
    (copy / "gpucost" / "data" / "BILLING_PERIOD=2026-03" / "gpucost-00002.csv.gz").unlink()
    with pytest.raises(gpucost.InvalidInputError, match=r"part 's3://acme-billing/.*gpucost-00002.csv.gz' not found"):
        sources.bill_parts([copy / "gpucost" / "metadata" / "BILLING_PERIOD=2026-03" / "gpucost-Manifest.json"])


def test_a_config_path_with_glob_characters_is_its_file(tmp_path):
    """``costs[2026-03].csv`` names that file; as a glob it would match
    ``costs2.csv`` or nothing."""
    (tmp_path / "costs[2026-03].csv").write_text("x")
    (tmp_path / "costs2.csv").write_text("x")
    config = load_config(None)
    assert config.paths(str(tmp_path / "costs[2026-03].csv")) == [tmp_path / "costs[2026-03].csv"]
    assert config.paths(str(tmp_path / "costs[2]*.csv")) == [tmp_path / "costs2.csv"]
    assert config.paths(str(tmp_path / "absent.csv")) == [tmp_path / "absent.csv"]  # its reader names it
    with pytest.raises(gpucost.InvalidInputError, match="no file matches"):
        config.paths(str(tmp_path / "absent-*.csv"), "costs")


def test_bill_format_from_the_bytes_not_the_name(tmp_path):
    """gzip named .csv, Parquet not named .parquet, zstd named .csv: read as
    the plain file is."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    from gpucost.plan import read_bill as _read_bill, detect_bill as _detect_bill
    source = BILLING / "focus_1_2.csv"
    expected = gpucost.read_focus(source)
    gz = tmp_path / "focus-part.csv"
    gz.write_bytes(gzip.compress(source.read_bytes()))
    parquet = tmp_path / "focus-export.dat"
    pq.write_table(pacsv.read_csv(source, convert_options=pacsv.ConvertOptions(
        column_types={c: pa.string() for c in pacsv.read_csv(source).column_names})), parquet)
    zst = tmp_path / "focus-zstd.csv"
    with pa.output_stream(str(zst), compression="zstd") as f:
        f.write(source.read_bytes())
    for path in (gz, parquet, zst):
        assert _detect_bill(path) == "focus"
        config = load_config(None)
        config.sources["bill"] = str(path)
        costs = _read_bill(config, progress=False)
        assert len(costs) == len(expected)
        assert costs["cost"].sum() == pytest.approx(expected["cost"].sum())
    mixed = load_config(None)
    mixed.sources["bill"] = [str(gz), str(BILLING / "cur2.csv")]
    with pytest.raises(gpucost.InvalidInputError, match="parts are of different formats"):
        _read_bill(mixed, progress=False)


def test_scrape_instant_from_the_name_then_the_mtime(tmp_path):
    assert sources.scrape_instant(Path("edge1-20260301T102000Z.prom")) == pd.Timestamp("2026-03-01T10:20Z")
    assert sources.scrape_instant(Path("2026-03-01T10:20:30Z.prom")) == pd.Timestamp("2026-03-01T10:20:30Z")
    assert sources.scrape_instant(Path("node-1772360400.prom")) == pd.Timestamp("2026-03-01T10:20Z")
    plain = tmp_path / "metrics.prom"
    plain.write_text("")
    os.utime(plain, ns=(1772360400 * 10**9, 1772360400 * 10**9))
    assert sources.scrape_instant(plain) == pd.Timestamp("2026-03-01T10:20Z")


def test_attribution_flags_equal_the_config(capsys):
    flags = cli_csv(capsys, "-c", CONFIG, "--tag", "project", "--share", "service=AmazonVPC", "--share-split",
                    "weighted")
    same_table(flags, cli_csv(capsys, "-c", CONFIG))
    even = cli_csv(capsys, "-c", CONFIG, "--share-split", "even").set_index("project")
    receivers = even.drop(["__idle__", "__unattributed__"])
    assert np.allclose(receivers["shared_cost"], 0.90 / len(receivers))


def test_errors_name_the_flag_or_key(capsys, tmp_path):
    hosts = tmp_path / "hosts.csv"
    hosts.write_text("host,resource_id\ngpu01,i-0s1\n")
    code, _, err = run(capsys, "allocate", "--bill", MANIFEST, "--dcgm-text", DATA / "scrapes",
                       "--hosts", hosts)
    assert code == 2
    # Bare metal (a hosts table, no Kubernetes nodes): the fix is the hosts table, not Kubernetes' flags.
    assert "node 'edge1' is not in the hosts table: add a row for it (host, resource_id: the bill's id of that " \
           "host) to the hosts table (hosts in [sources], --hosts FILE)" in err
    assert "keep_unknown_nodes" not in err and "--keep-unknown-nodes" not in err and "--nodes" not in err
    # Kept under its node name, edge1 joins no bill line: nothing joined is an error, never an empty table.
    code, _, err = run(capsys, "allocate", "--bill", MANIFEST, "--dcgm-text", DATA / "scrapes",
                       "--hosts", hosts, "--keep-unknown-nodes")
    assert code == 2, err
    assert "no usage sample joined a billed GPU line" in err and "(edge1)" in err
    with pytest.raises(gpucost.InvalidInputError, match="pass keep_unknown_nodes"):  # Python keeps its words
        prometheus.read_dcgm_text([DATA / "scrapes" / "edge1" / "edge1-latest.prom"], nodes=pd.DataFrame(
            {"node": ["gpu01"], "resource_id": ["i-0s1"]}))
    assert cli.cli_message("parameter 'step': 0 is not a positive number of seconds") == \
        "--step (step in [sources]): 0 is not a positive number of seconds"


def test_config_rejects_malformed_new_keys(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text('[labels.namespaces]\nml = "research"\n')
    with pytest.raises(gpucost.InvalidInputError, match=r"\[labels.namespaces\]: key 'ml'"):
        load_config(path)
    path.write_text('[sources]\nbill = ["a.csv", 3]\n')
    with pytest.raises(gpucost.InvalidInputError, match=r"\[sources\]: key 'bill': expected a list of strings"):
        load_config(path)
    path.write_text('[attribution]\nsplit = 3\n')
    with pytest.raises(gpucost.InvalidInputError, match=r"\[attribution\]: key 'split': expected a string"):
        load_config(path)


def test_submodules_after_a_plain_import():
    code = ("import sys, gpucost; assert 'dask' not in sys.modules and 'pyspark' not in sys.modules; "
            "print(gpucost.dask.allocate.__module__, gpucost.spark.allocate.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["gpucost.dask", "gpucost.spark"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gpucost.nope  # noqa: B018


def test_polars_frames_are_refused_with_the_conversion():
    """Where gpucost needs pandas (bill readers, attribution) a Polars frame
    is refused with the conversion; allocate reads it (test_arrow_boundary.py)."""
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"resource_id": ["i-1"], "cost": [1.0]})
    with pytest.raises(gpucost.InvalidInputError, match=r"^costs: missing required column 'start'"):
        gpucost.allocate(frame, frame, frame)
    with pytest.raises(TypeError, match=r"df.collect\(\).to_pandas\(\)"):
        gpucost.read_focus(frame.lazy())
    with pytest.raises(TypeError, match=r"df.to_pandas\(\)"):
        gpucost.attribute_tagged(frame, frame)


def test_report_has_the_attribution_section(capsys, tmp_path):
    output = tmp_path / "showback.html"
    code, _, err = run(capsys, "report", "-c", CONFIG, "--by", "project,team", "-o", output)
    assert code == 0, err
    page = output.read_text()
    assert "Tagged and shared costs by project" in page
    assert page.index("Tagged and shared costs") < page.index("Method and reconciliation")


def test_python_readers_take_zstd_whatever_the_name(tmp_path):
    import pyarrow as pa
    source = BILLING / "cur2.csv"
    zst = tmp_path / "cur-part.csv"
    with pa.output_stream(str(zst), compression="zstd") as f:
        f.write(source.read_bytes())
    expected = gpucost.read_cur(source)
    for given in (zst, io.BytesIO(zst.read_bytes())):
        costs = gpucost.read_cur(given)
        assert len(costs) == len(expected) and costs["cost"].sum() == pytest.approx(expected["cost"].sum())


def test_a_versioned_cur_directory_reads_the_latest_delivery_once(tmp_path):
    """Legacy CUR with "create new report versions": the period's manifest
    names the latest assembly; each assembly keeps its own manifest too."""
    period = tmp_path / "cur" / "acme" / "20260301-20260401"
    billing_period = {"start": "20260301T000000.000Z", "end": "20260401T000000.000Z"}
    for assembly in ("a1", "a2"):
        folder = period / assembly
        folder.mkdir(parents=True)
        shutil.copy(PARTS[0], folder / "acme-00001.csv.gz")
        (folder / "acme-Manifest.json").write_text(json.dumps({
            "assemblyId": assembly, "billingPeriod": billing_period, "bucket": "b",
            "reportKeys": [f"cur/acme/20260301-20260401/{assembly}/acme-00001.csv.gz"]}))
    (period / "acme-Manifest.json").write_text(json.dumps({
        "assemblyId": "a2", "billingPeriod": billing_period, "bucket": "b",
        "reportKeys": ["cur/acme/20260301-20260401/a2/acme-00001.csv.gz"]}))
    assert sources.bill_parts([tmp_path / "cur"]) == [period / "a2" / "acme-00001.csv.gz"]
    (period / "a1" / "acme-Manifest.json").rename(period / "other-Manifest.json")  # same depth, same period
    with pytest.raises(gpucost.InvalidInputError, match="a second manifest for the billing period"):
        sources.bill_parts([tmp_path / "cur"])


def test_a_gpu_in_two_sources_is_an_error_naming_both(capsys, tmp_path):
    # The host edge1 scraped by dcgm-exporter also logged by nvidia-smi (dgx7): its GPU-hours would count twice.
    hosts = tmp_path / "hosts.csv"
    hosts.write_text("host,resource_id,tz\ngpu01,i-0s1,UTC\ngpu02,i-0s2,UTC\ndgx7,i-0ed1,Europe/Berlin\n"
                     "edge1,i-0ed1,UTC\n")
    code, _, err = run(capsys, "allocate", "-c", CONFIG, "--hosts", hosts)
    assert code == 2
    assert "GPU 0 of 'i-0ed1' is in two sources, dcgm_text (" in err and "edge1-20260301T100000Z.prom" in err
    assert ") and nvidia_smi (" in err and "dgx7.gpu.csv)" in err
    # Slurm accounting of a GPU nvidia-smi logs is no second source: it says which job held it (joined).
    hosts.write_text("host,resource_id,tz\ngpu01,i-0s1,UTC\ngpu02,i-0s2,UTC\ndgx7,i-0s1,Europe/Berlin\n"
                     "edge1,i-0ed1,UTC\n")
    code, _, err = run(capsys, "allocate", "-c", CONFIG, "--hosts", hosts)
    assert code == 0 and "in two sources" not in err
    # The same file named twice is read once.
    same = cli_csv(capsys, "-c", CONFIG, "--telemetry", *sorted((DATA / "k8s").glob("DCGM_FI_*.json")),
                   str(DATA / "k8s" / "DCGM_*.json"))
    same_table(same, cli_csv(capsys, "-c", CONFIG))


def test_concat_frames_keeps_categoricals_and_values():
    a = pd.DataFrame({"rid": pd.Categorical(["x", "y", None, "x"]), "v": [1.0, 2.0, 3.0, 4.0]})
    b = pd.DataFrame({"rid": pd.Categorical(["z", "x"], categories=["z", "x", "unused"]), "w": ["p", "q"]})
    c = pd.DataFrame({"v": [5.0]})
    out = sources.concat_frames([a, b, c])
    assert isinstance(out["rid"].dtype, pd.CategoricalDtype)
    assert out["rid"].astype(object).where(out["rid"].notna(), None).tolist() == ["x", "y", None, "x", "z", "x", None]
    assert out["v"].tolist()[:4] == [1.0, 2.0, 3.0, 4.0] and np.isnan(out["v"][4]) and out["v"][6] == 5.0
    assert out["w"].tolist()[4:6] == ["p", "q"]
