"""Block facts from committed write stats give the same slices and previews as the header scan (issue 13).

The preview of a many-log table on S3 takes a log's facts from its deltacommits' write stats (one GET per commit)
where they account for every byte of the file, and reads the file otherwise. These tests compare both paths on the
real Hudi fixtures (with and without ``minEventTime`` in their stats) and on tables the toolkit writes — headers on
and off, deletes of known and unknown event time, upserts with deletes in one write, a failed write, failed blocks
inside a committed log, a rollback's command block, carry-over logs and a pending compaction — locally and on the
session's S3 server, and check that the fast path was taken where it may be and refused where it may not.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, event_times
from evt_toolkit.compaction.event_times import BlockFacts, facts_from_write_stats, slice_set
from evt_toolkit.compaction.model import SliceSet
from evt_toolkit.compaction.preview import preview
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.errors import EvtError
from evt_toolkit.format.extra_metadata import DeleteEventTimes
from evt_toolkit.format.names import LogFileName
from evt_toolkit.format.table_version import table_version_format
from evt_toolkit.storage import count_requests
from evt_toolkit.table.write_stats import LogWrite, log_write_index
from tests.conftest import TABLES_DIR, fixture_names, fixture_table_path
from tests.services import compact, data_files, failed_write
from tests.tables import BASE, deletes, rows

NOW = BASE + 10**12


def _covered(t: evt.HudiTable) -> tuple[int, int]:
    """``(logs whose facts the write stats give, logs)`` over the latest merged slices."""
    facts = _stat_facts(t)
    return sum(1 for f in facts.values() if f is not None), len(facts)


def _stat_facts(t: evt.HudiTable) -> dict[str, tuple[BlockFacts, ...] | None]:
    """Each latest merged log's facts from the write stats (``None``: read from the file)."""
    writes = log_write_index(t.timeline)
    return {
        lf.path: facts_from_write_stats(lf.name, lf.size, ws, t.timeline.is_visible, lambda: {}) if ws else None
        for s in t.view.latest_merged_file_slices()
        for lf in s.log_files
        if (ws := writes.get(lf.path)) is not None or True
    }


def _without_source(tbl: pa.Table) -> pa.Table:
    return tbl.drop_columns(["min_event_time_source"])


