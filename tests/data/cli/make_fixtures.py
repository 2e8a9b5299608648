"""Writes the fixtures of tests/python/test_cli_sources.py: one hour
(2026-03-01 10:00-11:00 UTC) of a fleet with every source kind at once, each
file shaped as its tool writes it. Run from this folder; the outputs are
committed, so this only documents how they were made."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

HERE = Path(__file__).parent
T0 = 1772359200  # 2026-03-01T10:00:00Z
STEP = 60


def dcgm_series(metric, gpu, uuid, pod, ns, values):
    labels = {"__name__": metric, "gpu": str(gpu), "UUID": uuid, "device": f"nvidia{gpu}",
              "modelName": "NVIDIA A100-SXM4-40GB", "Hostname": "ip-10-0-1-17", "DCGM_FI_DRIVER_VERSION": "550.54.15",
              "container": "main" if pod else "", "namespace": ns, "pod": pod, "instance": "10.0.1.17:9400",
              "job": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics", "service": "nvidia-dcgm-exporter"}
    return {"metric": labels, "values": [[t, v] for t, v in values]}


def query_range(series):
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}, separators=(",", ":"))


def kubernetes():
    k8s = HERE / "k8s"
    k8s.mkdir(exist_ok=True)
    gpus = [(0, "GPU-6f1c2a3b-0d4e-5f60-7182-93a4b5c6d7e8", "train-a-0", "ml", 60, 85, 30000),
            (1, "GPU-7a2d3b4c-1e5f-6071-8293-a4b5c6d7e8f9", "train-b-0", "ml", 30, 70, 20000),  # ended 10:30
            (2, "GPU-8b3e4c5d-2f60-7182-93a4-b5c6d7e8f90a", "nb-1", "notebooks", 60, 20, 4096)]
    for metric, field in (("DCGM_FI_DEV_GPU_UTIL", 5), ("DCGM_FI_DEV_FB_USED", 6)):
        series = []
        for gpu, uuid, pod, ns, minutes, util, mem in gpus:
            value = util if field == 5 else mem
            series.append(dcgm_series(metric, gpu, uuid, pod, ns,
                                      [(T0 + i * STEP, str(value)) for i in range(minutes)]))
        (k8s / f"{metric}.json").write_text(query_range(series) + "\n")

    def ksm(pod, ns, uid, labels, points):
        metric = {"__name__": "kube_pod_labels", "container": "kube-state-metrics", "endpoint": "http",
                  "instance": "10.0.3.4:8080", "job": "kube-state-metrics", "namespace": ns, "pod": pod,
                  "service": "kube-prometheus-stack-kube-state-metrics", "uid": uid}
        metric |= {f"label_{k.replace('-', '_')}": v for k, v in labels.items()}
        return {"metric": metric, "values": [[T0 + p * 3600, "1"] for p in points]}

    a = {"team-id": "research", "project-id": "llm", "user-id": "ana", "job-id": "train-a"}
    b = {"team-id": "vision", "project-id": "detect", "user-id": "bo", "job-id": "train-b"}
    (k8s / "kube_pod_labels.json").write_text(query_range([
        ksm("train-a-0", "ml", "5b1e0c2a-0001", a, [0, 1]),
        ksm("train-b-0", "ml", "5b1e0c2a-0002", b, [0]),
        ksm("nb-1", "notebooks", "5b1e0c2a-0003", {}, [0, 1])]) + "\n")

    def pod(name, ns, labels):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"nodeName": "ip-10-0-1-17"}, "status": {"phase": "Running"}}

    def pods(items):
        return json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}},
                          indent=1) + "\n"

    (k8s / "pods-1015.json").write_text(pods([pod("train-a-0", "ml", a), pod("train-b-0", "ml", b)]))
    (k8s / "pods-1100.json").write_text(pods([pod("train-a-0", "ml", a), pod("nb-1", "notebooks", {})]))
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "ip-10-0-1-17", "labels": {"node.kubernetes.io/instance-type": "p4d.24xlarge",
                                                            "topology.kubernetes.io/zone": "us-east-1a"}},
            "spec": {"providerID": "aws:///us-east-1a/i-0abc123def4567890"},
            "status": {"capacity": {"nvidia.com/gpu": "8"}}}
    (k8s / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "items": [node], "kind": "List"}, indent=1) + "\n")


def slurm():
    rows = ["JobID|User|Account|Submit|Start|End|State|NodeList|AllocTRES",
            "2001|ana|llm|2026-03-01T09:58:00|2026-03-01T10:00:00|2026-03-01T11:00:00|COMPLETED|gpu01|"
            "billing=48,cpu=48,gres/gpu=4,mem=192G,node=1",
            "2001.batch|||2026-03-01T10:00:00|2026-03-01T10:00:00|2026-03-01T11:00:00|COMPLETED|gpu01|"
            "cpu=48,gres/gpu=4,mem=192G,node=1",
            "2002|bo|vision|2026-03-01T10:01:00|2026-03-01T10:00:00|2026-03-01T10:30:00|COMPLETED|gpu02|"
            "billing=24,cpu=24,gres/gpu=2,mem=96G,node=1"]
    (HERE / "sacct.txt").write_text("\n".join(rows) + "\n")


def nvidia_smi():
    smi = HERE / "smi"
    smi.mkdir(exist_ok=True)
    gpu = ["timestamp, index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    apps = ["timestamp, gpu_uuid, pid, used_gpu_memory [MiB]"]
    uuid = "GPU-1d2e3f40-5a6b-7c8d-9e0f-a1b2c3d4e5f6"
    for i in range(60):  # local time, Europe/Berlin (UTC+1 in March)
        stamp = f"2026/03/01 11:{i:02d}:00.{100 + i:03d}"
        busy = i < 45
        gpu.append(f"{stamp}, 0, {uuid}, NVIDIA A10G, {80 if busy else 0} %, {18000 if busy else 0} MiB, 23028 MiB")
        if busy:
            apps.append(f"2026/03/01 11:{i:02d}:00.{300 + i:03d}, {uuid}, 4242, 17990 MiB")
    (smi / "dgx7.gpu.csv").write_text("\n".join(gpu) + "\n")
    (smi / "dgx7.apps.csv").write_text("\n".join(apps) + "\n")
    (HERE / "pid_jobs.csv").write_text("host,pid,job\ndgx7,4242,etl-7\n")


def scrapes():
    d = HERE / "scrapes" / "edge1"
    d.mkdir(parents=True, exist_ok=True)

    def text(util, mem, ts=None):
        labels = ('gpu="0",UUID="GPU-2e3f4051-6b7c-8d9e-0f1a-b2c3d4e5f607",pci_bus_id="00000000:00:1E.0",'
                  'device="nvidia0",modelName="Tesla T4",Hostname="edge1",DCGM_FI_DRIVER_VERSION="550.54.15"')
        stamp = f" {ts}" if ts is not None else ""
        return ("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
                f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {util}{stamp}\n"
                "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n# TYPE DCGM_FI_DEV_FB_USED gauge\n"
                f"DCGM_FI_DEV_FB_USED{{{labels}}} {mem}{stamp}\n")

    (d / "edge1-20260301T100000Z.prom").write_text(text(40, 2048))
    (d / "edge1-20260301T102000Z.prom").write_text(text(60, 4096))
    (d / "edge1-latest.prom").write_text(text(10, 1024, (T0 + 2400) * 1000))  # its own timestamps (ms): 10:40


def bill():
    with open(HERE.parent / "billing" / "cur2.csv", newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        template = next(reader)
    period = {"bill_billing_period_start_date": "2026-03-01T00:00:00.000Z",
              "bill_billing_period_end_date": "2026-04-01T00:00:00.000Z",
              "identity_time_interval": "2026-03-01T10:00:00.000Z/2026-03-01T11:00:00.000Z",
              "line_item_usage_start_date": "2026-03-01T10:00:00.000Z",
              "line_item_usage_end_date": "2026-03-01T11:00:00.000Z", "product_region_code": "us-east-1"}

    def ec2(n, rid, itype, cost, tags):
        return template | period | {
            "identity_line_item_id": f"cli-{n:03d}", "line_item_resource_id": rid, "line_item_unblended_cost": cost,
            "line_item_unblended_rate": cost, "pricing_public_on_demand_cost": cost, "product_instance_type": itype,
            "line_item_usage_type": f"USE1-BoxUsage:{itype}", "product_sku": f"SKU-{itype}",
            "product": json.dumps({"instance_type": itype, "region": "us-east-1"}), "resource_tags": json.dumps(tags)}

    def other(n, rid, code, usage_type, cost, tags):
        return template | period | {
            "identity_line_item_id": f"cli-{n:03d}", "line_item_resource_id": rid, "line_item_product_code": code,
            "line_item_operation": "", "line_item_usage_type": usage_type, "line_item_unblended_cost": cost,
            "line_item_unblended_rate": "", "pricing_public_on_demand_cost": cost, "product_instance_type": "",
            "product_sku": "", "product": "{}", "pricing_term": "", "resource_tags": json.dumps(tags)}

    parts = [
        [ec2(1, "i-0abc123def4567890", "p4d.24xlarge", "32.77", {"user_cluster": "k8s-prod"}),
         ec2(2, "i-0s1", "g5.12xlarge", "5.672", {"user_cluster": "slurm"})],
        [ec2(3, "i-0s2", "g5.12xlarge", "5.672", {"user_cluster": "slurm"}),
         ec2(4, "i-0nv7", "g5.xlarge", "1.006", {}),
         ec2(5, "i-0ed1", "g4dn.xlarge", "0.526", {})],
        [other(6, "ckpt-llm", "AmazonS3", "USE1-TimedStorage-ByteHrs", "0.30", {"user_project": "llm"}),
         other(7, "nat-0a1b2c", "AmazonVPC", "USE1-NatGateway-Hours", "0.90", {})],
    ]
    data = HERE / "bill" / "gpucost" / "data" / "BILLING_PERIOD=2026-03"
    meta = HERE / "bill" / "gpucost" / "metadata" / "BILLING_PERIOD=2026-03"
    data.mkdir(parents=True, exist_ok=True)
    meta.mkdir(parents=True, exist_ok=True)
    keys = []
    for i, rows in enumerate(parts, 1):
        out = io.StringIO()
        w = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        name = f"gpucost-{i:05d}.csv.gz"
        (data / name).write_bytes(gzip.compress(out.getvalue().encode(), mtime=0))
        keys.append(f"s3://acme-billing/exports/gpucost/data/BILLING_PERIOD=2026-03/{name}")
    manifest = {"executionId": "0b7e2c4e-5a6b-4c2d-9e8f-1a2b3c4d5e6f",
                "billingPeriod": {"start": "2026-03-01T00:00:00.000Z", "end": "2026-04-01T00:00:00.000Z"},
                "dataFiles": keys, "exportArn": "arn:aws:bcm-data-exports:us-east-1:111122223333:export/gpucost",
                "exportName": "gpucost", "bucket": "acme-billing", "reportName": "gpucost"}
    (meta / "gpucost-Manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (HERE / "hosts.csv").write_text("host,resource_id,tz\ngpu01,i-0s1,UTC\ngpu02,i-0s2,UTC\n"
                                    "dgx7,i-0nv7,Europe/Berlin\nedge1,i-0ed1,UTC\n")


if __name__ == "__main__":
    kubernetes()
    slurm()
    nvidia_smi()
    scrapes()
    bill()
