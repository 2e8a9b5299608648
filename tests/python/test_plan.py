"""The plan of sources (issue 28, item 3): gpucost.plan resolves and checks
every source a config names before reading any data, reports every problem
at once, and reading the plan gives the tables the one-hub loader gave; each
source yields its frames one file (part, log, scrape instant) at a time.
Fixtures: tests/data/cli (make_fixtures.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import gpucost
from gpucost import cli, kubernetes, prometheus, sources
from gpucost.config import load_config
from gpucost.plan import load_tables
from gpucost.plan import PlanError, Problem, Reading, SourcePlan, plan_sources, read_plan, read_table

DATA = Path(__file__).resolve().parents[1] / "data" / "cli"
BILLING = Path(__file__).resolve().parents[1] / "data" / "billing"
CONFIG = DATA / "gpucost.toml"
PARTS = sorted((DATA / "bill" / "gpucost" / "data" / "BILLING_PERIOD=2026-03").glob("*.csv.gz"))
SCRAPES = sorted((DATA / "scrapes" / "edge1").glob("*.prom"))


@pytest.fixture
def no_reading(monkeypatch):
    """Every reader of data fails: planning must call none."""
    def refuse(*args, **kwargs):
        raise AssertionError("a reader of data was called")

    for name in ("read_cur", "read_focus", "read_gcp_billing", "read_azure_costs", "read_nvidia_smi",
                 "read_nvidia_smi_mon", "read_slurm_sacct"):
        monkeypatch.setattr(gpucost, name, refuse)
    for module, name in ((prometheus, "read_query_range"), (prometheus, "read_dcgm_text"),
                         (prometheus, "fetch_usage"), (kubernetes, "read_pods"), (kubernetes, "read_nodes"),
                         (sources, "read_pod_labels"), (pd, "read_csv"), (pd, "read_parquet")):
        monkeypatch.setattr(module, name, refuse)


def test_the_cli_fixture_planned_without_reading(no_reading):
    plan = plan_sources(load_config(CONFIG))
    assert isinstance(plan, SourcePlan) and plan.problems == ()
    assert [(s.key, s.kind, s.feeds) for s in plan.sources] == [
        ("bill", "cur", ("costs",)),  # the format sniffed from the parts' first bytes (gzip)
        ("hosts", "hosts", ("usage",)),
        ("nodes", "kubectl_nodes", ("usage",)),
        ("telemetry", "query_range", ("usage",)),
        ("dcgm_text", "dcgm_text", ("usage",)),
        ("pid_jobs", "table", ("usage",)),
        ("nvidia_smi", "nvidia_smi", ("usage",)),
        ("sacct", "sacct", ("usage", "workloads")),
        ("pods", "kubectl_pods", ("workloads",)),
        ("pod_labels", "kube_pod_labels", ("workloads",)),
        ("inventory", "catalog", ("inventory",)),
    ]
    assert plan.find("bill").files == tuple(PARTS)  # the manifest's three parts, found next to it
    assert plan.find("telemetry").files == tuple(sorted((DATA / "k8s").glob("DCGM_FI_*.json")))  # the glob
    assert plan.find("dcgm_text").files == tuple(SCRAPES)  # the folder's scrapes
    assert [len(group) for _, group in plan.find("dcgm_text").options["instants"]] == [1, 1, 1]
    assert plan.find("nvidia_smi").options["logs"] == (
        (str(DATA / "smi" / "dgx7.gpu.csv"), "query-gpu", str(DATA / "smi" / "dgx7.apps.csv")),)
    assert [u.key for u in plan.find("telemetry").uses] == ["nodes", "hosts"]
    assert plan.step == 60 and plan.step_key == "step"
    assert plan.feeding("workloads") == (plan.find("sacct"), plan.find("pods"), plan.find("pod_labels"))
    text = str(plan)
    assert text.startswith(f"plan of {CONFIG}: 11 sources, nothing read yet")
    assert "  bill            cur               -> costs            bill/gpucost/data/" in text
    assert "smi/dgx7.gpu.csv (query-gpu, apps smi/dgx7.apps.csv)" in text
    assert "step: 60 s (step in [sources])" in text and "problems" not in text


def test_every_problem_at_once_with_its_key_and_file(no_reading, tmp_path):
    (tmp_path / "focus.csv").write_text(BILLING.joinpath("focus_1_2.csv").read_text().splitlines()[0]
                                        + "\nnot,a,bill,line\n")  # a FOCUS header: enough to plan
    smi = tmp_path / "smi"
    smi.mkdir()
    shutil.copy(DATA / "smi" / "dgx7.gpu.csv", smi / "dgx7.gpu.csv")
    shutil.copy(DATA / "smi" / "dgx7.apps.csv", smi / "gpu9.apps.csv")  # no GPU log of host gpu9
    (tmp_path / "inventory.xlsx").write_bytes(b"")  # there, but not a table gpucost reads
    config_file = tmp_path / "gpucost.toml"
    config_file.write_text('[sources]\nbill = ["focus.csv", "parts/*.csv.gz"]\ntelemetry = "answers.json"\n'
                           'prometheus = "http://prometheus:9090"\nstart = "2026-03-01"\nnodes = "prometheus"\n'
                           'nvidia_smi = "smi/*.gpu.csv"\nnvidia_smi_apps = "smi/*.apps.csv"\n'
                           'inventory = "inventory.xlsx"\n'
                           '[labels.namespaces]\nml = { tema = "research" }\n')
    plan = plan_sources(load_config(config_file))
    assert plan.find("bill").kind == "focus" and plan.find("bill").files == (tmp_path / "focus.csv",)
    assert plan.problems == (
        Problem("bill", f"{config_file}: [sources]: key 'bill': no file matches 'parts/*.csv.gz'", "parts/*.csv.gz"),
        Problem("nodes", 'nodes = "prometheus" needs --prometheus, --start and --end (prometheus, start, end in '
                         '[sources])'),
        Problem("prometheus", "--prometheus needs --end (end in [sources])"),
        Problem("telemetry", f"{tmp_path / 'answers.json'}: no such file (telemetry)", str(tmp_path / "answers.json")),
        Problem("nvidia_smi_apps", f"{smi / 'gpu9.apps.csv'}: compute-apps log of host 'gpu9' has no GPU log "
                                   "(nvidia_smi) of the same host", str(smi / "gpu9.apps.csv")),
        Problem("namespaces", "[labels.namespaces]: 'ml': unknown label column 'tema' (the columns are team, "
                              "project, user, job)"),
        Problem("inventory", f"{tmp_path / 'inventory.xlsx'}: unknown table format (use .csv, .csv.gz or .parquet)",
                str(tmp_path / "inventory.xlsx")),
    )
    with pytest.raises(PlanError) as caught:
        read_plan(plan)
    assert caught.value.problems == plan.problems and isinstance(caught.value, gpucost.InvalidInputError)
    assert str(caught.value).splitlines() == [p.message for p in plan.problems]
    assert caught.value.table is None and caught.value.reason == plan.problems[0].message


def test_the_command_names_every_problem(no_reading, tmp_path, capsys):
    code = cli.main(["allocate", "--costs", str(tmp_path / "costs.csv"), "--prometheus", "prometheus:9090",
                     "--start", "2026-03-01", "--end", "2026-04-01", "--step", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines() == [
        "gpucost allocate: error: --step (step in [sources]): 0.0 is not a positive number of seconds",
        f"gpucost allocate: error: {tmp_path / 'costs.csv'}: no such file (costs)",
        "gpucost allocate: error: --prometheus (prometheus in [sources]): 'prometheus:9090' is not an http(s) URL",
    ]
    code = cli.main(["check", "--plan", "--costs", str(tmp_path / "costs.csv"), "--usage", str(tmp_path / "u.csv")])
    out = capsys.readouterr().out
    assert code == 2
    assert out.splitlines()[-3:] == ["problems", f"  error: {tmp_path / 'costs.csv'}: no such file (costs)",
                                     f"  error: {tmp_path / 'u.csv'}: no such file (usage)"]
    code = cli.main(["check", "--plan", "-c", str(CONFIG)])
    out = capsys.readouterr().out
    assert code == 0 and "  sacct           sacct             -> usage+workloads  sacct.txt" in out


def test_a_stated_interval_is_recorded():
    config = load_config(None)
    config.sources.update(costs="c.csv", usage="u.csv")
    assert plan_sources(config).step is None
    config.policy["interval"] = 300
    plan = plan_sources(config)
    assert (plan.step, plan.step_key) == (300.0, "interval") and "step: 300 s (interval in [policy])" in str(plan)
    config.sources["step"] = 30
    assert plan_sources(config).step == 30.0


LABELS = {"team": "team-id", "project": "project-id", "user": "user-id", "job": "job-id"}


def the_hubs_tables() -> dict:
    """What load_tables did with the fixture before the plan (commit
    ae37d69), its steps spelled out with the readers: the bill's parts as
    one bill; hosts, then nodes; each telemetry source with the stated
    step; their samples combined; the label sources merged in order, then
    the namespace fallback; the inventory from the instance types."""
    bill = gpucost.config.instance_ids(sources.read_bill(PARTS, gpucost.read_cur, progress=False, tz=None))
    hosts = read_table(DATA / "hosts.csv", "hosts")
    hosts["host"], hosts["resource_id"] = hosts["host"].astype(str), hosts["resource_id"].astype(str)
    mapping = hosts.rename(columns={"host": "node"})[["node", "resource_id"]]
    nodes = pd.concat([kubernetes.read_nodes(DATA / "k8s" / "nodes.json")[["node", "resource_id"]], mapping],
                      ignore_index=True).drop_duplicates("node", keep="last").reset_index(drop=True)
    answers = sorted((DATA / "k8s").glob("DCGM_FI_*.json"))
    k8s = prometheus.read_query_range([str(p) for p in answers], step=60.0, nodes=nodes, keep_unknown_nodes=False)
    edge = sources.concat_frames([prometheus.read_dcgm_text([str(p)], timestamp=sources.scrape_instant(p),
                                                            interval=60.0, nodes=nodes, keep_unknown_nodes=False)
                                  for p in SCRAPES])
    pid_jobs = read_table(DATA / "pid_jobs.csv", "pid_jobs")
    smi = gpucost.read_nvidia_smi(DATA / "smi" / "dgx7.gpu.csv", resource_id="i-0nv7", tz="Europe/Berlin",
                                  apps=DATA / "smi" / "dgx7.apps.csv",
                                  pid_jobs=pid_jobs[pid_jobs["host"].astype(str) == "dgx7"], interval=60.0)
    slurm = gpucost.read_slurm_sacct(DATA / "sacct.txt", "UTC", nodes=mapping)
    slurm.usage.attrs["diagnostics"] = {str(DATA / "sacct.txt"): slurm.diagnostics}
    usage = sources.concat_usage([k8s, edge, smi, slurm.usage], [60.0] * 4,
                                 ["telemetry", "dcgm_text", "nvidia_smi", "sacct"],
                                 [[str(p) for p in answers], [str(p) for p in SCRAPES],
                                  [str(DATA / "smi" / "dgx7.gpu.csv")], [str(DATA / "sacct.txt")]])
    pods = kubernetes.read_pods(DATA / "k8s" / "pods-1100.json", labels=LABELS)
    ksm = sources.read_pod_labels([DATA / "k8s" / "kube_pod_labels.json"], LABELS)
    workloads = sources.merge_workloads([pods, ksm, sources.merge_workloads([slurm.workloads])])
    consumers = pd.Series(usage["consumer"]).astype("category").cat.categories.astype(str).tolist()
    workloads = sources.namespace_labels(workloads, consumers, {"notebooks": {"team": "research",
                                                                              "project": "notebooks"}}, list(LABELS))
    return {"costs": bill, "usage": usage, "inventory": gpucost.inventory(bill), "workloads": workloads}


def test_reading_the_plan_gives_the_hubs_tables():
    """Row for row, dtype for dtype, on the fixture with every source kind
    (and the same as load_tables at commit ae37d69 gave, attrs included, when
    this was written)."""
    tables = read_plan(plan_sources(load_config(CONFIG)))
    for name, expected in the_hubs_tables().items():
        pd.testing.assert_frame_equal(getattr(tables, name), expected, check_exact=True, obj=name)
    assert tables.interval == 60.0 and tables.bill is tables.costs
    assert tables.costs.attrs["parts"].keys() == {str(p) for p in PARTS}
    assert set(tables.usage.attrs["diagnostics"]) == {"telemetry", "dcgm_text", "nvidia_smi", "sacct"}
    assert tables.usage.attrs["diagnostics"]["sacct"].keys() == {str(DATA / "sacct.txt")}
    again = load_tables(load_config(CONFIG))
    for name in ("costs", "usage", "inventory", "workloads"):
        pd.testing.assert_frame_equal(getattr(again, name), getattr(tables, name))


def test_sources_yield_one_frame_per_file(monkeypatch):
    plan = plan_sources(load_config(CONFIG))
    calls = []
    read_cur = gpucost.read_cur
    monkeypatch.setattr(gpucost, "read_cur", lambda path, **kw: calls.append(path) or read_cur(path, **kw))
    parts = plan.find("bill").frames()
    first = next(parts)
    assert calls == [PARTS[0]]  # a generator: the next part is read when asked for
    frames = [first, *parts]
    assert calls == PARTS and len(frames) == 3
    assert [f["cost"].sum() for f in frames] == pytest.approx([read_cur(p)["cost"].sum() for p in PARTS])
    whole = plan.find("bill").frame()  # the in-memory path: the parts as one bill, each part's report kept
    assert len(whole) == sum(map(len, frames)) and whole.attrs["parts"].keys() == {str(p) for p in PARTS}

    reading = Reading()  # the lookups (hosts, nodes) read once for all sources of a reading
    scrapes = list(plan.find("dcgm_text").frames(reading))
    assert [sorted(f["timestamp"].dt.strftime("%H:%M").unique()) for f in scrapes] == [["10:00"], ["10:20"],
                                                                                      ["10:40"]]
    assert sources.concat_frames(scrapes).equals(plan.find("dcgm_text").frame(reading))
    logs = list(plan.find("nvidia_smi").frames(reading))
    assert len(logs) == 1 and set(logs[0]["resource_id"].astype(str)) == {"i-0nv7"}  # the hosts table's id
    sacct = plan.find("sacct")
    assert len(list(sacct.frames(reading))) == 1 and len(list(sacct.frames(reading, "workloads"))) == 1
    with pytest.raises(ValueError, match="feeds usage, workloads, not costs"):
        next(sacct.frames(reading, "costs"))
