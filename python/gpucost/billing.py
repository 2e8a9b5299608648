"""Cloud billing exports as cost lines (SEMANTICS 1.1) ready for gpucost.allocate.

>>> costs = gpucost.read_focus("focus-2025-03.csv.gz")          # doctest: +SKIP
>>> inventory = gpucost.inventory(costs)                           # doctest: +SKIP
>>> gpucost.allocate(costs, usage, inventory)                      # doctest: +SKIP

Every reader returns one row per row of the export (nothing is dropped, so
``costs.cost.sum()`` is the export's own total of the chosen amount) with the
columns ``resource_id, start, end, cost, list_cost, pricing`` the engine
reads, and ``provider, account, region, service, sku, instance_type,
charge_category, commitment_id, commitment_status, billed_cost,
effective_cost, currency, resource_name, tags`` (the resource's tags as a
JSON object string) and ``gpu`` (a GPU resource per the catalog) to slice it
by. String columns are categoricals; ``start``/``end`` are UTC datetimes
(``end`` exclusive).

Inputs: a path (CSV, CSV.gz, Parquet; GCP also JSON lines), an open binary
file, or an in-memory ``pyarrow.Table``/``pandas.DataFrame`` (warehouse
dumps). The parsing and the normalisation are C++ (``gpucost::io``); this
module only moves bytes and Arrow batches: CSV in 4 MiB chunks, Parquet row
group by row group with only the columns the format reads, so memory grows
with the cost lines, not with the file. A progress bar (tqdm) shows for
files over 50 MB unless ``progress=False``.

Bad input raises :class:`gpucost.InvalidInputError` naming the file, the line
(CSV, JSON) or row (Parquet) and the column; there is never a partial result.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gpucost import _core
from gpucost.catalog import resolve as _resolve_catalog
from gpucost.errors import InvalidInputError, conversion_hint

__all__ = ["read_focus", "read_cur", "read_gcp_billing", "read_azure_costs", "COST_LINE_COLUMNS"]

CHUNK_BYTES = 4 << 20
PROGRESS_BYTES = 50_000_000
BATCH_ROWS = 65_536

COST_LINE_COLUMNS = (
    "resource_id", "start", "end", "cost", "list_cost", "pricing", "provider", "account", "region", "service",
    "sku", "instance_type", "charge_category", "commitment_id", "commitment_status", "billed_cost",
    "effective_cost", "currency", "resource_name", "tags", "gpu",
)
_STRING_COLUMNS = {
    "resource_id", "pricing", "provider", "account", "region", "service", "sku", "instance_type",
    "charge_category", "commitment_id", "commitment_status", "currency", "resource_name", "tags",
}


def read_focus(source: Any, *, amount: str = "effective", expand_tags: Sequence[str] | Mapping[str, str] = (),
               catalog: Any = None, progress: bool | None = None) -> pd.DataFrame:
    """A FOCUS export (1.0, 1.1, 1.2; 1.3 columns tolerated) as cost lines.

    ``amount``: ``"effective"`` (EffectiveCost, amortized; the default),
    ``"billed"`` (BilledCost) or ``"list"`` (ListCost). Purchases, unused
    commitments, credits, taxes and rows without a resource stay lines (they
    become ``__unattributed__`` in an allocation). ``expand_tags`` lists tag
    keys to add as columns (``tag_<key>``, or a mapping of key to column name).
    """
    return _read("focus", source, amount=amount, expand_tags=expand_tags, catalog=catalog, progress=progress)


def read_cur(source: Any, *, amount: str = "effective", expand_tags: Sequence[str] | Mapping[str, str] = (),
             catalog: Any = None, progress: bool | None = None) -> pd.DataFrame:
    """An AWS Cost and Usage Report, legacy or CUR 2.0 (Data Exports), as
    cost lines.

    ``amount="effective"`` is the amortized cost exactly as AWS defines it per
    line item type (savings plan and reservation effective costs on covered
    usage, the unused parts of recurring fees, 0 for negations and upfront
    fees); ``"billed"`` is the unblended cost; ``"list"`` the public On-Demand
    cost. A tag key in ``expand_tags`` also matches ``user:<key>`` and
    ``user_<key>``.
    """
    return _read("cur", source, amount=amount, expand_tags=expand_tags, catalog=catalog, progress=progress)


def read_gcp_billing(source: Any, *, amount: str = "effective", credits: str = "net",
                     expand_tags: Sequence[str] | Mapping[str, str] = (), catalog: Any = None,
                     progress: bool | None = None) -> pd.DataFrame:
    """A GCP Cloud Billing detailed export (CSV with flattened
    ``service.description`` columns, BigQuery JSON lines, or Parquet) as cost
    lines.

    ``credits="net"`` folds each line's credits into it (cost + credits);
    ``"separate"`` gives every credit its own line. Labels become the tags;
    GPU SKUs are lines of their own on the VM's resource.
    """
    return _read("gcp", source, amount=amount, expand_tags=expand_tags, catalog=catalog, progress=progress,
                 gcp_credits=credits)


def read_azure_costs(source: Any, *, dataset: str = "amortized", amount: str | None = None,
                     expand_tags: Sequence[str] | Mapping[str, str] = (), catalog: Any = None,
                     progress: bool | None = None) -> pd.DataFrame:
    """An Azure cost details export as daily cost lines.

    ``dataset`` says which export the file is: ``"amortized"`` (the
    default; its cost is the effective amount) or ``"actual"`` (its cost is
    the billed amount). ``amount`` defaults to what the dataset holds
    (``"effective"`` or ``"billed"``); ``"list"`` is the pay-as-you-go cost.
    """
    if amount is None:
        amount = "billed" if dataset == "actual" else "effective"
    return _read("azure", source, amount=amount, expand_tags=expand_tags, catalog=catalog, progress=progress,
                 azure_dataset=dataset)


# ---- input ------------------------------------------------------------------------


def _read(fmt: str, source: Any, *, amount: str, expand_tags: Any, catalog: Any, progress: bool | None,
          gcp_credits: str = "net", azure_dataset: str = "amortized") -> pd.DataFrame:
    keys, names = _tag_columns(expand_tags)
    name = _source_name(source)
    reader = _core.BillingReader(fmt, str(amount), keys, _resolve_catalog(catalog) if catalog is not None else None,
                                 name, str(gcp_credits), str(azure_dataset))
    if isinstance(source, pd.DataFrame | pa.Table | pa.RecordBatch):
        table = source if isinstance(source, pa.Table | pa.RecordBatch) else pa.Table.from_pandas(
            source, preserve_index=False)
        batches = table.to_batches(max_chunksize=BATCH_ROWS) if isinstance(table, pa.Table) else [table]
        for batch in batches or [pa.RecordBatch.from_pylist([], schema=table.schema)]:
            reader.feed_arrow(_arrow_ready(batch))
    else:
        with _open(source) as opened:
            raw = _unzstd(opened, name)
            kind = _detect(raw, name, fmt)
            if kind == "parquet":
                _feed_parquet(reader, raw, fmt, name, progress)
            else:
                _feed_text(reader, raw, kind, name, progress)
    lines = reader.finish()
    frame = _frame(lines, names)
    frame.attrs["source"] = name
    frame.attrs["amount"] = amount
    return frame


def _tag_columns(expand_tags: Any) -> tuple[list[str], list[str]]:
    if isinstance(expand_tags, str):
        expand_tags = [expand_tags]
    if isinstance(expand_tags, Mapping):
        return [str(k) for k in expand_tags], [str(v) for v in expand_tags.values()]
    keys = [str(k) for k in expand_tags]
    return keys, [f"tag_{k}" for k in keys]


def _source_name(source: Any) -> str:
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    if isinstance(source, pd.DataFrame | pa.Table | pa.RecordBatch):
        return "table"
    return str(getattr(source, "name", "input"))


class _open:
    """A binary file for a path (closed on exit) or the caller's own file."""

    def __init__(self, source: Any):
        self.source = source
        self.owned = isinstance(source, str | os.PathLike)
        self.file: BinaryIO | None = None

    def __enter__(self) -> BinaryIO:
        if self.owned:
            try:
                self.file = open(self.source, "rb")
            except OSError as exc:
                raise InvalidInputError(f"{os.fspath(self.source)}: cannot open ({exc.strerror})") from None
        elif isinstance(self.source, bytes | bytearray | memoryview):
            self.file = io.BytesIO(self.source)
        elif hasattr(self.source, "read"):
            self.file = self.source
        else:
            raise TypeError(f"expected a path, a binary file, a pyarrow Table or a DataFrame, "
                            f"got {type(self.source).__name__}{conversion_hint(self.source)}")
        return self.file

    def __exit__(self, *exc: Any) -> None:
        if self.owned and self.file is not None:
            self.file.close()


