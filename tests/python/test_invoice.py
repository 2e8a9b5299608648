"""Issue 31, item 4: a burst week on a GPU cloud whose invoice is a plain CSV,
read as it comes (gpucost.read_invoice, --invoice, [sources.invoice]).

The fixture, tests/data/invoice/burst_week.csv, is shaped like the line items
of a GPU cloud's invoice (instance, GPU type, period or date, GPU-hours at a
per-GPU-hour rate, amount, currency, and a storage line in GiB-months); no
provider publishes a per-line CSV with a stable header (docs/formats.md,
"Rate-card invoices"), so it is no provider's own file. Two 8-GPU H100 nodes
at $2.49 per GPU-hour, named burst-01/burst-02 on the invoice and
cw-7f3a/cw-9c1d in telemetry (hosts.csv):

  line  node      period                          GPU-h  instance-h  amount
  1     burst-01  Mar 2 00:00 - Mar 5 00:00 (72 h)  576    72          1,434.24
  2     burst-01  date Mar 5 (24 h)                 96     12            239.04
  3     burst-02  date Mar 6 (24 h)                192     24            478.08
  4     burst-02  date Mar 7 (24 h)                 64      8            159.36
  5     shared-fs Mar 2 - Mar 9, 500 GiB-month      -      -              50.00
                                                                       2,360.72

  job   project  user   node      GPUs  UTC                    GPU-h  $ (x 2.49)
  7001  llm      ana    burst-01  8     Mar 2 00:00 + 72 h     576    1,434.24
  7002  vision   bo     burst-01  4     Mar 5 00:00 + 12 h      48      119.52
  7003  llm      ana    burst-02  8     Mar 6 00:00 + 24 h     192      478.08
  7004  vision   carol  burst-02  8     Mar 7 02:00 + 8 h       64      159.36

Line 2 bills 12 instance-hours of Mar 5: 8 x 12 = 96 GPU-hours of capacity,
48 held by 7002, the other 48 (119.52) idle. The storage line names no GPU
resource: __unattributed__. Every job pays exactly $2.49 per GPU-hour held.
  per project: llm 1,912.32, vision 278.88, __idle__ 119.52, __unattributed__ 50.00  (2,360.72)
  per user:    ana 1,912.32, bo 119.52, carol 159.36, __idle__ 119.52, __unattributed__ 50.00
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpucost
from gpucost import cli
from gpucost.config import load_config
from gpucost.model import Purchase, Reserved
from gpucost.plan import load_tables, plan_sources

DATA = Path(__file__).resolve().parents[1] / "data" / "invoice"
INVOICE = DATA / "burst_week.csv"
CONFIG = DATA / "gpucost.toml"
TOTAL = 2360.72
BY_PROJECT = {"llm": 1912.32, "vision": 278.88, Reserved.IDLE: 119.52, Reserved.UNATTRIBUTED: 50.00}
BY_USER = {"ana": 1912.32, "bo": 119.52, "carol": 159.36, Reserved.IDLE: 119.52, Reserved.UNATTRIBUTED: 50.00}
JOB_GPU_HOURS = {"7001": 576.0, "7002": 48.0, "7003": 192.0, "7004": 64.0}


def money(frame: pd.DataFrame, key: str) -> dict:
    sums = frame.groupby(frame[key].astype(str))["cost"].sum()
    return {k: round(float(v), 2) for k, v in sums.items()}


def tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    hosts = pd.read_csv(DATA / "hosts.csv")
    costs = gpucost.read_invoice(INVOICE, hosts=hosts, gpus=hosts)
    usage = pd.read_csv(DATA / "usage.csv", dtype={"consumer": str})
    usage["timestamp"] = pd.to_datetime(usage["timestamp"], utc=True)
    workloads = pd.read_csv(DATA / "workloads.csv", dtype={"consumer": str})
    return costs, usage, pd.read_csv(DATA / "inventory.csv"), workloads


def write(tmp_path: Path, text: str, name: str = "invoice.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---- the burst week, by hand -------------------------------------------------------------


def test_the_invoice_reads_as_one_cost_line_per_invoice_line():
    costs = tables()[0]
    assert len(costs) == 5 and costs["cost"].sum() == pytest.approx(TOTAL, abs=1e-9)
    assert costs["resource_id"].astype(str).tolist() == ["cw-7f3a", "cw-7f3a", "cw-9c1d", "cw-9c1d", "shared-fs"]
    assert (costs["pricing"] == Purchase.RATE_CARD).all()
    assert costs["quantity_hours"].tolist()[:4] == [72.0, 12.0, 24.0, 8.0] and np.isnan(costs["quantity_hours"][4])
    assert costs["primary"].tolist() == [True, True, True, True, False]  # GiB-months bill money, not GPU time
    assert costs["cost"][0] == 1434.24  # "1,434.24": thousands separators read
    assert costs["currency"].astype(str).unique().tolist() == ["USD"]
    info = costs.attrs["invoice"]
    assert info["names_joined"] == ["burst-01", "burst-02"] and info["names_unjoined"] == ["shared-fs"]
    assert info["total"] == {"USD": pytest.approx(TOTAL)} and info["time_lines"] == 4
    assert info["columns"][0]["amount"] == "Amount" and info["columns"][0]["rate"] == "Unit Price"


def test_python_chargeback_equals_hand_arithmetic_and_2_49_per_gpu_hour():
    costs, usage, inventory, workloads = tables()
    by_project = gpucost.allocate(costs, usage, inventory, workloads, by=["project"])
    by_user = gpucost.allocate(costs, usage, inventory, workloads, by=["user"])
    assert money(by_project, "project") == BY_PROJECT
    assert money(by_user, "user") == BY_USER
    jobs = gpucost.allocate(costs, usage, inventory, by=["consumer"]).set_index("consumer")
    for job, hours in JOB_GPU_HOURS.items():
        assert jobs.loc[job, "gpu_hours"] == pytest.approx(hours)
        assert jobs.loc[job, "cost"] / jobs.loc[job, "gpu_hours"] == pytest.approx(2.49, abs=1e-12)


def test_cli_allocate_and_check_from_one_config(capsys):
    frames = {}
    for by in ("project", "user"):
        code, out, err = run(capsys, "allocate", "--config", CONFIG, "--by", by, "--format", "csv", "--decimals",
                             "raw")
        assert code == 0 and err == "", err
        frames[by] = pd.read_csv(StringIO(out), keep_default_na=False)
    assert money(frames["project"], "project") == BY_PROJECT
    assert money(frames["user"], "user") == BY_USER
    assert frames["project"]["cost"].sum() == pytest.approx(TOTAL, abs=1e-9)  # money in equals money out
    code, out, err = run(capsys, "check", "--config", CONFIG)
    assert code == 0, out + err
    line = next(x for x in out.splitlines() if x.startswith("  invoice "))
    assert ("burst_week.csv: 5 lines (4 billing GPU time), $2,360.72, 2026-03-02 00:00 .. 2026-03-09 00:00 UTC, "
            "rate card; 2 node names joined through the hosts table, 1 not in it (shared-fs)") in line
    assert "total $2,360.72" in out


def test_the_flag_takes_the_configs_column_names(capsys, tmp_path):
    path = write(tmp_path, INVOICE.read_text().replace("Instance,", "Box,", 1))  # a name no default knows
    config = write(tmp_path, "".join(f'{k} = "{DATA / v}"\n' for k, v in (
        ("usage", "usage.csv"), ("workloads", "workloads.csv"), ("hosts", "hosts.csv"),
        ("inventory", "inventory.csv"))).join(["[sources]\n", '\n[sources.invoice]\npath = "nowhere.csv"\n'
                                               'columns = { resource = "Box" }\n']), "gpucost.toml")
    code, out, err = run(capsys, "allocate", "--config", config, "--invoice", path, "--by", "project", "--format",
                         "csv")
    assert code == 0, err
    assert money(pd.read_csv(StringIO(out), keep_default_na=False), "project") == BY_PROJECT
    code, _, err = run(capsys, "allocate", "--config", config, "--by", "project")  # the config's own path
    assert code == cli.EXIT_BAD_INPUT and "nowhere.csv: no such file (invoice)" in err


def test_report_reads_the_invoice(capsys, tmp_path):
    code, _, err = run(capsys, "report", "--config", CONFIG, "-o", tmp_path / "r.html")
    assert code == 0, err
    assert "2,360.72" in (tmp_path / "r.html").read_text()


# ---- dates, units, currencies ------------------------------------------------------------


def test_a_date_line_spans_its_day_in_the_time_zone(tmp_path):
    # 2026-03-08 is the day New York's clocks go forward: 23 hours, from 05:00 UTC to 04:00 UTC next day.
    path = write(tmp_path, "node,date,hours,rate,amount\nn1,2026-03-08,23,3.00,69.00\nn1,2026-03-09,24,3,72\n")
    lines = gpucost.read_invoice(path, tz="America/New_York", currency="USD")
    assert lines["start"].tolist() == [pd.Timestamp("2026-03-08 05:00", tz="UTC"),
                                       pd.Timestamp("2026-03-09 04:00", tz="UTC")]
    assert lines["end"].tolist() == [pd.Timestamp("2026-03-09 04:00", tz="UTC"),
                                     pd.Timestamp("2026-03-10 04:00", tz="UTC")]
    assert lines["quantity_hours"].tolist() == [23.0, 24.0]
    with pytest.raises(gpucost.InvalidInputError, match=r"line 2, column 'hours': 24 instance-hours = 24 "
                                                        r"instance-hours, more than the line's period of 23 h"):
        gpucost.read_invoice(write(tmp_path, "node,date,hours,rate\nn1,2026-03-08,24,3\n"), tz="America/New_York")


def test_units_minutes_and_gpu_hours_from_the_column_name(tmp_path):
    path = write(tmp_path, "pod_id,start,end,gpu_hours,rate,unit\n"
                           "p1,2026-03-02T00:00Z,2026-03-02T02:00Z,4,2.00,\n"
                           "p2,2026-03-02T00:00Z,2026-03-02T02:00Z,90,0.05,minutes\n")
    lines = gpucost.read_invoice(path, gpus={"p1": 2})
    assert lines["unit"].astype(str).tolist() == ["gpu_hour", "minutes"]
    assert lines["quantity_hours"].tolist() == [2.0, 1.5]  # 4 GPU-h / 2 GPUs; 90 min
    assert lines["cost"].tolist() == [8.0, 4.5]  # no amount column: rate x quantity
    assert "currency" not in lines.columns  # none stated: none invented


def test_records_by_pod_and_day_with_milliseconds_billed(tmp_path):
    # RunPod's billing API answers records per pod and bucket (podId, gpuTypeId, time, timeBilledMs, amount in
    # USD); the same records saved as CSV by hand, with a unit column saying what the quantity counts.
    path = write(tmp_path, "podId,gpuTypeId,time,timeBilledMs,unit,amount\n"
                           "xedezhzb9la3ye,NVIDIA H100 80GB HBM3,2026-03-02T00:00:00Z,43200000,ms,35.88\n")
    lines = gpucost.read_invoice(path, columns={"resource": "podId", "date": "time", "quantity": "timeBilledMs"},
                                 currency="USD")
    assert lines["resource_id"].astype(str).tolist() == ["xedezhzb9la3ye"]
    assert lines["gpu_model"].astype(str).tolist() == ["NVIDIA H100 80GB HBM3"]
    assert (lines["start"][0], lines["end"][0]) == (pd.Timestamp("2026-03-02", tz="UTC"),
                                                    pd.Timestamp("2026-03-03", tz="UTC"))
    assert lines["quantity_hours"][0] == 12.0 and lines["cost"][0] == 35.88


def test_currencies_as_stated_and_one_minor_unit_of_each(tmp_path):
    path = write(tmp_path, "node,date,hours,rate,amount,currency\n"
                           "n1,2026-03-02,10,450,4500,jpy\n"
                           "n2,2026-03-02,10,2.49,24.91,EUR\n"      # a cent off: within the rule
                           "n3,2026-03-02,10,2.49,24.90,\n")        # empty: the default
    lines = gpucost.read_invoice(path, currency="usd")
    assert lines["currency"].astype(str).tolist() == ["JPY", "EUR", "USD"]
    assert lines.attrs["invoice"]["total"] == {"EUR": 24.91, "JPY": 4500.0, "USD": 24.9}
    with pytest.raises(gpucost.InvalidInputError, match=r"line 2, column 'amount': 4502 is not rate 450 x quantity "
                                                        r"10 = 4500 .*more than 1 JPY"):
        gpucost.read_invoice(write(tmp_path, "node,date,hours,rate,amount,currency\nn,2026-03-02,10,450,4502,JPY\n"))


def test_an_amount_a_cent_off_is_an_error_naming_file_line_and_columns(tmp_path):
    path = write(tmp_path, "Instance,Date,Quantity,Unit Price,Total,Currency\n"
                           "a,2026-03-02,8,2.49,19.92,USD\n"
                           "b,2026-03-02,8,2.49,19.94,USD\n")
    with pytest.raises(gpucost.InvalidInputError) as exc:
        gpucost.read_invoice(path)
    assert str(exc.value) == (f"{path}: line 3, column 'Total': 19.94 is not rate 2.49 x quantity 8 = 19.92 "
                              "(columns 'Total', 'Unit Price', 'Quantity' differ by more than 0.01 USD)")
    assert (exc.value.table, exc.value.line, exc.value.column) == (str(path), 3, "Total")


# ---- bad input: the file, the line, the column ---------------------------------------------


@pytest.mark.parametrize("text, kwargs, message", [
    ("date,hours,amount\n2026-03-02,1,2\n", {}, r"missing required column 'instance' \(the node or instance"),
    ("node,hours,amount\nn,1,2\n", {}, r"missing required column 'start' \(the period"),
    ("node,start,amount\nn,2026-03-02,2\n", {}, r"missing required column 'end'"),
    ("node,date,hours\nn,2026-03-02,1\n", {}, r"missing required column 'amount' \(or rate and quantity"),
    ("node,date,amount\nn,2026-03-02,2\n", {"columns": {"resource": "Pod"}}, r"missing required column 'Pod'"),
    ("node,date,amount\nn,2026-03-02,abc\n", {}, r"line 2, column 'amount': 'abc' is not a number"),
    ("node,date,amount\nn,2026-03-02,1\nn,2026-03-02,1.2.3\n", {}, r"line 3, column 'amount': '1.2.3' is not a num"),
    ("node,date,amount\nn,2026-13-02,1\n", {}, r"line 2, column 'date': '2026-13-02' is not a date or time"),
    ("node,date,amount\nn,,1\n", {}, r"line 2, column 'date': '' is empty"),
    ("node,start,end,amount\nn,2026-03-02T05:00Z,2026-03-02T05:00Z,1\n", {}, r"line 2, column 'end': .* not after"),
    ("node,date,quantity,unit,amount\nn,2026-03-02,16,GPU-hours,1\n", {},
     r"line 2, column 'unit': GPU-hours of 'n', whose GPU count is unknown"),
    ("node,date,amount,currency\nn,2026-03-02,1,dollars\n", {}, r"line 2, column 'currency': 'dollars' is not an ISO"),
    ("node,date,amount,currency\nn,2026-03-02,1,\n", {}, r"line 2, column 'currency': '' is empty"),
    ("node,date,amount\nn,2026-03-02,1\n", {"columns": {"sku_id": "x"}}, r"parameter 'columns': unknown role"),
])
def test_bad_input_names_the_file_the_line_and_the_column(tmp_path, text, kwargs, message):
    path = write(tmp_path, text)
    with pytest.raises(gpucost.InvalidInputError, match=message) as exc:
        gpucost.read_invoice(path, **kwargs)
    if "parameter" not in message:
        assert str(exc.value).startswith(f"{path}: ")


def test_two_invoices_one_without_a_currency_are_not_added(tmp_path):
    a = write(tmp_path, "node,date,amount,currency\nn,2026-03-02,1,USD\n", "a.csv")
    b = write(tmp_path, "node,date,amount\nn,2026-03-02,1\n", "b.csv")
    with pytest.raises(gpucost.InvalidInputError, match="b.csv: states no currency while .*a.csv does"):
        gpucost.read_invoice([a, b])
    assert gpucost.read_invoice([a, b], currency="USD")["cost"].sum() == 2.0


# ---- a cost table with the wrong columns: the same error in check as in allocate ----------------


@pytest.mark.parametrize("command", ["check", "allocate"])
def test_an_invoice_given_as_costs_or_bill_names_the_file_and_the_fix(capsys, command):
    base = ["--usage", DATA / "usage.csv", "--inventory", DATA / "inventory.csv"]
    code, out, err = run(capsys, command, "--costs", INVOICE, *base)
    assert code == cli.EXIT_BAD_INPUT and out == ""
    assert err == (f"gpucost {command}: error: {INVOICE}: missing required column 'resource_id' (costs: resource_id, "
                   "start, end, cost) (a GPU cloud's rate-card invoice: --invoice, invoice in [sources])\n")
    code, _, err = run(capsys, command, "--bill", INVOICE, *base)
    assert code == cli.EXIT_BAD_INPUT and "not a FOCUS, CUR, GCP or Azure header" in err and "--invoice" in err


def test_check_tables_refuses_a_costs_table_without_cost():
    from gpucost.check import check_tables
    costs, usage, inventory, workloads = tables()
    broken = load_tables(load_config(CONFIG))
    broken.costs = costs.drop(columns="cost")
    with pytest.raises(gpucost.InvalidInputError, match=r"^costs: missing required column 'cost'$"):
        check_tables(broken)


def test_config_problems_are_reported_before_reading(tmp_path):
    config = write(tmp_path, '[sources]\nusage = "u.csv"\n\n[sources.invoice]\npath = "i.csv"\nunits = "x"\n'
                             'columns = { node = "Box" }\nunit = "gpu"\n', "gpucost.toml")
    problems = [str(p) for p in plan_sources(load_config(config)).problems]
    assert any("[sources.invoice]: unknown key 'units'" in p for p in problems)
    assert any("columns: unknown role 'node'" in p for p in problems)
    assert any("unit 'gpu' is not one of gpu_hour, instance_hour" in p for p in problems)
    assert any(p.endswith("i.csv: no such file (invoice)") for p in problems)


# ---- money is conserved ------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["n1", "n2", "fs"]), st.integers(0, 6), st.integers(1, 24),
                          st.integers(1, 400), st.booleans()), min_size=1, max_size=12),
       st.lists(st.tuples(st.sampled_from(["n1", "n2"]), st.integers(0, 1), st.integers(0, 160), st.integers(1, 20)),
                max_size=10))
def test_money_in_equals_money_out(tmp_path_factory, lines, jobs):
    """Whatever the lines (dates or periods, GPU- or instance-hours, rates in
    cents) and the jobs, the allocation adds up to the invoice's total."""
    rows = []
    for node, day, hours, cents, by_date in lines:
        date = pd.Timestamp("2026-03-02") + pd.Timedelta(days=day)
        start, end = ("", "") if by_date else (date.isoformat() + "Z", (date + pd.Timedelta(hours=hours)).isoformat()
                                               + "Z")
        rows.append(f"{node},{date:%Y-%m-%d},{start},{end},{2 * hours},GPU-hour,{cents / 100},"
                    f"{2 * hours * cents / 100:.2f},USD")
    path = write(tmp_path_factory.mktemp("inv"), "node,date,start,end,quantity,unit,rate,amount,currency\n"
                 + "\n".join(rows) + "\n")
    costs = gpucost.read_invoice(path, gpus=2)
    usage = pd.DataFrame([{"timestamp": pd.Timestamp("2026-03-02", tz="UTC") + pd.Timedelta(hours=h),
                           "resource_id": node, "device": gpu, "consumer": f"job{i}", "share": 1.0, "util": 0.5,
                           "mem_used": 0.0, "duration": 3600.0 * length} for i, (node, gpu, h, length) in
                          enumerate(jobs)] or [{"timestamp": pd.Timestamp("2026-03-02", tz="UTC"),
                                                "resource_id": "n1", "device": 0, "consumer": "", "share": 1.0,
                                                "util": 0.0, "mem_used": 0.0, "duration": 60.0}])
    inventory = pd.DataFrame({"resource_id": ["n1", "n1", "n2", "n2"], "device": [0, 1, 0, 1],
                              "mem_capacity": 80 * 2**30})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpucost.JoinWarning)  # lines without telemetry: __unobserved__, still money
        try:
            result = gpucost.allocate(costs, usage, inventory, by=["consumer"])
        except gpucost.JoinError:  # no sample joined any line: no result at all, never a partial one
            return
    invoice_total = sum(round(2 * h * c / 100, 2) for _, _, h, c, _ in lines)
    assert costs["cost"].sum() == pytest.approx(invoice_total, abs=1e-9)
    assert result["cost"].sum() == pytest.approx(invoice_total, abs=1e-6)