def assert_same_as_scan(t: evt.HudiTable, field: str | None) -> tuple[int, int]:
    """Slices, log facts and previews at several thresholds agree between the two paths; returns :func:`_covered`.

    ``min_event_time_source`` may differ only where the scan read a ``MIN_EVENT_TIME`` header and the stats path
    took the same value from the write stats.
    """
    event_times.clear_cache()
    try:
        scan = slice_set(t, field, use_write_stats=False)
    except EvtError as exc:
        # A field the scan cannot read (a string ``ts``) fails the same way when a log must be read.
        event_times.clear_cache()
        with pytest.raises(type(exc)):
            slice_set(t, field)
        event_times.clear_cache()
        return _covered(t)
    event_times.clear_cache()
    fast = slice_set(t, field)
    event_times.clear_cache()
    assert fast.slices.equals(scan.slices)
    assert _without_source(fast.log_files).equals(_without_source(scan.log_files))
    src_scan = scan.log_files["min_event_time_source"].to_pylist()
    src_fast = fast.log_files["min_event_time_source"].to_pylist()
    for a, b in zip(src_scan, src_fast, strict=True):
        assert a == b or (a == "header" and b == "write_stats"), (a, b)
    mins = sorted({m for m in scan.log_files["min_event_time"].to_pylist() if m is not None})
    thresholds = sorted({mins[0] - 1, *mins[:: max(1, len(mins) // 4)], mins[-1]}) if mins else [BASE]
    for thr in thresholds:
        strategy = EventTimeBasedCompactionStrategy(threshold=thr, event_time_field=field)
        a, b = preview(scan, strategy, now_ms=NOW), preview(fast, strategy, now_ms=NOW)
        assert a.summary == b.summary
        assert a.per_slice.equals(b.per_slice)
        assert _without_source(a.per_log).equals(_without_source(b.per_log))
    return _covered(t)


# -- the rule itself -----------------------------------------------------------------------------------------------


def _w(instant: str, offset: int, size: int, records: int = 1, deletes: int = 0, mn: int | None = 5) -> LogWrite:
    return LogWrite(instant, offset, size, records, deletes, mn)


def test_stats_must_cover_the_whole_file_with_visible_writes() -> None:
    visible = {"1", "2"}.__contains__
    known = {(".f.log.1", "2"): DeleteEventTimes(True, 3, 9)}
    # Two deltacommits appended to one log (table version 6): one block fact per write and kind.
    facts = facts_from_write_stats(".f.log.1", 30, [_w("1", 0, 10), _w("2", 10, 20, 2, 1, 7)], visible, lambda: known)
    assert facts == (
        BlockFacts("1", "DATA", 1, 5, "write_stats"),
        BlockFacts("2", "DATA", 2, 7, "write_stats"),
        BlockFacts("2", "DELETE", None, 3, "write_stats"),
    )
    # A delete of unknown event time stays unknown.
    only_delete = facts_from_write_stats(".f.log.1", 10, [_w("1", 0, 10, 0, 4)], visible, lambda: known)
    assert only_delete == (BlockFacts("1", "DELETE", None, None, None),)
    refused = {
        "bytes after the last write (a rollback's command block, a failed append, a corrupt tail)": (
            40, [_w("1", 0, 10), _w("2", 10, 20)]),
        "a gap between writes (a failed write's blocks)": (30, [_w("1", 0, 10), _w("2", 15, 15)]),
        "not starting at 0": (10, [_w("2", 5, 5)]),
        "a write the timeline hides": (20, [_w("1", 0, 10), _w("3", 10, 10)]),
        "records without minEventTime": (10, [_w("1", 0, 10, mn=None)]),
        "an empty write": (10, [_w("1", 0, 10, records=0)]),
        "no writes": (10, []),
    }  # fmt: skip
    for why, (size, writes) in refused.items():
        assert facts_from_write_stats(".f.log.1", size, writes, visible, lambda: known) is None, why


# -- real Hudi fixtures ----------------------------------------------------------------------------------------------


def _ordering_field(name: str) -> str:
    meta = json.loads((TABLES_DIR / name / "fixture.json").read_text())
    return str(meta.get("ordering_field") or "ts")


def _inject_min_event_times(t: evt.HudiTable) -> None:
    """Give every log write stat of the copy's deltacommits a ``minEventTime``, as Hudi 1.1 records it with
    ``hoodie.write.track.event.time.watermark=true`` (these fixtures were written without it)."""
    fmt = table_version_format(t.config.version)
    for k, inst in enumerate(t.timeline.completed_commits()):
        if inst.action != "deltacommit":
            continue
        rec = dict(t.timeline.commit_metadata(inst).record)
        rec["partitionToWriteStats"] = {
            p: [
                {**s, "minEventTime": BASE + 1000 * k + j}
                if str(s.get("path", "")).rsplit("/", 1)[-1][:1] == "."
                else s
                for j, s in enumerate(stats or [])
            ]
            for p, stats in (rec.get("partitionToWriteStats") or {}).items()
        }
        Path(t.storage.full_path(inst.file_name)).write_bytes(fmt.encode_commit_metadata(rec))


MOR_FIXTURES = [n for n in fixture_names() if n.startswith("mor")]


@pytest.mark.parametrize("inject", [False, True], ids=["as_written", "with_min_event_time"])
@pytest.mark.parametrize("name", MOR_FIXTURES)
def test_real_fixtures(shared_fixtures: Path, tmp_path: Path, name: str, inject: bool) -> None:
    src = fixture_table_path(name)
    dst = tmp_path / src.name
    shutil.copytree(src, dst, symlinks=True)
    t = evt.HudiTable.open(dst)
    if inject:
        _inject_min_event_times(t)
        t = evt.HudiTable.open(dst)
    covered, n_logs = assert_same_as_scan(t, t.config.event_time_field or _ordering_field(name))
    if not inject:
        # Without minEventTime only delete-only logs can come from the stats (a delete's event time is
        # recorded by the toolkit's writer only; here it stays unknown, as in the scan).
        for facts in _stat_facts(t).values():
            assert facts is None or all(f.block_type == "DELETE" and f.min_event_time is None for f in facts)
        return
    # A log comes from the stats exactly when a completed deltacommit's stat names it with its listed size (each
    # of these logs has one writer). The inflight write's log of the v6 fixture (v9 leaves it out of the slice)
    # and the corrupt tail (bytes after the committed block) do not, and are read.
    sizes = {
        st.path: st.file_size
        for inst in t.timeline.completed_commits()
        if inst.action == "deltacommit"
        for st in t.timeline.commit_metadata(inst).write_stats
    }
    logs = [lf for s in t.view.latest_merged_file_slices() for lf in s.log_files]
    assert covered == sum(1 for lf in logs if sizes.get(lf.path) == lf.size)
    if name in ("mor_table_uncommitted_log_v6", "mor_table_corrupt_tail_block"):
        assert 0 < covered < n_logs
    else:
        assert covered == n_logs


# -- tables the toolkit writes -----------------------------------------------------------------------------------------


def _create(uri: str, header: bool, options: dict[str, str] | None = None) -> evt.HudiTable:
    return evt.HudiTable.create(
        uri, "fs", "id", partition_by="region", ordering_field="ts", event_time_field="ev", buckets=2,
        merge_mode="event_time", min_event_time_header=header, storage_options=options,
    )  # fmt: skip


def _history(t: evt.HudiTable) -> None:
    t.write(rows(range(0, 20), 10, 100))
    t.write(rows(range(10, 30), 20, 150))
    t.write(rows([1, 2, 7], 30, 120), "delete")  # deletes that carry their event times
    t.write(deletes([3, 4], 31), "delete")  # deletes of unknown event time
    t.write(rows([5, 6, 8], 60, 500, deleted=[True, False, False]))  # data and delete blocks in one write
    t.write(rows(range(25, 40), 40, 400))


def _append_onto_committed_logs(t: evt.HudiTable, before: set[str]) -> list[str]:
    """Move the new logs' blocks onto the end of their slice's committed log (what an append would leave)."""
    shared = []
    for rel in sorted(data_files(t.path) - before):
        parsed = LogFileName.parse(os.path.basename(rel))
        assert parsed is not None
        target = next(
            p
            for p in sorted(before)
            if os.path.dirname(p) == os.path.dirname(rel) and os.path.basename(p).startswith(f".{parsed.file_id}_")
        )
        with open(t.storage.full_path(target), "ab") as out:
            out.write(Path(t.storage.full_path(rel)).read_bytes())
        os.unlink(t.storage.full_path(rel))
        shared.append(target)
    return shared


@pytest.mark.parametrize("header", [False, True], ids=["write_stats", "header"])
def test_toolkit_tables_through_failures_rollbacks_and_compactions(tmp_path: Path, header: bool) -> None:
    t = _create(str(tmp_path / "t"), header)
    _history(t)
    covered, n = assert_same_as_scan(t.refresh(), "ev")
    assert covered == n > 0, "every log the writer wrote is covered by its stat"

    # A failed write leaves uncommitted logs: those are read (their blocks count as uncommitted).
    failed = failed_write(t, rows(range(0, 8), 70, 600), tasks_before_crash=2)
    covered, n = assert_same_as_scan(t.refresh(), "ev")
    assert 0 < covered < n
    t.rollback(failed)
    covered, n = assert_same_as_scan(t.refresh(), "ev")
    assert covered == n

    # Failed blocks inside committed logs, then the rollback's command blocks: those logs are read.
    before = data_files(t.path)
    failed = failed_write(t, rows(range(0, 8), 80, 700), tasks_before_crash=2)
    shared = _append_onto_committed_logs(t, before)
    covered, n = assert_same_as_scan(t.refresh(), "ev")
    assert covered == n - len(shared)
    res = t.rollback(failed)
    assert res.command_block_logs
    covered, n = assert_same_as_scan(t.refresh(), "ev")
    assert covered == n - len(shared) - len(res.command_block_logs)

    # A partial compaction with carry-over copies (their stats are the compaction's, their blocks older): read.
    compact(t.refresh(), 130, "copy")
    t.write(rows(range(40, 50), 90, 800))
    assert_same_as_scan(t.refresh(), "ev")
    # A pending compaction: the merged slices span two slices.
    pending = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=BASE + 450), link_mode="copy")
    assert pending is not None
    t.write(rows(range(0, 5), 95, 900))
    covered, n = assert_same_as_scan(t.refresh(), "ev")
    assert covered > 0


def _log_gets(t_uri: str, options: dict[str, str], use_write_stats: bool) -> tuple[int, SliceSet]:
    t = evt.HudiTable.open(t_uri, storage_options=options)
    assert t.view.latest_merged_file_slices()  # listing and timeline outside the count
    event_times.clear_cache()
    with count_requests() as c:
        out = slice_set(t, "ev", use_write_stats=use_write_stats)
    event_times.clear_cache()
    return c.counts().get, out


def test_on_s3_one_get_per_commit_instead_of_per_log(s3_server: Any, s3_bucket: str) -> None:
    options = s3_server.options
    uri = f"s3a://{s3_bucket}/facts"
    t = _create(uri, False, options)
    _history(t)
    failed_write(t, rows(range(0, 8), 70, 600), tasks_before_crash=1)
    t = evt.HudiTable.open(uri, storage_options=options)
    covered, n = assert_same_as_scan(t, "ev")
    assert 0 < covered < n
    commits = len([i for i in t.timeline.completed_commits() if i.action == "deltacommit"])
    gets_scan, scan = _log_gets(uri, options, False)
    gets_fast, fast = _log_gets(uri, options, True)
    assert _without_source(fast.log_files).equals(_without_source(scan.log_files))
    # The scan reads every log (and the commits for the stats); the fast path the commits and the uncovered logs.
    assert gets_scan >= n
    assert gets_fast <= commits + (n - covered)
    logs = fast.log_files
    uncommitted = pc.sum(logs["uncommitted_blocks"]).as_py()
    assert uncommitted and uncommitted > 0, "the failed write's blocks are seen as uncommitted"


@pytest.mark.parametrize("header", [False, True])
def test_another_fields_min_event_time_is_read_from_the_logs_not_from_what_writers_recorded(
    tmp_path: Path, header: bool
) -> None:
    """Headers, write stats and recorded delete event times describe the table's own event-time field (``ev``); a
    preview on another field (``ts``) must read that field's values — in either order on one table object."""
    from evt_toolkit.compaction.event_times import slice_infos
    from tests.tables import BASE, rows

    t = evt.HudiTable.create(
        tmp_path / "t", "two", "id", partition_by="region", ordering_field="ts", event_time_field="ev",
        buckets=1, min_event_time_header=header,
    )  # fmt: skip
    t.write(rows(range(0, 6), 7, 500))
    t.write(rows(range(0, 6), 3, 900))
    for order in (("ev", "ts"), ("ts", "ev")):
        got = {f: [lf.min_event_time for s in slice_infos(t, f) for lf in s.log_files] for f in order}
        assert sorted(got["ev"]) == [BASE + 500] * 2 + [BASE + 900] * 2  # two partitions, two writes
        assert sorted(got["ts"]) == [3, 3, 7, 7]
    selected = t.compaction.preview(EventTimeBasedCompactionStrategy(threshold=5, event_time_field="ts"))
    assert selected.summary.logs_compacted == 4  # in each slice, the prefix up to the log with ts 3 ≤ 5
