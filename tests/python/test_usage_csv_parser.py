"""gpucost's usage CSV parser (``_core.parse_usage_csv``) against Arrow's
CSV reader, which read usage files before it: the same table from the same
bytes, or an error from both; its errors name the file's line across blocks
and threads; files it does not read go to Arrow's reader as before."""

import re

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest
from hypothesis import HealthCheck, example, given, settings

import gpucost
from gpucost import _core
from gpucost.chunks import USAGE_CSV_TYPES, _csv_batches, _csv_convert_options, _usage_batch, iter_chunks

NAMES = ["timestamp", "resource_id", "device", "consumer", "share"]
# Values real exports write, and the edge cases of each column's type.
STRINGS = ["node-a", "i-0abc", "team/job-1", '"a,b"', '"x""y"', '""', "", "NA", "null", " sp ", "é", '"q"']
DEVICES = ["0", "1", "7", "-1", " 2", "3 ", "01", "0x1F", "", "NA", "null", "N/A", '"4"', "2147483647",
           "-2147483648"]
SHARES = ["1", "0.5", "+0.25", ".5", "5.", "1e-3", "1E3", "-0", "inf", "-inf", "Infinity", "nan", "NaN", "-nan",
          "", "NA", "#N/A", '"0.75"', " 0.5 ", "1e400", "4.9e-330", "NAN", "nan(1)", '"nan"']
# Values neither reader reads (one or two per file, if any).
# (Arrow wraps 0x80000000 to -2^31, gpucost refuses it; Arrow refuses "3.0", gpucost reads 3.)
BAD = {2: ["+1", "1.5", "\"\"", "zero", "2147483648"],
       4: ['""', "0x1p-1", "1_0", "abc", "1.5.2", "+-1"]}
# One timestamp shape per file (Arrow infers a block's type from its values).
INSTANTS = {"utc": ["2026-03-01T00:00:00Z", "2026-03-01T00:01:00.5Z", "2026-03-01 00:02:00.123456789Z", "",
                    "NA", '"2026-03-01T00:03:00Z"'],
            "naive": ["2026-03-01T00:00:00", "2026-03-01 00:01:00.25", "", "null"],
            "offset": ["2026-03-01T01:00:00+01:00", "2026-03-01T00:00:00-0230", ""]}


def arrow_table(text: bytes) -> pa.Table | None:
    """The file as Arrow's reader reads it with the usage types, instants as
    the fast parser gives them; None when Arrow refuses it or reads the
    instants as anything but instants (text, or null when all are null)."""
    try:
        table = arrows_read(text)
    except pa.ArrowException:
        return None
    col = table.column("timestamp")
    if not pa.types.is_timestamp(col.type):
        return None
    col = col.cast(pa.timestamp(col.type.unit, tz="UTC")).cast(pa.timestamp("ns", tz="UTC"))
    table = table.set_column(0, "timestamp", col)
    # An empty resource_id is missing to gpucost (Arrow keeps ""): the engine refuses it, never a resource "".
    ids = table.column("resource_id")
    return table.set_column(1, "resource_id", pc.if_else(pc.equal(ids, ""), pa.scalar(None, pa.string()), ids))


def gpucost_table(path) -> pa.Table:
    """The file's lines after the header, parsed by gpucost's parser itself
    (``_csv_batches`` gives Arrow a file whose first lines it cannot read)."""
    body = path.read_bytes().split(b"\n", 1)[1]
    rows, _, columns = _core.parse_usage_csv(body, NAMES, str(path), 2)
    table = pa.Table.from_batches([_usage_batch(NAMES, rows, columns)])
    return pa.table({name: table.column(name).cast(pa.string()) if pa.types.is_dictionary(table.column(name).type)
                     else table.column(name) for name in table.column_names})


def arrows_read(text: bytes) -> pa.Table:
    """The file read by Arrow's reader with the usage types."""
    if text.endswith(b",") and not text.endswith(b"\n"):
        # Arrow reads a last empty field at the end of a file with no last line end
        # as quoted when a quoted field came before it on its line ('' is not double).
        text += b"\n"
    return pacsv.read_csv(pa.BufferReader(text), convert_options=_csv_convert_options(USAGE_CSV_TYPES))


def arrow_refuses(text: bytes) -> bool:
    """Whether Arrow refuses the file (not: reads its instants as text)."""
    try:
        arrows_read(text)
    except pa.ArrowException:
        return True
    return False


