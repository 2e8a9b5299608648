"""gpucost.read_focus / read_cur / read_gcp_billing / read_azure_costs on
fixtures written in the providers' own formats (tests/data/billing).

Every reconciliation test recomputes the export's own total of the chosen
amount with pandas from the raw file, independently of gpucost."""

from __future__ import annotations

import decimal
import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gpucost
from gpucost import billing
from gpucost.model import COMMITMENTS

DATA = Path(__file__).resolve().parents[1] / "data" / "billing"
SPEC_EXAMPLES = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "focus-spec-examples"


def raw(name: str) -> pd.DataFrame:
    """The fixture as pandas reads it, every cell a string ('' for empty)."""
    return pd.read_csv(DATA / name, dtype=str, keep_default_na=False, encoding="utf-8-sig")


def num(column: pd.Series) -> pd.Series:
    return pd.to_numeric(column.replace({"": "0", "null": "0"}))


# ---- reconciliation: sum(cost) == the export's own total ------------------------


@pytest.mark.parametrize("name", ["focus_1_2.csv", "focus_1_0_azure.csv", "focus_1_3_gcp.csv"])
@pytest.mark.parametrize("amount,column", [("effective", "EffectiveCost"), ("billed", "BilledCost"),
                                           ("list", "ListCost")])
def test_focus_reconciles(name, amount, column):
    lines = gpucost.read_focus(DATA / name, amount=amount)
    frame = raw(name)
    assert len(lines) == len(frame)
    assert lines.cost.sum() == pytest.approx(num(frame[column]).sum(), rel=1e-12)


def cur_amortized(frame: pd.DataFrame, legacy: bool) -> float:
    """AWS's amortized cost, written out the way AWS's CUDOS queries do."""
    c = (lambda legacy_name, cur2_name: frame[legacy_name if legacy else cur2_name])
    kind = c("lineItem/LineItemType", "line_item_line_item_type")
    unblended = num(c("lineItem/UnblendedCost", "line_item_unblended_cost"))
    ri_arn = c("reservation/ReservationARN", "reservation_reservation_a_r_n")
    amortized = np.select(
        [kind == "SavingsPlanCoveredUsage", kind == "SavingsPlanRecurringFee", kind == "SavingsPlanNegation",
         kind == "SavingsPlanUpfrontFee", kind == "DiscountedUsage", kind == "RIFee",
         (kind == "Fee") & (ri_arn != "")],
        [num(c("savingsPlan/SavingsPlanEffectiveCost", "savings_plan_savings_plan_effective_cost")),
         num(c("savingsPlan/TotalCommitmentToDate", "savings_plan_total_commitment_to_date"))
         - num(c("savingsPlan/UsedCommitment", "savings_plan_used_commitment")),
         0.0, 0.0,
         num(c("reservation/EffectiveCost", "reservation_effective_cost")),
         num(c("reservation/UnusedAmortizedUpfrontFeeForBillingPeriod",
               "reservation_unused_amortized_upfront_fee_for_billing_period"))
         + num(c("reservation/UnusedRecurringFee", "reservation_unused_recurring_fee")),
         0.0],
        unblended)
    return float(np.sum(amortized))


@pytest.mark.parametrize("name,legacy", [("cur_legacy.csv", True), ("cur2.csv", False)])
def test_cur_reconciles(name, legacy):
    frame = raw(name)
    lines = gpucost.read_cur(DATA / name)
    assert len(lines) == len(frame)
    assert lines.cost.sum() == pytest.approx(cur_amortized(frame, legacy), rel=1e-12)
    billed = gpucost.read_cur(DATA / name, amount="billed")
    unblended = frame["lineItem/UnblendedCost" if legacy else "line_item_unblended_cost"]
    assert billed.cost.sum() == pytest.approx(num(unblended).sum(), rel=1e-12)
    listed = gpucost.read_cur(DATA / name, amount="list")
    on_demand = frame["pricing/publicOnDemandCost" if legacy else "pricing_public_on_demand_cost"]
    assert listed.cost.sum() == pytest.approx(num(on_demand).sum(), rel=1e-12)


