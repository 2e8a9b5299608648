"""Cloud billing exports as cost lines (SEMANTICS 1.1) ready for gpucost.allocate::

    costs = gpucost.read_focus("focus-2025-03.csv.gz")
    inventory = gpucost.inventory(costs)
    gpucost.allocate(costs, usage, inventory)

(each reader's docstring has an example that runs).

Every reader returns one row per row of the export (nothing is dropped but
rows read twice, so ``costs.cost.sum()`` is the export's own total of the
chosen amount) with the
columns ``resource_id, start, end, cost, list_cost, pricing`` the engine
reads, and ``provider, account, region, service, sku, instance_type,
charge_category, commitment_id, commitment_status, billed_cost,
effective_cost, currency, resource_name, tags`` (the resource's tags as a
JSON object string) and ``gpu`` (a GPU resource per the catalog) to slice it
by. ``primary`` marks the one line per resource and charge period that bills
its time (SEMANTICS 1.1: the instance's usage line; on GCP the GPU SKU line of
a VM-hour billed as GPU, core and memory SKUs), ``quantity_hours`` the
instance-hours it bills (NaN: the whole period). ``currency`` is the billing
currency, ``pricing_currency`` FOCUS's PricingCurrency, ``instance_id`` GCP's
numeric instance id (``resource_id`` is ``projects/P/zones/Z/instances/NAME``
there, as GKE's providerID names the node; Azure ARM ids are lower case).
String columns are categoricals; ``start``/``end`` are UTC datetimes
(``end`` exclusive).

Rows read twice are dropped and counted: CUR by ``identity_line_item_id``
within ``identity_time_interval``, FOCUS, GCP and Azure rows identical in every
column. The parts of one bill share the record of rows read: give each part's
reader the same ``seen=gpucost.billing.BillRows()`` (the CLI and
:mod:`gpucost.plan` do), and a row repeated in a later part, file or manifest
(an overlapping re-delivery) is dropped there too. ``frame.attrs["billing"]``
reports what a reader dropped or noticed: ``format``, ``rows_read``,
``duplicates_dropped``, ``duplicate_cost`` (currency -> the chosen amount of
the rows dropped), ``currencies``,
``hours_beyond_period`` (resources whose lines of one period bill more
instance-hours than it has; clipped), ``primary_lines``, ``quantity_unknown``,
``naive_timestamps``, ``tz`` and for GCP ``gcp_export`` (``detailed`` or
``standard``: the standard export names no resources).

``tz``: the time zone (IANA name) of timestamps written without one, as for
``read_nvidia_smi``; by default they are UTC. Timestamps with a zone
(``Z``, ``+02:00``, `` UTC``) are read as written.

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
import warnings
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

__all__ = ["read_focus", "read_cur", "read_gcp_billing", "read_azure_costs", "BillRows", "COST_LINE_COLUMNS"]

#: The rows of one bill read so far: give one to every part's reader
#: (``seen=``) and a row repeated across parts, files or manifests is dropped
#: and counted, in money, by the reader that meets it again.
BillRows = _core.BillRows

CHUNK_BYTES = 4 << 20
PROGRESS_BYTES = 50_000_000
BATCH_ROWS = 65_536

COST_LINE_COLUMNS = (
    "resource_id", "start", "end", "cost", "list_cost", "pricing", "provider", "account", "region", "service",
    "sku", "instance_type", "charge_category", "commitment_id", "commitment_status", "billed_cost",
    "effective_cost", "currency", "resource_name", "tags", "gpu", "primary", "quantity_hours", "pricing_currency",
    "instance_id",
)
_STRING_COLUMNS = {
    "resource_id", "pricing", "provider", "account", "region", "service", "sku", "instance_type",
    "charge_category", "commitment_id", "commitment_status", "currency", "resource_name", "tags",
    "pricing_currency", "instance_id",
}


def read_focus(source: Any, *, amount: str = "effective", expand_tags: Sequence[str] | Mapping[str, str] = (),
               catalog: Any = None, progress: bool | None = None, tz: str | None = None,
               seen: BillRows | None = None) -> pd.DataFrame:
    """A FOCUS export (1.0, 1.1, 1.2; 1.3 columns tolerated) as cost lines.

    ``amount``: ``"effective"`` (EffectiveCost, amortized; the default),
    ``"billed"`` (BilledCost) or ``"list"`` (ListCost). Purchases, unused
    commitments, credits, taxes and rows without a resource stay lines (they
    become ``__unattributed__`` in an allocation). ``expand_tags`` lists tag
    keys to add as columns (``tag_<key>``, or a mapping of key to column name).

    ``source`` is a path (CSV, ``.gz``/``.zst``, Parquet), a file object, a
    pandas DataFrame or a pyarrow Table with FOCUS's column names.

    Examples:
        >>> bill = pd.DataFrame({
        ...     "ProviderName": "AWS", "BillingCurrency": "USD", "ChargeCategory": "Usage",
        ...     "ChargePeriodStart": "2026-03-01T00:00:00Z", "ChargePeriodEnd": "2026-03-01T01:00:00Z",
        ...     "ResourceId": ["arn:aws:ec2:us-west-2:111122223333:instance/i-0aaa", "vol-1"],
        ...     "x_UsageType": ["USW2-BoxUsage:p4d.24xlarge", "USW2-EBS:VolumeUsage.gp3"],
        ...     "PricingCategory": "Standard", "BilledCost": [32.77, 0.1], "EffectiveCost": [32.77, 0.1],
        ...     "ListCost": [32.77, 0.1], "Tags": ['{"team": "llm-train"}', "{}"]})
        >>> bill.to_csv("focus.csv", index=False)
        >>> costs = gpucost.read_focus("focus.csv", expand_tags=["team"])
        >>> costs[["resource_id", "start", "cost", "pricing", "instance_type", "gpu", "tag_team"]]
          resource_id                     start   cost    pricing instance_type    gpu   tag_team
        0      i-0aaa 2026-03-01 00:00:00+00:00  32.77  on_demand  p4d.24xlarge   True  llm-train
        1       vol-1 2026-03-01 00:00:00+00:00   0.10  on_demand           NaN  False        NaN
        >>> costs.attrs["billing"]["rows_read"], costs.attrs["billing"]["currencies"]
        (2, ['USD'])
    """
    return _read("focus", source, amount=amount, expand_tags=expand_tags, catalog=catalog, progress=progress, tz=tz,
                 seen=seen)


def read_cur(source: Any, *, amount: str = "effective", expand_tags: Sequence[str] | Mapping[str, str] = (),
             catalog: Any = None, progress: bool | None = None, tz: str | None = None,
             seen: BillRows | None = None) -> pd.DataFrame:
    """An AWS Cost and Usage Report, legacy or CUR 2.0 (Data Exports), as
    cost lines.

    ``amount="effective"`` is the amortized cost exactly as AWS defines it per
    line item type (savings plan and reservation effective costs on covered
    usage, the unused parts of recurring fees, 0 for negations and upfront
    fees); ``"billed"`` is the unblended cost; ``"list"`` the public On-Demand
    cost. A tag key in ``expand_tags`` also matches ``user:<key>`` and
    ``user_<key>``.

    Examples:
        A legacy CUR (CUR 2.0's ``line_item_*`` names work the same): an
        On-Demand p4d hour and a spot g5 hour.

        >>> cur = pd.DataFrame({
        ...     "lineItem/UsageStartDate": "2026-03-01T00:00:00Z", "lineItem/UsageEndDate": "2026-03-01T01:00:00Z",
        ...     "lineItem/ResourceId": ["i-0aaa", "i-0bbb"], "lineItem/LineItemType": "Usage",
        ...     "lineItem/UsageType": ["USW2-BoxUsage:p4d.24xlarge", "USW2-SpotUsage:g5.xlarge"],
        ...     "lineItem/UnblendedCost": [32.77, 0.42], "lineItem/CurrencyCode": "USD",
        ...     "lineItem/UsageAmount": 1.0, "pricing/publicOnDemandCost": [32.77, 1.006],
        ...     "resourceTags/user:team": ["llm-train", "cv"]})
        >>> costs = gpucost.read_cur(cur, expand_tags=["team"])
        >>> costs[["resource_id", "cost", "list_cost", "pricing", "instance_type", "gpu", "tag_team"]]
          resource_id   cost  list_cost    pricing instance_type   gpu   tag_team
        0      i-0aaa  32.77     32.770  on_demand  p4d.24xlarge  True  llm-train
        1      i-0bbb   0.42      1.006       spot     g5.xlarge  True         cv
    """
    return _read("cur", source, amount=amount, expand_tags=expand_tags, catalog=catalog, progress=progress, tz=tz,
                 seen=seen)


def read_gcp_billing(source: Any, *, amount: str = "effective", credits: str = "net",
                     expand_tags: Sequence[str] | Mapping[str, str] = (), catalog: Any = None,
                     progress: bool | None = None, tz: str | None = None,
                     seen: BillRows | None = None) -> pd.DataFrame:
    """A GCP Cloud Billing detailed export (CSV with flattened
    ``service.description`` columns, BigQuery JSON lines, or Parquet) as cost
    lines.

    ``credits="net"`` folds each line's credits into it (cost + credits);
    ``"separate"`` gives every credit its own line. Labels become the tags;
    GPU SKUs are lines of their own on the VM's resource.

    Committed-use discounts are amortized for the effective amount with net
    credits (docs/formats.md): each hour's CUD fee is spread over the usage
    it covered (same region and resource; spend-based CUDs over the usage
    their credits covered), so covered usage carries its effective cost, the
    fee line keeps its billed amount with an effective amount of 0, and what
    the commitment did not cover is a resource-less line of its own
    (``commitment_status`` ``Unused``, the fee's project and labels).
    ``commitment_id`` names the pool (``gcp-cud:us-central1/gpu:a100``).
    ``frame.attrs["billing"]`` says ``commitments`` (``amortized`` or
    ``as billed``) and counts ``cud_lines_without_fee`` (covered usage whose
    fee is not in the export; a warning when not 0).

    Examples:
        An a2-highgpu-1g VM's hour: its GPU SKU and its cores.

        >>> export = pd.DataFrame({
        ...     "usage_start_time": "2026-03-01 00:00:00 UTC", "usage_end_time": "2026-03-01 01:00:00 UTC",
        ...     "service.description": "Compute Engine",
        ...     "sku.description": ["Nvidia Tesla A100 GPU running in Americas", "A2 Instance Core running in Americas"],
        ...     "resource.name": "trainer-1",
        ...     "resource.global_name": "//compute.googleapis.com/projects/ml/zones/us-central1-a/instances/1111",
        ...     "cost": [2.93, 0.38], "currency": "USD", "credits": "[]", "project.id": "ml",
        ...     "labels": '[{"key": "team", "value": "llm-train"}]',
        ...     "system_labels": '[{"key": "compute.googleapis.com/machine_spec", "value": "a2-highgpu-1g"}]'})
        >>> costs = gpucost.read_gcp_billing(export, expand_tags=["team"])
        >>> costs[["resource_name", "cost", "instance_type", "gpu", "tag_team"]]
          resource_name  cost  instance_type   gpu   tag_team
        0     trainer-1  2.93  a2-highgpu-1g  True  llm-train
        1     trainer-1  0.38  a2-highgpu-1g  True  llm-train
        >>> costs.attrs["billing"]["commitments"]
        'amortized'
    """
    frame = _read("gcp", source, amount=amount, expand_tags=expand_tags, catalog=catalog, progress=progress,
                  gcp_credits=credits, tz=tz, seen=seen)
    info = frame.attrs.setdefault("billing", {})
    info["commitments"] = "amortized" if amount == "effective" and credits == "net" else "as billed"
    # Usage a CUD covered in an hour whose fee is not in this export (a slice
    # that cut the fee off): it stays at its billed, discounted cost.
    covered = frame[(frame["commitment_status"] == "Used").to_numpy()]
    fees = frame[(frame["charge_category"] == "Purchase").to_numpy() & frame["commitment_id"].notna().to_numpy()]
    keys = pd.MultiIndex.from_arrays([fees["start"], fees["commitment_id"].astype(object)])
    orphans = ~pd.MultiIndex.from_arrays([covered["start"], covered["commitment_id"].astype(object)]).isin(keys)
    info["cud_lines_without_fee"] = int(orphans.sum())
    if orphans.any() and info["commitments"] == "amortized":
        warnings.warn(f"{frame.attrs['source']}: {int(orphans.sum())} line(s) covered by a committed-use discount "
                      "whose fee is not in this export (first: commitment "
                      f"'{covered['commitment_id'].astype(object).to_numpy()[orphans][0]}'); they keep their billed, "
                      "discounted cost", stacklevel=2)
    return frame


def read_azure_costs(source: Any, *, dataset: str = "auto", amount: str | None = None,
                     expand_tags: Sequence[str] | Mapping[str, str] = (), catalog: Any = None,
                     progress: bool | None = None, tz: str | None = None,
                     seen: BillRows | None = None) -> pd.DataFrame:
    """An Azure cost details export as daily cost lines.

    Azure exports the same costs as two datasets: ``"amortized"`` (reservation
    and savings-plan purchases spread over the usage they cover, unused parts
    as ``UnusedReservation``/``UnusedSavingsPlan`` rows) and ``"actual"``
    (purchases as one-off ``Purchase`` rows, covered usage at 0). The reader
    tells them apart by their content and says which it read in
    ``frame.attrs["billing"]["dataset"]``. ``dataset="auto"`` (the default)
    takes what the content says; ``"actual"`` or ``"amortized"`` state it, and
    content that says otherwise is an error naming the fix. ``amount``
    defaults to what the dataset holds (``"effective"`` for amortized,
    ``"billed"`` for actual); ``"list"`` is the pay-as-you-go cost. An
    actual-cost export is never allocated as if it were amortized: asked for
    the effective amount (the default with ``dataset="amortized"``), it is an
    error that says to export the amortized dataset or to read it as actual.

    Examples:
        One day of an ND96asr v4 VM (Azure's rows are daily):

        >>> export = pd.DataFrame({
        ...     "date": ["03/01/2026"], "meterCategory": "Virtual Machines", "chargeType": "Usage",
        ...     "ResourceId": "/subscriptions/s1/resourceGroups/ML/providers/Microsoft.Compute/virtualMachines/nd-1",
        ...     "pricingModel": "On Demand", "quantity": 24, "unitOfMeasure": "1 Hour",
        ...     "costInBillingCurrency": 652.73, "billingCurrency": "USD", "paygCostInBillingCurrency": 652.73,
        ...     "additionalInfo": '{"ServiceType": "Standard_ND96asr_v4"}', "tags": '{"team": "llm-train"}'})
        >>> costs = gpucost.read_azure_costs(export, expand_tags=["team"])
        >>> costs[["start", "end", "cost", "instance_type", "gpu", "tag_team"]]
                              start                       end    cost        instance_type   gpu   tag_team
        0 2026-03-01 00:00:00+00:00 2026-03-02 00:00:00+00:00  652.73  Standard_ND96asr_v4  True  llm-train
        >>> costs.attrs["billing"]["dataset"]
        'amortized'
    """
    if dataset not in ("auto", "actual", "amortized"):
        raise InvalidInputError(f"parameter 'dataset': {dataset!r} is not one of auto, actual, amortized")
    if amount is None:
        amount = "billed" if dataset == "actual" else "effective"
    # What the C++ reader is told: the dataset that holds the amount asked for
    # (auto: "billed" only an actual export holds, the others an amortized one).
    told = dataset if dataset != "auto" else ("actual" if amount == "billed" else "amortized")
    frame = _read("azure", source, amount=amount, expand_tags=expand_tags, catalog=catalog, progress=progress,
                  azure_dataset=told, tz=tz, seen=seen)
    found, evidence = _azure_dataset(frame)
    name = frame.attrs["source"]
    if found == "actual" and amount == "effective":
        raise InvalidInputError(
            f"{name}: this is Azure's actual-cost export ({evidence}): its reservation and savings-plan purchases "
            "are not amortized over the usage they cover, so its costs are not effective costs. Export the "
            "amortized dataset (Cost Management > Exports > 'Amortized cost') and read that, or read this file "
            "as billed with dataset='actual' (CLI: --dataset actual)")
    if found is not None and dataset != "auto" and found != dataset:
        raise InvalidInputError(f"{name}: parameter 'dataset': {dataset!r}, but the export is Azure's {found}-cost "
                                f"dataset ({evidence}); read it with dataset={found!r} (or dataset='auto')")
    if found == "amortized" and amount == "billed":
        raise InvalidInputError(f"{name}: parameter 'amount': this is Azure's amortized-cost export ({evidence}), "
                                "which has no billed amounts; read the actual-cost export for amount 'billed'")
    read = found or told
    if read != told:  # amount "list" from an export the content names: its other column is what it holds
        billed, effective = frame["billed_cost"].copy(), frame["effective_cost"].copy()
        frame["billed_cost"], frame["effective_cost"] = effective, billed
    frame.attrs.setdefault("billing", {})
    frame.attrs["billing"]["dataset"] = read
    frame.attrs["billing"]["dataset_detected"] = found is not None
    return frame


def _azure_dataset(frame: pd.DataFrame) -> tuple[str | None, str]:
    """Which Azure dataset the lines come from, by content, and why; None when
    nothing in it tells (no reservation or savings plan at all)."""
    commitment = frame["commitment_id"].notna().to_numpy()
    category = frame["charge_category"].astype(object).to_numpy()
    status = frame["commitment_status"].astype(object).to_numpy()
    amount = frame["cost"].to_numpy() if frame.attrs.get("amount") != "list" else np.where(
        frame["billed_cost"].notna(), frame["billed_cost"], frame["effective_cost"]).astype(float)
    purchases = int((commitment & (category == "Purchase") & (amount != 0)).sum())
    covered = commitment & (status == "Used")
    zero = int((covered & (amount == 0)).sum())
    charged = int((covered & (amount != 0)).sum())
    unused = int((status == "Unused").sum())
    if purchases and not (unused or charged):
        return "actual", f"{purchases} reservation or savings plan purchase line(s), {zero} covered usage line(s) at 0"
    if (unused or charged) and not purchases and not zero:
        return "amortized", f"{unused} unused-commitment line(s), {charged} covered usage line(s) with their cost"
    if zero and not (unused or charged):
        return "actual", f"{zero} covered usage line(s) at 0 and no unused-commitment line"
    if purchases or zero or unused or charged:
        raise InvalidInputError(
            f"{frame.attrs['source']}: neither Azure's actual nor its amortized cost export: {purchases} purchase "
            f"line(s) and {zero} covered usage line(s) at 0 (actual) next to {unused} unused-commitment line(s) and "
            f"{charged} covered usage line(s) with cost (amortized); export one dataset per file")
    return None, ""


# ---- input ------------------------------------------------------------------------


def _read(fmt: str, source: Any, *, amount: str, expand_tags: Any, catalog: Any, progress: bool | None,
          gcp_credits: str = "net", azure_dataset: str = "amortized", tz: str | None = None,
          seen: BillRows | None = None) -> pd.DataFrame:
    keys, names = _tag_columns(expand_tags)
    name = _source_name(source)
    reader = _core.BillingReader(fmt, str(amount), keys, _resolve_catalog(catalog) if catalog is not None else None,
                                 name, str(gcp_credits), str(azure_dataset), "" if tz is None else str(tz), seen)
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
    frame.attrs["billing"] = {"format": fmt, "source": name, "tz": tz or "UTC", **lines["report"]}
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
    return zstd_reader(raw, name)


def zstd_reader(raw: Any, name: str) -> io.BufferedReader:
    """A zstd-compressed binary file as a buffered stream of its bytes."""
    return io.BufferedReader(_Stream(pa.input_stream(raw, compression="zstd"), name))


class _Stream(io.RawIOBase):
    """A pyarrow input stream as a Python raw stream (for BufferedReader)."""

    def __init__(self, stream: Any, name: str):
        self._s = stream
        self.name = name  # what the readers' errors call the file

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._s.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._s.close()
        super().close()


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


#: Columns a format does not read but that tell rows apart, so a row read
#: twice (found by the columns read) is not confused with a distinct one: a
#: FOCUS 1.3 Correction (its own ChargeClass, billing period and invoice)
#: that repeats the charge it corrects, and the allocated charges of one
#: origin charge that differ only in their holder (docs/focus.md).
_KEY_COLUMNS = {"focus": ("ChargeClass", "BillingPeriodStart", "BillingPeriodEnd", "InvoiceId",
                          "AllocatedMethodDetails", "AllocatedResourceId", "AllocatedResourceName", "AllocatedTags")}


def _projection(names: Iterable[str], fmt: str) -> list[str]:
    """The top-level columns the format reads (struct parents of dotted names
    included), in file order."""
    wanted = {c.lower() for c in _KEY_COLUMNS.get(fmt, ())}
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
        elif name in ("gpu", "primary"):
            columns[name] = value.astype(bool)
        else:
            columns[name] = value
    for (_, pair), column in zip(lines["tag_columns"], tag_names):
        if column in columns:
            raise InvalidInputError(f"parameter 'expand_tags': column name '{column}' is already a cost-line column")
        columns[column] = _categorical(pair)
    return pd.DataFrame(columns, copy=False)
