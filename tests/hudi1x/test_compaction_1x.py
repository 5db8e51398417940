"""Event-time partial compaction, clean and rollback on Hudi 1.x tables (versions 8 and 9), judged by hudi-rs.

On tables this toolkit writes at versions 8 and 9, and on copies of every stock v8/v9 MERGE_ON_READ fixture it can
compact, a compaction at thresholds below, inside and above the logs' event times, with copy and symlink links made
at schedule time (and copy links made at execute time):

* the preview writes nothing;
* the plan completes as ``C_C.commit`` (docs/hudi-1x.md §4.4) and validates;
* the snapshot is unchanged in our reader and in hudi-rs, and our RO view equals hudi-rs's;
* the reported RO freshness is at most T and true: RO and snapshot agree on every event up to it;
* time travel to every earlier commit, in both readers, and every incremental window between commits are unchanged;
* a clean afterwards keeps all of it (a query whose files the clean removed fails with ``ReadError``, never a
  partial answer) and keeps every link's target a symlink needs;
* a compaction killed (``kill -9``) in the middle of its run, then rolled back and run again, loses nothing.

Fixtures are copied first; the copy names its ordering field as the event-time field
(``hoodie.payload.event.time.field``) when that field is an integer epoch or a timestamp, as an operator would.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.event_times import slice_infos
from evt_toolkit.compaction.strategy import CompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.errors import (
    LogFormatError,
    PendingTableServiceError,
    PlanValidationError,
    ReadError,
    UnsupportedFeatureError,
    UnsupportedTableError,
    WriteError,
)
from evt_toolkit.format.eventtime import to_epoch_ms
from evt_toolkit.format.logfile import BlockType
from evt_toolkit.format.names import LogFileName
from evt_toolkit.format.properties import parse_properties
from evt_toolkit.services.clean_planner import KEEP_LATEST_FILE_VERSIONS
from evt_toolkit.table.metadata_table import metadata_table_support
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR, fixture_names, fixture_table_path
from tests.faults import assert_killed, run_child, save_batch
from tests.mdt.mdt_helpers import committed_files, mdt_files
from tests.normalize import assert_same_rows
from tests.tables import BASE, create, history, rows

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

ZERO = "0" * 17


# -- readers ----------------------------------------------------------------------------------------------------------


def rs(path: Path | str, *, as_of: str | None = None, ro: bool = False) -> pa.Table | None:
    """hudi-rs's answer (``None`` when it returns no batch at all)."""
    b = hudi.HudiTableBuilder.from_base_uri(str(Path(path).resolve()))
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    opts = hudi.HudiReadOptions()
    if as_of is not None:
        opts = opts.with_as_of_timestamp(as_of)
    batches = b.build().read(opts)
    return pa.Table.from_batches(batches) if batches else None


def same(got: pa.Table | None, want: pa.Table, what: str) -> None:
    """Equal as multisets of rows over every column except ``_hoodie_file_name`` (a compaction renames files)."""
    if got is None:
        assert want.num_rows == 0, f"{what}: no rows, expected {want.num_rows}"
        return
    cols = [c for c in want.column_names if c != "_hoodie_file_name"] if want.num_rows or got.num_rows else []
    assert_same_rows(got, want, cols, what)


