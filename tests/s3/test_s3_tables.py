"""Tables on S3 (a moto server on 127.0.0.1): every query type against a local twin and hudi-rs, write request
shapes, copy-mode compaction with server-side copies, clean, rollback, kill -9 and racing creators."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.compaction.validate import validate_compaction
from evt_toolkit.storage import count_requests
from evt_toolkit.storage.links import create_links
from evt_toolkit.storage.temporary import is_temporary_name
from tests.conftest import S3Server
from tests.faults import oracle_of
from tests.s3.conftest import create_s3, hudi_rs_s3, run_child
from tests.tables import BASE, create, deletes, rows, same

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

T = BASE + 300
HISTORY = [
    ("upsert", rows(range(0, 20), 10, 100)),
    ("upsert", rows(range(10, 30), 20, 150)),
    ("delete", deletes([1, 2, 7], 30)),
    ("upsert", rows(range(3, 12), 25, 200)),
    ("upsert", rows(range(25, 40), 40, 400)),
    ("upsert", rows([1, 2, 4], 5, 450)),
]
BATCH = rows([0, 3, 8, 21, 38, 50, 51], 70, 250)


def _strategy() -> EventTimeBasedCompactionStrategy:
    return EventTimeBasedCompactionStrategy(threshold=T)


def _written(s3_server: S3Server, bucket: str, tmp_path: Path) -> tuple[evt.HudiTable, evt.HudiTable]:
    """The same history written to S3 and to a local twin."""
    s3 = create_s3(f"s3a://{bucket}/lake/t", s3_server.options)
    local = create(tmp_path / "twin", "event_time")
    for op, df in HISTORY:
        s3.write(df, op)
        local.write(df, op)
    return s3, local


def _check(t: evt.HudiTable, options: dict[str, str], expected: object, what: str) -> None:
    t.refresh()
    same(t.read(), expected, f"{what}: our snapshot")  # type: ignore[arg-type]
    same(hudi_rs_s3(t.path, options), expected, f"{what}: hudi-rs snapshot on S3")  # type: ignore[arg-type]
    same(hudi_rs_s3(t.path, options, ro=True), t.read("read_optimized"), f"{what}: RO ours vs hudi-rs")


def test_every_query_type_equals_local_twin_and_hudi_rs(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    s3, local = _written(s3_server, s3_bucket, tmp_path)
    expected = oracle_of(HISTORY)
    _check(s3, s3_server.options, expected, "written")
    same(s3.read("read_optimized"), local.read("read_optimized"), "RO")
    commits = [i.time for i in s3.timeline.completed_commits()]
    lcommits = [i.time for i in local.timeline.completed_commits()]
    for k in (1, 3):
        same(s3.read(as_of=commits[k]), local.read(as_of=lcommits[k]), f"time travel to commit {k}")
        same(
            s3.read("incremental", begin=commits[k - 1], end=commits[k + 1]),
            local.read("incremental", begin=lcommits[k - 1], end=lcommits[k + 1]),
            f"incremental window {k}",
        )
    assert s3.file_slices().num_rows == local.file_slices().num_rows
    blocks = s3.inspect.log_blocks(event_time_field="ev")
    assert blocks.num_rows == local.inspect.log_blocks(event_time_field="ev").num_rows > 0
    same(
        s3.read(columns=["id", "region", "ts", "ev", "v"]),
        local.read(columns=["id", "region", "ts", "ev", "v"]),
        "projection",
    )


def test_open_s3a_with_storage_options_and_missing_table(s3_server: S3Server, s3_bucket: str) -> None:
    create_s3(f"s3a://{s3_bucket}/tables/a", s3_server.options).write(rows(range(3), 1, 10))
    # A new process state: open by URI with options (what a notebook does), s3 and s3a alike.
    from evt_toolkit.storage import fs as storage_fs

    storage_fs._REGISTRY.clear()
    for scheme in ("s3a", "s3"):
        t = evt.HudiTable.open(f"{scheme}://{s3_bucket}/tables/a", storage_options=s3_server.options)
        assert t.read().num_rows == 3
        assert t.path == f"{scheme}://{s3_bucket}/tables/a"
        assert s3_server.options["aws_secret_access_key"] not in repr(t)
    with pytest.raises(evt.EvtError, match=rf"s3a://{s3_bucket}/tables/nope/.hoodie/hoodie.properties"):
        evt.HudiTable.open(f"s3a://{s3_bucket}/tables/nope", storage_options=s3_server.options)
    with pytest.raises(evt.EvtError, match=r"s3a://no-bucket-evt/tables/a"):
        evt.HudiTable.open("s3a://no-bucket-evt/tables/a", storage_options=s3_server.options)


def test_write_is_single_puts_without_copy_or_delete(s3_server: S3Server, s3_bucket: str) -> None:
    t = create_s3(f"s3a://{s3_bucket}/w/t", s3_server.options)
    t.write(rows(range(0, 20), 10, 100))
    with count_requests() as c:
        instant = t.write(BATCH)
    got = c.counts()
    assert got.copy == 0 and got.delete == 0, got
    # requested, inflight, completed + per touched file group: one ownership record (written before the file), one
    # log file, one Hudi marker; no temporary objects.
    assert got.put <= 3 + 3 * 4 + 2, got
    keys = {f.path for f in t.storage.list_files("")}
    temporary = [k for k in keys if is_temporary_name(k.rsplit("/", 1)[-1]) or k.endswith("/")]
    assert not temporary, "no temporary or folder-marker objects"
    assert f".hoodie/{instant}.deltacommit" in keys


def test_copy_mode_compaction_clean_and_server_side_links(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    t, _ = _written(s3_server, s3_bucket, tmp_path)
    expected = oracle_of(HISTORY)
    c = schedule_compaction(t, _strategy(), link_mode="copy", link_timing="execute")
    assert c is not None
    plan = t.refresh().timeline.compaction_plan(next(i for i in t.timeline.instants if i.time == c.instant))
    links = list(plan.links)
    assert links, "the plan leaves logs behind"
    linked = sum(t.storage.size(link.target_path) for link in links)
    with count_requests() as cnt:
        create_links(t.storage, links)
    got = cnt.counts()
    assert got.copy == len(links)
    assert got.bytes_read + got.bytes_written <= 0.05 * linked, (got, linked)
    run_compaction(t, c.instant)
    assert validate_compaction(t, c.instant).ok
    _check(t, s3_server.options, expected, "compacted")
    t.write(BATCH)
    after = oracle_of([*HISTORY, ("upsert", BATCH)])
    _check(t, s3_server.options, after, "written after compaction")
    res = t.clean("KEEP_LATEST_FILE_VERSIONS", 1, dry_run=False)
    assert res.files, "the old slices were cleaned"
    _check(t, s3_server.options, after, "cleaned")


def _wait(proc: object) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)  # type: ignore[attr-defined]
    return proc.returncode, out, err  # type: ignore[attr-defined]


@pytest.mark.parametrize("fault", ["write.after_task", "write.before_complete"])
def test_killed_write_then_rollback(s3_server: S3Server, s3_bucket: str, tmp_path: Path, fault: str) -> None:
    t, _ = _written(s3_server, s3_bucket, tmp_path)
    batch = tmp_path / "batch.parquet"
    pq.write_table(__import__("pyarrow").Table.from_pandas(BATCH, preserve_index=False), batch)
    code, _, err = _wait(run_child(t.path, s3_server.options, fault, "write", str(batch), "upsert"))
    assert code == -9, err[-2000:]
    expected = oracle_of(HISTORY)
    _check(t, s3_server.options, expected, "killed write is invisible")
    failed = [i for i in t.timeline.instants if not i.is_completed]
    assert len(failed) == 1
    t.rollback(failed[0].time)
    _check(t, s3_server.options, expected, "rolled back")
    t.write(BATCH)
    _check(t, s3_server.options, oracle_of([*HISTORY, ("upsert", BATCH)]), "next write")


@pytest.mark.parametrize(
    ("fault", "timing"),
    [("links.after_link", "schedule"), ("run.after_task", "schedule"), ("run.before_commit", "execute")],
)
def test_killed_compaction_recovers(
    s3_server: S3Server, s3_bucket: str, tmp_path: Path, fault: str, timing: str
) -> None:
    t, _ = _written(s3_server, s3_bucket, tmp_path)
    expected = oracle_of(HISTORY)
    if fault.startswith("links"):
        code, _, err = _wait(run_child(t.path, s3_server.options, fault, "schedule", str(T), "copy", timing))
        assert code == -9, err[-2000:]
        _check(t, s3_server.options, expected, "links without a plan are invisible")
        c = schedule_compaction(t, _strategy(), link_mode="copy", link_timing=timing)
        assert c is not None
    else:
        c = schedule_compaction(t, _strategy(), link_mode="copy", link_timing=timing)
        assert c is not None
        code, _, err = _wait(run_child(t.path, s3_server.options, fault, "run", c.instant))
        assert code == -9, err[-2000:]
        _check(t, s3_server.options, expected, "killed run: old slices serve reads")
        t.rollback(c.instant)
        _check(t, s3_server.options, expected, "rolled back")
    run_compaction(t.refresh(), c.instant)
    assert validate_compaction(t, c.instant).ok
    _check(t, s3_server.options, expected, "recovered and compacted")


def test_two_schedulers_race_for_one_instant(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    t, _ = _written(s3_server, s3_bucket, tmp_path)
    instant = time.strftime("%Y%m%d%H%M%S", time.gmtime(time.time() + 60)) + "999"  # after every write
    start = time.time() + 15
    procs = [
        run_child(t.path, s3_server.options, None, "schedule", str(T), "copy", "schedule", instant, start_at=start)
        for _ in range(2)
    ]
    results = [_wait(p) for p in procs]
    ok = [r for r in results if r[0] == 0]
    failed = [r for r in results if r[0] != 0]
    assert len(ok) == 1 and len(failed) == 1, "\n\n".join(f"exit {r[0]}: {r[2][-1500:]}" for r in results)
    # Started together, the loser's create-only PUT of the plan fails; on a machine too loaded to start them together
    # the later one sees the winner's plan first and is refused before writing. Either way: one plan, a clear error.
    err = failed[0][2]
    assert (
        "ObjectExistsError" in err and f"{t.path}/.hoodie/{instant}.compaction.requested" in err
    ) or f"compaction {instant}" in err, err[-1500:]
    t.refresh()
    assert [i.time for i in t.timeline.instants if i.action == "compaction"] == [instant]
    assert validate_compaction(t, instant).ok
    run_compaction(t, instant)
    _check(t, s3_server.options, oracle_of(HISTORY), "the winner's plan ran")


def test_two_writers_race_for_one_instant(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    import pyarrow as pa

    t, _ = _written(s3_server, s3_bucket, tmp_path)
    before = {f.path for f in t.storage.list_files("") if not f.path.startswith(".hoodie/")}
    a, b = rows([0, 1, 2, 60], 90, 600), rows([3, 4, 5, 61], 91, 610)
    pa_a, pa_b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.Table.from_pandas(a, preserve_index=False), pa_a)
    pq.write_table(pa.Table.from_pandas(b, preserve_index=False), pa_b)
    instant = time.strftime("%Y%m%d%H%M%S", time.gmtime(time.time() + 60)) + "998"  # after every write
    start = time.time() + 8
    procs = [
        run_child(t.path, s3_server.options, None, "write_at", str(p), "upsert", instant, start_at=start)
        for p in (pa_a, pa_b)
    ]
    results = [_wait(p) for p in procs]
    winners = [i for i, r in enumerate(results) if r[0] == 0]
    assert len(winners) == 1, [(r[0], r[2][-800:]) for r in results]
    loser = results[1 - winners[0]]
    assert "ObjectExistsError" in loser[2] and f"{t.path}/.hoodie/{instant}.deltacommit" in loser[2]
    won = (a, b)[winners[0]]
    _check(t, s3_server.options, oracle_of([*HISTORY, ("upsert", won)]), "only the winner wrote")
    after = {f.path for f in t.storage.list_files("") if not f.path.startswith(".hoodie/")}
    meta = t.timeline.commit_metadata(next(i for i in t.timeline.instants if i.time == instant))
    written = set(meta.paths())
    assert after - before == written, "the loser left no file behind"
