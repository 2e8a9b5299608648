"""Month end, every surprise loud and in dollars (issue 29, item 3).

One small CUR 2.0 slice stands for the month: two hours of an On-Demand
p4d.24xlarge (8 GPUs, $32.77 an hour), a g5.xlarge covered by a savings plan
($0.70 an hour effective, its SavingsPlanNegation lines without a resource id
at $0.00), the plan's recurring fee (fully used: $0.00) and the monthly RIFee
line of a p4d reservation whose resource id is the reservation's ARN ($5.00
unused). Effective total: 2 x 32.77 + 2 x 0.70 + 5.00 = $71.94, of which
$66.94 on the two GPU machines and $5.00 on no GPU. Every dollar below is
computed from these rows by hand.
"""

from __future__ import annotations

import json
import shutil
import warnings
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost
import gpucost.dask
from gpucost import cli, sources
from gpucost.check import check_tables
from gpucost.config import Tables, load_config
from gpucost.plan import load_tables

CLI = Path(__file__).resolve().parents[1] / "data" / "cli"
PARTS = sorted((CLI / "bill" / "gpucost" / "data" / "BILLING_PERIOD=2026-03").glob("*.csv.gz"))

HEADER = ("identity_line_item_id,identity_time_interval,line_item_line_item_type,line_item_resource_id,"
          "line_item_usage_type,line_item_unblended_cost,line_item_usage_amount,line_item_usage_start_date,"
          "line_item_usage_end_date,line_item_currency_code,product_instance_type,reservation_reservation_a_r_n,"
          "reservation_effective_cost,reservation_unused_amortized_upfront_fee_for_billing_period,"
          "reservation_unused_recurring_fee,savings_plan_savings_plan_a_r_n,savings_plan_savings_plan_effective_cost,"
          "savings_plan_total_commitment_to_date,savings_plan_used_commitment")
RI = "arn:aws:ec2:us-east-1:111122223333:reserved-instances/ri-p4d"
SP = "arn:aws:savingsplans::111122223333:savingsplan/sp-1"
H0, H1, H2 = "2026-03-01T00:00:00Z", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z"


def _hour(n: int) -> list[str]:
    start, end = (H0, H1) if n == 0 else (H1, H2)
    interval = f"{start}/{end}"
    return [
        f"od-{n},{interval},Usage,i-0aaa,USE1-BoxUsage:p4d.24xlarge,32.77,1,{start},{end},USD,p4d.24xlarge,,,,,,,,",
        f"sp-{n},{interval},SavingsPlanCoveredUsage,i-0bbb,USE1-BoxUsage:g5.xlarge,1.006,1,{start},{end},USD,"
        f"g5.xlarge,,,,,{SP},0.70,,",
        f"neg-{n},{interval},SavingsPlanNegation,,USE1-BoxUsage:g5.xlarge,-1.006,,{start},{end},USD,g5.xlarge,,,,,"
        f"{SP},,,",
        f"fee-{n},{interval},SavingsPlanRecurringFee,{SP},ComputeSP:1yrNoUpfront,0.70,,{start},{end},USD,,,,,,{SP},,"
        "0.70,0.70",
    ]


RIFEE = (f"ri-fee,2026-03-01T00:00:00Z/2026-04-01T00:00:00Z,RIFee,{RI},USE1-HeavyUsage:p4d.24xlarge,100.00,744,"
         f"2026-03-01T00:00:00Z,2026-04-01T00:00:00Z,USD,,{RI},,0,5.00,,,,")


def bill_text(*rows: str) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def usage() -> pd.DataFrame:
    """ml/train holds the p4d's 8 GPUs and ml/infer the g5's one, both hours, every 30 minutes."""
    t = pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC")
    p4d = pd.DataFrame({"timestamp": np.tile(t, 8), "resource_id": "i-0aaa", "device": np.repeat(np.arange(8), 4),
                        "consumer": "ml/train"})
    g5 = pd.DataFrame({"timestamp": t, "resource_id": "i-0bbb", "device": 0, "consumer": "ml/infer"})
    return pd.concat([p4d, g5], ignore_index=True).assign(share=1.0, util=0.5, mem_used=0.0)


