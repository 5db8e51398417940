"""Cleans after chains of partial compactions: links of links, every policy, every query type as of every instant.

Three partial event-time compactions in a row leave leftover logs linked (by copy or symlink) into each new slice,
a symlink's target itself a link of the compaction before; writes land between them, one compaction is left pending
with its run rolled back and one plan is unscheduled on the way. Before any clean, every query is answered and
compared with hudi-rs (snapshot and read-optimized time travel to every completed instant). Then cleans of every
policy and retained count run in turn, and after each one every query — snapshot and read-optimized time travel to
every instant, every incremental window between consecutive commits, the latest snapshot and RO view — either
answers exactly as before or is refused with ``ReadError`` naming the earliest readable instant; never a partial
answer, never a dangling symlink or a missing file in a live slice.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest

from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.errors import ReadError
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from tests.services import missing_live_files, visible_dangling_symlinks
from tests.tables import BASE, COLUMNS, create, deletes, history, rows, same

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

CLEANS = [
    (KEEP_LATEST_FILE_VERSIONS, 3),
    (KEEP_LATEST_COMMITS, 4),
    (KEEP_LATEST_FILE_VERSIONS, 2),
    (KEEP_LATEST_COMMITS, 2),
    (KEEP_LATEST_FILE_VERSIONS, 1),
    (KEEP_LATEST_COMMITS, 1),
]


def _rs(path: str, as_of: str, *, ro: bool) -> pa.Table:
    b = hudi.HudiTableBuilder.from_base_uri(path)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    batches = b.build().read(hudi.HudiReadOptions().with_as_of_timestamp(as_of))
    return pa.Table.from_batches(batches) if batches else pa.table({c: pa.array([], pa.int64()) for c in COLUMNS})


@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
@pytest.mark.parametrize("version", [6, 9])
def test_cleans_after_chains_of_partial_compactions_answer_as_before_or_refuse(
    tmp_path: Path, version: int, link_mode: str
) -> None:
    t = create(tmp_path / "t", "event_time", buckets=2, table_version=version)
    history(t)
    for k, threshold in enumerate([300, 420, 470]):
        c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + threshold), link_mode=link_mode)
        assert c is not None
        t.write(rows(range(k, 40, 3), 70 + k, 460 + 10 * k))  # lands in the pending window
        t.compaction.run(c)
        t.write(deletes([k + 20], 80 + k), "delete")
    # A plan left pending after its run was rolled back, and one taken back, on the way to the cleans.
    gone = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 480), link_mode=link_mode)
    assert gone is not None
    t.compaction.unschedule(gone.instant, dry_run=False)
    t.write(rows(range(1, 40, 4), 90, 490))
    pending = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 495), link_mode=link_mode)
    assert pending is not None
    t.write(rows(range(2, 40, 5), 95, 30))  # late data in the new slice

    t.refresh()
    instants = [i.time for i in t.timeline.completed_commits()]
    answers = {}
    for at, ro in itertools.product(instants, (False, True)):
        answers[(at, ro)] = t.read("read_optimized" if ro else "snapshot", as_of=at)
        if ro or not t.timeline.pending_compactions():
            same(_rs(t.path, at, ro=ro), answers[(at, ro)], f"hudi-rs as of {at} (read-optimized: {ro})")
    windows = {(b, e): t.read("incremental", begin=b, end=e) for b, e in itertools.pairwise(instants)}
    snapshot, ro_now = t.read(), t.read("read_optimized")

    for policy, retained in CLEANS:
        t.clean(policy, retained, dry_run=False)
        t.refresh()
        what = f"after {policy}({retained})"
        same(t.read(), snapshot, f"{what}: snapshot")
        same(t.read("read_optimized"), ro_now, f"{what}: RO")
        refused = 0
        for (at, ro), want in answers.items():
            try:
                got = t.read("read_optimized" if ro else "snapshot", as_of=at)
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc), exc
                refused += 1
                continue
            same(got, want, f"{what}: as of {at} (read-optimized: {ro})")
        for (b, e), want in windows.items():
            try:
                got = t.read("incremental", begin=b, end=e)
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc), exc
                continue
            same(got, want, f"{what}: incremental ({b}, {e}]")
        assert missing_live_files(t) == []
        assert visible_dangling_symlinks(t) == []
        report = t.compaction.validate(pending.instant)
        assert report.ok, report.problems
    assert refused, "the last cleans removed old slices: some earlier states are refused"

    t.compaction.run(pending.instant)
    same(t.refresh().read(), snapshot, "the pending plan runs after the cleans, the snapshot unchanged")
    t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    same(t.refresh().read(), snapshot, "a last clean")
    assert missing_live_files(t) == []
    assert visible_dangling_symlinks(t) == []
