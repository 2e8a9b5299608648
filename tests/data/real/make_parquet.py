"""Writes the two tiny Parquet files of this folder (run from the repository
root: `.venv/bin/python tests/data/real/make_parquet.py`). The values are
ours; the schemas are those the exporters write (SOURCES.md):

- cur2_data_export.parquet: AWS Data Exports "CUR 2.0", `product`,
  `resource_tags`, `cost_category` and `discount` as MAP columns, timestamps
  without a zone (UTC), identity columns first.
- focus_1_0_gcp_bigquery.parquet: Google Cloud's FOCUS BigQuery view saved
  with EXPORT DATA (format PARQUET): `Tags` and `x_SystemLabels` as
  list<struct<key, value>>, `x_Credits` as a list of structs, timestamps UTC.
"""

import datetime as dt
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).parent
UTC = dt.timezone.utc
T0 = dt.datetime(2025, 3, 1, 10)
T1 = dt.datetime(2025, 3, 1, 11)
STR_MAP = pa.map_(pa.string(), pa.string())
DBL_MAP = pa.map_(pa.string(), pa.float64())


def cur2() -> None:
    sp = "arn:aws:savingsplans::111122223333:savingsplan/8f1e2d3c-4b5a-4697-a8b9-0c1d2e3f4a5b"
    rows = [
        # id, type, resource, usage type, unblended, public od, sp effective, sp total, sp used, instance type, product map, tags, usage amount
        ("5ntkdq2y3ugtbvsijbjzmuyedxq2x4eavqr7ylhxzbbzmyjddfmq", "Usage", "i-0a1b2c3d4e5f60718", "USW2-BoxUsage:p5.48xlarge",
         55.04, 55.04, None, None, None, "p5.48xlarge",
         {"product_name": "Amazon Elastic Compute Cloud", "instance_type": "p5.48xlarge", "gpu": "8",
          "gpu_memory": "640 GB", "instance_family": "GPU instance", "region": "us-west-2"},
         {"user_team": "llm-train", "user_project_id": "p-llm", "aws_eks_cluster_name": "ml"}, 1.0),
        ("ovb6vlk3fyzvbvlnqzqvc6r5l7yx3yqgqfzdg2l6ljiahmjmy5va", "SavingsPlanCoveredUsage", "i-0fedcba9876543210",
         "USW2-BoxUsage:g5.12xlarge", 5.672, 5.672, 3.2, None, None, "g5.12xlarge",
         {"product_name": "Amazon Elastic Compute Cloud", "instance_type": "g5.12xlarge", "gpu": "4", "region": "us-west-2"},
         {"user_team": "cv"}, 1.0),
        ("h2dabbxqx3uzn3q3v6u5y7w2kcf6cw3ik5v2qv7mxr4sxlzbq3ia", "SavingsPlanNegation", "i-0fedcba9876543210",
         "USW2-BoxUsage:g5.12xlarge", -5.672, 0.0, None, None, None, "g5.12xlarge",
         {"product_name": "Amazon Elastic Compute Cloud", "instance_type": "g5.12xlarge", "region": "us-west-2"},
         {"user_team": "cv"}, 1.0),
        ("q7d3x5l2m6n4p8r1s9t0u3v5w7y2z4a6b8c0d2e4f6g8h0j2k4ma", "SavingsPlanRecurringFee", sp, "ComputeSP:1yrNoUpfront",
         4.0, 0.0, None, 4.0, 3.2, None, {"product_name": "Savings Plans for AWS Compute usage"}, {}, 1.0),
        ("b4c6d8e0f2g4h6j8k0m2n4p6q8r0s2t4u6v8w0x2y4z6a8c0e2ga", "Usage", "vol-0a1b2c3d4e5f60718", "USW2-EBS:VolumeUsage.gp3",
         0.0137, 0.0137, None, None, None, None,
         {"product_name": "Amazon Elastic Compute Cloud", "volume_api_name": "gp3", "region": "us-west-2"},
         {"user_team": "llm-train"}, 0.1712),
        ("t1u3v5w7x9y1z3a5b7c9d1e3f5g7h9j1k3m5n7p9q1r3s5t7u9va", "Tax", "", "", 2.1, 0.0, None, None, None, None, {}, {}, None),
        ("c3e5g7j9l1n3p5r7t9v1x3z5b7d9f1h3k5m7q9s1u3w5y7a9c1ea", "Credit", "", "", -1.0, 0.0, None, None, None, None, {},
         {}, None),
    ]
    n = len(rows)
    col = lambda i: [r[i] for r in rows]  # noqa: E731
    table = pa.table({
        "identity_line_item_id": pa.array(col(0)),
        "identity_time_interval": pa.array(["2025-03-01T10:00:00Z/2025-03-01T11:00:00Z"] * n),
        "bill_bill_type": pa.array(["Anniversary"] * n),
        "bill_billing_entity": pa.array(["AWS"] * n),
        "bill_billing_period_end_date": pa.array([dt.datetime(2025, 4, 1)] * n, pa.timestamp("ms")),
        "bill_billing_period_start_date": pa.array([dt.datetime(2025, 3, 1)] * n, pa.timestamp("ms")),
        "bill_payer_account_id": pa.array(["111122223333"] * n),
        "cost_category": pa.array([[("business-unit", "research")] if r[2].startswith("i-") else [] for r in rows], STR_MAP),
        "discount": pa.array([[] for _ in rows], DBL_MAP),
        "discount_bundled_discount": pa.array([None] * n, pa.float64()),
        "line_item_availability_zone": pa.array(["us-west-2b" if r[2].startswith(("i-0a", "vol")) else
                                                 ("us-west-2a" if r[2].startswith("i-") else "") for r in rows]),
        "line_item_currency_code": pa.array(["USD"] * n),
        "line_item_line_item_description": pa.array(["" for _ in rows]),
        "line_item_line_item_type": pa.array(col(1)),
        "line_item_operation": pa.array(["RunInstances" if r[2].startswith("i-") else "" for r in rows]),
        "line_item_product_code": pa.array(["ComputeSavingsPlans" if r[1] == "SavingsPlanRecurringFee" else "AmazonEC2"
                                            for r in rows]),
        "line_item_resource_id": pa.array(col(2)),
        "line_item_unblended_cost": pa.array(col(4), pa.float64()),
        "line_item_usage_account_id": pa.array(["444455556666"] * n),
        "line_item_usage_amount": pa.array(col(12), pa.float64()),
        "line_item_usage_end_date": pa.array([T1] * n, pa.timestamp("ms")),
        "line_item_usage_start_date": pa.array([T0] * n, pa.timestamp("ms")),
        "line_item_usage_type": pa.array(col(3)),
        "pricing_public_on_demand_cost": pa.array(col(5), pa.float64()),
        "pricing_term": pa.array(["OnDemand" if r[1] == "Usage" else ("Savings Plan" if "Savings" in r[1] else "")
                                  for r in rows]),
        "product": pa.array([list(r[10].items()) for r in rows], STR_MAP),
        "product_instance_type": pa.array(col(9)),
        "product_region_code": pa.array(["us-west-2" if r[10].get("region") else "" for r in rows]),
        "product_sku": pa.array(["Q7GDF95MM7MZ7Y5Q" if r[0].startswith("5n") else "" for r in rows]),
        "reservation_effective_cost": pa.array([0.0] * n),
        "reservation_reservation_a_r_n": pa.array([""] * n),
        "reservation_unused_amortized_upfront_fee_for_billing_period": pa.array([0.0] * n),
        "reservation_unused_recurring_fee": pa.array([0.0] * n),
        "resource_tags": pa.array([list(r[11].items()) for r in rows], STR_MAP),
        "savings_plan_savings_plan_a_r_n": pa.array([sp if "Savings" in r[1] else "" for r in rows]),
        "savings_plan_savings_plan_effective_cost": pa.array([r[6] if r[6] is not None else 0.0 for r in rows]),
        "savings_plan_total_commitment_to_date": pa.array([r[7] if r[7] is not None else 0.0 for r in rows]),
        "savings_plan_used_commitment": pa.array([r[8] if r[8] is not None else 0.0 for r in rows]),
    })
    pq.write_table(table, HERE / "cur2_data_export.parquet", compression="snappy")


