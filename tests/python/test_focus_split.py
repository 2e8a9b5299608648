"""FOCUS both ways (issue 32): a FOCUS 1.3 export read, allocated and written
back as split cost allocations, read again; every summable column of each
origin charge conserved exactly (docs/focus.md)."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import gpucost
from gpucost.focus import FOCUS_ALLOCATED, FOCUS_SUMMABLE

SPEC = Path("/work/shared/data/focus-spec-examples")
H = pd.Timestamp("2026-03-01T10:00:00Z")

# A FOCUS 1.3 export built column by column from the specification: 1.3's
# provider columns (ServiceProviderName, HostProviderName), its contract
# column (ContractApplied), the allocation columns present and null, unit
# prices, quantities and money with more decimals than a cent.
FOCUS_13 = pd.DataFrame({
    "BillingAccountId": "111122223333", "BillingCurrency": "USD",
    "BillingPeriodStart": "2026-03-01T00:00:00Z", "BillingPeriodEnd": "2026-04-01T00:00:00Z",
    "ChargePeriodStart": ["2026-03-01T10:00:00Z"] * 4, "ChargePeriodEnd": ["2026-03-01T11:00:00Z"] * 4,
    "ChargeCategory": ["Usage", "Usage", "Usage", "Tax"], "ChargeClass": "",
    "ChargeFrequency": ["Usage-Based", "Usage-Based", "Usage-Based", "Recurring"],
    "ServiceProviderName": "AWS", "HostProviderName": "AWS", "InvoiceIssuerName": "AWS",
    "ServiceName": ["Amazon EC2", "Amazon EC2", "Amazon EBS", "Amazon EC2"],
    "ServiceCategory": ["Compute", "Compute", "Storage", "Compute"],
    "RegionId": "us-west-2", "SubAccountId": "111122223333",
    "ResourceId": ["arn:aws:ec2:us-west-2:111122223333:instance/i-1", "arn:aws:ec2:us-west-2:111122223333:instance/i-2",
                   "vol-1", ""],
    "ResourceName": ["trainer", "notebooks", "scratch", ""],
    "SkuId": ["BoxUsage:p4d", "BoxUsage:g5", "EBS:gp3", "Tax"],
    "SkuPriceDetails": ['{"InstanceType": "p4d.24xlarge"}', '{"InstanceType": "g5.12xlarge"}', "", ""],
    "PricingCategory": ["Standard", "Committed", "Standard", ""],
    "PricingUnit": ["Hours", "Hours", "GB-Mo", ""], "PricingQuantity": ["1", "1", "100", ""],
    "ListUnitPrice": ["32.7726", "5.672", "0.08", ""], "ContractedUnitPrice": ["30.5", "5.672", "0.08", ""],
    "ListCost": ["32.7726", "5.672", "0.11", "2.5"], "ContractedCost": ["30.5", "5.672", "0.11", "2.5"],
    "BilledCost": ["30.5", "0", "0.11", "2.5"], "EffectiveCost": ["30.5", "3.4567891", "0.11", "2.5"],
    "ConsumedQuantity": ["1", "1", "100", ""], "ConsumedUnit": ["Hours", "Hours", "GB-Mo", ""],
    "CommitmentDiscountId": ["", "arn:aws:savingsplans::111122223333:savingsplan/sp-1", "", ""],
    "CommitmentDiscountStatus": ["", "Used", "", ""],
    "ContractApplied": ["", '{"Elements": [{"ContractId": "c-1"}]}', "", ""],
    "Tags": ['{"team": "llm"}', "{}", "{}", "{}"],
    "AllocatedMethodId": "", "AllocatedMethodDetails": "", "AllocatedResourceId": "", "AllocatedResourceName": "",
    "AllocatedTags": "",
})


def _telemetry(interval: int = 60) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """i-1: 8 GPUs, train-a on 0-3 all hour, nb-b on 4 for 30 min; i-2: 4
    GPUs, infer on 0 all hour (free devices observed)."""
    steps = pd.date_range(H, periods=3600 // interval, freq=f"{interval}s")
    rows = []
    for t in steps:
        rows += [("i-1", d, "train-a", 0.9) for d in range(4)]
        rows.append(("i-1", 4, "nb-b" if t < H + pd.Timedelta("30min") else "", 0.2))
        rows += [("i-1", d, "", 0.0) for d in range(5, 8)]
        rows.append(("i-2", 0, "infer", 0.5))
        rows += [("i-2", d, "", 0.0) for d in range(1, 4)]
    frame = pd.DataFrame(rows, columns=["resource_id", "device", "consumer", "util"])
    usage = frame.assign(timestamp=np.repeat(steps, 12), share=1.0, mem_used=10 * 2.0 ** 30)
    inventory = gpucost.inventory(pd.DataFrame({"resource_id": ["i-1", "i-2"],
                                                "instance_type": ["p4d.24xlarge", "g5.12xlarge"]}))
    workloads = pd.DataFrame({"consumer": ["train-a", "nb-b", "infer"], "team": ["llm", "research", "product"]})
    return usage, inventory, workloads


def _conserved(origin_text: str, parts: pd.Series) -> bool:
    """The parts add up to the origin exactly, as decimals written."""
    if origin_text == "":
        return bool((parts == "").all())
    return sum((Decimal(p) for p in parts), Decimal(0)) == Decimal(origin_text)


@pytest.fixture()
def written(tmp_path: Path):
    bill = tmp_path / "focus-1.3.csv"
    FOCUS_13.to_csv(bill, index=False)
    usage, inventory, workloads = _telemetry()
    costs = gpucost.read_focus(bill)
    out = tmp_path / "split.csv"
    table = gpucost.to_focus(costs, usage, inventory, workloads, path=out)
    return bill, out, table, (usage, inventory, workloads)


def _text(path: Path) -> pd.DataFrame:
    names = pacsv.open_csv(path).schema.names
    return pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=True)).to_pandas().fillna("")


def test_focus_13_round_trip_conserves_every_summable_column(written):
    bill, out, table, _ = written
    back = _text(out)
    assert list(back.columns) == list(FOCUS_13.columns)  # every column carried over, allocation columns filled
    key = ["ResourceId", "SkuId"]
    for _, origin in FOCUS_13.astype(str).iterrows():
        rows = back[(back[key] == origin[key].to_numpy()).all(axis=1)]
        for column in FOCUS_SUMMABLE:
            if column in FOCUS_13.columns:
                assert _conserved(origin[column], rows[column]), (origin["ResourceId"], column, list(rows[column]))
        dims = [c for c in FOCUS_13.columns if c not in FOCUS_SUMMABLE and c not in FOCUS_ALLOCATED]
        assert (rows[dims] == origin[dims].to_numpy()).all().all(), origin["ResourceId"]  # dimensions, unit prices
    # Read back by the FOCUS reader: the same money, per currency, to the cent.
    again = gpucost.read_focus(out)
    assert again.attrs["billing"]["allocated_charges"] == int((back["AllocatedMethodId"] != "").sum())
    assert again["cost"].sum() == pytest.approx(FOCUS_13["EffectiveCost"].astype(float).sum(), abs=1e-9)
    for column in ("billed_cost", "effective_cost", "list_cost"):
        assert round(again[column].sum(), 2) == round(gpucost.read_focus(bill)[column].sum(), 2)


def test_split_rows_name_holders_and_method(written):
    _, out, _, _ = written
    back = _text(out)
    i1 = back[back["SkuId"] == "BoxUsage:p4d"]
    # FOCUS 1.3 AllocatedResourceId: null on the unallocated portion (idle), the consumer on the others.
    assert sorted(i1["AllocatedResourceId"]) == ["", "nb-b", "train-a"]
    train = i1[i1["AllocatedResourceId"] == "train-a"].iloc[0]
    assert train["EffectiveCost"] == "15.25"  # 4 of 8 GPUs all hour
    assert train["ConsumedQuantity"] == "0.5" and train["ListUnitPrice"] == "32.7726"
    # FOCUS 1.3 AllocatedTags repeats no tag of the origin's Tags ({"team": "llm"} on i-1): train-a's team is dropped.
    assert json.loads(train["AllocatedTags"]) == {"gpucost-holder": "workload"}
    nb = i1[i1["AllocatedResourceId"] == "nb-b"].iloc[0]
    assert json.loads(nb["AllocatedTags"]) == {"gpucost-holder": "workload", "team": "research"}
    infer = back[back["AllocatedResourceId"] == "infer"].iloc[0]  # i-2's Tags are {}
    assert json.loads(infer["AllocatedTags"]) == {"gpucost-holder": "workload", "team": "product"}
    details = json.loads(train["AllocatedMethodDetails"])
    assert details == {"Elements": [{"AllocatedRatio": 0.5, "UsageUnit": "GPU-Hours", "UsageQuantity": 4,
                                     "x_GpuHours": 4, "x_EffectiveGpuHours": 3.6, "x_MemGibHours": 40}],
                       "x_Basis": "allocated", "x_Idle": "keep"}
    assert set(i1["AllocatedMethodId"]) == {"gpucost-allocated"}
    idle = i1[i1["AllocatedResourceId"] == ""].iloc[0]
    assert json.loads(idle["AllocatedTags"]) == {"gpucost-holder": "idle"}
    assert idle["AllocatedResourceName"] == ""


def _spec_conformant(back: pd.DataFrame) -> None:
    """FOCUS 1.3's allocation column rules (docs/focus.md, "What the
    specification says"), on a dataset read back as text."""
    related = back["AllocatedMethodId"] != ""
    # AllocatedMethodId, AllocatedMethodDetails, AllocatedTags: null exactly on charges not related to a split.
    for column in ("AllocatedMethodId", "AllocatedMethodDetails", "AllocatedTags", "AllocatedResourceId",
                   "AllocatedResourceName"):
        assert (back.loc[~related, column] == "").all(), column
    for column in ("AllocatedMethodDetails", "AllocatedTags"):
        assert (back.loc[related, column] != "").all(), column
    # AllocatedResourceId/Name: set on the allocated portion, null on the unallocated one (idle, down, unobserved).
    holder = back.loc[related, "AllocatedTags"].map(lambda t: json.loads(t)["gpucost-holder"])
    named = back.loc[related, "AllocatedResourceId"] != ""
    assert (named == (holder == "workload")).all()
    assert (back["AllocatedResourceId"] == back["AllocatedResourceName"]).all()
    # AllocatedMethodDetails: {"Elements": [objects with AllocatedRatio, UsageUnit with UsageQuantity]}, x_ keys.
    ratios = []
    for text in back.loc[related, "AllocatedMethodDetails"]:
        obj = json.loads(text)
        assert isinstance(obj["Elements"], list) and obj["Elements"]
        assert all(k == "Elements" or k.startswith("x_") for k in obj)
        for element in obj["Elements"]:
            assert isinstance(element["AllocatedRatio"], int | float)
            assert "UsageQuantity" not in element or isinstance(element["UsageUnit"], str)
            assert all(k in ("AllocatedRatio", "UsageUnit", "UsageQuantity") or k.startswith("x_") for k in element)
        ratios.append(sum(e["AllocatedRatio"] for e in obj["Elements"]))
    # The AllocatedRatio of an origin charge's allocated charges add up to 1.
    origin = [c for c in ("ResourceId", "SkuId", "ChargePeriodStart", "ChargeCategory", "ChargeClass",
                          "BillingPeriodStart") if c in back.columns]
    group = back.loc[related, origin].astype(str).agg("|".join, axis=1)
    sums = pd.Series(ratios, index=group.index).groupby(group).sum()
    np.testing.assert_allclose(sums.to_numpy(), 1.0, atol=1e-9)