def gcp_net_total(frame: pd.DataFrame) -> float:
    credits = frame["credits"].map(lambda s: sum(c["amount"] for c in json.loads(s or "[]")))
    return float(num(frame["cost"]).sum() + credits.sum())


@pytest.mark.parametrize("credits", ["net", "separate"])
def test_gcp_reconciles(credits):
    frame = raw("gcp_billing.csv")
    lines = gpucost.read_gcp_billing(DATA / "gcp_billing.csv", credits=credits)
    assert lines.cost.sum() == pytest.approx(gcp_net_total(frame), rel=1e-12)
    assert len(lines) == len(frame) + (3 if credits == "separate" else 0)
    listed = gpucost.read_gcp_billing(DATA / "gcp_billing.csv", amount="list")
    assert listed.cost.sum() == pytest.approx(num(frame["cost_at_list"]).sum(), rel=1e-12)


def test_azure_reconciles():
    amortized = gpucost.read_azure_costs(DATA / "azure_amortized.csv")
    assert amortized.cost.sum() == pytest.approx(num(raw("azure_amortized.csv")["costInBillingCurrency"]).sum())
    actual = gpucost.read_azure_costs(DATA / "azure_ea_actual.csv", dataset="actual")
    assert actual.cost.sum() == pytest.approx(num(raw("azure_ea_actual.csv")["CostInBillingCurrency"]).sum())
    assert (actual.cost == actual.billed_cost).all() and actual.effective_cost.isna().all()
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'amount'"):
        gpucost.read_azure_costs(DATA / "azure_amortized.csv", amount="billed")


# ---- what the lines say ---------------------------------------------------------------


def by_resource(lines: pd.DataFrame, part: str) -> pd.Series:
    match = lines[lines.resource_id.astype(str).str.contains(part, regex=False)]
    assert len(match) >= 1, part
    return match.iloc[0]


def test_focus_columns():
    lines = gpucost.read_focus(DATA / "focus_1_2.csv")
    assert list(lines.columns) == list(billing.COST_LINE_COLUMNS)
    assert str(lines.start.dtype) == "datetime64[ns, UTC]"
    od = by_resource(lines, "i-0aaa")
    assert (od.pricing, od.instance_type, od.gpu, od.provider) == ("on_demand", "p4d.24xlarge", True, "aws")
    assert od.end - od.start == pd.Timedelta("1h")
    assert json.loads(od.tags) == {"team": "llm-train", "project-id": "p-llm"}
    assert by_resource(lines, "i-0bbb").pricing == "savings_plan"  # its CommitmentDiscountType
    assert by_resource(lines, "i-0ccc").pricing == "spot"
    assert json.loads(by_resource(lines, "i-0fff").tags)["note"] == 'says "hi", twice'
    assert not by_resource(lines, "vol-0ddd").gpu
    assert lines.resource_id.isna().sum() == 2  # tax and credit: no resource
    # ListCost 'null' on the tax row: list_cost 0, never NaN (the engine needs finite values).
    assert np.isfinite(lines.list_cost).all()


def test_cur_columns_and_tags():
    lines = gpucost.read_cur(DATA / "cur_legacy.csv", expand_tags=["team", "project-id"])
    od = by_resource(lines, "i-0aaa")
    assert od.tag_team == "llm-train" and od["tag_project-id"] == "p-llm"
    assert by_resource(lines, "i-0ccc").pricing == "spot"
    assert by_resource(lines, "i-0ggg").commitment_status == "Used"
    cur2 = gpucost.read_cur(DATA / "cur2.csv", expand_tags={"team": "team"})
    assert by_resource(cur2, "i-05aaa").team == "llm-train"
    assert set(cur2.charge_category.astype(str)) == {"Usage", "Purchase", "Credit", "Tax"}