def test_a_costs_table_beside_an_invoice_in_another_currency(tmp_path, capsys):
    """gpucost's own costs table (no primary column) beside a EUR invoice: every line of the table bills time, as
    alone (it was refused as 'primary: missing value'), and each currency keeps its own rows and total."""
    start = pd.Timestamp("2026-03-01T10:00Z")
    pd.DataFrame({"resource_id": ["n1"], "start": [start], "end": [start + pd.Timedelta(hours=1)], "cost": [8.0],
                  "currency": ["USD"]}).to_csv(tmp_path / "costs.csv", index=False)
    (tmp_path / "invoice.csv").write_text("Instance,GPU Type,Start,End,Quantity,Unit,Unit Price,Amount,Currency\n"
                                          "burst-01,H100 SXM,2026-03-01T10:00:00Z,2026-03-01T11:00:00Z,1,GPU-hour,"
                                          "2.49,2.49,EUR\n")
    (tmp_path / "hosts.csv").write_text("host,resource_id,gpus\nburst-01,cw-1,1\n")
    steps = pd.date_range(start, periods=60, freq="1min")
    pd.concat([pd.DataFrame({"timestamp": steps, "resource_id": node, "device": 0, "consumer": job, "share": 1.0,
                             "util": 0.5, "mem_used": 0.0}) for node, job in (("n1", "a"), ("cw-1", "b"))]).to_csv(
        tmp_path / "usage.csv", index=False)
    pd.DataFrame({"resource_id": ["n1"], "device": [0], "mem_capacity": [8e10]}).to_csv(tmp_path / "inv.csv",
                                                                                      index=False)
    (tmp_path / "g.toml").write_text('[sources]\ncosts = "costs.csv"\nusage = "usage.csv"\ninventory = "inv.csv"\n'
                                     'invoice = "invoice.csv"\nhosts = "hosts.csv"\n')
    assert cli.main(["allocate", "-c", str(tmp_path / "g.toml"), "--format", "csv", "--decimals", "raw"]) == 0
    result = pd.read_csv(StringIO(capsys.readouterr().out))
    assert result.groupby("currency")["cost"].sum().to_dict() == {"EUR": pytest.approx(2.49), "USD": pytest.approx(8.0)}
    assert result.set_index("consumer").loc["b", "currency"] == "EUR"