def tree(path: Path) -> dict[str, tuple[int, int]]:
    """Every file and symlink under the table with its size and modification time (a preview must change none)."""
    out = {}
    for p in path.rglob("*"):
        st = p.lstat()
        out[p.relative_to(path).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


@dataclass
class State:
    """What every query answered before a table service ran."""

    snapshot: pa.Table
    commits: list[str]
    as_of: dict[str, pa.Table]
    windows: dict[tuple[str, str], pa.Table]


def capture(t: evt.HudiTable) -> State:
    t.refresh()
    commits = [i.time for i in t.timeline.completed_commits()]
    bounds = [ZERO, *commits]
    return State(
        snapshot=t.read(),
        commits=commits,
        as_of={c: t.read(as_of=c) for c in commits},
        windows={(b, e): t.read("incremental", begin=b, end=e) for b, e in itertools.pairwise(bounds)},
    )


def check_unchanged(t: evt.HudiTable, before: State, what: str, *, cleaned: bool = False) -> None:
    """Snapshot, time travel and incremental windows as before, in our reader and (snapshot, time travel) hudi-rs.

    After a clean (``cleaned``) a query may need files the clean removed: it must then fail with ``ReadError``.
    """
    t.refresh()
    same(t.read(), before.snapshot, f"{what}: our snapshot")
    same(rs(t.path), before.snapshot, f"{what}: hudi-rs snapshot")
    for c, want in before.as_of.items():
        try:
            got = t.read(as_of=c)
        except ReadError:
            assert cleaned, f"{what}: time travel to {c} refused without a clean"
            continue
        same(got, want, f"{what}: time travel to {c}")
        if not cleaned:
            same(rs(t.path, as_of=c), want, f"{what}: hudi-rs time travel to {c}")
    for (b, e), want in before.windows.items():
        try:
            got = t.read("incremental", begin=b, end=e)
        except ReadError:
            assert cleaned, f"{what}: incremental ({b}, {e}] refused without a clean"
            continue
        same(got, want, f"{what}: incremental ({b}, {e}]")


def event_ms(table: pa.Table, field: str, unit: str) -> pa.Array:
    return to_epoch_ms(table[field], unit, field=field)  # type: ignore[arg-type]


def check_freshness(t: evt.HudiTable, threshold: int | None, what: str) -> None:
    """The reported freshness is at most the plan's T and true: RO and snapshot agree on every event up to it."""
    field = t.config.event_time_field
    f = t.refresh().ro_freshness()
    if threshold is None or not field:
        return
    assert f.threshold_ms is not None, f"{what}: no freshness after an event-time compaction ({f.reason})"
    assert f.threshold_ms <= threshold, f"{what}: freshness {f.threshold_ms} above the plan's T {threshold}"
    snap, ro = t.read(), t.read("read_optimized")
    unit = t.config.event_time_unit
    keep_snap = pc.fill_null(pc.less_equal(event_ms(snap, field, unit), f.threshold_ms), False)
    keep_ro = pc.fill_null(pc.less_equal(event_ms(ro, field, unit), f.threshold_ms), False)
    same(ro.filter(keep_ro), snap.filter(keep_snap), f"{what}: RO and snapshot up to the freshness {f.threshold_ms}")


# -- one compaction, checked end to end -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    threshold: str  # below | inside | above
    link_mode: str
    link_timing: str

    @property
    def id(self) -> str:
        return f"{self.threshold}-{self.link_mode}-{self.link_timing}"


SCENARIOS = [
    Scenario("below", "copy", "schedule"),
    Scenario("inside", "copy", "schedule"),
    Scenario("above", "copy", "schedule"),
    Scenario("below", "symlink", "schedule"),
    Scenario("inside", "symlink", "schedule"),
    Scenario("above", "symlink", "schedule"),
    Scenario("inside", "copy", "execute"),
]


def log_event_times(t: evt.HudiTable) -> list[int]:
    """Min and max event times of the latest slices' logs (write stats or a scan)."""
    out: list[int] = []
    for s in slice_infos(t.refresh()):
        for lf in s.log_files:
            out.extend(x for x in (lf.min_event_time, lf.max_event_time) if x is not None)
    return sorted(out)


def threshold_for(t: evt.HudiTable, where: str) -> int | None:
    """A threshold below, inside or above the logs' event times (``None``: the table has no event times)."""
    times = log_event_times(t)
    if not t.config.event_time_field or not times:
        return None
    if where == "below":
        return times[0] - 1
    if where == "above":
        return times[-1] + 1
    return times[len(times) // 2]


def strategy_for(threshold: int | None) -> CompactionStrategy:
    """Event-time at ``threshold``; a full compaction for tables without event times."""
    if threshold is None:
        return UnBoundedCompactionStrategy()
    return EventTimeBasedCompactionStrategy(threshold=threshold)


def compact_and_check(
    t: evt.HudiTable,
    sc: Scenario,
    *,
    between: Callable[[evt.HudiTable], object] | None = None,
) -> str | None:
    """Preview, schedule, (write in the pending window,) run, check; then clean and check again."""
    path = Path(t.path)
    threshold = threshold_for(t, sc.threshold)
    strategy: CompactionStrategy = (
        EventTimeBasedCompactionStrategy(threshold=threshold)
        if threshold is not None
        else UnBoundedCompactionStrategy()
    )
    files = tree(path)
    t.compaction.preview(strategy, link_mode=sc.link_mode)
    assert tree(path) == files, "the preview wrote nothing"

    c = t.compaction.schedule(strategy, link_mode=sc.link_mode, link_timing=sc.link_timing)
    if c is None:
        assert sc.threshold == "below" or threshold is None, "only a threshold below every event compacts nothing"
        assert tree(path) == files, "an empty plan writes nothing"
        return None
    assert t.compaction.validate(c).ok
    if between is not None:
        between(t)
    before = capture(t)
    t.compaction.run(c)
    timeline = path / ".hoodie" / "timeline"
    assert (timeline / f"{c.instant}_{c.instant}.commit").is_file(), "C completes at its requested time"
    report = t.compaction.validate(c)
    assert report.ok, report.problems
    check_unchanged(t, before, f"compaction {c.instant} ({sc.id})")
    same(rs(t.path, ro=True), t.read("read_optimized"), "RO: ours equals hudi-rs")
    check_freshness(t, c.threshold, "after the compaction")

    ro = t.read("read_optimized")
    after = capture(t)
    res = t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    check_unchanged(t, after, "after the clean", cleaned=bool(res.deleted))
    same(t.read("read_optimized"), ro, "RO unchanged by the clean")
    same(rs(t.path, ro=True), ro, "hudi-rs RO unchanged by the clean")
    if sc.link_mode == "symlink":
        assert t.compaction.validate(c).ok, "every symlink still has its target"
    for p in path.rglob("*"):
        if p.is_symlink():
            assert p.exists(), f"{p} dangles after the clean"
    return c.instant


# -- tables the toolkit writes ----------------------------------------------------------------------------------------


def own_table(path: Path, version: int) -> evt.HudiTable:
    """Event-time merging, two partitions × two buckets, with late data, deletes and ``_hoodie_is_deleted``."""
    t = create(path, "event_time", table_version=version)
    history(t)
    return t


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.id)
@pytest.mark.parametrize("version", [8, 9])
def test_compaction_on_tables_we_write(tmp_path: Path, version: int, sc: Scenario) -> None:
    t = own_table(tmp_path / "t", version)
    assert t.config.version == version
    compact_and_check(t, sc)


@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
@pytest.mark.parametrize("version", [8, 9])
def test_a_write_in_the_pending_window_replays_after_the_leftovers(
    tmp_path: Path, version: int, link_mode: str
) -> None:
    """A write landing between schedule and run joins the new slice after the links (fence 1, R2)."""
    t = own_table(tmp_path / "t", version)

    def write(tt: evt.HudiTable) -> None:
        tt.write(rows([0, 3, 8, 25, 39, 60, 61], 95, 420))

    compact_and_check(t, Scenario("inside", link_mode, "schedule"), between=write)


def test_a_write_requested_before_the_compaction_that_completes_after_it_is_refused(tmp_path: Path) -> None:
    """Fence 2: a deltacommit requested before ``C`` and still pending at the run would replay before the links."""

    path = tmp_path / "t"
    t = own_table(path, 9)
    batch = save_batch(rows([0, 3, 8, 25, 39], 95, 420), tmp_path / "b.parquet")
    assert_killed(run_child(path, "write.before_complete", "write", str(batch), "upsert"))
    pending = [i.time for i in t.refresh().timeline.inflight_writes()]
    assert len(pending) == 1
    # Schedule refuses while the write is pending (fence 1) ...
    with pytest.raises(PendingTableServiceError, match="inflight"):
        t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300))
    # ... and a plan at an instant after it, made by a skewed clock, is refused at the run (fence 2).
    t.rollback(pending[0])
    snap = t.read()
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300))
    assert c is not None and c.links
    (path / ".hoodie" / "timeline" / f"{int(c.instant) - 1}.deltacommit.requested").write_bytes(b"")
    fid = LogFileName.parse(c.links[0].symlink).file_id  # type: ignore[union-attr]
    part = path / c.links[0].partition_path
    (part / f".{fid}_{int(c.instant) - 1}.log.1_0-0-0").write_bytes(b"")
    with pytest.raises(PlanValidationError, match="fence 2"):
        t.compaction.run(c)
    same(t.read(), snap, "nothing changed")


