"""The Python enums are the C++ model's spellings (include/gpucost/model.h),
and go wherever a string went."""

from __future__ import annotations

import enum

import pandas as pd
import pytest

import gpucost
from gpucost import _core
from gpucost.model import COMMITMENTS

ENUMS = [gpucost.Provider, gpucost.MigBasis, gpucost.Purchase, gpucost.Payment, gpucost.ChargeCategory,
         gpucost.Basis, gpucost.IdleMode, gpucost.CostDriver, gpucost.Reserved]


def test_every_enum_is_the_cpp_spelling_table():
    cpp = _core.model_enum_spellings()
    assert sorted(cpp) == sorted(e.__name__ for e in ENUMS)
    for e in ENUMS:
        assert issubclass(e, enum.StrEnum)
        assert [m.value for m in e] == cpp[e.__name__], e.__name__


def test_commitments_match_the_cpp_rule():
    assert {p.value for p in gpucost.Purchase if p.is_commitment} == {"reserved", "savings_plan", "cud", "commitment"}
    assert COMMITMENTS == {p for p in gpucost.Purchase if p.is_commitment}


def _one_line():
    h = pd.Timestamp("2026-03-01T10:00Z")
    costs = pd.DataFrame({"resource_id": ["i-1"], "start": [h], "end": [h + pd.Timedelta(hours=1)], "cost": [8.0]})
    usage = pd.DataFrame({"timestamp": [h, h + pd.Timedelta(minutes=30)], "resource_id": ["i-1", "i-1"],
                          "device": [0, 0], "consumer": ["job", "job"], "share": [1.0, 1.0], "util": [0.25, 0.25],
                          "mem_used": [0.0, 0.0]})
    inventory = pd.DataFrame({"resource_id": ["i-1"], "device": [0], "mem_capacity": [40 * 2.0**30]})
    return costs, usage, inventory


@pytest.mark.parametrize("basis", list(gpucost.Basis))
def test_enum_members_go_where_strings_went(basis):
    costs, usage, inventory = _one_line()
    by_enum = gpucost.allocate(costs, usage, inventory, basis=basis, idle=gpucost.IdleMode.KEEP)
    by_string = gpucost.allocate(costs, usage, inventory, basis=basis.value, idle="keep")
    pd.testing.assert_frame_equal(by_enum, by_string)
    assert by_enum["cost"].sum() == pytest.approx(8.0)


def test_an_unknown_word_names_the_expected_ones():
    costs, usage, inventory = _one_line()
    with pytest.raises(ValueError, match='expected "allocated", "used" or "blended"'):
        gpucost.allocate(costs, usage, inventory, basis="usage")


def test_readers_write_purchase_spellings(tmp_path):
    from gpucost.demo import cur2_frame, demo_fleet
    path = tmp_path / "cur.csv"
    cur2_frame(demo_fleet()).to_csv(path, index=False)
    bill = gpucost.read_cur(path)
    values = set(bill["pricing"].dropna().astype(str))
    assert values <= {p.value for p in gpucost.Purchase}
    # The demo buys on demand, on spot, a reserved instance and a savings plan.
    assert {"on_demand", "spot", "reserved", "savings_plan"} <= values
    covered = bill[bill["commitment_status"].astype(object) == "Used"]
    assert set(covered["pricing"].astype(str)) <= {p.value for p in COMMITMENTS}


def test_purchase_words_are_spelled_only_by_the_enums():
    """Issue 28's rule: "on_demand" and "spot" appear, quoted, only in the
    spelling tables (src/model.cc, python/gpucost/model.py, documented in
    include/gpucost/model.h); everything else
    names the enum, so a new purchase model is added in one place."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    allowed = {root / "src" / "model.cc", root / "python" / "gpucost" / "model.py",
               root / "include" / "gpucost" / "model.h"}
    pattern = re.compile(r'"(on_demand|spot)"')
    found = [f"{path.relative_to(root)}:{n}" for folder in ("src", "python", "include", "bindings")
             for path in sorted((root / folder).rglob("*")) if path.suffix in (".cc", ".h", ".py") and path not in allowed
             for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