def _detect(raw: BinaryIO, name: str, fmt: str) -> str:
    """'parquet', 'csv', 'csv.gz', 'json' or 'json.gz'."""
    head = _peek(raw, 4)
    if head == b"PAR1":
        return "parquet"
    gz = head[:2] == b"\x1f\x8b"
    lower = name.lower().removesuffix(".gz")
    if fmt == "gcp" and (lower.endswith((".json", ".jsonl", ".ndjson")) or _first_char(raw, gz) == b"{"):
        return "json.gz" if gz else "json"
    return "csv.gz" if gz else "csv"


def _unzstd(raw: BinaryIO, name: str) -> BinaryIO:
    """A zstd stream (magic 28 b5 2f fd, whatever the name) decompressed on
    the fly through pyarrow's codec; anything else as it is."""
    if _peek(raw, 4) != b"\x28\xb5\x2f\xfd":
        return raw
    from gpucost.sources import zstd_reader
    return zstd_reader(raw, name)


def _peek(raw: BinaryIO, n: int) -> bytes:
    if hasattr(raw, "peek"):
        return raw.peek(n)[:n]
    position = raw.tell()
    data = raw.read(n)
    raw.seek(position)
    return data


def _first_char(raw: BinaryIO, gz: bool) -> bytes:
    position = raw.tell()
    try:
        sample = gzip.GzipFile(fileobj=raw).read(256) if gz else raw.read(256)
    except (OSError, EOFError, zlib.error):
        sample = b""
    raw.seek(position)
    return sample.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]


