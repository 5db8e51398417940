"""Incremental consumers at a checkpoint: regression tests, one per defect, each named after what it protects.

A consumer pulls ``(checkpoint, end]`` and keeps ``end`` as its next checkpoint. Each test drives a write that is
pending while the consumer pulls (paused between its logs and its completed file while another write completes and
the consumer reads through a second handle), and checks that no window the consumer is given ever changes later:
a window whose answer a pending write would change is refused with a ``ReadError`` naming that write, a window
that does not reach it is answered, and once the write completes the consumer's next windows deliver its records.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
import evt_toolkit.write.writer as writer_module
from evt_toolkit.errors import ReadError
from tests.tables import create, rows


def _ids(t: pa.Table) -> list[int]:
    return sorted(t["id"].to_pylist())


def _paused_write(t: evt.HudiTable, df: Any, meanwhile: Callable[[], None]) -> str:
    """Write ``df`` on ``t``, running ``meanwhile`` after its logs are written and before it completes."""
    real = writer_module.local_executor

    def executor(spec: Any, tasks: Any) -> Any:
        out = real(spec, tasks)
        meanwhile()
        return out

    return t.write(df, executor=executor)


def _end(t: evt.HudiTable) -> str:
    """The checkpoint a consumer keeps after pulling up to the latest commit: its instant (requested time on timeline
    layout 1, completion time on layout 2, the times incremental windows bound)."""
    last = max(
        t.timeline.completed_commits(),
        key=lambda i: (i.completion_time or i.time) if t.config.timeline_layout >= 2 else i.time,
    )
    return (last.completion_time or last.time) if t.config.timeline_layout >= 2 else last.time


@pytest.mark.parametrize("version", [6, 9])
def test_a_window_reaching_past_a_pending_write_is_refused_not_answered_without_it(
    tmp_path: Path, version: int
) -> None:
    """On timeline layout 1 windows bound requested times: a write requested before the consumer's checkpoint that
    completes after it was silently skipped by every later window (Hudi's incremental relations fail on such a
    "hollow commit" by default). The window is refused while the write is pending; on layout 2 (completion times)
    the write lands in a later window and the pull is answered."""
    t = create(tmp_path / "t", "commit_time", table_version=version)
    consumer = evt.HudiTable.open(t.path)
    other = evt.HudiTable.open(t.path)
    first = t.write(rows([0, 1], 1, 100))
    checkpoint = _end(consumer.refresh())
    pulled: dict[str, Any] = {}

    def meanwhile() -> None:
        pending = [i.time for i in other.refresh().timeline.inflight_writes()]
        assert len(pending) == 1
        pulled["pending"] = pending[0]
        other.write(rows([5], 3, 100))
        c = consumer.refresh()
        pulled["end"] = _end(c)
        try:
            pulled["open"] = _ids(c.read("incremental", begin=checkpoint))
        except ReadError as exc:
            pulled["open"] = exc
        try:
            pulled["closed"] = _ids(c.read("incremental", begin=checkpoint, end=pulled["end"]))
        except ReadError as exc:
            pulled["closed"] = exc
        # A window that ends before the pending write is settled: answered.
        pulled["before"] = _ids(c.read("incremental", begin="earliest", end=checkpoint))

    middle = _paused_write(t, rows([2], 2, 100), meanwhile)  # region r0; the other write's key 5 is in r1
    assert pulled["pending"] == middle
    assert pulled["before"] == [0, 1]
    c = consumer.refresh()
    if version == 6:
        for key in ("open", "closed"):
            assert isinstance(pulled[key], ReadError), f"{key} window over pending {middle}: {pulled[key]}"
            assert middle in str(pulled[key]) and "has not completed" in str(pulled[key])
        # The consumer kept its checkpoint; now that the write completed it gets every record.
        assert _ids(c.read("incremental", begin=checkpoint)) == [2, 5]
    else:
        assert pulled["open"] == pulled["closed"] == [5]
        assert _ids(c.read("incremental", begin=pulled["end"])) == [2]
    assert first < middle


def test_a_failed_write_bounds_windows_until_it_is_rolled_back(tmp_path: Path) -> None:
    """A failed write left inflight on layout 1 refuses the windows over it (its records would count once a retry
    completes it, and the consumer's checkpoint would have passed it); rolled back, the windows are answered."""
    from tests.services import failed_write

    t = create(tmp_path / "t", "commit_time", table_version=6)
    cp = t.write(rows([0], 1, 100))
    failed = failed_write(t, rows([1], 2, 100))
    t.refresh().write(rows([2], 3, 100))
    with pytest.raises(ReadError, match=failed):
        t.refresh().read("incremental", begin=cp)
    t.refresh().rollback(failed)
    assert _ids(t.refresh().read("incremental", begin=cp)) == [2]


def test_a_window_over_a_pending_write_is_refused_through_spark(tmp_path: Path, spark: Any) -> None:
    """The ``hudi_evt`` Spark source plans with the same planner: the same window is refused there too."""
    from tests.services import failed_write

    t = create(tmp_path / "t", "commit_time", table_version=6)
    cp = t.write(rows([0], 1, 100))
    failed = failed_write(t, rows([1], 2, 100))
    t.refresh().write(rows([2], 3, 100))

    def pull() -> list[int]:
        df = (
            spark.read.format("hudi_evt")
            .option("hoodie.datasource.query.type", "incremental")
            .option("hoodie.datasource.read.begin.instanttime", cp)
            .load(t.path)
        )
        return sorted(int(x) for x in df.select("id").toPandas()["id"])

    # Spark wraps an error of a Python data source's planning in an AnalysisException that carries it.
    with pytest.raises(Exception, match=f"ReadError: .*write {failed} was requested inside the window") as err:
        pull()
    assert "has not completed" in str(err.value)
    t.refresh().rollback(failed)
    assert pull() == [2]


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_that_took_its_instant_before_a_later_one_completed_never_lands_behind_a_reader(
    tmp_path: Path, version: int
) -> None:
    """A write takes its instant, then plans (lists the slices, looks keys up) before its ``requested`` file exists.
    Meanwhile a later write completed and a reader answered as of it, without the earlier write, which no timeline
    showed yet: once that one completed, its records landed in the incremental window the consumer had already
    pulled (layout 1) and in the time-travel state already answered (both layouts). A write whose instant a completed
    commit overtook before its ``requested`` file appeared takes a new instant instead."""
    t = create(tmp_path / "t", "commit_time", table_version=version)
    consumer = evt.HudiTable.open(t.path)
    other = evt.HudiTable.open(t.path)
    cp = _end(t) if t.write(rows([0, 1], 1, 100)) else "0"
    answered: dict[str, Any] = {}
    real = writer_module.new_instant_time
    calls: list[str] = []

    def paused_instant(*args: Any, **kwargs: Any) -> str:
        out = real(*args, **kwargs)
        calls.append(out)
        if len(calls) == 1:  # the paused write's instant: another write completes, a reader answers
            writer_module.new_instant_time = real  # type: ignore[assignment]
            answered["later"] = other.refresh().write(rows([5], 3, 100))
            c = consumer.refresh()
            answered["end"] = _end(c)
            answered["window"] = _ids(c.read("incremental", begin=cp, end=answered["end"]))
            answered["as_of"] = _ids(c.read(as_of=answered["later"]))
            writer_module.new_instant_time = paused_instant  # type: ignore[assignment]
        return out

    writer_module.new_instant_time = paused_instant  # type: ignore[assignment]
    try:
        late = t.refresh().write(rows([2, 3], 2, 100))
    finally:
        writer_module.new_instant_time = real  # type: ignore[assignment]
    c = consumer.refresh()
    assert _ids(c.read(as_of=answered["later"])) == answered["as_of"], "a time-travel answer changed"
    window = _ids(c.read("incremental", begin=cp, end=answered["end"]))
    assert window == answered["window"], f"the pulled window ({cp}, {answered['end']}] changed"
    assert _ids(c.read("incremental", begin=answered["end"])) == [2, 3], f"the consumer never gets {late}'s records"
    assert late > answered["later"]
