"""A table file that exists but cannot be read (permissions, a folder standing where the file is, a failing disk)
under a rollback — of a failed write, of the last completed write, and resumed after an interrupted one — and under a
SIMPLE-index write, which reads the record keys of the base files.

A rollback reads each candidate log's block headers to tell which instants wrote into it: a log it could not read was
taken for a missing one — left out of the plan while the rollback deleted the rest and completed, or, when a rollback
was resumed, deleted without the check that it still holds only the target's blocks (a version-6 log's name is taken
again by the next write into its slice). Each must come out as a ``StorageError`` naming the file and the table, with
nothing under the table changed; once the file reads again, the same call ends where the model says, read by a new
handle and by hudi-rs.

How a file is made unreadable: ``chmod 000`` when the tests do not run as root; as root (permissions do not stop
reads), a symbolic link to a file the kernel refuses to open even to root (a write-only ``/sys`` attribute) where
there is one, else a folder in the file's place (the SIMPLE-index case is then skipped: the listing does not show a
folder as a base file at all).
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import evt_toolkit as evt
from evt_toolkit.errors import StorageError
from evt_toolkit.format.properties import dump_properties, parse_properties
from tests.safety.interrupts import Case, Interrupter, Model, batch, files, ours, run_interrupted, theirs


@functools.cache
def _refused_to_root() -> str | None:
    """A write-only ``/sys`` attribute that ``open`` refuses even to root, if this machine has one."""
    for pattern in ("/sys/class/zram-control/*", "/sys/bus/pci/rescan", "/sys/devices/pci*/*/rescan"):
        for p in sorted(glob.glob(pattern)):
            try:
                if os.stat(p).st_mode & 0o777 != 0o200:
                    continue
                fd = os.open(p, os.O_RDONLY)
            except OSError:
                return p
            os.close(fd)
    return None


@contextlib.contextmanager
def unreadable(path: Path) -> Iterator[str]:
    """``path`` unreadable while the block runs (restored afterwards); yields how."""
    if os.geteuid() != 0:
        path.chmod(0)
        try:
            yield "chmod 000"
        finally:
            path.chmod(0o644)
        return
    aside = Path(tempfile.mkdtemp()) / path.name  # outside the table
    shutil.move(str(path), aside)
    target = _refused_to_root()
    try:
        if target is not None:
            path.symlink_to(target)
            yield f"a link to {target}"
        else:
            path.mkdir()
            (path / "x").write_bytes(b"")
            yield "a folder in its place"
    finally:
        if path.is_symlink():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        shutil.move(str(aside), path)
        aside.parent.rmdir()


def _logs(root: str) -> list[Path]:
    return sorted(Path(root).glob("region=*/.*.log.*"))


def _refuses(call: object, path: Path, table: str, *, listed: bool = False) -> None:
    with unreadable(path) as how:
        if listed and how.startswith("a folder"):
            pytest.skip("a folder in a file's place is no file the listing shows: no way here to fail a read as root")
        before = files(table)
        with pytest.raises(StorageError) as info:
            call()  # type: ignore[operator]
        text = str(info.value)
        assert path.name in text and table in text, f"{how}: {text}"
        after = files(table)
    changed = {p: (before.get(p), after.get(p)) for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert not changed, f"{how}: files changed although {path.name} could not be read: {changed}"


@pytest.mark.parametrize("operation", ["rollback-failed", "rollback-last"])
def test_a_rollback_refuses_a_log_it_cannot_read(tmp_path: Path, operation: str) -> None:
    case = Case(str(tmp_path / "t"), 6, operation)
    t = case.table
    newest = max(_logs(case.path), key=lambda p: p.stat().st_mtime_ns)  # the target's own log
    _refuses(lambda: evt.HudiTable.open(case.path).rollback(case.target or ""), newest, case.path)
    t.rollback(case.target or "")
    assert ours(case.path) == case.after == theirs(case.path)


def test_a_resumed_rollback_refuses_a_log_it_cannot_read(tmp_path: Path) -> None:
    """The rollback of the last write stopped at its first delete; resumed, it must read every log it is to delete."""
    case = Case(str(tmp_path / "t"), 6, "rollback-last")
    newest = max(_logs(case.path), key=lambda p: p.stat().st_mtime_ns)
    err = run_interrupted(case.call, Interrupter(1, "raise", "oserror", match="delete_file"))
    assert isinstance(err, OSError), repr(err)
    _refuses(lambda: evt.HudiTable.open(case.path).rollback(case.target or ""), newest, case.path)
    evt.HudiTable.open(case.path).rollback(case.target or "")
    assert ours(case.path) == case.after == theirs(case.path)


def test_a_simple_index_write_refuses_a_base_file_it_cannot_read(tmp_path: Path) -> None:
    """A SIMPLE-index write looks every key up in the latest base files: one it cannot read would make updates of its
    keys inserts elsewhere (the key then read twice)."""
    path = str(tmp_path / "t")
    evt.HudiTable.create(
        path, "it", "id", partition_by="region", ordering_field="ts", table_version=9, merge_mode="commit_time"
    )
    # As a stock writer leaves a table: no index recorded in hoodie.properties (the toolkit records its bucket index,
    # and a write naming another one is refused).
    props_path = Path(path) / ".hoodie" / "hoodie.properties"
    props = {k: v for k, v in parse_properties(props_path.read_text()).items() if not k.startswith("hoodie.index.")}
    props.pop("hoodie.bucket.index.num.buckets", None)
    props.pop("hoodie.bucket.index.hash.field", None)
    props_path.write_text(dump_properties(props))
    t = evt.HudiTable.open(path)
    opts = {"hoodie.index.type": "SIMPLE"}
    m = Model()
    t.write(batch(list(range(12)), 1), options=opts)
    m.upsert(list(range(12)), 1)
    base = sorted(Path(path).glob("region=r0/*.parquet"))[-1]
    _refuses(lambda: evt.HudiTable.open(path).write(batch([0, 2, 4], 2), options=opts), base, path, listed=True)
    t.refresh().write(batch([0, 2, 4], 2), options=opts)
    m.upsert([0, 2, 4], 2)
    assert ours(path) == m.rows == theirs(path)