# -- stock fixtures ---------------------------------------------------------------------------------------------------


def _props(name: str) -> dict[str, str]:
    path = fixture_table_path(name) / ".hoodie" / "hoodie.properties"
    return parse_properties(path.read_bytes().decode("iso-8859-1"))


def stock_1x_mor(*, with_metadata_table: bool) -> list[str]:
    """Every stock v8/v9 MERGE_ON_READ fixture with Parquet base files (Lance base files are not compacted), with or
    without a metadata table."""
    if not TABLES_DIR.is_dir():
        return []
    out = []
    for name in fixture_names():
        p = _props(name)
        if p.get("hoodie.table.version") not in ("8", "9") or p.get("hoodie.table.type") != "MERGE_ON_READ":
            continue
        if p.get("hoodie.table.base.file.format", "PARQUET").upper() != "PARQUET":
            continue
        has_mdt = (
            bool(p.get("hoodie.table.metadata.partitions"))
            or (fixture_table_path(name) / ".hoodie" / "metadata").exists()
        )
        if has_mdt == with_metadata_table:
            out.append(name)
    return out


STOCK = stock_1x_mor(with_metadata_table=False)


def copy_fixture(name: str, dst: Path) -> evt.HudiTable:
    """A copy of the fixture whose ordering field, when an integer epoch or a timestamp, is its event-time field."""
    shutil.copytree(fixture_table_path(name), dst, symlinks=True)
    for p in [dst, *dst.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)
    t = evt.HudiTable.open(dst)
    field = t.config.ordering_field
    try:
        snap = t.read()
    except UnsupportedFeatureError as exc:
        pytest.skip(f"{name}: not readable by this toolkit, so not compacted: {exc}")
    if field and field in snap.column_names:
        typ = snap.schema.field(field).type
        if pa.types.is_integer(typ) or pa.types.is_timestamp(typ):
            props = dst / ".hoodie" / "hoodie.properties"
            props.write_text(props.read_text() + f"hoodie.payload.event.time.field={field}\n")
    t = evt.HudiTable.open(dst)
    # A stock write that failed (never completed) is rolled back first, as an operator does: its files go.
    for failed in [i.time for i in t.timeline.inflight_writes()]:
        before = t.read()
        named = {p.relative_to(dst).as_posix() for p in dst.rglob(f"*_{failed}.*") if ".hoodie" not in p.parts}
        named |= {p.relative_to(dst).as_posix() for p in dst.rglob(f".*_{failed}.log.*") if ".hoodie" not in p.parts}
        res = t.rollback(failed)
        # Recorded files (markers, write stats) are deleted; a file named with the instant that nothing records is
        # reported and left, invisible since its instant never completed (docs/hudi-1x.md §5).
        assert named and set(res.deleted) | set(res.unowned) == named, (res, named)
        same(t.read(), before, f"{name}: rolling back the failed write {failed} changes nothing")
        same(rs(dst), before, f"{name}: hudi-rs after rolling back {failed}")
    return t


