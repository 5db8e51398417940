"""Clean: Hudi's cleaner policies on tables with partial compactions, links (copy and symlink, chained) and pending
plans; the clean instants as Hudi writes them; time travel after a clean; random histories with rollbacks.

Tables are built with :func:`tests.services.build_with_compactions`: three event-time compactions, each leaving the
late log of every slice behind as a link, so that from the second compaction on the links point at links.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.compaction.validate import validate_compaction
from evt_toolkit.errors import PendingTableServiceError, ReadError
from evt_toolkit.format.links import Link
from evt_toolkit.format.metadata import decode_clean_metadata, decode_clean_plan
from evt_toolkit.services import clean as clean_service
from evt_toolkit.services.clean_planner import (
    KEEP_LATEST_COMMITS,
    KEEP_LATEST_FILE_VERSIONS,
    CleanInputs,
    CleanPolicyError,
    InstantRef,
    earliest_commit_to_retain,
    plan_clean,
)
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.fs_view import BaseFile, FileGroup, FileSlice, LogFile
from evt_toolkit.table.links import LinkGraph, deletion_order
from evt_toolkit.table.retention import check_readable_at, earliest_retained
from tests.oracle import Oracle
from tests.services import (
    Crash,
    build_with_compactions,
    dangling_symlinks,
    data_files,
    failed_write,
    missing_live_files,
    symlink_count,
    timeline_names,
    visible_dangling_symlinks,
)
from tests.tables import BASE, create, deletes, hudi_rs, rows, same

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

EXAMPLES = int(os.environ.get("EVT_PROPERTY_EXAMPLES", "10"))


# -- the planner, on hand-made file groups -----------------------------------------------------------------------------


def _slice(fid: str, base: str, logs: int = 1, with_base: bool = True, p: str = "p") -> FileSlice:
    name = f"{fid}_0-0-0_{base}.parquet"
    bf = BaseFile(f"{p}/{name}", name, fid, base, "0-0-0", 1) if with_base else None
    lfs = tuple(
        LogFile(f"{p}/.{fid}_{base}.log.{v}_0-0-0", f".{fid}_{base}.log.{v}_0-0-0", fid, base, v, "0-0-0", "", 1)
        for v in range(1, logs + 1)
    )
    return FileSlice(p, fid, base, bf, lfs)


def _paths(*slices: FileSlice) -> set[str]:
    out = set()
    for s in slices:
        out.update(([s.base_file.path] if s.base_file else []) + [lf.path for lf in s.log_files])
    return out


def _inputs(
    groups: list[FileGroup],
    commits: list[str],
    pending: list[str] | None = None,
    pending_slices: dict[tuple[str, str], str] | None = None,
    links: list[Link] | None = None,
) -> CleanInputs:
    existing = frozenset(p for g in groups for s in g.slices for p in _paths(s))
    return CleanInputs(
        groups=groups,
        completed_commits=[InstantRef(c, "deltacommit") for c in commits],
        pending_writes=pending or [],
        pending_compaction_slices=pending_slices or {},
        links=LinkGraph.of(links or []),
        existing_files=existing,
    )


def test_earliest_commit_to_retain_is_clamped_by_pending_instants() -> None:
    commits = [(f"{i:02d}", "deltacommit") for i in range(1, 13)]
    assert earliest_commit_to_retain(commits, [], 10) == InstantRef("03", "deltacommit")
    assert earliest_commit_to_retain(commits, [], 12) is None
    assert earliest_commit_to_retain(commits, ["05"], 3) == InstantRef("04", "deltacommit")  # last before pending
    assert earliest_commit_to_retain(commits, ["20"], 3) == InstantRef("10", "deltacommit")
    assert earliest_commit_to_retain(commits, ["00"], 3) is None


def test_keep_latest_commits_keeps_latest_and_last_before_ectr_and_pending_needs() -> None:
    s = [_slice("f", b) for b in ("50", "40", "30", "20", "10")]  # newest first
    g = FileGroup("p", "f", tuple(s))
    commits = ["10", "20", "30", "35", "40", "50"]
    plan = plan_clean(_inputs([g], commits), KEEP_LATEST_COMMITS, 3)  # ECTR = 35
    assert plan.earliest_commit_to_retain == InstantRef("35", "deltacommit")
    # 50 latest, 40 ≥ ECTR, 30 = last slice before the ECTR: kept; 20 and 10 deleted, base and logs.
    assert set(plan.paths) == _paths(s[3], s[4])
    assert plan.earliest_queryable == "30"
    # A pending compaction reading slice 20 keeps it.
    plan = plan_clean(_inputs([g], commits, pending_slices={("p", "f"): "20"}), KEEP_LATEST_COMMITS, 3)
    assert set(plan.paths) == _paths(s[4])
    # Not more commits than retained: nothing.
    assert plan_clean(_inputs([g], commits), KEEP_LATEST_COMMITS, 6).is_empty


def test_keep_latest_file_versions() -> None:
    s = [_slice("f", b) for b in ("40", "30", "20", "10")]
    g = FileGroup("p", "f", tuple(s))
    plan = plan_clean(_inputs([g], ["10", "20", "30", "40"]), KEEP_LATEST_FILE_VERSIONS, 2)
    assert plan.earliest_commit_to_retain is None
    assert set(plan.paths) == _paths(s[2], s[3])
    # Pending compaction at 50 opened slice 50 and reads slice 40: 40 is set aside (kept), and one version fewer is
    # kept among the rest (N−1 = 1: the slice 50 itself).
    c = FileSlice("p", "f", "50", None, ())
    gp = FileGroup("p", "f", (c, *s))
    plan = plan_clean(_inputs([gp], ["10", "20", "30", "40"], ["50"], {("p", "f"): "40"}), KEEP_LATEST_FILE_VERSIONS, 2)
    assert set(plan.paths) == _paths(s[1], s[2], s[3])
    # N = 1 with a pending compaction: Java would delete slice 50 (and new logs in it); we never delete the latest.
    plan = plan_clean(_inputs([gp], ["10", "20", "30", "40"], ["50"], {("p", "f"): "40"}), KEEP_LATEST_FILE_VERSIONS, 1)
    assert set(plan.paths) == _paths(s[1], s[2], s[3])
    with pytest.raises(CleanPolicyError):
        plan_clean(_inputs([g], ["10"]), KEEP_LATEST_FILE_VERSIONS, 0)
    with pytest.raises(CleanPolicyError):
        plan_clean(_inputs([g], ["10"]), "KEEP_LATEST_BY_HOURS", 1)


def test_symlink_chains_protect_every_file_they_need_and_copies_do_not() -> None:
    # Slice 10's log 2 is linked into slice 20 as log 1; slice 20's link is linked into slice 30 as log 1.
    s10, s20, s30 = _slice("f", "10", logs=2), _slice("f", "20", logs=1), _slice("f", "30", logs=1)
    g = FileGroup("p", "f", (s30, s20, s10))
    chain = [
        Link("p", ".f_20.log.1_0-0-0", ".f_10.log.2_0-0-0", "20", "symlink"),
        Link("p", ".f_30.log.1_0-0-0", ".f_20.log.1_0-0-0", "30", "symlink"),
    ]
    plan = plan_clean(_inputs([g], ["10", "20", "30"], links=chain), KEEP_LATEST_FILE_VERSIONS, 1)
    assert set(plan.kept_for_links) == {"p/.f_20.log.1_0-0-0", "p/.f_10.log.2_0-0-0"}
    assert set(plan.paths) == _paths(s20, s10) - set(plan.kept_for_links)
    copies = [Link(x.partition_path, x.symlink, x.target, x.compaction_instant, "copy") for x in chain]
    plan = plan_clean(_inputs([g], ["10", "20", "30"], links=copies), KEEP_LATEST_FILE_VERSIONS, 1)
    assert plan.kept_for_links == () and set(plan.paths) == _paths(s20, s10)


def test_deletes_go_link_before_what_it_leads_to_along_chains() -> None:
    """Every symlink before the link or log it points at (however the names sort), links before other files, a link
    to a file outside the delete in path order, and a hand-made cycle still deleted whole."""
    chain = {"p/.f_30.log.1": "p/.f_20.log.1", "p/.f_20.log.1": "p/.f_10.log.2", "p/.a_30.log.1": "p/.z_10.log.1"}
    paths = ["p/.f_10.log.2", "p/.f_20.log.1", "p/.f_30.log.1", "p/base.parquet", "p/.a_30.log.1"]
    order = deletion_order(paths, chain)
    assert sorted(order) == sorted(paths)
    for link, target in chain.items():
        if target in paths:
            assert order.index(link) < order.index(target), (link, target, order)
    assert order[:3] == ["p/.a_30.log.1", "p/.f_30.log.1", "p/.f_20.log.1"]  # links first
    assert order[3:] == ["p/.f_10.log.2", "p/base.parquet"]
    # Two later links to one earlier link: both go before it.
    fan = {"p/b": "p/a", "p/c": "p/a", "p/a": "p/x"}
    assert deletion_order(["p/a", "p/b", "p/c"], fan) == ["p/b", "p/c", "p/a"]
    # A cycle no compaction makes (hand-made links): nothing is left out.
    assert sorted(deletion_order(["p/a", "p/b"], {"p/a": "p/b", "p/b": "p/a"})) == ["p/a", "p/b"]


# -- on real tables ----------------------------------------------------------------------------------------------------


def _hoodie(t: evt.HudiTable) -> Path:
    return Path(t.path) / ".hoodie"


@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
@pytest.mark.parametrize("policy", [KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS])
def test_clean_after_several_compactions(tmp_path: Path, link_mode: str, policy: str) -> None:
    t, compactions = build_with_compactions(tmp_path / "t", link_mode)
    snap, ro = t.read(), t.read("read_optimized")
    files_before = data_files(t.path)
    dry = t.clean(policy, 1)
    assert dry.instant is None and dry.files and not dry.deleted
    assert data_files(t.path) == files_before and not [n for n in timeline_names(t) if ".clean" in n]

    res = t.clean(policy, 1, dry_run=False)
    assert res.instant is not None
    gone = files_before - data_files(t.path)
    assert set(res.deleted) == set(dry.files) == gone and res.failed == ()
    same(t.refresh().read(), snap, "snapshot after clean")
    same(t.read("read_optimized"), ro, "RO after clean")
    same(hudi_rs(t.path), snap, "hudi-rs snapshot after clean")
    same(hudi_rs(t.path, ro=True), ro, "hudi-rs RO after clean")
    assert dangling_symlinks(t.path) == [] and missing_live_files(t) == []
    if link_mode == "symlink":
        # The chain: a kept file that is itself a link of an older compaction, kept for a newer one's link.
        kept_links = [p for p in res.kept_for_links if os.path.islink(t.storage.full_path(p))]
        assert kept_links, res.kept_for_links
        assert symlink_count(t.path) > 0
    else:
        # Copies hold their own bytes: every original the policy names is gone.
        assert res.kept_for_links == ()
    assert compactions[-1].instant <= (res.earliest_commit_to_retain or compactions[-1].instant)
    # Every completed compaction still validates: symlinks resolve, copies stand without their cleaned originals.
    for c in compactions:
        report = validate_compaction(t, c.instant)
        assert report.ok, report.problems

    # The instants, as Hudi writes them.
    requested = (_hoodie(t) / f"{res.instant}.clean.requested").read_bytes()
    assert (_hoodie(t) / f"{res.instant}.clean.inflight").read_bytes() == requested
    plan = decode_clean_plan(requested, "clean.requested")
    assert plan["policy"] == policy and plan["version"] == 2 and plan["filesToBeDeletedPerPartition"] == {}
    assert plan["partitionsToBeDeleted"] == []
    full = {x["filePath"] for xs in plan["filePathsToBeDeletedPerPartition"].values() for x in xs}
    assert full == {"file:" + t.storage.full_path(p) for p in res.deleted}
    meta = decode_clean_metadata((_hoodie(t) / f"{res.instant}.clean").read_bytes(), "clean")
    assert meta["totalFilesDeleted"] == len(res.deleted) and meta["version"] == 2
    assert meta["startCleanTime"] == res.instant
    names = {n for pm in meta["partitionMetadata"].values() for n in pm["successDeleteFiles"]}
    assert names == {os.path.basename(p) for p in res.deleted}
    if policy == KEEP_LATEST_COMMITS:
        assert plan["earliestInstantToRetain"]["timestamp"] == meta["earliestCommitToRetain"]
        assert plan["earliestInstantToRetain"]["state"] == "COMPLETED"
    else:
        assert plan["earliestInstantToRetain"] is None and meta["earliestCommitToRetain"] == ""
    assert t.timeline.clean_metadata(t.timeline.instant(res.instant, "clean")).total_files_deleted == len(gone)

    # Nothing left to clean, and the table keeps working.
    assert t.clean(policy, 1).files == ()
    t.write(rows([1, 2, 40], 99, 5000))
    assert t.refresh().read().num_rows == snap.num_rows + 1


def test_clean_keeps_what_a_pending_compaction_needs(tmp_path: Path) -> None:
    t, _ = build_with_compactions(tmp_path / "t", "symlink", rounds=2)
    t.write(rows(range(0, 10), 50, 2000))
    c = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=BASE + 1900), link_mode="symlink")
    assert c is not None
    snap = t.read()
    needed: set[str] = set()
    for op in c.plan.operations:
        p = op.partition_path
        names = [op.data_file, *op.delta_files, *(x.target for x in op.links)]
        needed.update(f"{p}/{n}" for n in names if n)
    for policy in (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS):
        res = t.clean(policy, 1, dry_run=False)
        assert not needed & set(res.deleted)
        assert all(os.path.exists(t.storage.full_path(p)) for p in needed)
        same(t.refresh().read(), snap, f"snapshot after {policy} clean with a pending compaction")
    run_compaction(t, c.instant)
    same(t.refresh().read(), snap, "snapshot after running the plan")
    same(hudi_rs(t.path), snap, "hudi-rs after running the plan")
    assert dangling_symlinks(t.path) == []


def test_nothing_to_clean_writes_nothing(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "commit_time")
    t.write(rows([1, 2], 1, 10))
    t.write(rows([2, 3], 2, 20))
    before = timeline_names(t)
    res = t.clean(retained=10, dry_run=False)
    assert res.instant is None and res.files == () and timeline_names(t) == before
    res = t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    assert res.instant is None and timeline_names(t) == before


def test_time_travel_before_the_retained_commit_is_refused(tmp_path: Path) -> None:
    t, _ = build_with_compactions(tmp_path / "t", "copy")
    commits = [i.time for i in t.timeline.completed_commits()]
    res = t.clean(KEEP_LATEST_COMMITS, 2, dry_run=False)
    ectr = res.earliest_commit_to_retain
    assert res.instant is not None and res.deleted
    assert ectr is not None and ectr == commits[len(commits) - 2]
    assert earliest_retained(t.timeline, t.view) == ectr
    older = [c for c in commits if c < ectr][-1]
    with pytest.raises(ReadError, match=rf"earliest instant still readable is {ectr}"):
        t.read(as_of=older)
    with pytest.raises(ReadError):  # every query type goes through the same check
        t.read("read_optimized", as_of=older)
    with pytest.raises(ReadError, match=rf"earliest instant still readable is {ectr}"):
        t.read("incremental", begin="0" * 17, end=older)
    check_readable_at(t.timeline, t.view, ectr, t.path, "time travel")  # at the ECTR the files are all there
    assert missing_live_files(t) == []
    for as_of in (c for c in commits if c >= ectr):
        t.read(as_of=as_of)  # readable, nothing missing


def test_file_versions_clean_bounds_time_travel_too(tmp_path: Path) -> None:
    t, _ = build_with_compactions(tmp_path / "t", "copy", rounds=2)
    first = t.timeline.completed_commits()[0].time
    t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    bound = earliest_retained(t.timeline, t.view)
    assert bound is not None and bound > first
    with pytest.raises(ReadError):
        t.read(as_of=first)
    t.read(as_of=bound)


def test_a_clean_left_pending_is_finished_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t, _ = build_with_compactions(tmp_path / "t", "symlink", rounds=2)
    snap = t.read()
    dry = t.clean(KEEP_LATEST_FILE_VERSIONS, 1)

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("cleaner died")

    monkeypatch.setattr(clean_service, "_finish", crash)
    with pytest.raises(RuntimeError):
        t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    monkeypatch.undo()
    pending = [n for n in timeline_names(t) if n.endswith((".clean.requested", ".clean.inflight"))]
    assert len(pending) == 2
    assert set(t.clean().files) == set(dry.files)  # the dry run reports the pending plan
    res = t.clean(KEEP_LATEST_COMMITS, 5, dry_run=False)
    assert res.resumed and set(res.deleted) == set(dry.files)
    same(t.refresh().read(), snap, "snapshot after the resumed clean")
    assert dangling_symlinks(t.path) == []


def test_a_clean_killed_at_any_delete_leaves_no_link_pointing_at_a_deleted_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clean that deletes a whole chain of links (C3.log.2 → C2.log.2 → C1.log.2 → log 2, every slice of the chain
    superseded by a full compaction) deletes each link before what it points at: killed at any of its deletes, it
    leaves no link dangling, the snapshot unchanged, and the next clean finishes it. (Deleting the symlinks in path
    order removed C2's link before C3's, which then dangled until the clean ran again.)"""
    src, _ = build_with_compactions(tmp_path / "src", "symlink")
    t_src = evt.HudiTable.open(src.path)
    c = schedule_compaction(t_src, UnBoundedCompactionStrategy())
    assert c is not None
    run_compaction(t_src, c.instant)
    snap = t_src.refresh().read()
    planned = set(t_src.clean(KEEP_LATEST_FILE_VERSIONS, 1).files)
    chained = [
        p
        for p in planned
        if os.path.islink(full := os.path.join(src.path, p))
        and os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(full))) in planned
        and os.path.islink(os.path.join(src.path, os.path.dirname(p), os.readlink(full)))
    ]
    assert chained, "the clean must delete a link whose target is another link it deletes"
    original_delete = TableStorage.delete_file
    crashed_at = 0
    for n in range(1, len(planned) + 2):
        work = tmp_path / f"k{n}"
        shutil.copytree(src.path, work, symlinks=True)
        t = evt.HudiTable.open(work)
        calls = [0]

        def dying(self: TableStorage, rel: str, *, at: int = n, calls: list[int] = calls) -> None:
            calls[0] += 1
            if calls[0] == at:
                raise Crash(f"cleaner killed at delete {at}")
            original_delete(self, rel)

        monkeypatch.setattr(TableStorage, "delete_file", dying)
        try:
            t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
        except Crash:
            crashed_at = n
        finally:
            monkeypatch.undo()
        t.refresh()
        assert visible_dangling_symlinks(t) == [], f"killed at delete {n}"
        assert missing_live_files(t) == [], f"killed at delete {n}"
        same(t.read(), snap, f"snapshot after the clean killed at delete {n}")
        t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)  # finishes a pending clean
        same(t.refresh().read(), snap, f"snapshot after the clean killed at delete {n} was finished")
        assert dangling_symlinks(t.path) == [] and not planned & data_files(t.path)
        if crashed_at < n:
            break  # this clean ran to its end: every delete was a point to be killed at
    assert crashed_at >= len(chained) + 1


