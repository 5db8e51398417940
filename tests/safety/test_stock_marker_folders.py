"""Hudi's marker folders hold Hudi's markers only, so that stock Hudi can roll back what the toolkit left pending.

Stock Hudi rolls a pending instant back by its markers, and its marker-based rollback takes every file of the
instant's marker folder ``.hoodie/.temp/<instant>/`` for a marker: ``DirectWriteMarkers.allMarkerFilePaths`` lists
them all, and ``MarkerBasedRollbackStrategy`` parses the last extension of each name with ``IOType.valueOf``. A
stock writer rolls failed writes back before it writes, so a single other file there (the toolkit's ownership
records used to live there) made every stock rollback of the instant fail, and every stock write after it. The
toolkit keeps its own files in ``.hoodie/.temp/evt/<instant>/``; records an earlier version wrote into the marker
folder are still read (a rollback deletes exactly the files they name) and dropped.

Checked on table versions 6 and 9 after a failed write, a schedule with schedule-time links and a compaction run
killed before its commit — the instants stock Hudi would roll back or re-run. A compaction run writes Hudi's
``CREATE`` marker of each output (after its ownership record), so a stock rollback of a run killed half-way deletes
the run's outputs and nothing else.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.format.ownership import RUN
from evt_toolkit.format.table_version import marker_list
from evt_toolkit.storage.ownership import drop_markers, mark_created, marker_folder, markers, owned_files, record_folder
from tests.faults import assert_killed, run_child
from tests.services import data_files, failed_write
from tests.tables import BASE, create, history, hudi_rs, rows, same

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

#: ``IOType``: what stock Hudi's marker-based rollback accepts as the last extension of a marker's name.
IO_TYPES = {"CREATE", "MERGE", "APPEND"}


def _stock_markers(folder: Path) -> list[str]:
    """The markers stock Hudi's marker-based rollback reads from a marker folder (``MarkerBasedRollbackUtils``):
    with a ``MARKERS.type`` saying ``TIMELINE_SERVER_BASED``, the lines of every other ``MARKERS*`` file (names
    relative to the folder); without one, every file of the folder (``DirectWriteMarkers``)."""
    if not folder.is_dir():
        return []
    type_file = folder / "MARKERS.type"
    if type_file.exists():
        assert type_file.read_text() == "TIMELINE_SERVER_BASED", "MarkerType.valueOf of the type file's content"
        return [
            line
            for p in folder.glob("MARKERS*")
            if p.name != "MARKERS.type"
            for line in p.read_text().splitlines()
            if line
        ]
    return [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()]


def _stock_rollback_parses(root: Path, instant: str) -> list[str]:
    """The markers of ``instant`` that stock Hudi's marker-based rollback cannot parse (it fails on any)."""
    return [m for m in _stock_markers(root / marker_folder(instant)) if m.rsplit(".", 1)[-1] not in IO_TYPES]


