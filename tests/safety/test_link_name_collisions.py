"""A committed log that holds a name the plan gave one of its links is never taken for the link (table version 6).

On version 6 a compaction ``C`` links each leftover log into its new slice as ``.{fileId}_{C}.log.{v}_{token}``,
versions ``1..k`` with the target's own write token. With ``link_timing="execute"`` the links are made only by the
run. A writer that does not know the plan's links (stock Hudi: its first log in slice ``C`` is version 1) with the same
write token (``0-0-0``: the first task of a job) commits a log under exactly that name before the run. The run then
finds "a different file under the link's name" and refuses — but a record, or the plan's list of link names, must not
make that committed log the compaction's: the unschedule the run's error suggests, or a rollback of the failed run,
deleted it as a link, and the write's records were lost.

Each case builds the collision for real (the toolkit's writer with a stock writer's naming, through the ``executor``
hook), then runs the compaction, rolls it back and/or unschedules it, in copy and symlink mode, locally and on the
session's S3 server (copy mode). Checked after each step: the snapshot equals a plain model of the committed writes,
the committed log is still there, and the unschedule refuses naming it. hudi-rs drops the logs of a version-6 slice
whose compaction is pending (it reads no plan), so it is only asked once the write that took the link's name is
rolled back and the plan runs: then ours and hudi-rs give the model's answer without that write.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.errors import EvtError, PlanValidationError
from evt_toolkit.format.names import LogFileName
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import FileWritten, write_file_group
from tests.s3.conftest import hudi_rs_s3
from tests.tables import BASE, create, hudi_rs, rows, same


def _stock_named(spec: WriteJobSpec, items: list[tuple[FileGroupWrite, pa.Table, pa.Table]]) -> list[list[FileWritten]]:
    """A writer that does not know the plan's links: version 1 of the slice, write token ``0-0-0``."""
    out = []
    for fg, up, de in items:
        stock = dataclasses.replace(fg, log_version=1, existing_log_files=())
        out.append(write_file_group(spec, stock, up, de, 0, 0, 0))
    return out


def _logs_of(t: evt.HudiTable, instant: str) -> list[str]:
    """Paths of the logs named after slice ``instant``."""
    return sorted(
        f.path
        for f in t.storage.list_files("region=r1")
        if (n := LogFileName.parse(f.name)) is not None and n.base_instant == instant
    )


def _model(t: evt.HudiTable) -> dict[int, tuple[int, int]]:
    """``id -> (ts, event time offset)`` of the snapshot."""
    got = t.read().select(["id", "ts", "ev"]).to_pylist()
    return {r["id"]: (r["ts"], r["ev"] - BASE) for r in got}


def _scenario(t: evt.HudiTable, rs: Any, link_mode: str, steps: str) -> None:
    t.write(rows([1, 3], 10, 100))  # inside the prefix
    t.write(rows([1, 3], 20, 500))  # a leftover (event time > T): the plan links it into slice C
    plan = t.compaction.schedule(
        EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode=link_mode, link_timing="execute"
    )
    assert plan is not None
    c = plan.instant
    w = t.write(rows([1], 30, 600), executor=_stock_named)
    committed = _logs_of(t, c)
    assert len(committed) == 1, committed
    assert committed[0].endswith(".log.1_0-0-0"), f"the writer's log takes the name of the plan's link: {committed}"
    model = {1: (30, 600), 3: (20, 500)}
    assert _model(t.refresh()) == model

    def check(what: str) -> None:
        assert _logs_of(t.refresh(), c)[:1] == committed, f"{what}: the writer's committed log is gone"
        assert _model(t) == model, f"snapshot {what}"

    for step in steps.split("+"):
        if step == "run":
            with pytest.raises(PlanValidationError, match=r"\.log\.1_0-0-0"):
                t.refresh().compaction.run(c)
            check("after the run refused")
        elif step == "rollback":
            t.refresh().rollback(c)
            check("after rolling the run back")
        elif step == "unschedule":
            report = t.refresh().compaction.unschedule(c, dry_run=False)
            check("after the unschedule")
            assert not report.deleted, f"the unschedule took the plan back over a committed log: {report}"
            assert report.refused_reason and committed[0].rsplit("/", 1)[-1] in report.refused_reason, report
    # The way on: roll back the write that took the link's name; the plan then runs and changes no answer.
    t.refresh().rollback(w)
    t.refresh().compaction.run(c)
    want = t.refresh().read()
    assert _model(t) == {1: (20, 500), 3: (20, 500)}
    same(rs(), want, "hudi-rs once the plan ran")


STEPS = ["unschedule", "run+unschedule", "run+rollback+unschedule"]


@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
@pytest.mark.parametrize("steps", STEPS)
def test_a_committed_log_under_a_links_name_is_never_the_compactions(
    tmp_path: Path, link_mode: str, steps: str
) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    _scenario(t, lambda: hudi_rs(t.path), link_mode, steps)


@pytest.mark.parametrize("steps", STEPS[1:])
def test_a_committed_log_under_a_links_name_is_never_the_compactions_on_s3(s3_server: Any, steps: str) -> None:
    uri = f"s3://{s3_server.new_bucket('linknames')}/t"
    t = create(uri, "event_time", buckets=1, table_version=6, storage_options=s3_server.options)
    _scenario(t, lambda: hudi_rs_s3(uri, s3_server.options), "copy", steps)


def test_repair_leaves_a_committed_log_under_a_lost_schedule_time_links_name(tmp_path: Path) -> None:
    """A schedule-time link that was lost, whose name a writer's log then took: repair reports it, never records it."""
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    t.write(rows([1, 3], 10, 100))
    t.write(rows([1, 3], 20, 500))
    plan = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode="copy")
    assert plan is not None
    c = plan.instant
    [link] = _logs_of(t, c)
    (Path(t.path) / link).unlink()  # the link is lost
    t.write(rows([1], 30, 600), executor=_stock_named)
    assert _logs_of(t, c) == [link], "the writer's log takes the lost link's name"
    model = {1: (30, 600), 3: (20, 500)}
    assert _model(t.refresh()) == model
    report = t.compaction.repair(dry_run=False)
    assert any(link.rsplit("/", 1)[-1] in u for u in report.unrepairable), report
    assert _logs_of(t.refresh(), c) == [link]
    assert _model(t) == model
    for step in ("rollback", "unschedule"):
        if step == "rollback":
            with pytest.raises(EvtError):  # nothing of the plan's run to roll back
                t.refresh().rollback(c)
        else:
            assert not t.refresh().compaction.unschedule(c, dry_run=False).deleted
        assert _logs_of(t.refresh(), c) == [link], f"after {step}"
        assert _model(t) == model, f"after {step}"