def test_the_stock_1x_fixtures_are_found() -> None:
    if not TABLES_DIR.is_dir():
        pytest.skip("no fixtures")
    assert len(STOCK) >= 10, STOCK


@SKIP_NO_SHARED
@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.id)
@pytest.mark.parametrize("name", STOCK)
def test_compaction_on_stock_fixtures(tmp_path: Path, name: str, sc: Scenario) -> None:
    t = copy_fixture(name, tmp_path / name)
    if threshold_for(t, "inside") is None and sc != SCENARIOS[1] and sc != SCENARIOS[4]:
        pytest.skip(f"{name}: no event times in its logs: one full compaction per link mode")
    refusal = refused_run(t)
    if refusal is not None:
        check_refused_run(t, refusal, sc.link_mode)
        return
    compact_and_check(t, sc)


def refused_run(t: evt.HudiTable) -> tuple[type[Exception], str] | None:
    """What a run must refuse in the latest slices' logs: partial-update and HFile data blocks (not compacted),
    corrupt blocks (compacting would drop their records); ``None`` when it can run."""
    blocks = _blocks(t)
    if any(b.is_partial for b in blocks):
        return UnsupportedFeatureError, "partial-update"
    if any(b.block_type == BlockType.HFILE_DATA for b in blocks):
        return UnsupportedFeatureError, "HFILE_DATA"
    if any(b.is_corrupt for b in blocks):
        return LogFormatError, "corrupt block"
    return None