def test_allocated_columns_follow_the_specification(written):
    _, out, _, _ = written
    back = _text(out)
    split = back["AllocatedMethodId"] != ""
    assert set(back.loc[~split, "ResourceId"]) == {"vol-1", ""}  # no GPU inventory: passed through
    _spec_conformant(back)
    passed = back[~split].reset_index(drop=True)
    source = FOCUS_13.astype(str).iloc[[2, 3]].reset_index(drop=True)
    pd.testing.assert_frame_equal(passed, source)  # unchanged, to the letter


def test_allocating_the_written_file_again_is_refused(written):
    _, out, _, (usage, inventory, workloads) = written
    again = gpucost.read_focus(out)
    with pytest.raises(gpucost.InvalidInputError, match=r"split\.csv: line 2, column 'AllocatedMethodId': "
                                                        r"'gpucost-allocated': already an allocated charge"):
        gpucost.allocate(again, usage, inventory)
    with pytest.raises(gpucost.InvalidInputError, match="AllocatedMethodId"):
        gpucost.to_focus(again, usage, inventory)


def test_parquet_in_and_out(tmp_path: Path):
    bill = tmp_path / "focus.parquet"
    pq.write_table(pa.Table.from_pandas(FOCUS_13.replace("", None).assign(
        **{c: lambda f, c=c: pd.to_numeric(f[c]) for c in FOCUS_SUMMABLE if c in FOCUS_13}), preserve_index=False),
        bill)
    usage, inventory, workloads = _telemetry()
    out = tmp_path / "split.parquet"
    gpucost.to_focus(gpucost.read_focus(bill), usage, inventory, workloads, path=out)
    back = pq.read_table(out).to_pandas()
    origin = pq.read_table(bill).to_pandas()
    for column in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ConsumedQuantity"):
        sums = back.groupby(["ResourceId", "SkuId"], dropna=False)[column].sum(min_count=1)
        want = origin.groupby(["ResourceId", "SkuId"], dropna=False)[column].sum(min_count=1)
        np.testing.assert_allclose(sums.to_numpy(float), want.to_numpy(float), rtol=0, atol=1e-9)
    assert gpucost.read_focus(out).attrs["billing"]["allocated_charges"] == 5


