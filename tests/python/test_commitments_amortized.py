"""Commitments amortized on every cloud (issue 21 item 4): GCP committed-use
discounts spread over the usage they cover, Azure's actual-cost export told
from its amortized one, ``--dataset`` on the CLI, and commitment utilisation
on GCP and Azure bills. The expected numbers are worked out by hand in the
comments (tests/cpp/amortize_test.cc has the per-line arithmetic)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import gpucost
from gpucost import cli

DATA = Path(__file__).resolve().parents[1] / "data" / "billing"


def raw(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / name, dtype=str, keep_default_na=False, encoding="utf-8-sig")


def gcp_net_total(frame: pd.DataFrame) -> float:
    """cost + credits of the raw export, with pandas alone."""
    credits = frame["credits"].map(lambda s: sum(c["amount"] for c in json.loads(s or "[]")))
    return float(pd.to_numeric(frame["cost"]).sum() + credits.sum())


# ---- GCP ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gcp_cud.csv", "gcp_cud_spend.csv", "gcp_billing.csv"])
def test_gcp_amortization_conserves_money(name):
    lines = gpucost.read_gcp_billing(DATA / name)
    assert lines.cost.sum() == pytest.approx(gcp_net_total(raw(name)), abs=1e-9)
    billed = gpucost.read_gcp_billing(DATA / name, amount="billed")
    assert billed.cost.sum() == pytest.approx(lines.cost.sum(), abs=1e-9)


def nested_rows(name: str) -> list[dict]:
    """The CSV fixture as BigQuery writes JSON lines: nested records, repeated
    fields as arrays, numbers as numbers."""
    numbers = {"cost", "cost_at_list", "currency_conversion_rate", "usage.amount", "usage.amount_in_pricing_units"}
    rows = []
    for record in raw(name).to_dict("records"):
        row: dict = {}
        for key, value in record.items():
            if key in ("credits", "labels", "system_labels"):
                value = json.loads(value or "[]")
            elif key in numbers:
                value = float(value) if value != "" else None
            elif value == "":
                value = None
            parent, _, child = key.partition(".")
            if child:
                row.setdefault(parent, {})[child] = value
            else:
                row[key] = value
        rows.append(row)
    return rows


@pytest.mark.parametrize("name", ["gcp_cud.csv", "gcp_cud_spend.csv"])
def test_gcp_amortization_same_from_json_lines_and_arrow(tmp_path, name):
    rows = nested_rows(name)
    (tmp_path / "bill.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    csv = gpucost.read_gcp_billing(DATA / name)
    for other in (gpucost.read_gcp_billing(tmp_path / "bill.jsonl"),
                  gpucost.read_gcp_billing(pa.Table.from_pylist(rows))):
        assert len(other) == len(csv)
        np.testing.assert_allclose(other.cost.to_numpy(), csv.cost.to_numpy(), atol=1e-12)
        assert list(other.commitment_status.astype(object).fillna("")) == \
            list(csv.commitment_status.astype(object).fillna(""))


def test_gcp_cud_across_a_day_boundary_by_team():
    lines = gpucost.read_gcp_billing(DATA / "gcp_cud.csv", expand_tags=["team"])
    per_team = lines.groupby("tag_team", observed=True, dropna=False)["cost"].sum()
    # inference (serve-1) ran both hours: (1.80 + 0.216) * 2; search (serve-2)
    # the first hour only: 1.80 + 0.216; cv's L4 is on demand: 0.70.
    assert per_team["inference"] == pytest.approx(4.032)
    assert per_team["search"] == pytest.approx(2.016)
    assert per_team["cv"] == pytest.approx(0.70)
    # Unused commitment of March 2, 00:00 (1.80 A100 + 0.216 A2 cores): its
    # own resource-less lines, under the buyer's labels.
    unused = lines[lines.commitment_status == "Unused"]
    assert len(unused) == 2 and unused.resource_id.isna().all()
    assert unused.cost.sum() == pytest.approx(2.016)
    assert (unused.start == pd.Timestamp("2025-03-02 00:00", tz="UTC")).all()
    assert set(unused.tags) == {'{"cost-center":"ml-platform"}'}
    assert unused.gpu.all()  # the A100 and its A2 core commitment alike
    # Covered usage now carries its effective cost, never 0.
    covered = lines[lines.commitment_status == "Used"]
    assert len(covered) == 6 and (covered.cost > 0).all() and (covered.billed_cost.abs() < 1e-12).all()


def test_gcp_spend_based_cud():
    lines = gpucost.read_gcp_billing(DATA / "gcp_cud_spend.csv", expand_tags=["team"])
    per_team = lines.groupby("tag_team", observed=True)["cost"].sum()
    # $50/h committed for $37.50, $40 covered: u = 0.8, 30.00 spread 30:10.
    assert per_team["web"] == pytest.approx(22.50)
    assert per_team["batch"] == pytest.approx(7.50)
    assert lines.loc[lines.commitment_status == "Unused", "cost"].sum() == pytest.approx(7.50)


def test_commitment_utilization_on_a_gcp_bill():
    lines = gpucost.read_gcp_billing(DATA / "gcp_cud.csv")
    out = gpucost.commitment_utilization(lines, freq="h").set_index(["commitment_id", "period"])
    a100 = "gcp-cud:us-central1/gpu:a100"
    first, second = pd.Timestamp("2025-03-01 23:00", tz="UTC"), pd.Timestamp("2025-03-02 00:00", tz="UTC")
    assert out.loc[(a100, first), "purchased"] == pytest.approx(3.60)
    assert out.loc[(a100, first), "used"] == pytest.approx(3.60)
    assert out.loc[(a100, first), "utilization"] == pytest.approx(1.0)
    assert out.loc[(a100, second), "used"] == pytest.approx(1.80)
    assert out.loc[(a100, second), "unused"] == pytest.approx(1.80)
    assert out.loc[(a100, second), "utilization"] == pytest.approx(0.5)
    # Savings: on demand 3.00 per covered GPU-hour (3 of them) against 7.20 paid.
    whole = gpucost.commitment_utilization(lines, freq=None).set_index("commitment_id")
    assert whole.loc[a100, "savings"] == pytest.approx(3 * 3.00 - 7.20)
    coverage = gpucost.commitment_coverage(lines, by="region", freq=None).set_index("region")
    assert coverage.loc["us-central1", "coverage"] == pytest.approx(1.0)
    assert coverage.loc["us-east4", "coverage"] == pytest.approx(0.0)


# ---- Azure -------------------------------------------------------------------------
# One scenario, two exports (tests/data/billing/azure_ri_*.csv, MCA cost
# details columns): a 1-year all-upfront reservation for one
# Standard_NC24ads_A100_v4, $20,000 bought on 2025-03-01, covering an AKS
# node pool 20 of the day's 24 hours; a T4 node pool on demand ($12.624).
# Amortized: 20,000 / 365 = 54.794521 a day, 2.283105 an hour: 45.662100
# used, 9.132420 unused. Actual: the purchase at 20,000, the covered usage at 0.

DAILY = 20000 / 365


def test_azure_amortized_export_detected():
    lines = gpucost.read_azure_costs(DATA / "azure_ri_amortized.csv")
    assert lines.attrs["billing"]["dataset"] == "amortized"
    assert lines.cost.sum() == pytest.approx(DAILY + 12.624, abs=1e-5)
    out = gpucost.commitment_utilization(lines, freq="D").iloc[0]
    # No purchase line in an amortized export: what was bought for the day
    # is what was amortized into it.
    assert out["purchased"] == pytest.approx(DAILY, abs=1e-5)
    assert out["used"] == pytest.approx(DAILY * 20 / 24, abs=1e-5)
    assert out["utilization"] == pytest.approx(20 / 24, abs=1e-6)
    assert out["savings"] == pytest.approx(73.44 - DAILY, abs=1e-5)
    with pytest.raises(gpucost.InvalidInputError, match="amortized-cost dataset.*dataset='amortized'"):
        gpucost.read_azure_costs(DATA / "azure_ri_amortized.csv", dataset="actual")


def test_azure_actual_export_detected_and_never_taken_for_amortized():
    for dataset in ("auto", "amortized"):
        with pytest.raises(gpucost.InvalidInputError) as error:
            gpucost.read_azure_costs(DATA / "azure_ri_actual.csv", dataset=dataset)
        message = str(error.value)
        assert message.startswith(f"{DATA / 'azure_ri_actual.csv'}: this is Azure's actual-cost export")
        assert "1 reservation or savings plan purchase line(s), 1 covered usage line(s) at 0" in message
        assert "'Amortized cost'" in message and "dataset='actual'" in message
    lines = gpucost.read_azure_costs(DATA / "azure_ri_actual.csv", dataset="actual")
    assert lines.attrs["billing"]["dataset"] == "actual"
    assert lines.cost.sum() == pytest.approx(20000 + 12.624)
    auto_billed = gpucost.read_azure_costs(DATA / "azure_ri_actual.csv", amount="billed")
    assert auto_billed.attrs["billing"]["dataset"] == "actual"
    out = gpucost.commitment_utilization(lines, freq=None).iloc[0]
    assert out["purchased"] == pytest.approx(20000)
    assert out["used"] == 0.0 and np.isnan(out["utilization"])  # nothing amortized: says so, no made-up savings


def test_azure_list_amount_reads_either_export():
    amortized = gpucost.read_azure_costs(DATA / "azure_ri_amortized.csv", amount="list")
    actual = gpucost.read_azure_costs(DATA / "azure_ri_actual.csv", amount="list")
    assert amortized.attrs["billing"]["dataset"] == "amortized" and actual.attrs["billing"]["dataset"] == "actual"
    assert actual.billed_cost.notna().all() and actual.effective_cost.isna().all()
    assert amortized.cost.sum() == pytest.approx(actual.cost.sum())  # pay-as-you-go: the same usage


def test_azure_dataset_parameter_checked():
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'dataset'"):
        gpucost.read_azure_costs(DATA / "azure_ri_actual.csv", dataset="invoice")


# ---- CLI ---------------------------------------------------------------------------


def test_dataset_flag_and_config_key(tmp_path, capsys):
    vmss = ("/subscriptions/sub-7/resourcegroups/mc_aks_prod_eastus/providers/microsoft.compute/"
            "virtualmachinescalesets/aks-a100-12345678-vmss")  # usage must join something (docs/semantics.md)
    usage = pd.DataFrame({"timestamp": ["2025-03-01T10:00:00Z"], "resource_id": [vmss], "device": [0],
                          "consumer": ["pod-a"], "share": [1.0], "util": [0.5], "mem_used": [1e9]})
    usage.to_csv(tmp_path / "usage.csv", index=False)
    bill = str(DATA / "azure_ri_actual.csv")
    argv = ["allocate", "--bill", bill, "--usage", str(tmp_path / "usage.csv"), "--format", "csv"]
    code = cli.main(argv)
    _, err = capsys.readouterr()
    assert code == 2 and "actual-cost export" in err and "--dataset actual" in err
    code = cli.main([*argv, "--dataset", "actual", "-o", str(tmp_path / "out.csv")])
    capsys.readouterr()
    assert code == 0
    assert pd.read_csv(tmp_path / "out.csv")["cost"].sum() == pytest.approx(20000 + 12.624)
    (tmp_path / "gpucost.toml").write_text(f"[sources]\nbill = {bill!r}\nbill_dataset = 'actual'\n"
                                           f"usage = {str(tmp_path / 'usage.csv')!r}\n")
    code = cli.main(["allocate", "-c", str(tmp_path / "gpucost.toml"), "-o", str(tmp_path / "out2.csv")])
    capsys.readouterr()
    assert code == 0 and pd.read_csv(tmp_path / "out2.csv")["cost"].sum() == pytest.approx(20000 + 12.624)
    (tmp_path / "gpucost.toml").write_text(f"[sources]\nbill = {bill!r}\nbill_dataset = 'invoice'\n"
                                           f"usage = {str(tmp_path / 'usage.csv')!r}\n")
    code = cli.main(["allocate", "-c", str(tmp_path / "gpucost.toml")])
    assert code == 2 and "bill_dataset 'invoice'" in capsys.readouterr().err


def test_azure_focus_export_instance_type_from_the_meter_name(tmp_path):
    # Azure's FOCUS export without x_SkuDetails: the VM size comes from
    # x_SkuMeterName, as in the cost-details reader.
    header = ("BilledCost,BillingAccountId,BillingCurrency,BillingPeriodEnd,BillingPeriodStart,ChargeCategory,"
              "ChargePeriodEnd,ChargePeriodStart,EffectiveCost,ListCost,PricingCategory,ProviderName,RegionId,"
              "ResourceId,ResourceName,ServiceName,SkuId,SubAccountId,Tags,x_SkuMeterCategory,x_SkuMeterName")
    vm = "/subscriptions/sub-1/resourceGroups/ML/providers/Microsoft.Compute/virtualMachines/"
    rows = [f"88.128,ea-1,USD,2025-04-01T00:00:00Z,2025-03-01T00:00:00Z,Usage,2025-03-02T00:00:00Z,"
            f"2025-03-01T00:00:00Z,88.128,88.128,Standard,Microsoft,eastus,{vm}nc-1,nc-1,Virtual Machines,m-1,sub-1,"
            '"{""team"": ""inference""}",Virtual Machines,NC24ads A100 v4',
            f"17.6,ea-1,USD,2025-04-01T00:00:00Z,2025-03-01T00:00:00Z,Usage,2025-03-02T00:00:00Z,"
            f"2025-03-01T00:00:00Z,17.6,88.128,Dynamic,Microsoft,eastus,{vm}nc-spot,nc-spot,Virtual Machines,m-2,"
            'sub-1,"{""team"": ""research""}",Virtual Machines,NC24ads A100 v4 Spot',
            f"4.52,ea-1,USD,2025-04-01T00:00:00Z,2025-03-01T00:00:00Z,Usage,2025-03-02T00:00:00Z,"
            f"2025-03-01T00:00:00Z,4.52,4.52,Standard,Microsoft,eastus,{vm}disk,disk,Storage,m-3,sub-1,"
            '"{}",Storage,P30 LRS Disk']
    (tmp_path / "focus_azure.csv").write_text("\n".join([header, *rows]) + "\n")
    lines = gpucost.read_focus(tmp_path / "focus_azure.csv")
    assert list(lines.instance_type[:2]) == ["Standard_NC24ads_A100_v4", "Standard_NC24ads_A100_v4"]
    assert pd.isna(lines.instance_type[2])  # not a VM
    assert list(lines.gpu) == [True, True, False]