def check_refused_run(t: evt.HudiTable, refusal: tuple[type[Exception], str], link_mode: str) -> None:
    """The schedule refuses a plan its run would refuse, with nothing written: a corrupt block, partial-update and
    HFile data blocks (a plan of them was written only for every task to refuse it)."""
    snap, files = t.read(), tree(Path(t.path))
    with pytest.raises(refusal[0], match=refusal[1]):
        t.compaction.schedule(UnBoundedCompactionStrategy(), link_mode=link_mode)
    assert tree(Path(t.path)) == files, "a refused schedule wrote nothing"
    same(t.read(), snap, "a refused schedule changes nothing")


def _blocks(t: evt.HudiTable) -> list:
    from evt_toolkit.format.logfile import scan_log_blocks

    out = []
    for s in t.view.latest_file_slices():
        for lf in s.log_files:
            with t.storage.open_input(lf.path) as f:
                out.extend(scan_log_blocks(f, lf.size, lf.path))
    return out


@SKIP_NO_SHARED
@pytest.mark.parametrize("name", STOCK)
def test_a_killed_compaction_on_a_stock_fixture_rolls_back_and_reruns_losing_nothing(tmp_path: Path, name: str) -> None:
    t = copy_fixture(name, tmp_path / name)
    if refused_run(t) is not None:
        pytest.skip(f"{name}: its logs are refused by the run (test_compaction_on_stock_fixtures)")
    threshold = threshold_for(t, "inside")
    strategy: CompactionStrategy = (
        EventTimeBasedCompactionStrategy(threshold=threshold)
        if threshold is not None
        else UnBoundedCompactionStrategy()
    )
    c = t.compaction.schedule(strategy)
    if c is None:
        pytest.skip(f"{name}: nothing to compact")
    before = capture(t)
    assert_killed(run_child(Path(t.path), "run.after_task", "run", c.instant))
    check_unchanged(t, before, "killed run")
    rb = t.rollback(c.instant)
    assert rb.plan_requested_again
    assert not list(Path(t.path).rglob(f"*_{c.instant}.parquet")), "the run's base files are gone"
    check_unchanged(t, before, "rolled back")
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    check_unchanged(t, before, "run again")
    same(rs(t.path, ro=True), t.read("read_optimized"), "RO: ours equals hudi-rs")


# -- stock fixtures with a metadata table -----------------------------------------------------------------------------


STOCK_MDT = stock_1x_mor(with_metadata_table=True)


def _maintainable(name: str) -> bool:
    try:
        return metadata_table_support(evt.HudiTable.open(fixture_table_path(name))).maintainable
    except evt.EvtError:
        return False


#: The fixtures whose metadata table the toolkit keeps consistent (the others are refused: the test just below).
STOCK_MDT_KEPT = [n for n in STOCK_MDT if _maintainable(n)]


def mdt_consistent(t: evt.HudiTable, what: str) -> None:
    """The metadata table's ``files`` partition lists exactly the committed data files (names and sizes)."""
    path = Path(t.path)
    assert mdt_files(path) == committed_files(path), f"{what}: the files partition lists exactly the live files"