def test_gcp_json_lines_and_csv_agree():
    csv = gpucost.read_gcp_billing(DATA / "gcp_billing.csv")
    jsonl = gpucost.read_gcp_billing(DATA / "gcp_billing.jsonl")
    pd.testing.assert_series_equal(csv.cost, jsonl.cost)
    assert csv.tags.astype(str).tolist() == jsonl.tags.astype(str).tolist()
    assert csv.gpu.tolist() == jsonl.gpu.tolist()
    vm = csv[csv.resource_id.astype(str).str.endswith("/trainer-1")]
    assert len(vm) == 3 and vm.gpu.all()  # core, RAM and GPU SKUs: one GPU resource
    assert set(vm.instance_type.astype(str)) == {"a2-highgpu-1g"}


def test_azure_columns():
    lines = gpucost.read_azure_costs(DATA / "azure_amortized.csv")
    od = by_resource(lines, "nd-od-1")  # lower-cased ARM id
    assert (od.instance_type, od.pricing, od.gpu) == ("Standard_ND96asr_v4", "on_demand", True)
    assert od.end - od.start == pd.Timedelta("1D")
    t4 = by_resource(lines, "t4-vm-1")
    assert json.loads(t4.tags) == {"team": "cv", "env": "dev"}  # brace-less tags
    assert t4.instance_type == "Standard_NC4as_T4_v3"
    assert (lines.commitment_status.astype(str) == "Unused").sum() == 2


# ---- inputs: gzip, Parquet, tables, streaming -------------------------------------------


def test_gzip_and_small_chunks_match(tmp_path, monkeypatch):
    plain = gpucost.read_cur(DATA / "cur_legacy.csv")
    packed = tmp_path / "cur.csv.gz"
    packed.write_bytes(gzip.compress((DATA / "cur_legacy.csv").read_bytes()))
    monkeypatch.setattr(billing, "CHUNK_BYTES", 7)  # records split across chunks
    unpacked = gpucost.read_cur(packed)
    pd.testing.assert_frame_equal(plain, unpacked, check_categorical=False)
    with open(packed, "rb") as f:  # an open file works too
        pd.testing.assert_frame_equal(plain, gpucost.read_cur(f), check_categorical=False)


def test_truncated_gzip_names_file_line_and_column(tmp_path):
    data = gzip.compress((DATA / "cur_legacy.csv").read_bytes())
    truncated = tmp_path / "cur.csv.gz"
    truncated.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"cur\.csv\.gz: line \d+, column '[^']+': truncated gzip stream"):
        gpucost.read_cur(truncated)


def typed_focus_table() -> pa.Table:
    """focus_1_2.csv as an AWS FOCUS Parquet export types it: timestamps,
    decimals, Tags as map<string, string>."""
    frame = raw("focus_1_2.csv")
    columns = {}
    for name in frame.columns:
        values = [None if v in ("", "null") else v for v in frame[name]]
        if name.endswith(("PeriodStart", "PeriodEnd")):
            columns[name] = pa.array(pd.to_datetime(pd.Series(values), utc=True, format="ISO8601")).cast(
                pa.timestamp("ms", tz="UTC"))
        elif name.endswith("Cost"):
            columns[name] = pa.array([None if v is None else decimal.Decimal(v) for v in values],
                                     pa.decimal128(22, 10))
        elif name == "Tags":
            columns[name] = pa.array([None if v is None else list(json.loads(v).items()) for v in values],
                                     pa.map_(pa.string(), pa.string()))
        else:
            columns[name] = pa.array(values, pa.string())
    return pa.table(columns)


def test_focus_parquet_matches_csv(tmp_path):
    path = tmp_path / "focus.parquet"
    pq.write_table(typed_focus_table(), path, row_group_size=3)
    from_parquet = gpucost.read_focus(path)
    from_csv = gpucost.read_focus(DATA / "focus_1_2.csv")
    pd.testing.assert_frame_equal(from_parquet, from_csv, check_categorical=False)
    # In memory: a pyarrow Table and a DataFrame.
    pd.testing.assert_frame_equal(gpucost.read_focus(typed_focus_table()), from_csv, check_categorical=False)
    pd.testing.assert_frame_equal(gpucost.read_focus(raw("focus_1_2.csv").replace("", None)), from_csv,
                                  check_categorical=False)