def test_the_specification_example_round_trips(tmp_path: Path):
    example = SPEC / "one_hundred_percent_utilization_without_commitment_discount_flexibility.csv"
    if not example.exists():
        pytest.skip("FOCUS specification examples not on this machine")
    bill = tmp_path / example.name
    shutil.copy(example, bill)
    costs = gpucost.read_focus(bill)
    resource = "<my-large-vm-id>"  # the usage row's; the purchase names the commitment
    usage = pd.DataFrame({"timestamp": pd.date_range("2023-01-01", periods=2, freq="30min", tz="UTC"),
                          "resource_id": resource, "device": 0, "consumer": ["job-1", "job-2"], "share": 1.0,
                          "util": 1.0, "mem_used": 0.0})
    inventory = pd.DataFrame({"resource_id": [resource], "device": [0], "mem_capacity": [2.0 ** 30]})
    out = tmp_path / "split.csv"
    gpucost.to_focus(costs, usage, inventory, interval=1800, path=out)
    origin, back = _text(bill), _text(out)
    assert list(back["AllocatedResourceId"]) == ["", "job-1", "job-2"]  # the purchase passes through
    assert list(back["AllocatedMethodId"] != "") == [False, True, True]
    key = ["ChargeCategory", "ResourceId"]
    for _, row in origin.iterrows():
        rows = back[(back[key] == row[key].to_numpy()).all(axis=1)]
        for column in FOCUS_SUMMABLE:
            if column in origin.columns and row[column] not in ("", "null"):
                assert _conserved(row[column], rows[column]), (row["ResourceId"], column)
    assert gpucost.read_focus(out)["cost"].sum() == pytest.approx(costs["cost"].sum(), abs=1e-12)