@SKIP_NO_SHARED
@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
@pytest.mark.parametrize("name", STOCK_MDT)
def test_compaction_on_stock_fixtures_with_a_metadata_table(tmp_path: Path, name: str, link_mode: str) -> None:
    """Maintainable metadata tables are kept consistent by every step; the others are refused, untouched, and
    compact once disabled as Hudi disables them."""
    t = copy_fixture(name, tmp_path / name)
    path = Path(t.path)
    support = metadata_table_support(t)
    if not support.maintainable:
        files = tree(path)
        with pytest.raises(UnsupportedTableError, match=r"metadata_table\.disable"):
            t.compaction.schedule(strategy_for(threshold_for(t, "inside")), link_mode=link_mode)
        assert tree(path) == files, "refused before anything changed"
        t.metadata_table.disable(dry_run=False)
        t = evt.HudiTable.open(path)
    refusal = refused_run(t)
    if refusal is not None:
        check_refused_run(t, refusal, link_mode)
        return
    if t.compaction.preview(strategy_for(None)).summary.logs_compacted == 0:
        # Nothing left to compact (the fixture ends with a compaction): a write through the SIMPLE index first.
        write_some_rows(t)
        if support.maintainable:
            mdt_consistent(t, f"{name}: after a write")
    assert compact_and_check(t, Scenario("inside", link_mode, "schedule")) is not None
    if support.maintainable:
        mdt_consistent(t, f"{name}: after compaction and clean")
        for dropped in support.to_drop:
            assert not (path / ".hoodie" / "metadata" / dropped).exists(), f"{dropped} was dropped"


@SKIP_NO_SHARED
@pytest.mark.parametrize("name", STOCK_MDT_KEPT)
def test_a_killed_compaction_on_a_fixture_with_a_metadata_table_loses_nothing(tmp_path: Path, name: str) -> None:
    """Killed after the metadata table learnt of ``C`` but before ``C`` completed: rollback takes the metadata
    instant back too, and the run again mirrors it."""
    t = copy_fixture(name, tmp_path / name)
    assert metadata_table_support(t).maintainable, name
    if refused_run(t) is not None:
        pytest.skip(f"{name}: its logs are refused by the run (see the test above)")
    c = t.compaction.schedule(strategy_for(threshold_for(t, "inside")))
    if c is None:
        write_some_rows(t)
        c = t.compaction.schedule(strategy_for(threshold_for(t, "inside")))
    assert c is not None
    before = capture(t)
    assert_killed(run_child(Path(t.path), "run.before_commit", "run", c.instant))
    check_unchanged(t, before, "killed run")
    mdt_consistent(t, "killed run")
    t.rollback(c.instant)
    check_unchanged(t, before, "rolled back")
    mdt_consistent(t, "rolled back")
    t.compaction.run(c)
    check_unchanged(t, before, "run again")
    mdt_consistent(t, "run again")
    w = write_some_rows(t)
    mdt_consistent(t, f"write {w}")
    same(rs(t.path), t.read(), "hudi-rs lists the write through the metadata table")


def write_some_rows(t: evt.HudiTable) -> str:
    """Write two rows of the table as they are (an update the SIMPLE index routes to the groups holding them)."""
    snap = t.read()
    rows = snap.select([c for c in snap.column_names if not c.startswith("_hoodie_")]).slice(0, 2)
    try:
        return t.write(rows, options={"hoodie.index.type": "SIMPLE"})
    except WriteError as exc:  # e.g. a stock table holding a key in two file groups: refused before any change
        pytest.skip(f"{t.path}: the SIMPLE index cannot write it: {exc}")


@SKIP_NO_SHARED
@pytest.mark.parametrize("name", STOCK_MDT_KEPT)
def test_a_killed_write_on_a_fixture_with_a_metadata_table_rolls_back_from_both(tmp_path: Path, name: str) -> None:
    """Killed after the metadata table learnt of ``W`` but before ``W`` completed: both readers ignore ``W``; its
    rollback removes ``W``'s files and its metadata-table instant, and the listing is exact again."""
    t = copy_fixture(name, tmp_path / name)
    assert metadata_table_support(t).maintainable, name
    snap = t.read()
    batch = snap.select([c for c in snap.column_names if not c.startswith("_hoodie_")]).slice(0, 2)
    pq.write_table(batch, tmp_path / "b.parquet")
    proc = run_child(Path(t.path), "write.before_complete", "write", str(tmp_path / "b.parquet"), "upsert", "SIMPLE")
    if proc.returncode != -9 and "SIMPLE index cannot" in proc.stderr:
        pytest.skip(f"{name}: the SIMPLE index cannot write it")
    assert_killed(proc)
    [w] = [i.time for i in t.refresh().timeline.inflight_writes()]
    same(t.read(), snap, "killed write: ours")
    same(rs(t.path), snap, "killed write: hudi-rs through the metadata table")
    mdt_consistent(t, "killed write")
    res = t.rollback(w)
    assert res.deleted and not res.unowned
    same(t.read(), snap, "rolled back: ours")
    same(rs(t.path), snap, "rolled back: hudi-rs")
    mdt_consistent(t, "rolled back")