def test_cur2_parquet_with_map_columns(tmp_path):
    frame = raw("cur2.csv")
    columns = {}
    for name in frame.columns:
        values = [None if v == "" else v for v in frame[name]]
        if name in ("resource_tags", "product", "cost_category", "discount"):
            columns[name] = pa.array([None if v is None else list(json.loads(v).items()) for v in values],
                                     pa.map_(pa.string(), pa.string()))
        elif name.endswith(("_start_date", "_end_date")):
            columns[name] = pa.array(pd.to_datetime(pd.Series(values), utc=True)).cast(pa.timestamp("us", tz="UTC"))
        elif name.endswith(("_cost", "_fee", "_commitment", "_to_date", "_for_billing_period", "_amount", "_rate")):
            columns[name] = pa.array([None if v is None else float(v) for v in values], pa.float64())
        else:
            columns[name] = pa.array(values, pa.string()).dictionary_encode()  # dictionaries are decoded
    path = tmp_path / "cur2.parquet"
    pq.write_table(pa.table(columns), path)
    from_parquet = gpucost.read_cur(path, expand_tags=["team"])
    from_csv = gpucost.read_cur(DATA / "cur2.csv", expand_tags=["team"])
    pd.testing.assert_frame_equal(from_parquet, from_csv, check_categorical=False)


def test_gcp_parquet_nested_like_bigquery(tmp_path):
    # BigQuery's Parquet export: structs for service/sku/resource/..., lists of structs for labels and credits.
    table = pa.Table.from_pylist([json.loads(line) for line in (DATA / "gcp_billing.jsonl").read_text().splitlines()])
    table = table.set_column(table.schema.get_field_index("usage_start_time"), "usage_start_time",
                             pa.array(pd.to_datetime(table["usage_start_time"].to_pandas(), utc=True,
                                                     format="%Y-%m-%d %H:%M:%S UTC")).cast(pa.timestamp("us", "UTC")))
    path = tmp_path / "gcp.parquet"
    pq.write_table(table, path)
    from_parquet = gpucost.read_gcp_billing(path)
    from_csv = gpucost.read_gcp_billing(DATA / "gcp_billing.csv")
    pd.testing.assert_series_equal(from_parquet.cost, from_csv.cost)
    assert from_parquet.tags.astype(str).tolist() == from_csv.tags.astype(str).tolist()
    assert from_parquet.instance_type.astype(str).tolist() == from_csv.instance_type.astype(str).tolist()
    assert (from_parquet.start == from_csv.start).all() and (from_parquet.end == from_csv.end).all()


def test_parquet_projection_reads_only_known_columns(tmp_path):
    table = typed_focus_table().append_column("x_Huge", pa.array(["x" * 1000] * 10))
    path = tmp_path / "wide.parquet"
    pq.write_table(table, path)
    projected = billing._projection(pq.ParquetFile(path).schema_arrow.names, "focus")
    assert "x_Huge" not in projected and "EffectiveCost" in projected and "Tags" in projected


def test_progress_bar_and_plain_file_object(capsys):
    lines = gpucost.read_focus(DATA / "focus_1_2.csv", progress=True)
    assert len(lines) == 10


# ---- bad input ----------------------------------------------------------------------------


HEADER = "ChargePeriodStart,ChargePeriodEnd,BilledCost,EffectiveCost,ResourceId,x_Unknown\n"
ROW = "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1.5,1.25,i-1,whatever\n"


