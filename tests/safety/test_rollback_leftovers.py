"""A rollback whose deletes fail must not complete: its target's files would outlive it and be read again.

A rolled-back write ``W`` leaves the timeline; a file of ``W`` that is still on storage is then invisible only while
``W`` is newer than the active timeline's first completed write. Once that start moves past ``W`` — ``W`` was the
table's first write, or the writes before it are rolled back too — readers take ``W`` for an archived, committed
instant (``isBeforeTimelineStarts``) and read its records back. So a rollback whose delete of one of ``W``'s files
fails (a disk error, an object store answering 500) must fail and stay pending, to be resumed, instead of completing
with the file left behind; the documented recovery (roll back again) then finishes it.

Checked on table versions 6 and 9, against the oracle (a dict of what was committed) with our reader and hudi-rs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import EvtError, StorageError
from evt_toolkit.storage.fs import TableStorage
from tests.services import failed_write
from tests.tables import COLUMNS, create, hudi_rs, rows, same


@contextlib.contextmanager
def data_deletes_fail() -> Iterator[None]:
    """Every delete of a data file (outside ``.hoodie``) raises, as a disk or store refusing them would."""
    originals = {name: getattr(TableStorage, name) for name in ("delete_file", "delete_files")}

    def delete_file(self: TableStorage, rel: str) -> None:
        if not rel.startswith(".hoodie"):
            raise StorageError(f"injected: cannot delete {self.full_path(rel)}")
        originals["delete_file"](self, rel)

    def delete_files(self: TableStorage, rels: Any) -> None:
        if any(not r.startswith(".hoodie") for r in rels):
            raise StorageError(f"injected: cannot delete {self.full_path(rels[0])}")
        originals["delete_files"](self, rels)

    TableStorage.delete_file = delete_file  # type: ignore[method-assign]
    TableStorage.delete_files = delete_files  # type: ignore[method-assign]
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(TableStorage, name, fn)


def _roll_back_with_failing_deletes(t: evt.HudiTable, target: str) -> None:
    """Roll ``target`` back while data deletes fail, then recover as documented: roll it back again while it (or a
    rollback of it) is still pending."""
    with data_deletes_fail(), contextlib.suppress(EvtError):
        t.rollback(target)
    tl = t.refresh().timeline
    if any(i.time == target for i in tl.instants) or any(
        i.action == "rollback" and not i.is_completed for i in tl.instants
    ):
        t.rollback(target)


def _expected(batch: pa.Table | Any) -> pa.Table:
    return pa.Table.from_pandas(batch, preserve_index=False).select(COLUMNS)


@pytest.mark.parametrize("version", [6, 9])
def test_a_rolled_back_first_write_stays_gone_after_the_next_write(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", 2, version)
    failed = failed_write(t, rows(range(6), 1, 100), tasks_before_crash=2)
    _roll_back_with_failing_deletes(t, failed)
    later = rows([10, 11], 2, 200)
    t.write(later)
    same(t.refresh().read(), _expected(later), "snapshot after the next write")
    same(hudi_rs(t.path), _expected(later), "hudi-rs after the next write")


@pytest.mark.parametrize("version", [6, 9])
def test_a_rolled_back_write_stays_gone_when_the_timeline_start_moves_past_it(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", 2, version)
    first = t.write(rows([20, 21], 1, 50))
    failed = failed_write(t, rows(range(6), 2, 100), tasks_before_crash=2)
    _roll_back_with_failing_deletes(t, failed)
    t.rollback(first)  # the last completed write: the timeline now starts after the failed write
    later = rows([10, 11], 3, 200)
    t.write(later)
    same(t.refresh().read(), _expected(later), "snapshot after the next write")
    same(hudi_rs(t.path), _expected(later), "hudi-rs after the next write")