def gcp_focus() -> None:
    kv = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
    credit = pa.list_(pa.struct([("name", pa.string()), ("amount", pa.float64()), ("full_name", pa.string()),
                                 ("id", pa.string()), ("type", pa.string())]))
    a3 = "//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/4711000000000000001"
    g2 = "//compute.googleapis.com/projects/ml-prod/zones/us-central1-b/instances/4711000000000000002"
    a3_labels = [("goog-k8s-cluster-name", "ml"), ("goog-k8s-node-pool-name", "h100-pool"), ("team", "llm-train")]
    a3_sys = [("compute.googleapis.com/machine_spec", "a3-highgpu-8g"), ("compute.googleapis.com/cores", "208"),
              ("compute.googleapis.com/memory", "1916928")]
    g2_sys = [("compute.googleapis.com/machine_spec", "g2-standard-24"), ("compute.googleapis.com/cores", "24"),
              ("compute.googleapis.com/memory", "98304")]
    rows = [
        # billed, effective, list, category, pricing, description, qty, unit, resource, name, sku, tags, sys, credits
        (88.48, 88.48, 88.48, "Usage", "Standard", "Nvidia H100 80GB GPU running in Americas", 28800.0, "seconds", a3,
         "gke-ml-h100-pool-3a4b5c6d-x7yz", "A7C2-1B3D-4E5F", a3_labels, a3_sys, []),
        (7.10, 7.10, 7.10, "Usage", "Standard", "A3 Instance Core running in Americas", 748800.0, "seconds", a3,
         "gke-ml-h100-pool-3a4b5c6d-x7yz", "B8D3-2C4E-5F6A", a3_labels, a3_sys, []),
        (4.16, 4.16, 4.16, "Usage", "Standard", "A3 Instance Ram running in Americas", 7.2371e15, "byte-seconds", a3,
         "gke-ml-h100-pool-3a4b5c6d-x7yz", "C9E4-3D5F-6A7B", a3_labels, a3_sys, []),
        (0.44, 0.44, 0.44, "Usage", "Dynamic", "Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas", 7200.0,
         "seconds", g2, "inference-l4-spot-0", "D0F5-4E6A-7B8C", [("team", "cv")], g2_sys, []),
        (0.12, 0.0, 0.12, "Usage", "Standard", "Network Internet Egress from Americas to Americas", 1.0e9, "bytes", None,
         None, "E1A6-5F7B-8C9D", [], [], [("Free Tier", -0.12, None, "FreeTier:egress", "FREE_TIER")]),
    ]
    n = len(rows)
    col = lambda i: [r[i] for r in rows]  # noqa: E731
    ts = pa.timestamp("us", tz="UTC")
    table = pa.table({
        "AvailabilityZone": pa.array(["us-central1-a", "us-central1-a", "us-central1-a", "us-central1-b", None]),
        "BilledCost": pa.array(col(0), pa.float64()),
        "BillingAccountId": pa.array(["0123AB-4567CD-89EF01"] * n),
        "BillingAccountName": pa.array(["ML billing"] * n),
        "BillingCurrency": pa.array(["USD"] * n),
        "BillingPeriodEnd": pa.array([dt.datetime(2025, 4, 1, tzinfo=UTC)] * n, ts),
        "BillingPeriodStart": pa.array([dt.datetime(2025, 3, 1, tzinfo=UTC)] * n, ts),
        "ChargeCategory": pa.array(col(3)),
        "ChargeClass": pa.array([None] * n, pa.string()),
        "ChargeDescription": pa.array(col(5)),
        "ChargeFrequency": pa.array(["Usage-Based"] * n),
        "ChargePeriodEnd": pa.array([T1.replace(tzinfo=UTC)] * n, ts),
        "ChargePeriodStart": pa.array([T0.replace(tzinfo=UTC)] * n, ts),
        "CommitmentDiscountCategory": pa.array([None] * n, pa.string()),
        "CommitmentDiscountId": pa.array([None] * n, pa.string()),
        "CommitmentDiscountStatus": pa.array([None] * n, pa.string()),
        "ConsumedQuantity": pa.array(col(6), pa.float64()),
        "ConsumedUnit": pa.array(col(7)),
        "EffectiveCost": pa.array(col(1), pa.float64()),
        "InvoiceIssuerName": pa.array(["Google Cloud"] * n),
        "ListCost": pa.array(col(2), pa.float64()),
        "PricingCategory": pa.array(col(4)),
        "ProviderName": pa.array(["Google Cloud"] * n),
        "PublisherName": pa.array(["Google Cloud"] * n),
        "RegionId": pa.array(["us-central1"] * 4 + [None]),
        "RegionName": pa.array(["Iowa"] * 4 + [None]),
        "ResourceId": pa.array(col(8)),
        "ResourceName": pa.array(col(9)),
        "ResourceType": pa.array(["Instance"] * 4 + [None]),
        "ServiceCategory": pa.array(["Compute"] * 4 + ["Networking"]),
        "ServiceName": pa.array(["Compute Engine"] * n),
        "SkuId": pa.array(col(10)),
        "SkuPriceId": pa.array([f"{r[10]}/{i}" for i, r in enumerate(rows)]),
        "SubAccountId": pa.array(["ml-prod"] * n),
        "SubAccountName": pa.array(["ML Prod"] * n),
        "Tags": pa.array(col(11), kv),
        "x_Credits": pa.array(col(13), credit),
        "x_CostType": pa.array(["regular"] * n),
        "x_CurrencyConversionRate": pa.array([1.0] * n),
        "x_ExportTime": pa.array([dt.datetime(2025, 3, 1, 14, 7, 12, tzinfo=UTC)] * n, ts),
        "x_Location": pa.array(["us-central1-a", "us-central1-a", "us-central1-a", "us-central1-b", "us"]),
        "x_ServiceId": pa.array(["6F81-5844-456A"] * n),
        "x_SystemLabels": pa.array(col(12), kv),
    })
    pq.write_table(table, HERE / "focus_1_0_gcp_bigquery.parquet", compression="snappy")


if __name__ == "__main__":
    cur2()
    gcp_focus()