@st.composite
def usage_files(draw):
    instants = INSTANTS[draw(st.sampled_from(sorted(INSTANTS)))]
    rows = draw(st.lists(st.tuples(st.sampled_from(instants), st.sampled_from(STRINGS), st.sampled_from(DEVICES),
                                   st.sampled_from(STRINGS), st.sampled_from(SHARES)), min_size=1, max_size=40))
    rows = [list(row) for row in rows]
    for column, values in BAD.items():
        for row in draw(st.lists(st.integers(0, len(rows) - 1), max_size=1)):
            rows[row][column] = draw(st.sampled_from(values))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [",".join(NAMES)] + [",".join(row) for row in rows]
    blank = draw(st.integers(0, len(lines)))  # an empty line somewhere (lines still count)
    if blank > 0:
        lines.insert(blank, "")
    return ending.join(lines) + draw(st.sampled_from(["", ending]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=usage_files())
@example(text='timestamp,resource_id,device,consumer,share\n,node-a,0,node-a,1\n,node-a,0,"a,b",')  # CI, 2026-11-28
def test_same_table_as_arrow_or_an_error_from_both(tmp_path, text):
    path = tmp_path / "u.csv"
    path.write_bytes(text.encode())
    expected = arrow_table(text.encode())
    try:
        got = gpucost_table(path)
    except gpucost.InvalidInputError as exc:
        assert expected is None, f"gpucost refused what Arrow reads: {exc}"
        assert re.match(rf"{re.escape(str(path))}: line \d+(, column '\w+')?: ", str(exc)), str(exc)
        return
    if expected is None:
        # Read by gpucost, not by Arrow as instants: fine only when Arrow read them as text or nulls.
        assert not arrow_refuses(text.encode()), "gpucost read what Arrow refuses"
        return
    if got.num_rows == 0:
        assert expected.num_rows == 0
        return
    assert plain(got) == plain(expected.select(got.column_names))


def plain(table: pa.Table) -> list:
    """The rows, NaN spelled out (NaN equals nothing, itself included), -0.0 told from 0.0."""
    return [{k: repr(v) if isinstance(v, float) else v for k, v in row.items()} for row in table.to_pylist()]


def test_a_bad_value_in_a_late_block_names_its_line_on_any_thread_count(tmp_path):
    """Each block's lines are counted from 1 while it parses; the error is
    restated for the file's line once the blocks before are read (empty
    lines counted, as editors count them)."""
    lines = ["timestamp,resource_id,device,consumer,share"]
    for i in range(3000):
        lines.append(f"2026-03-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z,node-{i % 7},{i % 8},c{i % 11},0.5")
        if i % 500 == 499:
            lines.append("")
    lines[2500] = lines[2500].replace(",0.5", ",half")
    path = tmp_path / "u.csv"
    path.write_text("\n".join(lines) + "\n")
    for threads in (1, 2, 3):
        with pytest.raises(gpucost.InvalidInputError) as caught:
            list(iter_chunks(str(path), block_size=4096, threads=threads))
        assert str(caught.value) == f"{path}: line 2501, column 'share': 'half' is not a number"
        assert (caught.value.line, caught.value.column) == (2501, "share")


def test_files_it_does_not_read_go_to_arrow(tmp_path):
    """Epoch integers for instants and a column beyond the usage columns are
    read by Arrow's reader, as before."""
    path = tmp_path / "u.csv"
    path.write_text("timestamp,resource_id,device,consumer,share\n"
                    "1772323200000000000,n,0,c,1\n1772323260000000000,n,0,c,1\n")
    table = pa.Table.from_batches(list(_csv_batches(str(path), 1 << 20, dict(USAGE_CSV_TYPES), 2)))
    assert table.column("timestamp").type == pa.int64()
    with pytest.raises(gpucost.InvalidInputError):  # the parser itself does not read them
        _core.parse_usage_csv(path.read_bytes().split(b"\n", 1)[1], ["timestamp", "resource_id", "device",
                                                                       "consumer", "share"], str(path), 2)
    path.write_text("timestamp,resource_id,device,consumer,share,power_w\n2026-03-01T00:00:00Z,n,0,c,1,300\n")
    table = pa.Table.from_batches(list(_csv_batches(str(path), 1 << 20, dict(USAGE_CSV_TYPES), 2)))
    assert table.column("resource_id").type == pa.string() and table.column("power_w").type == pa.int64()


def test_the_batch_views_the_parsers_buffers(tmp_path):
    """Strings come as dictionaries of the block's values in order of first
    appearance; numbers and instants are the parser's arrays, not copies."""
    path = tmp_path / "u.csv"
    path.write_text("timestamp,resource_id,device,consumer,share,util\n"
                    "2026-03-01T00:00:00Z,n1,0,a,1,0.5\n2026-03-01T00:00:00Z,n1,1,b,1,\n"
                    "2026-03-01T00:01:00Z,n2,0,a,1,0.25\n")
    (batch,) = _csv_batches(str(path), 1 << 20, dict(USAGE_CSV_TYPES), 1)
    assert batch.column("resource_id").dictionary.to_pylist() == ["n1", "n2"]
    assert batch.column("consumer").indices.to_pylist() == [0, 1, 0]
    assert batch.column("util").to_pylist() == [0.5, None, 0.25]
    rows, lines, columns = _core.parse_usage_csv(path.read_bytes().split(b"\n", 1)[1], batch.schema.names,
                                                 str(path), 2)
    assert (rows, lines) == (3, 3)
    validity, values, offsets, text = columns[5]
    assert np.unpackbits(validity, bitorder="little")[:3].tolist() == [1, 0, 1] and offsets is None


def test_a_sample_without_a_resource_is_an_error_not_a_resource_named_empty(tmp_path):
    """Arrow's reader gave an empty resource_id as "", a resource no bill line
    has, so the sample's share went nowhere and nothing said so; now it is
    missing, and the engine names its line."""
    (tmp_path / "costs.csv").write_text("resource_id,start,end,cost\ni-1,2026-03-01T00:00:00Z,2026-03-01T01:00:00Z,10\n")
    (tmp_path / "inventory.csv").write_text("resource_id,device,mem_capacity\ni-1,0,80e9\n")
    (tmp_path / "usage.csv").write_text("timestamp,resource_id,device,consumer,share,util,mem_used\n"
                                        "2026-03-01T00:00:00Z,i-1,0,a,1,0.5,1\n2026-03-01T00:01:00Z,,0,a,1,0.5,1\n")
    with pytest.raises(gpucost.InvalidInputError,
                       match=rf"^{re.escape(str(tmp_path / 'usage.csv'))}: line 3, column 'resource_id': missing"):
        gpucost.allocate_stream(*(str(tmp_path / f"{name}.csv") for name in ("costs", "usage", "inventory")))