# -- Spark ------------------------------------------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("version", [8, 9])
def test_a_compaction_run_on_spark_equals_the_local_run(spark: Any, tmp_path: Path, version: int) -> None:
    """The Spark executor runs the same task per operation: same base files, byte for byte, and the same answers."""
    t = own_table(tmp_path / "spark", version)
    c = t.compaction.schedule(strategy_for(threshold_for(t, "inside")), link_mode="symlink")
    assert c is not None and c.links
    shutil.copytree(t.path, tmp_path / "local", symlinks=True)
    local = evt.HudiTable.open(tmp_path / "local")
    before = capture(t)
    t.compaction.run(c, spark=spark)
    local.compaction.run(c.instant)
    assert (Path(t.path) / ".hoodie" / "timeline" / f"{c.instant}_{c.instant}.commit").is_file()
    check_unchanged(t, before, "run on Spark")
    same(rs(t.path, ro=True), t.read("read_optimized"), "RO: ours equals hudi-rs")
    ours = {p.relative_to(t.path): p.read_bytes() for p in Path(t.path).rglob(f"*_{c.instant}.parquet")}
    theirs = {p.relative_to(local.path): p.read_bytes() for p in Path(local.path).rglob(f"*_{c.instant}.parquet")}
    assert ours and ours == theirs, "Spark and the local executor wrote the same base files"


def test_validate_reports_a_plan_with_links_completed_after_its_requested_time(tmp_path: Path) -> None:
    """A stock executor of our plan completes ``C`` with its real completion time (alternative A of §4.3)."""
    t = own_table(tmp_path / "t", 9)
    c = t.compaction.schedule(strategy_for(threshold_for(t, "inside")))
    assert c is not None and c.links
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    timeline = Path(t.path) / ".hoodie" / "timeline"
    done = timeline / f"{c.instant}_{c.instant}.commit"
    done.rename(timeline / f"{c.instant}_{int(c.instant) + 5}.commit")
    report = t.compaction.validate(c)
    assert not report.ok and any("not at its requested time" in p for p in report.problems), report


@SKIP_NO_SHARED
@pytest.mark.parametrize("name", STOCK_MDT_KEPT)
def test_a_killed_clean_on_a_fixture_with_a_metadata_table_is_finished_consistently(tmp_path: Path, name: str) -> None:
    """Killed after deleting its files, before mirroring them: the snapshot is intact in both readers, and the
    clean resumed from its plan leaves the files partition listing exactly the live files."""
    t = copy_fixture(name, tmp_path / name)
    assert metadata_table_support(t).maintainable, name
    if refused_run(t) is not None:
        pytest.skip(f"{name}: its logs are refused by the run")
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    if c is None:
        write_some_rows(t)
        c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    snap = t.read()
    planned = set(t.clean(KEEP_LATEST_FILE_VERSIONS, 1).files)
    assert planned
    assert_killed(run_child(Path(t.path), "clean.after_delete", "clean", KEEP_LATEST_FILE_VERSIONS, "1"))
    same(t.refresh().read(), snap, "killed clean: ours")
    same(rs(t.path), snap, "killed clean: hudi-rs through the metadata table")
    res = t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    assert res.resumed and set(res.files) == planned
    mdt_consistent(t, "clean finished")
    same(t.read(), snap, "clean finished: ours")
    same(rs(t.path), snap, "clean finished: hudi-rs")