def _size(raw: BinaryIO) -> int | None:
    try:
        return os.fstat(raw.fileno()).st_size
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None


def _progress_bar(total: int | None, name: str, progress: bool | None, unit: str = "B"):
    show = progress if progress is not None else (total is not None and total > PROGRESS_BYTES)
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=True, desc=os.path.basename(name), leave=False)


def _feed_text(reader: Any, raw: BinaryIO, kind: str, name: str, progress: bool | None) -> None:
    feed = reader.feed_json_lines if kind.startswith("json") else reader.feed_csv
    bar = _progress_bar(_size(raw), name, progress)
    stream: BinaryIO = gzip.GzipFile(fileobj=raw) if kind.endswith(".gz") else raw
    done = 0
    try:
        while True:
            try:
                chunk = stream.read(CHUNK_BYTES)
            except EOFError as exc:
                reader.fail_at_input_position(f"truncated gzip stream ({exc})")
            except (gzip.BadGzipFile, zlib.error) as exc:
                reader.fail_at_input_position(f"corrupt gzip stream ({exc})")
            if not chunk:
                break
            feed(chunk)
            if bar is not None:
                now = raw.tell()
                bar.update(now - done)
                done = now
    finally:
        if bar is not None:
            bar.close()


def _feed_parquet(reader: Any, raw: BinaryIO, fmt: str, name: str, progress: bool | None) -> None:
    try:
        parquet = pq.ParquetFile(raw)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InvalidInputError(f"{name}: not a readable Parquet file ({exc})") from None
    columns = _projection(parquet.schema_arrow.names, fmt)
    bar = _progress_bar(parquet.metadata.num_rows, name, progress if progress is not None else
                        (_size(raw) or 0) > PROGRESS_BYTES, unit="rows")
    try:
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns):
            reader.feed_arrow(_arrow_ready(batch))
            if bar is not None:
                bar.update(batch.num_rows)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InvalidInputError(f"{name}: row {reader.rows}: unreadable Parquet data ({exc})") from None
    finally:
        if bar is not None:
            bar.close()