@pytest.mark.parametrize("text,message", [
    ("ChargePeriodStart,ChargePeriodEnd,BilledCost\n" + ROW[:47] + "\n",
     r"bill\.csv: line 1, column 'EffectiveCost': missing required column"),
    (HEADER + ROW + ROW.replace("1.25", "1,25"),
     r"bill\.csv: line 3, column '[^']+': expected 6 fields, found 7"),
    (HEADER + ROW + ROW.replace("1.25", "abc"), r"bill\.csv: line 3, column 'EffectiveCost': 'abc' is not a number"),
    (HEADER + ROW.replace("2025-03-01T10:00:00Z", "2025-03-01 10h"),
     r"bill\.csv: line 2, column 'ChargePeriodStart': '2025-03-01 10h' is not an ISO 8601 timestamp"),
    (HEADER + ROW + ROW.replace("i-1", '"i-1'), r"bill\.csv: line 3, column 'ResourceId': unterminated quote"),
])
def test_bad_input_names_file_line_and_column(tmp_path, text, message):
    path = tmp_path / "bill.csv"
    path.write_text(text)
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.read_focus(path)


def test_unknown_columns_are_ignored(tmp_path):
    path = tmp_path / "bill.csv"
    path.write_text(HEADER + ROW)
    lines = gpucost.read_focus(path)
    assert lines.cost.tolist() == [1.25]


def test_bad_parameters():
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'amount'"):
        gpucost.read_focus(DATA / "focus_1_2.csv", amount="net")
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'credits'"):
        gpucost.read_gcp_billing(DATA / "gcp_billing.csv", credits="sometimes")
    with pytest.raises(gpucost.InvalidInputError, match="cannot open"):
        gpucost.read_cur(DATA / "missing.csv")
    with pytest.raises(gpucost.InvalidInputError, match="'gpu' is already a cost-line column"):
        gpucost.read_focus(DATA / "focus_1_2.csv", expand_tags={"team": "gpu"})


def test_bad_parquet_value_names_row_and_column(tmp_path):
    table = typed_focus_table()
    bad = table.set_column(table.schema.get_field_index("ChargePeriodEnd"), "ChargePeriodEnd",
                           pa.array(["2025-03-01T11:00:00Z"] * 7 + ["not a time"] + ["2025-04-01T00:00:00Z"] * 2))
    path = tmp_path / "bad.parquet"
    pq.write_table(bad, path, row_group_size=4)
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"bad\.parquet: row 7, column 'ChargePeriodEnd': 'not a time' is not an ISO 8601"):
        gpucost.read_focus(path)


# ---- the FOCUS specification's own examples ---------------------------------------------


@pytest.mark.skipif(not SPEC_EXAMPLES.is_dir(), reason="../shared/data/focus-spec-examples is absent")
def test_focus_spec_examples():
    files = sorted(SPEC_EXAMPLES.glob("*.csv"))
    assert files
    read = 0
    for path in files:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        if frame["ChargePeriodEnd"].str.contains("T30:").any():
            # Purchase scenarios 2 and 3 write hour 30 (2023-02-01T30:00:00Z):
            # not a time, so the reader names the first such cell.
            line = int(np.flatnonzero(frame["ChargePeriodEnd"].str.contains("T30:"))[0]) + 2
            with pytest.raises(gpucost.InvalidInputError,
                               match=rf"{path.name}: line {line}, column 'ChargePeriodEnd': "
                                     r"'2023-02-01T30:00:00Z' is not an ISO 8601 timestamp"):
                gpucost.read_focus(path)
            continue
        lines = gpucost.read_focus(path)
        read += 1
        # Rows identical in every column are one row read twice (the
        # two-resources example writes its two VMs with one placeholder id).
        unique = frame.drop_duplicates().reset_index(drop=True)
        assert lines.attrs["billing"]["duplicates_dropped"] == len(frame) - len(unique)
        assert len(lines) == len(unique)  # blank lines in the files are not rows
        assert lines.cost.sum() == pytest.approx(num(unique["EffectiveCost"]).sum())
        assert lines.billed_cost.sum() == pytest.approx(num(unique["BilledCost"]).sum())
        committed = unique["CommitmentDiscountId"].replace("null", "") != ""
        assert lines.pricing[committed.to_numpy()].isin(list(COMMITMENTS)).all()
        unused = (unique.get("CommitmentDiscountStatus", pd.Series(dtype=str)) == "Unused").to_numpy()
        if unused.any():
            assert (lines.commitment_status[unused] == "Unused").all()
    assert read == len(files) - 2


