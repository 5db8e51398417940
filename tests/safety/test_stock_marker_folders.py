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

from pathlib import Path

import pytest

from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.format.ownership import RUN
from evt_toolkit.storage.ownership import marker_folder, owned_files, record_folder
from tests.faults import assert_killed, run_child
from tests.services import data_files, failed_write
from tests.tables import BASE, create, history, hudi_rs, rows, same

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

#: ``IOType``: what stock Hudi's marker-based rollback accepts as the last extension of a marker's name.
IO_TYPES = {"CREATE", "MERGE", "APPEND"}


def _stock_rollback_parses(root: Path, instant: str) -> list[str]:
    """The files of ``instant``'s marker folder that stock Hudi's marker-based rollback cannot parse (it fails)."""
    folder = root / marker_folder(instant)
    bad = []
    for p in folder.rglob("*") if folder.is_dir() else []:
        if p.is_file() and p.name.rsplit(".", 1)[-1] not in IO_TYPES:
            bad.append(str(p.relative_to(root)))
    return bad


@pytest.mark.parametrize("version", [6, 9])
def test_a_failed_write_leaves_only_hudi_markers_in_its_marker_folder(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", buckets=2, table_version=version)
    t.write(rows(range(4), 10, 100))
    failed = failed_write(t, rows([0, 5, 6], 20, 100), tasks_before_crash=2)
    root = Path(t.path)
    assert list((root / marker_folder(failed)).rglob("*.marker.*")), "the failed write's markers, for stock Hudi"
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
    marked = {
        str(p.relative_to(root / marker_folder(c.instant))).removesuffix(".marker.CREATE")
        for p in (root / marker_folder(c.instant)).rglob("*.marker.CREATE")
    }
    assert marked == set(owned_files(t.storage, c.instant, [RUN])), "a marker per output of the run"
    assert not marked & {x.symlink_path for x in c.links}
    t.rollback(c.instant)
    assert not list((root / marker_folder(c.instant)).rglob("*.marker.*")), "our rollback drops the run's markers"


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
