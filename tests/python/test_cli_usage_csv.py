"""The CLI reads gpucost's own usage CSV with gpucost's usage parser
(plan._parsed_usage: C++ on every core, strings as categoricals) where it
used pandas' reader: the same output from the same file, whole or
streamed; a bad value named by its file, line and column; any file the
parser does not read (compressed, epoch instants) read by pandas as before."""

from __future__ import annotations

import gzip
import os

import pytest

from gpucost import cli, plan

COSTS = ("resource_id,start,end,cost\n"
         "007,2026-03-01T00:00:00Z,2026-03-01T01:00:00Z,10\n"
         '"i-1,b",2026-03-01T00:00:00Z,2026-03-01T01:00:00Z,20\n')
INVENTORY = 'resource_id,device,mem_capacity\n007,0,80e9\n007,1,80e9\n"i-1,b",0,80e9\n'
HEADER = "timestamp,resource_id,device,consumer,share,util,mem_used\r\n"


def usage_lines() -> str:
    """An hour at a minute's spacing, in the shapes real files have: ids
    that look like numbers, quoted values with commas and quotes, an empty
    consumer, instants with and without a zone, Windows line ends, a
    device written 1.0 by a float column."""
    lines = []
    for minute in range(60):
        t = f"2026-03-01T00:{minute:02d}:00"
        lines.append(f"{t}Z,007,0,\"team \"\"a\"\", job\",1,0.5,1e9\r\n")
        lines.append(f"{t}+00:00,007,{'1.0' if minute % 2 else '1'},,0.5,0.25,2e9\r\n")
        if minute % 3:
            lines.append(f"{t},\"i-1,b\",0,team-b,1,0.75,3e9\r\n")
    return "".join(lines)


def run(folder, capsys, *extra) -> tuple[int, str, str]:
    code = cli.main(["allocate", "--costs", str(folder / "costs.csv"), "--usage", str(folder / "usage.csv"),
                     "--inventory", str(folder / "inventory.csv"), "--by", "consumer", "--format", "csv",
                     "--decimals", "raw", *extra])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "costs.csv").write_text(COSTS)
    (tmp_path / "inventory.csv").write_text(INVENTORY)
    (tmp_path / "usage.csv").write_text(HEADER + usage_lines(), newline="")
    return tmp_path


@pytest.mark.parametrize("extra", [(), ("--step", "60")], ids=["whole", "streamed"])
def test_the_same_output_as_pandas_reader(folder, capsys, monkeypatch, extra):
    read = []
    parsed = plan._parsed_usage
    monkeypatch.setattr(plan, "_parsed_usage", lambda path, name: read.append(name) or parsed(path, name))
    code, out, err = run(folder, capsys, *extra)
    assert code == 0, err
    assert "usage" in read and parsed(folder / "usage.csv", "usage")
    monkeypatch.setattr(plan, "_parsed_usage", lambda path, name: False)  # pandas' reader, as before
    assert run(folder, capsys, *extra) == (code, out, err)
    assert 'team ""a"", job' in out or 'team "a", job' in out  # the quoted consumer, whole


def test_a_bad_value_names_its_file_line_and_column(folder, capsys):
    lines = usage_lines().split("\r\n")
    bad = next(i for i in range(100, len(lines)) if ",0.25," in lines[i])
    lines[bad] = lines[bad].replace(",0.25,", ",abc,")
    (folder / "usage.csv").write_text(HEADER + "\r\n".join(lines), newline="")
    code, out, err = run(folder, capsys)
    assert (code, out) == (2, "")
    assert f"{folder / 'usage.csv'}: line {bad + 2}, column 'util': 'abc' is not a number" in err


@pytest.mark.parametrize("reader", ["gpucost", "pandas"])
@pytest.mark.parametrize("bad_value, reason", [("abc", "'abc' is not a number"), ("1.5", r"1.5 is outside [0, 1]")])
def test_a_bad_value_after_blank_lines_names_the_files_line(folder, capsys, monkeypatch, reader, bad_value, reason):
    lines = usage_lines().split("\r\n")
    bad = next(i for i in range(100, len(lines)) if ",0.25," in lines[i])
    lines[bad] = lines[bad].replace(",0.25,", f",{bad_value},")
    lines[50:50] = ["", ""]  # two blank lines before it: the file's line is bad + 4
    (folder / "usage.csv").write_text(HEADER + "\r\n".join(lines), newline="")
    if reader == "pandas":
        monkeypatch.setattr(plan, "_parsed_usage", lambda path, name: False)
    code, out, err = run(folder, capsys)
    assert (code, out) == (2, "")
    assert f"{folder / 'usage.csv'}: line {bad + 4}, column 'util': {reason}" in err, err


def test_files_the_parser_does_not_read_go_to_pandas(folder, capsys):
    """Compressed, or epoch instants in the first lines: pandas' reader and
    its messages, as before."""
    text = (folder / "usage.csv").read_bytes()
    expected = run(folder, capsys)
    (folder / "usage.csv").unlink()
    with gzip.open(folder / "usage.csv.gz", "wb") as out:
        out.write(text)
    assert not plan._parsed_usage(folder / "usage.csv.gz", "usage")
    code = cli.main(["allocate", "--costs", str(folder / "costs.csv"), "--usage", str(folder / "usage.csv.gz"),
                     "--inventory", str(folder / "inventory.csv"), "--by", "consumer", "--format", "csv",
                     "--decimals", "raw"])
    assert (code, *capsys.readouterr()) == expected
    (folder / "usage.csv").write_text(HEADER + "1772323200,007,0,a,1,0.5,1e9\r\n")
    assert not plan._parsed_usage(folder / "usage.csv", "usage")
    code, _, err = run(folder, capsys)
    assert code == 2 and "line 2, column 'timestamp'" in err, err


@pytest.mark.parametrize("extra", [(), ("--step", "60")], ids=["whole", "streamed"])
def test_an_engine_error_names_the_file_and_line_read_whole_or_streamed(folder, capsys, extra):
    """The engine refuses a sample (a share over 1); read whole as streamed,
    the CLI names the usage file and the sample's line, not the table's row."""
    lines = usage_lines().split("\r\n")
    bad = next(i for i in range(120, len(lines)) if ",team-b,1," in lines[i])
    lines[bad] = lines[bad].replace(",team-b,1,", ",team-b,1.5,")
    (folder / "usage.csv").write_text(HEADER + "\r\n".join(lines), newline="")
    code, out, err = run(folder, capsys, *extra)
    assert (code, out) == (2, "")
    assert f"error: {folder / 'usage.csv'}: line {bad + 2}, column 'share': 1.5 is outside (0, 1]" in err, err


def test_a_pipe_is_refused_not_waited_on(folder, capsys):
    """The command reads a table more than once (its columns, then its
    rows): a named pipe's second open would wait for a writer that has gone."""
    (folder / "usage.csv").unlink()
    os.mkfifo(folder / "usage.csv")
    code, out, err = run(folder, capsys)
    assert (code, out) == (2, "")
    assert (f"{folder / 'usage.csv'}: not a regular file (a pipe, a device or a folder; usage): the command reads "
            "its files more than once; write it to a file first") in err