@pytest.mark.parametrize("version", [6, 9])
def test_a_failed_write_leaves_only_hudi_markers_in_its_marker_folder(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", buckets=2, table_version=version)
    t.write(rows(range(4), 10, 100))
    failed = failed_write(t, rows([0, 5, 6], 20, 100), tasks_before_crash=2)
    root = Path(t.path)
    assert _stock_markers(root / marker_folder(failed)), "the failed write's markers, for stock Hudi"
    assert list((root / record_folder(failed)).glob("evt-owned.*.json")), "its ownership records, beside them"
    assert _stock_rollback_parses(root, failed) == []


@pytest.mark.parametrize("version", [6, 9])
def test_a_killed_compaction_run_leaves_only_hudi_markers_in_its_marker_folder(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    history(t)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode="copy")
    assert c is not None and c.links, "schedule-time links, recorded under the plan's instant"
    root = Path(t.path)
    assert _stock_rollback_parses(root, c.instant) == []
    assert_killed(run_child(root, "run.before_commit", "run", c.instant))
    assert list((root / record_folder(c.instant)).glob("evt-owned.run.*.json")), "the run's records"
    assert _stock_rollback_parses(root, c.instant) == []
    # A stock rollback (or a stock re-run, which rolls back first) deletes what the CREATE markers name: exactly the
    # run's outputs, never the plan's schedule-time links. Without them it deleted nothing, and a stock re-run left
    # the killed run's base files beside its own in the same file groups.
    stock = _stock_markers(root / marker_folder(c.instant))
    marked = {m.removesuffix(".marker.CREATE") for m in stock}
    assert len(marked) == len(stock) and all(m.endswith(".marker.CREATE") for m in stock), "one CREATE marker each"
    assert marked == set(owned_files(t.storage, c.instant, [RUN])), "a marker per output of the run"
    assert not marked & {x.symlink_path for x in c.links}
    t.rollback(c.instant)
    assert not _stock_markers(root / marker_folder(c.instant)), "our rollback drops the run's markers"


@pytest.mark.parametrize("version", [6, 9])
def test_records_an_earlier_version_wrote_into_the_marker_folder_are_still_followed(
    tmp_path: Path, version: int
) -> None:
    """A failed write whose records sit in its marker folder (where earlier versions wrote them): the rollback
    deletes exactly the files they name, and the folder goes with the rollback."""
    t = create(tmp_path / "t", "event_time", buckets=2, table_version=version)
    t.write(rows(range(4), 10, 100))
    want = t.read()
    before = data_files(t.path)
    failed = failed_write(t, rows([0, 5, 6], 20, 100), tasks_before_crash=2)
    root = Path(t.path)
    written = data_files(t.path) - before
    assert written, "the failed write left files"
    legacy = root / marker_folder(failed)
    legacy.mkdir(parents=True, exist_ok=True)
    for p in (root / record_folder(failed)).iterdir():
        p.rename(legacy / p.name)
    (root / record_folder(failed)).rmdir()
    r = t.rollback(failed)
    assert set(r.deleted) >= written, "every file the records name is deleted"
    assert data_files(t.path) == before
    assert not legacy.exists() and not (root / record_folder(failed)).exists()
    same(t.read(), want, "snapshot after the rollback")
    same(hudi_rs(t.path), want, "hudi-rs after the rollback")


def _as_timeline_server_markers(folder: Path) -> list[str]:
    """Rewrite a folder of DIRECT markers as the embedded timeline server writes them: ``MARKERS.type`` and the
    marker names spread over two ``MARKERS<n>`` files. Returns the names."""
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    for child in sorted(folder.iterdir()):
        if child.is_dir():
            for p in sorted(child.rglob("*"), reverse=True):
                p.unlink() if p.is_file() else p.rmdir()
            child.rmdir()
        else:
            child.unlink()
    (folder / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    (folder / "MARKERS0").write_text("".join(n + "\n" for n in names[::2]))
    (folder / "MARKERS1").write_text("".join(n + "\n" for n in names[1::2]))
    return names


@pytest.mark.parametrize("version", [6, 9])
def test_a_failed_stock_write_with_timeline_server_markers_is_rolled_back_as_with_direct_ones(
    tmp_path: Path, version: int
) -> None:
    """A stock writer's failed write (no ownership records: its markers are all there is), once with DIRECT markers
    and once with the same markers in the timeline server's lists: the two rollbacks do the same (the same files
    deleted, as many command blocks, nothing unowned) and leave the table as it was before the write."""
    t = create(tmp_path / "direct", "event_time", buckets=2, table_version=version)
    t.write(rows(range(4), 10, 100))
    want = t.read()
    before = data_files(t.path)
    failed = failed_write(t, rows([0, 5, 6, 7], 20, 100), tasks_before_crash=2)
    written = data_files(t.path) - before
    assert written, "the failed write left files"
    shutil.rmtree(Path(t.path) / record_folder(failed))
    shutil.copytree(t.path, tmp_path / "lists", symlinks=True)
    lists = evt.HudiTable.open(tmp_path / "lists")
    names = _as_timeline_server_markers(tmp_path / "lists" / marker_folder(failed))
    assert sorted(_stock_markers(tmp_path / "lists" / marker_folder(failed))) == names
    done = {}
    for name, table in (("direct", t), ("lists", lists)):
        r = table.rollback(failed)
        assert not r.unowned, f"{name}: every file of the write is marked"
        assert set(r.deleted) <= written
        assert data_files(table.path) == (before | written) - set(r.deleted) | set(r.command_block_logs)
        assert not (Path(table.path) / marker_folder(failed)).exists(), "the marker folder goes with the rollback"
        same(table.refresh().read(), want, f"{name}: snapshot after the rollback")
        same(hudi_rs(table.path), want, f"{name}: hudi-rs after the rollback")
        done[name] = (sorted(r.deleted), sorted(p.rsplit(".log.", 1)[0] for p in r.command_block_logs))
    assert done["lists"] == done["direct"]
    assert done["direct"] != ([], []), "the rollback had something to undo"


def test_marking_again_rewrites_the_same_list_and_other_files_add_a_list(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1)
    folder = Path(t.path) / marker_folder("7")
    mark_created(t.storage, "7", ["p/a.parquet", "p/b.parquet"])
    mark_created(t.storage, "7", ["p/b.parquet", "p/a.parquet"])  # a task run again: the same list
    assert sorted(p.name for p in folder.iterdir() if p.name != "MARKERS.type") == [
        marker_list("7", ["p/a.parquet.marker.CREATE", "p/b.parquet.marker.CREATE"])[0].rsplit("/", 1)[1]
    ]
    mark_created(t.storage, "7", ["p/c"])
    assert sorted(_stock_markers(folder)) == [
        "p/a.parquet.marker.CREATE",
        "p/b.parquet.marker.CREATE",
        "p/c.marker.CREATE",
    ]
    # Another list that happens to sit under the same index (a checksum clash): merged, never replaced.
    path, _ = marker_list("7", ["p/d.marker.CREATE"])
    (Path(t.path) / path).write_text("p/x.marker.CREATE\n")
    mark_created(t.storage, "7", ["p/d"])
    assert {m for m in _stock_markers(folder)} >= {"p/x.marker.CREATE", "p/d.marker.CREATE"}
    assert sorted((m[1], m[2]) for m in markers(t.storage, "7")) == [
        ("a.parquet", "CREATE"),
        ("b.parquet", "CREATE"),
        ("c", "CREATE"),
        ("d", "CREATE"),
        ("x", "CREATE"),
    ]
    drop_markers(t.storage, "7")
    assert not [p for p in folder.rglob("*") if p.is_file()]


def test_direct_markers_an_earlier_version_left_are_listed_before_stock_hudi_reads_lists_only(tmp_path: Path) -> None:
    """A run of an earlier version marked ``p/old.parquet`` with a DIRECT marker (and a stock attempt marked a merge):
    once ``MARKERS.type`` is written stock Hudi reads the lists only, so the first list carries them too."""
    t = create(tmp_path / "t", "event_time", buckets=1)
    folder = Path(t.path) / marker_folder("7")
    (folder / "p").mkdir(parents=True)
    (folder / "p" / "old.parquet.marker.CREATE").touch()
    (folder / "p" / "m.parquet.marker.MERGE").touch()
    assert sorted(_stock_markers(folder)) == ["p/m.parquet.marker.MERGE", "p/old.parquet.marker.CREATE"]
    mark_created(t.storage, "7", ["p/new.parquet"])
    assert sorted(_stock_markers(folder)) == [
        "p/m.parquet.marker.MERGE",
        "p/new.parquet.marker.CREATE",
        "p/old.parquet.marker.CREATE",
    ]
    mark_created(t.storage, "7", ["p/next.parquet"])  # the type file is there: a list of the new file alone
    assert len(_stock_markers(folder)) == 4
    drop_markers(t.storage, "7")
    assert not [p for p in folder.rglob("*") if p.is_file()]


_KILLED_WHILE_MARKING = """
import os, sys
import evt_toolkit as evt
from evt_toolkit.storage import local
from evt_toolkit.storage.ownership import mark_created

def killed(self, tmp, full, create_only):
    assert os.path.exists(tmp)
    os.kill(os.getpid(), 9)  # the temporary file is written, the target not yet

local.ArrowBackend._commit_local = killed
mark_created(evt.HudiTable.open(sys.argv[1]).storage, "7", ["p/a.parquet"])
"""


def test_a_process_killed_while_it_marks_leaves_nothing_in_the_marker_folder(tmp_path: Path) -> None:
    """Killed between writing the type file's temporary copy and moving it into place: the marker folder holds no
    file (stock Hudi would read any file there as a marker and fail on it); the leftover is in the record folder."""
    t = create(tmp_path / "t", "event_time", buckets=1)
    done = subprocess.run([sys.executable, "-c", _KILLED_WHILE_MARKING, t.path], cwd=Path(__file__).parents[2])
    assert done.returncode == -9
    root = Path(t.path)
    assert not [p for p in (root / marker_folder("7")).rglob("*") if p.is_file()]
    assert _stock_rollback_parses(root, "7") == []
    assert [p.name[:9] for p in (root / record_folder("7")).iterdir()] == [".evt-tmp-"]
    mark_created(t.storage, "7", ["p/a.parquet"])  # marking again succeeds; the instant's records go with it
    assert _stock_markers(root / marker_folder("7")) == ["p/a.parquet.marker.CREATE"]