# -- random histories --------------------------------------------------------------------------------------------------

_step = st.one_of(
    st.tuples(st.just("write"), st.lists(st.integers(0, 19), min_size=1, max_size=6, unique=True), st.integers(0, 900)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 19), min_size=1, max_size=3, unique=True), st.just(0)),
    st.tuples(st.just("failed_write"), st.lists(st.integers(0, 19), min_size=1, max_size=6, unique=True), st.just(0)),
    st.tuples(st.just("schedule"), st.just([]), st.integers(0, 900)),
    st.tuples(st.just("run"), st.just([]), st.just(0)),
    st.tuples(st.just("clean_commits"), st.just([]), st.integers(1, 3)),
    st.tuples(st.just("clean_versions"), st.just([]), st.integers(1, 3)),
)


@seed(20250401)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(_step, min_size=4, max_size=14),
    link_mode=st.sampled_from(["copy", "symlink"]),
    link_timing=st.sampled_from(["schedule", "execute"]),
)
def test_random_histories_with_clean_and_rollback(
    steps: list[tuple[str, list[int], int]], link_mode: str, link_timing: str
) -> None:
    root = Path(tempfile.mkdtemp(prefix="evt-svc-"))
    try:
        t = create(root / "t", "commit_time")
        oracle = Oracle(["id"], ["region"], "ts", "commit_time")
        t.write(rows(range(0, 12), 0, 50))
        oracle.apply("upsert", rows(range(0, 12), 0, 50))
        pending: str | None = None
        for ts, (kind, ids, n) in enumerate(steps, start=1):
            if kind == "write":
                batch = rows(ids, ts, [n + 37 * i for i in range(len(ids))])
                t.write(batch)
                oracle.apply("upsert", batch)
            elif kind == "delete":
                t.write(deletes(ids, ts), "delete")
                oracle.apply("delete", deletes(ids, ts))
            elif kind == "failed_write":
                failed = failed_write(t, rows(ids, ts, 10))
                res = t.rollback(failed)
                assert not [x for x in timeline_names(t) if x.startswith(failed)]
                assert res.target == failed
            elif kind == "schedule" and pending is None:
                try:
                    c = schedule_compaction(
                        t,
                        EventTimeBasedCompactionStrategy(threshold=BASE + n),
                        link_mode=link_mode,
                        link_timing=link_timing,
                    )
                except PendingTableServiceError:
                    c = None
                pending = c.instant if c is not None else None
            elif kind == "run" and pending is not None:
                run_compaction(t, pending)
                pending = None
            elif kind in ("clean_commits", "clean_versions"):
                policy = KEEP_LATEST_COMMITS if kind == "clean_commits" else KEEP_LATEST_FILE_VERSIONS
                dry = t.clean(policy, n)
                before = data_files(t.path)
                cleaned = t.clean(policy, n, dry_run=False)
                assert set(cleaned.deleted) == set(dry.files) == before - data_files(t.path)
            same(t.refresh().read(), _oracle_table(oracle), f"snapshot vs oracle after {kind}")
            assert missing_live_files(t) == [], kind
            assert dangling_symlinks(t.path) == [], kind
        if pending is not None:  # hudi-rs drops v6 logs named with a pending compaction (hudi-rs-notes.md)
            run_compaction(t, pending)
        same(hudi_rs(t.path), _oracle_table(oracle), "hudi-rs vs oracle at the end")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _oracle_table(oracle: Oracle) -> pa.Table:
    return pa.Table.from_pandas(oracle.result(), preserve_index=False)
