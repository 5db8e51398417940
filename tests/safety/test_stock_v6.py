"""Event-time compaction on tables stock Hudi wrote (every table-version-6 MOR fixture, on copies).

For thresholds below, inside and above the tables' event times, in both link modes and both link timings:

* the preview writes nothing;
* the run leaves the snapshot unchanged, in our reader and in hudi-rs, and our read-optimized view equals hudi-rs's;
* every record with event time ≤ the freshness the table reports is in the read-optimized view, as in the snapshot;
* time travel to every earlier commit and every incremental window between commits answer as before the run;
* a clean afterwards keeps all of it (or refuses reads its deletions made unanswerable, never answering partially),
  and the plan validates.

The event-time field of each table is its ordering field (a long), as a data engineer would pick it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.errors import ReadError
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from tests.conftest import SKIP_NO_SHARED, fixture_names, fixture_table_path
from tests.normalize import assert_same_rows

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

V6_MOR = [n for n in fixture_names() if n.startswith("mor_") and "_v6" in n and n != "mor_v6_empty"]


def _listing(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.lstat().st_size for p in root.rglob("*") if not p.is_dir()}


def _same(a: pa.Table, b: pa.Table, what: str) -> None:
    cols = [c for c in b.column_names if c not in ("_hoodie_file_name", "_hoodie_commit_seqno")]
    assert_same_rows(a, b, cols, what)


def _rs(path: Path, *, ro: bool = False) -> pa.Table:
    b = hudi.HudiTableBuilder.from_base_uri(str(path))
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    return pa.Table.from_batches(b.build().read())


def _copy(tmp_path: Path, name: str) -> tuple[evt.HudiTable, Path]:
    dst = tmp_path / name
    shutil.copytree(fixture_table_path(name), dst, symlinks=True)
    t = evt.HudiTable.open(dst)
    for failed in [i.time for i in t.timeline.inflight_writes()]:
        t.rollback(failed)  # a stock failed write first, as a table service would
    return t, dst


def _history(t: evt.HudiTable) -> tuple[list[str], dict[str, pa.Table], dict[tuple[str, str], pa.Table]]:
    commits = [i.time for i in t.refresh().timeline.completed_commits()]
    as_of = {c: t.read(as_of=c) for c in commits}
    windows = {(b, e): t.read("incremental", begin=b, end=e) for b, e in zip(["0" * 17, *commits], commits)}
    return commits, as_of, windows


@SKIP_NO_SHARED
@pytest.mark.parametrize("where", ["below", "inside", "above"])
@pytest.mark.parametrize(("link_mode", "link_timing"), [("copy", "schedule"), ("symlink", "execute")])
@pytest.mark.parametrize("name", V6_MOR)
def test_event_time_compaction_of_a_stock_table(
    tmp_path: Path, name: str, where: str, link_mode: str, link_timing: str
) -> None:
    t, path = _copy(tmp_path, name)
    field = t.config.ordering_field or "ts"
    snap = t.read()
    if not snap.num_rows or field not in snap.column_names:
        pytest.skip(f"{name}: no rows or no ordering field to use as event time")
    ets = snap[field].cast(pa.int64())
    lo, hi = pc.min(ets).as_py(), pc.max(ets).as_py()
    threshold = {"below": lo - 1, "inside": (lo + hi) // 2, "above": hi + 1}[where]
    strategy = EventTimeBasedCompactionStrategy(threshold=threshold, event_time_field=field)
    commits, as_of, windows = _history(t)
    rs_snap = _rs(path)

    before = _listing(path)
    preview = t.compaction.preview(strategy)
    assert _listing(path) == before, f"{name}: the preview wrote"

    c = t.compaction.schedule(strategy, link_mode=link_mode, link_timing=link_timing)
    if c is None:
        assert preview.summary.logs_compacted == 0, f"{name}: the preview selected logs the schedule did not"
        assert _listing(path) == before, f"{name}: a schedule that planned nothing wrote"
        return
    assert c.operations == preview.summary.slices_selected
    _same(t.read(), snap, f"{name}: snapshot while {c.instant} is pending")
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    after = t.refresh().read()
    _same(after, snap, f"{name}: snapshot after compacting at T={threshold}")
    _same(_rs(path), rs_snap, f"{name}: hudi-rs snapshot after the compaction")
    ro = t.read("read_optimized")
    _same(_rs(path, ro=True), ro, f"{name}: hudi-rs read-optimized view")

    # Every record with event time ≤ the freshness the table reports is in RO, as in the snapshot.
    fresh = t.ro_freshness().threshold_ms
    if fresh is not None:
        keep = pc.field(field) <= fresh
        _same(ro.filter(keep), after.filter(keep), f"{name}: RO up to its freshness {fresh}")
        assert fresh <= threshold

    for commit, rows in as_of.items():
        _same(t.read(as_of=commit), rows, f"{name}: time travel to {commit}")
    for (b, e), rows in windows.items():
        _same(t.read("incremental", begin=b, end=e), rows, f"{name}: incremental ({b}, {e}]")

    for policy in (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS):
        t.clean(policy, 1, dry_run=False)
        _same(t.read(), snap, f"{name}: snapshot after a {policy} clean")
        _same(t.read("read_optimized"), ro, f"{name}: RO after a {policy} clean")
        _same(_rs(path), rs_snap, f"{name}: hudi-rs after a {policy} clean")
        for commit, rows in as_of.items():
            try:
                got = t.read(as_of=commit)
            except ReadError:
                continue  # the clean removed what that state needed: refused, never partial
            _same(got, rows, f"{name}: time travel to {commit} after a {policy} clean")
    assert t.compaction.validate(c).ok