def _projection(names: Iterable[str], fmt: str) -> list[str]:
    """The top-level columns the format reads (struct parents of dotted names
    included), in file order."""
    wanted = set()
    for column in _core.billing_columns(fmt):
        wanted.add(column.lower())
        wanted.add(column.split(".")[0].lower())
    return [n for n in names if n.lower() in wanted or _core.is_billing_tag_column(fmt, n)]


def _simple_type(t: pa.DataType) -> pa.DataType:
    """The type the C++ reader takes for `t`: dictionaries decoded, decimals
    as float64, string views as strings, nested types likewise."""
    if pa.types.is_dictionary(t):
        return _simple_type(t.value_type)
    if pa.types.is_decimal(t):
        return pa.float64()
    if hasattr(pa.types, "is_string_view") and (pa.types.is_string_view(t) or pa.types.is_binary_view(t)):
        return pa.string()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.string() if pa.types.is_binary(t) else pa.large_string()
    if pa.types.is_map(t):
        return pa.map_(_simple_type(t.key_type), _simple_type(t.item_type))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _simple_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, _simple_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _simple_type(f.type)) for f in t])
    return t


# Columns holding key/value pairs: a struct there (pandas dicts become
# structs in Arrow) is a map, not nested columns to flatten.
_PAIR_COLUMNS = {"tags", "resource_tags", "labels", "system_labels", "skupricedetails", "x_skudetails",
                 "additionalinfo", "product"}


def _struct_to_map(column: pa.ChunkedArray) -> pa.Array:
    """A struct column as map<string, string>: one entry per non-null field,
    in field order (numpy over whole columns, no per-row Python)."""
    array = column.combine_chunks()
    names = [array.type.field(i).name for i in range(array.type.num_fields)]
    if not names:
        return pa.array([[]] * len(array), pa.map_(pa.string(), pa.string()))
    fields = [pc.cast(array.field(i), pa.string()) for i in range(len(names))]
    present = np.stack([f.is_valid().to_numpy(zero_copy_only=False) for f in fields], axis=1)
    if array.null_count:
        present &= array.is_valid().to_numpy(zero_copy_only=False)[:, None]
    values = np.stack([f.to_numpy(zero_copy_only=False) for f in fields], axis=1)
    rows, cols = np.nonzero(present)
    offsets = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int32)
    return pa.MapArray.from_arrays(pa.array(offsets), pa.array(np.asarray(names, dtype=object)[cols], pa.string()),
                                   pa.array(values[rows, cols], pa.string()))


def _arrow_ready(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Struct columns flattened to "parent.child" (key/value columns made
    maps) and types simplified."""
    table = pa.Table.from_batches([batch])
    for i, field in enumerate(table.schema):
        if pa.types.is_struct(field.type) and field.name.lower() in _PAIR_COLUMNS:
            table = table.set_column(i, field.name, _struct_to_map(table.column(i)))
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    arrays = []
    for column in table.columns:
        target = _simple_type(column.type)
        arrays.append((column.cast(target) if target != column.type else column).combine_chunks())
    return pa.RecordBatch.from_arrays(arrays, names=table.column_names)


# ---- output -------------------------------------------------------------------------


def _categorical(pair: tuple[np.ndarray, list[str]]) -> pd.Categorical:
    codes, values = pair
    return pd.Categorical.from_codes(codes, categories=pd.Index(values, dtype="str"), validate=False)


def _instants(ns: np.ndarray) -> pd.DatetimeIndex:
    return pd.DatetimeIndex(ns.view("datetime64[ns]")).tz_localize("UTC")


def _frame(lines: dict, tag_names: list[str]) -> pd.DataFrame:
    columns: dict[str, Any] = {}
    for name in COST_LINE_COLUMNS:
        value = lines[name]
        if name in _STRING_COLUMNS:
            columns[name] = _categorical(value)
        elif name in ("start", "end"):
            columns[name] = _instants(value)
        elif name == "gpu":
            columns[name] = value.astype(bool)
        else:
            columns[name] = value
    for (_, pair), column in zip(lines["tag_columns"], tag_names):
        if column in columns:
            raise InvalidInputError(f"parameter 'expand_tags': column name '{column}' is already a cost-line column")
        columns[column] = _categorical(pair)
    return pd.DataFrame(columns, copy=False)