@pytest.fixture()
def month(tmp_path):
    """The slice as one CSV, and the tables the CLI reads it into."""
    bill = write(tmp_path / "bill.csv", bill_text(*_hour(0), *_hour(1), RIFEE))
    costs = gpucost.read_cur(bill)
    return bill, costs, gpucost.inventory(costs)


# ---- commitment fees are never GPU resources --------------------------------------------


def test_the_rifee_line_is_not_a_gpu_resource(month):
    _, costs, inventory = month
    fee = costs[costs["resource_id"] == RI]
    assert len(fee) == 1 and fee["instance_type"].iloc[0] == "p4d.24xlarge"  # still there to slice by
    assert not fee["gpu"].iloc[0] and fee["cost"].iloc[0] == pytest.approx(5.00)
    # 2 machines and 9 GPUs (8 + 1), not 3 and 17 with the reservation counted as a p4d.
    assert sorted(inventory["resource_id"].unique()) == ["i-0aaa", "i-0bbb"] and len(inventory) == 9
    result = gpucost.allocate(costs, usage(), inventory)  # no warning: filterwarnings = error
    assert result.attrs["diagnostics"]["lines_unobserved"] == 0
    by = result.set_index("consumer")["cost"]
    assert by["ml/train"] == pytest.approx(65.54) and by["ml/infer"] == pytest.approx(1.40)
    assert by["__unattributed__"] == pytest.approx(5.00)  # the unused reservation, on no machine
    assert "__unobserved__" not in by.index or by["__unobserved__"] == 0
    assert result["cost"].sum() == pytest.approx(71.94)


def test_savings_plan_fees_and_purchases_are_not_gpu_lines(month):
    _, costs, _ = month
    fees = costs[costs["charge_category"] == "Purchase"]
    assert len(fees) == 3 and not fees["gpu"].any()  # two recurring fees, the RIFee


# ---- zero-dollar problems: reported, never a warning or a failure -----------------------