def test_owned_hardware_and_invoices_write_focus_usage_rows(tmp_path: Path):
    start, end = H, H + pd.Timedelta("1h")
    costs = pd.DataFrame({"resource_id": ["node-1", "node-1"], "start": [start, start], "end": [end, end],
                          "cost": [3.0, 1.0], "pricing": ["owned", "owned"], "sku": ["depreciation", "power"],
                          "primary": [True, False], "currency": "EUR", "charge_category": "Usage",
                          "quantity_hours": [np.nan, np.nan]})
    usage = pd.DataFrame({"timestamp": pd.date_range(start, periods=2, freq="30min"), "resource_id": "node-1",
                          "device": 0, "consumer": ["a", "b"], "share": 1.0, "util": 1.0, "mem_used": 0.0})
    inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [2.0 ** 30]})
    out = tmp_path / "owned.csv"
    table = gpucost.to_focus(costs, usage, inventory, interval=1800, path=out)
    frame = table.to_pandas()
    assert set(frame["ChargeCategory"]) == {"Usage"} and set(frame["x_Pricing"]) == {"owned"}
    assert set(frame["PricingCategory"]) == {"Other"} and set(frame["BillingCurrency"]) == {"EUR"}
    assert frame.groupby("SkuId")["EffectiveCost"].sum().to_dict() == {"depreciation": 3.0, "power": 1.0}
    back = gpucost.read_focus(out)
    assert back["cost"].sum() == pytest.approx(4.0) and back.attrs["billing"]["allocated_charges"] == 4


