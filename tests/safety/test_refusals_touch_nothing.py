"""A refused operation leaves the table byte for byte as it was, abandoned schedules' links included.

Table services delete the links of schedules that died before writing their plan (``remove_abandoned_schedules``).
That clean-up is a change to the table, so it must come after every check that can refuse the operation: a refusal
(bad input, a pending table service, an instant that cannot be rolled back, ...) is a no-op.

Each case builds a real table (versions 6 and 9) with two writes, a scenario's own state (an inflight write, a pending
compaction) and the links of an abandoned schedule: a copy of a log named for an instant no timeline knows, its
schedule-phase ownership record, both older than the abandoned-schedule age rule (600 s, mtimes set back). Then it
runs one operation that must be refused and checks the ``EvtError`` type and that every file and folder under the
table — names, bytes, symlink targets and mtimes — is as before.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.schedule import abandoned_schedules
from evt_toolkit.errors import (
    CleanPolicyError,
    EventTimeError,
    EvtError,
    InvalidThresholdError,
    PendingTableServiceError,
    PlanValidationError,
    RollbackError,
    TimelineError,
    UnsupportedTableError,
)
from evt_toolkit.format.ownership import LINK, SCHEDULE, OwnedFile
from evt_toolkit.storage.ownership import record_folder, record_ownership
from tests.faults import assert_killed, run_child
from tests.tables import BASE, create, rows

_AGE_S = 700  # older than the abandoned-schedule age rule (600 s)


def _state(root: Path) -> dict[str, tuple[str, object, int]]:
    """Every entry under ``root``: kind, content (bytes or symlink target) and mtime, without following links."""
    out: dict[str, tuple[str, object, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p), st.st_mtime_ns)
            elif p.is_dir():
                out[rel] = ("dir", None, st.st_mtime_ns)
            else:
                out[rel] = ("file", p.read_bytes(), st.st_mtime_ns)
    return out


def _set_back(path: Path) -> None:
    st = path.lstat()
    os.utime(path, (st.st_atime - _AGE_S, st.st_mtime - _AGE_S), follow_symlinks=False)


def _abandon(t: evt.HudiTable) -> str:
    """Leave the links of a schedule that died before its plan; returns their instant."""
    root = Path(t.path)
    c = str(int(max(i.time for i in t.refresh().timeline.instants)) + 1)
    log = next(p for p in sorted(root.rglob(".*.log.*")) if ".hoodie" not in p.parts)
    name = re.sub(r"_(\d+)\.log\.", f"_{c}.log.", log.name)
    link = log.with_name(name)
    shutil.copy2(log, link)
    record_ownership(t.storage, c, SCHEDULE, "links", [OwnedFile(str(link.relative_to(root)), LINK)])
    _set_back(link)
    folder = root / record_folder(c)
    for p in folder.rglob("*"):
        _set_back(p)
    _set_back(folder)
    assert c in abandoned_schedules(t.refresh()), "the setup leaves an abandoned schedule"
    return c


def _timeline_dir(t: evt.HudiTable) -> Path:
    root = Path(t.path) / ".hoodie"
    return root / "timeline" if (root / "timeline").is_dir() else root


def _inflight_write(t: evt.HudiTable) -> None:
    w = str(int(max(i.time for i in t.refresh().timeline.instants)) + 1)
    for state in ("requested", "inflight"):
        (_timeline_dir(t) / f"{w}.deltacommit.{state}").write_bytes(b"")
    t.refresh()


def _pending_compaction(t: evt.HudiTable) -> None:
    assert t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300)) is not None


def _nothing(t: evt.HudiTable) -> None:
    pass


def _unsupported_feature(t: evt.HudiTable) -> None:
    """A stock table feature no writing operation keeps (parquet log blocks), as the table guard refuses."""
    props = Path(t.path) / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.table.log.file.format=PARQUET\n")


def _pending_rollback(t: evt.HudiTable) -> None:
    """A rollback of the last write killed once its plan was written (still committed, the rollback pending)."""
    assert_killed(run_child(Path(t.path), "rollback.after_requested", "rollback", _writes(t)[-1]))


def _pending_rollback_then_a_write(t: evt.HudiTable) -> None:
    """As :func:`_pending_rollback`, then a later write commits: the pending rollback can no longer finish."""
    _pending_rollback(t)
    t.refresh().write(rows([1, 3], 30, 200))


def _writes(t: evt.HudiTable) -> list[str]:
    return sorted(i.time for i in t.refresh().timeline.completed_commits())


def _instants(t: evt.HudiTable) -> list[str]:
    return sorted(i.time for i in t.refresh().timeline.instants)


ET = EventTimeBasedCompactionStrategy(threshold=BASE + 300)

#: name -> (setup, operation, the error it must raise)
CASES: dict[str, tuple[Callable[[evt.HudiTable], None], Callable[[evt.HudiTable], Any], type[EvtError]]] = {
    "schedule/inflight write": (_inflight_write, lambda t: t.compaction.schedule(ET), PendingTableServiceError),
    "schedule/event-time beside a pending plan": (
        _pending_compaction,
        lambda t: t.compaction.schedule(ET),
        PendingTableServiceError,
    ),
    "schedule/misspelt event-time field": (
        _nothing,
        lambda t: t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300, event_time_field="evt")),
        EventTimeError,
    ),
    "schedule/threshold after the compaction time": (
        _nothing,
        lambda t: t.compaction.schedule(ET, now_ms=BASE),
        InvalidThresholdError,
    ),
    "schedule/instant not after the timeline": (
        _nothing,
        lambda t: t.compaction.schedule(ET, instant=_instants(t)[0]),
        TimelineError,
    ),
    "schedule/bad link mode": (_nothing, lambda t: t.compaction.schedule(ET, link_mode="hard"), PlanValidationError),
    "rollback/unknown instant": (_nothing, lambda t: t.rollback("20000101000000000"), RollbackError),
    "rollback/write a later write depends on": (_nothing, lambda t: t.rollback(_instants(t)[0]), RollbackError),
    "rollback/compaction not started": (
        _pending_compaction,
        lambda t: t.rollback(t.timeline.pending_compactions()[0].time),
        RollbackError,
    ),
    "rollback/resumed after a later write committed": (
        _pending_rollback_then_a_write,
        lambda t: t.rollback(_writes(t)[1]),
        RollbackError,
    ),
    "schedule/pending rollback": (_pending_rollback, lambda t: t.compaction.schedule(ET), PendingTableServiceError),
    "schedule/unsupported table feature": (
        _unsupported_feature,
        lambda t: t.compaction.schedule(ET),
        UnsupportedTableError,
    ),
    "rollback/unsupported table feature": (
        _unsupported_feature,
        lambda t: t.rollback(_writes(t)[-1]),
        UnsupportedTableError,
    ),
    "clean/unsupported table feature": (
        _unsupported_feature,
        lambda t: t.clean(dry_run=False),
        UnsupportedTableError,
    ),
    "write/unsupported table feature": (
        _unsupported_feature,
        lambda t: t.write(rows([7], 40, 700)),
        UnsupportedTableError,
    ),
    "write/batch without its key": (
        _nothing,
        lambda t: t.write(rows([7], 40, 700).drop(columns=["id"])),
        EvtError,
    ),
    "run/no such compaction": (_nothing, lambda t: t.compaction.run("20000101000000000"), EvtError),
    "clean/unknown policy": (_nothing, lambda t: t.clean("KEEP_NOTHING", dry_run=False), CleanPolicyError),
    "clean/retained below one": (_nothing, lambda t: t.clean(retained=0, dry_run=False), CleanPolicyError),
}


@pytest.fixture(scope="module", params=[6, 9], ids=["v6", "v9"])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp(f"refusals-v{request.param}") / "t"
    t = create(path, "event_time", buckets=1, table_version=request.param)
    t.write(rows([1, 3], 10, 100))
    t.write(rows([1, 5], 20, 500))
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_a_refusal_leaves_the_table_as_it_was(built: Path, tmp_path: Path, case: str) -> None:
    setup, op, error = CASES[case]
    path = tmp_path / "t"
    shutil.copytree(built, path, symlinks=True)
    t = evt.HudiTable.open(str(path))
    setup(t)
    c = _abandon(t)
    before = _state(path)

    with pytest.raises(error):
        op(t.refresh())

    after = _state(path)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"{case} was refused but changed {changed} (abandoned schedule {c})"