def test_zero_dollar_problems_are_notes(month, tmp_path, capsys):
    bill, costs, inventory = month
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = gpucost.allocate(costs, usage(), inventory)
    report = gpucost.join_report(result, costs)
    assert report.ok and report.problems == []
    [note] = report.notes
    assert note.kind == "no_resource_ids" and note.zero_dollar
    assert note.message.startswith("2 GPU usage lines carry no resource id: $0.00 stays __unattributed__")
    assert "note: 2 GPU usage lines carry no resource id: $0.00" in report.text()
    # gpucost check: reported, exit 0; allocate --strict stays clean.
    usage().to_csv(tmp_path / "usage.csv", index=False)
    code = cli.main(["check", "--bill", str(bill), "--usage", str(tmp_path / "usage.csv")])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "problems: none" in out and "note: 2 GPU usage lines carry no resource id: $0.00" in out
    code = cli.main(["allocate", "--bill", str(bill), "--usage", str(tmp_path / "usage.csv"), "--strict",
                     "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""


def test_the_same_lines_with_dollars_still_warn(month):
    _, costs, inventory = month
    billed = gpucost.read_cur(month[0], amount="billed")  # the negations carry -$1.006 each
    with pytest.warns(gpucost.JoinWarning, match=r"2 GPU usage lines carry no resource id: -\$2\.01 stays"):
        gpucost.allocate(billed, usage(), inventory)


# ---- rows repeated across the parts of a bill ---------------------------------------------


def test_a_row_repeated_in_another_part_is_dropped_and_counted_in_dollars(tmp_path):
    one = write(tmp_path / "part-1.csv", bill_text(*_hour(0), RIFEE))
    two = write(tmp_path / "part-2.csv", bill_text(*_hour(1)))
    again = write(tmp_path / "redelivery" / "part-2.csv", bill_text(_hour(1)[0]))  # the p4d's second hour
    costs = sources.read_bill([one, two, again], gpucost.read_cur)
    assert costs["cost"].sum() == pytest.approx(71.94)  # not 71.94 + 32.77
    report = costs.attrs["billing"]
    assert report["duplicates_dropped"] == 1 and report["duplicate_cost"] == {"USD": pytest.approx(32.77)}
    assert costs.attrs["parts"][str(again)]["billing"]["duplicates_dropped"] == 1
    with pytest.warns(gpucost.JoinWarning) as caught:
        gpucost.allocate(costs, usage(), gpucost.inventory(costs))
    [message] = [str(w.message) for w in caught]
    assert message.startswith(f"1 bill rows were read twice and dropped (repeated line-item ids or identical "
                              f"rows; in {again}): $32.77 would have been counted twice")


def test_each_part_alone_keeps_its_rows(tmp_path):
    """Without a shared record (one reader per file, as before) the copy is a line again."""
    two = write(tmp_path / "part-2.csv", bill_text(*_hour(1)))
    again = write(tmp_path / "again.csv", bill_text(_hour(1)[0]))
    frames = [gpucost.read_cur(two), gpucost.read_cur(again)]
    assert sum(f["cost"].sum() for f in frames) == pytest.approx(32.77 + 0.70 + 0 + 0 + 32.77)
    seen = gpucost.billing.BillRows()
    shared = [gpucost.read_cur(two, seen=seen), gpucost.read_cur(again, seen=seen)]
    assert len(shared[1]) == 0 and shared[1].attrs["billing"]["duplicate_cost"] == {"USD": pytest.approx(32.77)}
    assert seen.size == 4


def test_cli_glob_over_an_overlapping_redelivery(tmp_path, capsys):
    """The CLI's fixture month with part 2 delivered again under another folder:
    the bill is counted once and the warning says $7.20 (5.672 + 1.006 + 0.526)."""
    data = tmp_path / "cli"
    shutil.copytree(CLI, data)
    parts = data / "bill" / "gpucost" / "data" / "BILLING_PERIOD=2026-03"
    (data / "bill" / "redelivery").mkdir()
    shutil.copy(parts / "gpucost-00002.csv.gz", data / "bill" / "redelivery" / "gpucost-00002.csv.gz")
    config = (data / "gpucost.toml").read_text().replace(
        'bill = "bill/gpucost/metadata/BILLING_PERIOD=2026-03/gpucost-Manifest.json"',
        'bill = ["bill/gpucost/data/BILLING_PERIOD=2026-03/*.csv.gz", "bill/redelivery/*.csv.gz"]')
    (data / "gpucost.toml").write_text(config)
    code = cli.main(["allocate", "-c", str(data / "gpucost.toml"), "--format", "csv", "--decimals", "raw"])
    out, err = capsys.readouterr()
    assert code == 0, err
    once = sum(float(gpucost.read_cur(p)["cost"].sum()) for p in PARTS)
    assert pd.read_csv(StringIO(out))["cost"].sum() == pytest.approx(once)
    assert ("3 bill rows were read twice and dropped (repeated line-item ids or identical rows; in "
            f"{data / 'bill' / 'redelivery' / 'gpucost-00002.csv.gz'}): $7.20 would have been counted twice") in err
    tables = load_tables(load_config(data / "gpucost.toml"))
    assert tables.costs.attrs["billing"]["duplicate_cost"] == {"USD": pytest.approx(7.204)}


# ---- label coverage ------------------------------------------------------------------------


def kube_pod_labels(path: Path, pods: dict[str, str], instants: list[str]) -> Path:
    """A saved kube_pod_labels query_range answer: pod -> team, at `instants`."""
    seconds = [pd.Timestamp(t).timestamp() for t in instants]
    result = [{"metric": {"__name__": "kube_pod_labels", "namespace": pod.split("/")[0], "pod": pod.split("/")[1],
                          "label_team_id": team}, "values": [[s, "1"] for s in seconds]}
              for pod, team in pods.items()]
    return write(path, json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))


LABEL_WARNING = ("labels cover too little (more than 5% of the GPU cost has no label): team: $65.54 of $66.94 GPU "
                 "cost (97.9%) on __unlabelled__. The bill covers 2026-03-01 .. 2026-03-01; the label sources state "
                 "no dates. Fix: give the workloads' labels over the bill's whole period")


def test_labels_on_too_little_of_the_gpu_cost_warn_in_dollars(month):
    _, costs, inventory = month
    workloads = pd.DataFrame({"consumer": ["ml/infer"], "team": ["serving"]})  # ml/train ($65.54) unlabelled
    with pytest.warns(gpucost.JoinWarning) as caught:
        result = gpucost.allocate(costs, usage(), inventory, workloads, by="team")
    [message] = [str(w.message) for w in caught]
    assert message.startswith(LABEL_WARNING)
    assert result.set_index("team")["cost"]["__unlabelled__"] == pytest.approx(65.54)
    # 5 % is the line: $1.40 of $66.94 (2.1 %) unlabelled with a history as long as the bill is fine.
    quiet = pd.DataFrame({"consumer": ["ml/train"], "team": ["research"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpucost.allocate(costs, usage(), inventory, quiet, by="team")
    assert gpucost.join.UNLABELLED_SHARE == 0.05


def test_a_label_history_that_starts_after_the_bill_warns_with_its_dates(month, tmp_path):
    _, costs, inventory = month
    # kube_pod_labels saved for the last days only: ml/infer, which ran on the 1st, has no label.
    answer = kube_pod_labels(tmp_path / "kube_pod_labels.json", {"ml/train": "research", "other/pod": "web"},
                             ["2026-03-25T00:00:00Z", "2026-03-31T23:00:00Z"])
    workloads = sources.read_pod_labels([answer], {"team": "team-id"})
    assert workloads.attrs["labels"] == {"start": pd.Timestamp("2026-03-25", tz="UTC"),
                                         "end": pd.Timestamp("2026-03-31 23:00", tz="UTC")}
    with pytest.warns(gpucost.JoinWarning) as caught:
        gpucost.allocate(costs, usage(), inventory, workloads, by="team")
    [message] = [str(w.message) for w in caught]
    assert message.startswith("labels cover too little (the label history starts after the bill): team: $1.40 of "
                              "$66.94 GPU cost (2.1%) on __unlabelled__. Labels cover 2026-03-25 .. 2026-03-31, "
                              "the bill 2026-03-01 .. 2026-03-01. Fix: give the workloads' labels")
    # Every pod labelled: a late history puts $0.00 on __unlabelled__, a note only.
    both = sources.read_pod_labels([kube_pod_labels(tmp_path / "both.json", {"ml/train": "research",
                                                                            "ml/infer": "serving"},
                                                    ["2026-03-25T00:00:00Z"])], {"team": "team-id"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = gpucost.allocate(costs, usage(), inventory, both, by="team")
    notes = gpucost.join_report(result, costs, workloads=both).notes
    assert [n.kind for n in notes] == ["no_resource_ids", "unlabelled"]
    assert "team: $0.00 of $66.94 GPU cost (0.0%) on __unlabelled__" in notes[1].message


def test_merged_label_sources_keep_their_dates_only_when_every_one_states_them(tmp_path):
    a = sources.read_pod_labels([kube_pod_labels(tmp_path / "a.json", {"ml/a": "x"}, ["2026-03-10T00:00:00Z"])],
                                {"team": "team-id"})
    b = sources.read_pod_labels([kube_pod_labels(tmp_path / "b.json", {"ml/b": "y"}, ["2026-03-02T00:00:00Z"])],
                                {"team": "team-id"})
    merged = sources.merge_workloads([a, b])
    assert merged.attrs["labels"] == {"start": pd.Timestamp("2026-03-02", tz="UTC"),
                                      "end": pd.Timestamp("2026-03-10", tz="UTC")}
    assert sources.merge_workloads([a, pd.DataFrame({"consumer": ["ml/c"], "team": ["z"]})]).attrs == {}
    filled = sources.namespace_labels(merged, ["ml/a", "ml/b", "ns2/p"], {"ns2": {"team": "n"}}, ["team"])
    assert filled.attrs == merged.attrs and len(filled) == 3


def test_report_and_cli_allocate_warn_as_allocate_does(month, tmp_path, capsys):
    bill, costs, inventory = month
    workloads = pd.DataFrame({"consumer": ["ml/infer"], "team": ["serving"]})
    with pytest.warns(gpucost.JoinWarning) as caught:
        report = gpucost.report(costs, usage(), inventory, workloads, by=["team"], interval=1800)
    assert [str(w.message) for w in caught if str(w.message).startswith("labels")] == [
        str(w.message) for w in caught]
    assert str(caught[0].message).startswith(LABEL_WARNING)
    assert [p.kind for p in report.join.problems] == ["unlabelled"]
    usage().to_csv(tmp_path / "usage.csv", index=False)
    workloads.to_csv(tmp_path / "workloads.csv", index=False)
    code = cli.main(["allocate", "--bill", str(bill), "--usage", str(tmp_path / "usage.csv"), "--workloads",
                     str(tmp_path / "workloads.csv"), "--by", "team", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0
    assert err.startswith(f"gpucost allocate: warning: {LABEL_WARNING}") and "--pod-labels" in err
    assert err.count("\n") == 1


# ---- the distributed runners: the same rule, the same warnings, once --------------------------


def test_dask_warns_once_as_allocate_does(month):
    _, costs, inventory = month
    workloads = pd.DataFrame({"consumer": ["ml/infer"], "team": ["serving"]})
    with pytest.warns(gpucost.JoinWarning) as local:
        expected = gpucost.allocate(costs, usage(), inventory, workloads, by="team")
    with pytest.warns(gpucost.JoinWarning) as distributed:
        result = gpucost.dask.allocate(costs, usage(), inventory, workloads, by="team", npartitions=2)
    assert [str(w.message) for w in distributed] == [str(w.message) for w in local]
    assert len(local) == 1
    pd.testing.assert_series_equal(result["cost"], expected["cost"], rtol=1e-9)
    with pytest.raises(gpucost.JoinError, match="labels cover too little"):
        gpucost.dask.allocate(costs, usage(), inventory, workloads, by="team", npartitions=2, strict=True)


def test_check_names_the_same_problems_as_the_rule(month):
    """gpucost check reports what allocate warns about, and its exit code follows the warnings only."""
    _, costs, inventory = month
    tables = Tables(costs, usage(), inventory)
    checked = check_tables(tables, interval=1800)
    assert checked.exit_code == 0 and checked.report.problems == []
    assert [n.kind for n in checked.report.notes] == ["no_resource_ids"]


@pytest.mark.parametrize("hour", [10, 23])
def test_labels_fetched_over_the_bill_cover_it_at_any_hour(hour):
    """fetch_workloads' points are last_over_time over the step before each
    instant (start + step, ...): the history starts a step before its first
    point, so labels fetched for a one-hour bill cover it, also when the
    hour ends at midnight (it was then said to start after the bill)."""
    import re

    class Replay(gpucost.prometheus.PrometheusClient):
        def __init__(self, answers):
            super().__init__("http://prometheus:9090")
            self.answers = answers

        def query_range(self, query, start_s, end_s, step_s):
            name = next((w for w in re.findall(r"\w+", query) if w in self.answers), None)
            return json.dumps({"status": "success", "data": {"resultType": "matrix",
                                                             "result": self.answers.get(name, [])}})

    start = pd.Timestamp("2026-03-01", tz="UTC") + pd.Timedelta(hours=hour)
    end = start + pd.Timedelta(hours=1)
    series = {"metric": {"namespace": "ml", "pod": "train-0", "label_team_id": "research"},
              "values": [[end.value // 10**9, "1"]]}
    workloads = gpucost.kubernetes.fetch_workloads(Replay({"kube_pod_labels": [series]}), start, end)
    assert workloads.attrs["labels"] == {"start": start, "end": end}
    costs = pd.DataFrame({"resource_id": ["node-1"], "start": [start], "end": [end], "cost": [10.0]})
    inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
    usage = pd.DataFrame({"timestamp": pd.date_range(start, periods=60, freq="60s"), "resource_id": "node-1",
                          "device": 0, "consumer": "ml/train-0", "share": 1.0, "util": 0.5, "mem_used": 0.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = gpucost.allocate(costs, usage, inventory, workloads, by=["team"])
    assert result.set_index("team")["cost"].to_dict() == {"__idle__": 0.0, "research": 10.0}