def test_cli_allocate_format_focus(tmp_path: Path, capsys):
    bill = tmp_path / "focus.csv"
    FOCUS_13.to_csv(bill, index=False)
    usage, inventory, workloads = _telemetry()
    usage.to_csv(tmp_path / "usage.csv", index=False)
    inventory.to_csv(tmp_path / "inventory.csv", index=False)
    out = tmp_path / "split.parquet"
    code = gpucost.cli.main(["allocate", "--bill", str(bill), "--usage", str(tmp_path / "usage.csv"),
                             "--inventory", str(tmp_path / "inventory.csv"), "--format", "focus", "--output", str(out)])
    assert code == 0
    back = pq.read_table(out).to_pandas()
    assert set(back["AllocatedMethodId"].dropna()) == {"gpucost-allocated"}
    assert back["EffectiveCost"].sum() == pytest.approx(FOCUS_13["EffectiveCost"].astype(float).sum())
    assert "FOCUS rows" in capsys.readouterr().err


# ---- streaming, bills in parts, provider x_ columns, corrections, real exports -------------------


@pytest.mark.parametrize("batch_lines", [1, 2, 3, 100])
def test_streamed_output_is_the_one_shot_output(tmp_path: Path, batch_lines: int):
    bill = tmp_path / "focus.csv"
    FOCUS_13.to_csv(bill, index=False)
    usage, inventory, workloads = _telemetry()
    costs = gpucost.read_focus(bill)
    whole = gpucost.to_focus(costs, usage, inventory, workloads, path=tmp_path / "whole.csv")
    rows = gpucost.focus.write_focus_split(costs, usage, inventory, workloads, path=tmp_path / "streamed.csv",
                                           batch_lines=batch_lines)
    assert rows == whole.num_rows
    assert (tmp_path / "streamed.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    batches = list(gpucost.focus.focus_batches(costs, usage, inventory, workloads, batch_lines=batch_lines))
    assert len(batches) == -(-len(costs) // batch_lines)
    assert pa.concat_tables(batches).equals(whole)
    gpucost.to_focus(costs, usage, inventory, workloads, path=tmp_path / "whole.parquet")
    gpucost.focus.write_focus_split(costs, usage, inventory, workloads, path=tmp_path / "streamed.parquet",
                                    batch_lines=batch_lines)
    assert pq.read_table(tmp_path / "streamed.parquet").equals(pq.read_table(tmp_path / "whole.parquet"))


def test_batch_lines_must_be_positive():
    usage, inventory, workloads = _telemetry()
    costs = pd.DataFrame({"resource_id": ["i-1"], "start": [H], "end": [H + pd.Timedelta("1h")], "cost": [1.0]})
    with pytest.raises(ValueError, match="batch_lines must be a positive"):
        list(gpucost.focus.focus_batches(costs, usage, inventory, batch_lines=0))


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_multi_part_focus_bill_carries_each_parts_columns(tmp_path: Path, suffix: str):
    # Three parts of one export: the second has a provider column the first lacks; the third repeats a row
    # of the first (the reader drops it once, and so does the FOCUS output).
    parts = [FOCUS_13.iloc[[0, 2]], FOCUS_13.iloc[[1]].assign(x_UsageType=["Box:g5"]), FOCUS_13.iloc[[3, 0]]]
    names = []
    for k, part in enumerate(parts):
        names.append(str(tmp_path / f"part-{k}{suffix}"))
        if suffix == ".csv":
            part.to_csv(names[-1], index=False)
        else:
            pq.write_table(pa.Table.from_pandas(part, preserve_index=False), names[-1])
    usage, inventory, _ = _telemetry()
    usage.to_csv(tmp_path / "usage.csv", index=False)
    inventory.to_csv(tmp_path / "inventory.csv", index=False)
    out = tmp_path / "split.csv"
    code = gpucost.cli.main(["allocate", "--bill", *names, "--usage", str(tmp_path / "usage.csv"),
                             "--inventory", str(tmp_path / "inventory.csv"), "--format", "focus", "--output", str(out)])
    assert code == 0
    back = _text(out)
    assert list(back.columns) == list(FOCUS_13.columns) + ["x_UsageType"]
    assert set(back.loc[back["SkuId"] == "BoxUsage:g5", "x_UsageType"]) == {"Box:g5"}  # part 2's column
    assert set(back.loc[back["SkuId"] != "BoxUsage:g5", "x_UsageType"]) == {""}
    assert len(back[(back["SkuId"] == "BoxUsage:p4d") & (back["AllocatedResourceId"] == "train-a")]) == 1  # once
    for sku, origin in FOCUS_13.set_index("SkuId").iterrows():
        assert _conserved(origin["EffectiveCost"], back.loc[back["SkuId"] == sku, "EffectiveCost"]), sku
    _spec_conformant(back)


def test_provider_cost_columns_are_split_and_the_others_copied(tmp_path: Path):
    bill = tmp_path / "focus.csv"
    FOCUS_13.assign(x_EffectiveCostInUsd=["30.5", "3.4567891", "0.11", "2.5"],
                    x_BilledUnitPrice=["30.5", "5.672", "0.08", ""],
                    x_Discounts=['{"SavingsPlan": -2.27}', "", "", ""]).to_csv(bill, index=False)
    usage, inventory, workloads = _telemetry()
    out = tmp_path / "split.csv"
    gpucost.to_focus(gpucost.read_focus(bill), usage, inventory, workloads, path=out)
    back = _text(out)
    p4d = back[back["SkuId"] == "BoxUsage:p4d"]
    assert _conserved("30.5", p4d["x_EffectiveCostInUsd"])
    assert list(p4d["x_EffectiveCostInUsd"]) == list(p4d["EffectiveCost"])
    assert set(p4d["x_BilledUnitPrice"]) == {"30.5"} and set(p4d["x_Discounts"]) == {'{"SavingsPlan": -2.27}'}


def test_a_correction_is_split_over_the_period_it_corrects(tmp_path: Path):
    # FOCUS 1.3 CorrectionHandling: a Correction keeps the charge period it corrects and is billed later.
    correction = FOCUS_13.iloc[[0]].assign(
        ChargeClass="Correction", BillingPeriodStart="2026-04-01T00:00:00Z", BillingPeriodEnd="2026-05-01T00:00:00Z",
        ListCost="-3.2", ContractedCost="-3.05", BilledCost="-3.05", EffectiveCost="-3.05", ConsumedQuantity="0",
        PricingQuantity="0")
    bill = tmp_path / "focus.csv"
    pd.concat([FOCUS_13, correction]).to_csv(bill, index=False)
    usage, inventory, workloads = _telemetry()
    out = tmp_path / "split.csv"
    gpucost.to_focus(gpucost.read_focus(bill), usage, inventory, workloads, path=out)
    back = _text(out)
    fixed = back[back["ChargeClass"] == "Correction"]
    assert sorted(fixed["AllocatedResourceId"]) == ["", "nb-b", "train-a"]
    assert set(fixed["BillingPeriodStart"]) == {"2026-04-01T00:00:00Z"}
    for column in ("ListCost", "ContractedCost", "BilledCost", "EffectiveCost"):
        assert _conserved(correction[column].iloc[0], fixed[column]), column
    half = Decimal(fixed.loc[fixed["AllocatedResourceId"] == "train-a", "EffectiveCost"].iloc[0])
    assert abs(half - Decimal("-1.525")) <= Decimal("0.005")  # half of it, to the cent
    _spec_conformant(back)


def test_a_parquet_correction_repeating_its_charge_is_not_a_duplicate(tmp_path: Path):
    # Accounting-style correction: the re-issued charge equals the original in every column gpucost reads,
    # but is billed in a later billing period on another invoice; the reader keeps both.
    frame = FOCUS_13.iloc[[0]].assign(InvoiceId="inv-1")
    again = frame.assign(ChargeClass="Correction", BillingPeriodStart="2026-04-01T00:00:00Z",
                         BillingPeriodEnd="2026-05-01T00:00:00Z", InvoiceId="inv-2")
    bill = tmp_path / "focus.parquet"
    pq.write_table(pa.Table.from_pandas(pd.concat([frame, again]), preserve_index=False), bill)
    costs = gpucost.read_focus(bill)
    assert len(costs) == 2 and costs.attrs["billing"]["duplicates_dropped"] == 0


REAL = Path(__file__).resolve().parents[1] / "data" / "real"


@pytest.mark.parametrize("name", ["focus_1_0_aws_data_export.csv", "focus_1_0r2_azure_export.csv",
                                  "focus_1_0_gcp_bigquery.parquet"])
def test_real_exports_round_trip(tmp_path: Path, name: str):
    bill = tmp_path / name
    shutil.copy(REAL / name, bill)
    costs = gpucost.read_focus(bill)
    # Telemetry on the first GPU instance's first charge period: two jobs, each half of it.
    line = costs[costs["resource_id"].notna() & (costs["charge_category"] == "Usage")].iloc[0]
    steps = pd.date_range(line["start"], line["end"], freq="30min", inclusive="left")
    usage = pd.DataFrame({"timestamp": steps, "resource_id": line["resource_id"], "device": 0,
                          "consumer": np.resize(["job-1", "job-2"], len(steps)), "share": 1.0, "util": 1.0,
                          "mem_used": 0.0})
    inventory = pd.DataFrame({"resource_id": [line["resource_id"]], "device": [0], "mem_capacity": [2.0 ** 30]})
    out = tmp_path / ("split" + bill.suffix)
    table = gpucost.to_focus(costs, usage, inventory, interval=1800, path=out)
    origin = pq.read_table(bill) if bill.suffix == ".parquet" else pa.Table.from_pandas(_text(bill))
    assert table.column_names == origin.column_names + [c for c in FOCUS_ALLOCATED if c not in origin.column_names]
    assert 0 < int(pc_valid(table.column("AllocatedMethodId"))) < table.num_rows
    again = gpucost.read_focus(out)
    assert again.attrs["billing"]["allocated_charges"] == int(pc_valid(table.column("AllocatedMethodId")))
    for column in ("cost", "billed_cost", "effective_cost", "list_cost"):
        if column in costs:
            assert again[column].sum() == pytest.approx(costs[column].sum(), abs=1e-9), column
    back = pq.read_table(out) if bill.suffix == ".parquet" else pa.Table.from_pandas(_text(out))
    if bill.suffix != ".parquet":
        _spec_conformant(back.to_pandas())


def pc_valid(column: pa.ChunkedArray) -> int:
    return len(column) - column.null_count


def test_a_provider_column_named_like_a_cost_holding_text_is_copied(tmp_path: Path):
    bill = tmp_path / "focus.csv"
    FOCUS_13.assign(x_AmortizationCost=["see invoice", "", "", ""]).to_csv(bill, index=False)
    usage, inventory, workloads = _telemetry()
    frame = gpucost.to_focus(gpucost.read_focus(bill), usage, inventory, workloads).to_pandas()
    assert set(frame.loc[frame["SkuId"] == "BoxUsage:p4d", "x_AmortizationCost"]) == {"see invoice"}


def test_a_focus_metric_that_is_no_number_is_named(tmp_path: Path):
    bill = tmp_path / "focus.csv"
    FOCUS_13.assign(ContractedCost=["30.5", "5.672", "n/a", "2.5"]).to_csv(bill, index=False)
    usage, inventory, workloads = _telemetry()
    with pytest.raises(gpucost.InvalidInputError, match=r"focus\.csv: row 2, column 'ContractedCost': 'n/a' is not"):
        gpucost.to_focus(gpucost.read_focus(bill), usage, inventory, workloads)


def test_a_focus_bill_beside_an_invoice_writes_both_sources(tmp_path: Path):
    """A FOCUS bill and a GPU cloud's invoice read together by the CLI: each source's lines become origin rows of
    their own (the bill's as written, the invoice's built from its lines), and BilledCost adds up to both."""
    FOCUS_13.to_csv(tmp_path / "focus.csv", index=False)
    usage, inventory, _ = _telemetry()
    burst = pd.DataFrame({"timestamp": usage["timestamp"].unique(), "resource_id": "cw-1", "device": 0,
                          "consumer": "burst-job", "util": 0.9, "share": 1.0, "mem_used": 0.0})
    pd.concat([usage, burst], ignore_index=True).to_csv(tmp_path / "usage.csv", index=False)
    inventory.to_csv(tmp_path / "inventory.csv", index=False)
    (tmp_path / "invoice.csv").write_text("Instance,GPU Type,Start,End,Quantity,Unit,Unit Price,Amount,Currency\n"
                                          "burst-01,H100 SXM,2026-03-01T10:00:00Z,2026-03-01T11:00:00Z,1,GPU-hour,"
                                          "2.49,2.49,USD\n")
    (tmp_path / "hosts.csv").write_text("host,resource_id,gpus\nburst-01,cw-1,1\n")
    (tmp_path / "gpucost.toml").write_text('[sources]\nbill = "focus.csv"\nusage = "usage.csv"\n'
                                           'inventory = "inventory.csv"\ninvoice = "invoice.csv"\nhosts = "hosts.csv"\n')
    out = tmp_path / "split.csv"
    assert gpucost.cli.main(["allocate", "--config", str(tmp_path / "gpucost.toml"), "--format", "focus",
                             "--output", str(out)]) == 0
    back = _text(out)
    billed = sum((Decimal(v) for v in back["BilledCost"] if v), Decimal(0))
    assert billed == sum((Decimal(v) for v in FOCUS_13["BilledCost"]), Decimal(0)) + Decimal("2.49")
    invoiced = back[back["x_Pricing"] == "rate_card"]
    assert invoiced["AllocatedResourceId"].tolist() == ["burst-job"]
    assert back["SkuId"].str.startswith("BoxUsage").sum() >= 2  # the bill's rows carried over as written
