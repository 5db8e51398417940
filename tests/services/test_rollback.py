"""Rollback: failed deltacommits (deleted files, or a command block for a shared log), the last completed
deltacommit, inflight compactions (plan back to requested, then run again), refusals, and the instants Hudi writes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.merge_task import MergeTask
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.compaction.unschedule import unschedule_compaction
from evt_toolkit.compaction.validate import validate_compaction
from evt_toolkit.format.logfile import BlockType, HeaderKey, read_log_blocks_bytes
from evt_toolkit.format.metadata import decode_rollback_metadata, decode_rollback_plan
from evt_toolkit.format.names import LogFileName
from evt_toolkit.services import rollback as rollback_service
from evt_toolkit.services.rollback_planner import (
    BaseFacts,
    LogFacts,
    RollbackError,
    command_log_name,
    plan_deltacommit_rollback,
)
from tests.oracle import Oracle
from tests.services import Crash, data_files, failed_write, missing_live_files, timeline_names
from tests.tables import BASE, create, expected_ro, history, hudi_rs, rows, same

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")


def _hoodie(t: evt.HudiTable) -> Path:
    return Path(t.path) / ".hoodie"


def _rollback_files(t: evt.HudiTable, r: str) -> tuple[dict[str, Any], dict[str, Any]]:
    h = _hoodie(t)
    assert (h / f"{r}.rollback.inflight").read_bytes() == b""
    plan = decode_rollback_plan((h / f"{r}.rollback.requested").read_bytes(), "rollback.requested")
    meta = decode_rollback_metadata((h / f"{r}.rollback").read_bytes(), "rollback")
    return plan, meta


# -- the planner -------------------------------------------------------------------------------------------------------


def test_planner_deletes_own_files_and_appends_a_command_block_to_shared_logs() -> None:
    own = LogFacts("p", "p/.f_1.log.3_0-0-0", "f", "1", 3, 10, ("9",))
    shared = LogFacts("p", "p/.g_1.log.1_0-0-0", "g", "1", 1, 20, ("5", "9"))
    other = LogFacts("p", "p/.f_1.log.2_0-0-0", "f", "1", 2, 10, ("5",))
    new_base = BaseFacts("p", "p/h_0-0-0_9.parquet", "h", "9")
    old_base = BaseFacts("p", "p/f_0-0-0_1.parquet", "f", "1")
    reqs = plan_deltacommit_rollback("9", [own, shared, other], [new_base, old_base])
    assert [(r.file_id, r.files_to_delete, r.needs_command_block) for r in reqs] == [
        ("f", ("p/.f_1.log.3_0-0-0",), False),
        ("h", ("p/h_0-0-0_9.parquet",), False),
        ("g", (), True),
    ]
    assert reqs[2].log_blocks_to_delete == (("p/.g_1.log.1_0-0-0", 20),)
    assert command_log_name("g", "1", [1]) == ".g_1.log.2_1-0-1"


# -- failed deltacommits -----------------------------------------------------------------------------------------------


def test_failed_write_is_rolled_back(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "commit_time", buckets=4)
    oracle = Oracle(["id"], ["region"], "ts", "commit_time")
    for batch in (rows(range(0, 12), 1, 100), rows(range(6, 18), 2, 200)):
        t.write(batch)
        oracle.apply("upsert", batch)
    snap, rs = t.read(), hudi_rs(t.path)
    files_before = data_files(t.path)
    # Existing keys (their groups get a new log) and new keys in new buckets (new log-only file groups).
    failed = failed_write(t, rows([*range(0, 6), *range(100, 140)], 3, 300), tasks_before_crash=3)
    after_failure = data_files(t.path)
    assert after_failure - files_before  # it wrote files before dying
    assert list((_hoodie(t) / ".temp" / failed).rglob("*.marker.APPEND"))

    res = t.rollback(failed)
    assert res.target == failed and res.target_action == "deltacommit" and not res.command_block_logs
    assert set(res.deleted) == after_failure - files_before
    assert data_files(t.path) == files_before, "every file of the failed write is gone, nothing else"
    assert not [n for n in timeline_names(t) if n.startswith(failed)]
    assert {f"{res.instant}.rollback.requested", f"{res.instant}.rollback.inflight", f"{res.instant}.rollback"} <= (
        timeline_names(t)
    )
    assert not (_hoodie(t) / ".temp" / failed).exists()
    plan, meta = _rollback_files(t, res.instant)
    assert plan["instantToRollback"] == {"commitTime": failed, "action": "deltacommit"} and plan["version"] == 1
    planned = {p for r in plan["RollbackRequests"] for p in r["filesToBeDeleted"]}
    assert planned == {"file:" + t.storage.full_path(p) for p in res.deleted}
    assert meta["commitsRollback"] == [failed] and meta["totalFilesDeleted"] == len(res.deleted)
    assert meta["instantsRollback"] == [{"commitTime": failed, "action": "deltacommit"}]
    done = {p for pm in meta["partitionMetadata"].values() for p in pm["successDeleteFiles"]}
    assert done == planned

    same(t.refresh().read(), snap, "ours after rollback")
    same(hudi_rs(t.path), rs, "hudi-rs after rollback")
    nxt = rows([0, 1, 200], 4, 400)
    t.write(nxt)
    oracle.apply("upsert", nxt)
    expected = pa.Table.from_pandas(oracle.result(), preserve_index=False)
    same(t.refresh().read(), expected, "next write after rollback")
    same(hudi_rs(t.path), expected, "hudi-rs after the next write")


def test_shared_log_gets_a_rollback_command_block(tmp_path: Path) -> None:
    """Storage with append (HDFS): the failed instant appended its blocks to a log an earlier commit wrote."""
    t = create(tmp_path / "t", "commit_time", buckets=1)
    t.write(rows(range(0, 8), 1, 100))
    snap, rs = t.read(), hudi_rs(t.path)
    before = data_files(t.path)
    failed = failed_write(t, rows(range(0, 8), 2, 200), tasks_before_crash=2)
    new = sorted(data_files(t.path) - before)
    assert new
    # Emulate append: move each new log's blocks onto the end of the slice's existing log.
    shared = []
    for rel in new:
        parsed = LogFileName.parse(os.path.basename(rel))
        assert parsed is not None
        partition = os.path.dirname(rel)
        target = next(
            p
            for p in sorted(before)
            if os.path.dirname(p) == partition and os.path.basename(p).startswith(f".{parsed.file_id}_")
        )
        with open(t.storage.full_path(target), "ab") as out:
            out.write(Path(t.storage.full_path(rel)).read_bytes())
        os.unlink(t.storage.full_path(rel))
        shared.append(target)
    t.refresh()
    same(t.read(), snap, "ours with the failed blocks inside a committed log")

    res = t.rollback(failed)
    assert res.deleted == () and len(res.command_block_logs) == len(shared)
    for log in res.command_block_logs:
        parsed = LogFileName.parse(os.path.basename(log))
        assert parsed is not None and parsed.write_token == "1-0-1" and parsed.version == 2
        blocks = read_log_blocks_bytes(Path(t.storage.full_path(log)).read_bytes(), log)
        assert [b.block_type for b in blocks] == [BlockType.COMMAND]
        assert blocks[0].header[HeaderKey.INSTANT_TIME] == res.instant
        assert blocks[0].header[HeaderKey.TARGET_INSTANT_TIME] == failed
        assert blocks[0].header[HeaderKey.COMMAND_BLOCK_TYPE] == "0"
    for log in shared:
        assert os.path.exists(t.storage.full_path(log)), "a shared log is never deleted"
    plan, meta = _rollback_files(t, res.instant)
    reqs = plan["RollbackRequests"]
    assert reqs and all(r["filesToBeDeleted"] == [] and r["logBlocksToBeDeleted"] for r in reqs)
    rollback_logs = {p for pm in meta["partitionMetadata"].values() for p in (pm["rollbackLogFiles"] or {})}
    assert rollback_logs == {"file:" + t.storage.full_path(p) for p in res.command_block_logs}
    same(t.refresh().read(), snap, "ours after the command block")
    same(hudi_rs(t.path), rs, "hudi-rs after the command block")
    # A later commit makes the command block older than the query instant: both readers apply it.
    t.write(rows([50], 3, 300))
    after = t.refresh().read()
    assert after.num_rows == snap.num_rows + 1
    same(hudi_rs(t.path), after, "hudi-rs after the next write")


def test_last_completed_deltacommit_can_be_rolled_back_only_when_nothing_depends_on_it(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "commit_time")
    first = t.write(rows(range(0, 6), 1, 100))
    snap = t.read()
    files = data_files(t.path)
    second = t.write(rows(range(3, 9), 2, 200))
    with pytest.raises(RollbackError, match=rf"later instants depend on it \(deltacommit {second}\)"):
        t.rollback(first)
    res = t.rollback(second)
    assert not [n for n in timeline_names(t) if n.startswith(second)]
    assert data_files(t.path) == files
    same(t.refresh().read(), snap, "after rolling back the last commit")
    same(hudi_rs(t.path), snap, "hudi-rs after rolling back the last commit")
    assert res.deleted


def test_a_rollback_left_pending_is_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = create(tmp_path / "t", "commit_time")
    t.write(rows(range(0, 6), 1, 100))
    snap, files = t.read(), data_files(t.path)
    failed = failed_write(t, rows(range(0, 20), 2, 200), tasks_before_crash=2)

    def crash(*args: object, **kwargs: object) -> None:
        raise Crash("rollback died")

    monkeypatch.setattr(rollback_service, "_execute", crash)
    with pytest.raises(Crash):
        t.rollback(failed)
    monkeypatch.undo()
    assert [n for n in timeline_names(t) if n.endswith(".rollback.requested")]
    res = t.rollback(failed)
    assert res.resumed and data_files(t.path) == files
    assert not [n for n in timeline_names(t) if n.startswith(failed)]
    same(t.refresh().read(), snap, "after the resumed rollback")


# -- compactions -------------------------------------------------------------------------------------------------------


def _die_on_second_task(task: MergeTask, stage: str) -> None:
    if task.index == 1 and stage == "written":
        raise Crash("compaction task lost")


@pytest.mark.parametrize(("link_mode", "link_timing"), [("copy", "schedule"), ("symlink", "execute")])
def test_inflight_compaction_rollback_then_rerun(tmp_path: Path, link_mode: str, link_timing: str) -> None:
    t = create(tmp_path / "t", "event_time")
    history(t)
    snap = t.read()
    c = schedule_compaction(
        t, EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode=link_mode, link_timing=link_timing
    )
    assert c is not None and c.operations >= 2 and c.links
    want_ro = expected_ro(t, c.instant)
    with pytest.raises(Crash):
        run_compaction(t, c.instant, fault_hook=_die_on_second_task)
    h = _hoodie(t)
    assert (h / f"{c.instant}.compaction.inflight").exists()
    outputs = {p for p in data_files(t.path) if f"_{c.instant}.parquet" in p}
    assert outputs
    link_paths = {link.symlink_path for link in c.links}
    assert all(os.path.lexists(t.storage.full_path(p)) for p in link_paths)

    res = t.rollback(c.instant)
    assert res.target_action == "compaction" and res.plan_requested_again
    assert not (h / f"{c.instant}.compaction.inflight").exists()
    assert (h / f"{c.instant}.compaction.requested").exists()
    assert t.refresh().timeline.instant(c.instant).is_requested
    assert outputs <= set(res.deleted)
    assert not [p for p in data_files(t.path) if f"_{c.instant}.parquet" in p]
    kept_links = {p for p in link_paths if os.path.lexists(t.storage.full_path(p))}
    assert kept_links == (link_paths if link_timing == "schedule" else set())
    plan, meta = _rollback_files(t, res.instant)
    assert plan["instantToRollback"] == {"commitTime": c.instant, "action": "compaction"}
    assert meta["commitsRollback"] == [c.instant]
    same(t.read(), snap, "ours after the compaction rollback")
    assert missing_live_files(t) == []

    run_compaction(t, c.instant)
    same(t.refresh().read(), snap, "ours after the re-run")
    same(hudi_rs(t.path), snap, "hudi-rs after the re-run")
    same(t.read("read_optimized"), want_ro, "RO of the re-run = base ⊕ compacted prefix")
    assert validate_compaction(t, c.instant).ok


def test_requested_and_completed_compactions_are_refused_and_unschedule_removes_links(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "commit_time")
    history(t)
    snap = t.read()
    c = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode="symlink")
    assert c is not None and c.links
    with pytest.raises(RollbackError, match="unschedule"):
        t.rollback(c.instant)
    report = unschedule_compaction(t, c.instant, dry_run=False)
    assert report.deleted
    assert not any(os.path.lexists(t.storage.full_path(link.symlink_path)) for link in c.links)
    assert not (_hoodie(t) / f"{c.instant}.compaction.requested").exists()
    same(t.refresh().read(), snap, "after unschedule")

    c2 = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode="copy")
    assert c2 is not None
    run_compaction(t, c2.instant)
    with pytest.raises(RollbackError, match=f"completed commit {c2.instant}"):
        t.rollback(c2.instant)
    with pytest.raises(RollbackError, match="no write or compaction instant"):
        t.rollback("20000101000000000")