def test_gcp_inventory_needs_rows_for_n1_with_attached_gpus(tmp_path):
    costs = gpucost.read_gcp_billing(DATA / "gcp_billing.csv")
    with pytest.raises(gpucost.InvalidInputError, match=r"costs: row \d+, column 'instance_type': unknown instance "
                                                        r"type 'n1-standard-8'"):
        gpucost.inventory(costs)
    own = pd.DataFrame({"provider": ["gcp"], "instance_type": ["n1-standard-8"], "gpu_model": ["T4"],
                        "gpus": [1], "gpu_memory_gib": [16]})
    inventory = gpucost.inventory(costs, catalog=own)
    assert inventory.groupby("resource_id").size().to_dict() == {
        "projects/ml-prod/zones/us-central1-a/instances/trainer-1": 1,
        "projects/ml-prod/zones/us-central1-b/instances/serve-1": 1,
        "projects/ml-prod/zones/us-central1-c/instances/batch-1": 1,
        "projects/ml-prod/zones/us-central1-a/instances/nb-1": 1,
    }
    # gzip-compressed JSON lines are recognised by content.
    packed = tmp_path / "export.json.gz"
    packed.write_bytes(gzip.compress((DATA / "gcp_billing.jsonl").read_bytes()))
    assert gpucost.read_gcp_billing(packed).cost.sum() == pytest.approx(costs.cost.sum())


def test_edge_inputs():
    import io

    with pytest.raises(gpucost.InvalidInputError, match="is empty"):
        gpucost.read_focus(io.BytesIO(b""))
    header_only = gpucost.read_focus(io.BytesIO(b"ChargePeriodStart,ChargePeriodEnd,EffectiveCost\r\n"))
    assert len(header_only) == 0 and list(header_only.columns) == list(billing.COST_LINE_COLUMNS)
    # pandas dicts become Arrow structs: a tags struct is read as a map, not flattened away.
    frame = pd.DataFrame({"ChargePeriodStart": pd.to_datetime(["2025-03-01T10:00Z"] * 2),
                          "ChargePeriodEnd": pd.to_datetime(["2025-03-01T11:00Z"] * 2),
                          "EffectiveCost": [1.5, 2.0], "ResourceId": pd.Categorical(["i-1", "i-2"]),
                          "Tags": [{"team": "a", "env": None}, None]})
    assert gpucost.read_focus(frame).tags.tolist() == ['{"team":"a"}', "{}"]
    with pytest.raises(gpucost.InvalidInputError, match="table: missing required column 'EffectiveCost'"):
        gpucost.read_focus(frame.iloc[:0].drop(columns="EffectiveCost"))


def test_ec2_instance_arns_become_instance_ids():
    """AWS's FOCUS export names instances by ARN; the reader writes the id the
    CUR, a node's providerID and DCGM use. Other ARNs stay as written."""
    ids = ["arn:aws:ec2:us-east-1:111122223333:instance/i-0abc12",
           "arn:aws-cn:ec2:cn-north-1:111122223333:instance/i-0def34",
           "arn:aws:ec2:us-east-1:111122223333:volume/vol-0abc",
           "arn:aws:ec2:us-east-1:111122223333:instance/i-0ABC",
           "arn:aws:sagemaker:us-east-1:111122223333:notebook-instance/nb"]
    frame = pd.DataFrame({"ChargePeriodStart": pd.to_datetime(["2025-03-01T10:00Z"] * 5),
                          "ChargePeriodEnd": pd.to_datetime(["2025-03-01T11:00Z"] * 5),
                          "EffectiveCost": [1.0] * 5, "ResourceId": ids})
    assert gpucost.read_focus(frame).resource_id.astype(str).tolist() == ["i-0abc12", "i-0def34"] + ids[2:]
