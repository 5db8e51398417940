"""Where stock 1.x slicing puts a partial compaction's leftover-log link, checked in hudi-rs and our reader.

The experiment behind docs/hudi-1x.md §4. A v9 table (commit-time merge mode, so replay order decides the answer):
``D1`` writes ``a=v1``, ``D2`` writes ``a=v2``; a compaction ``C`` is scheduled and compacts ``D1`` only, so its base
file holds ``a=v1`` and ``D2``'s log is *left over* and copied into the new slice as ``.{fid}_{C}.log.1_…`` (a link
named with the compaction instant). Then, while ``C`` is pending, a write ``W`` sets ``a=v3``; finally ``C``
completes. The right answer is ``v3`` throughout: the leftover (older) data must replay before ``W``.

Shown here:

* while ``C`` is pending, the link is invisible (its name instant has not completed) and ``W`` is read after ``D2``;
* once ``C`` completes, hudi-rs and our reader both put the base file and the link in slice ``C``;
* completed with its real completion time (after ``W`` completed), the link would replay *after* ``W`` in a reader
  that ordered a slice's logs by completion time (older data overwriting newer); hudi-rs and our reader — like
  Java's ``HoodieFileGroupReader`` — sort logs by the instant in their name and answer ``v3``;
* completed with the completion time stamped equal to ``C`` (the design), every order puts the link first: ``v3``;
* time travel to ``D2`` still reads the old slice (``v2``), to ``W`` reads ``v3``.

The compaction files are made by hand (compaction on 1.x tables is not implemented yet); the table, its writes and
the log copy are real, and both readers are stock.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.format.metadata import encode_avro_container, encode_commit_metadata_avro, load_schema
from evt_toolkit.write.instants import new_instant_time

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")


def _rs_value(path: Path, as_of: str | None = None) -> list[str]:
    t = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
    opts = hudi.HudiReadOptions()
    if as_of is not None:
        opts = opts.with_as_of_timestamp(as_of)
    table = pa.Table.from_batches(t.read(opts))
    return sorted(table["v"].to_pylist())


def _ours_value(path: Path, as_of: str | None = None) -> list[str]:
    table = evt.HudiTable.open(path).read(as_of=as_of) if as_of else evt.HudiTable.open(path).read()
    return sorted(table["v"].to_pylist())


def _row(v: str) -> pd.DataFrame:
    return pd.DataFrame({"id": ["a"], "ts": [1], "v": [v]})


def _scenario(path: Path) -> tuple[evt.HudiTable, dict[str, str]]:
    t = evt.HudiTable.create(path, "links", "id", ordering_field="ts", buckets=1, table_version=9)
    d1 = t.write(_row("v1"))
    d2 = t.write(_row("v2"))
    (slice_,) = t.view.latest_file_slices()
    fid = slice_.file_id
    log_d1, log_d2 = (lf.name for lf in slice_.log_files)
    times = [i.time for i in t.refresh().timeline] + [i.completion_time or "" for i in t.timeline]
    c = new_instant_time(times, "UTC")
    timeline = path / ".hoodie" / "timeline"
    # C's plan compacts D1's log only (a Hudi plan: deltaFilePaths are bare names).
    plan = {
        "operations": [
            {
                "baseInstantTime": d1,
                "deltaFilePaths": [log_d1],
                "dataFilePath": None,
                "fileId": fid,
                "partitionPath": "",
                "metrics": {},
                "bootstrapFilePath": None,
            }
        ],
        "extraMetadata": None,
        "version": 2,
        "strategy": None,
        "preserveHoodieMetadata": True,
        "missingSchedulePartitions": None,
    }
    (timeline / f"{c}.compaction.requested").write_bytes(
        encode_avro_container(plan, load_schema("HoodieCompactionPlan"))
    )
    # The link: a copy of the leftover log, named with C (invisible while C is pending).
    shutil.copyfile(path / log_d2, path / f".{fid}_{c}.log.1_0-0-0")
    (timeline / f"{c}.compaction.inflight").write_bytes(b"")
    # The compacted base file: the slice as of D1 (a=v1), meta columns preserved, file name rewritten.
    base_name = f"{fid}_0-0-0_{c}.parquet"
    rows = t.read(as_of=d1)
    rows = rows.set_column(
        rows.schema.get_field_index("_hoodie_file_name"),
        "_hoodie_file_name",
        pa.array([base_name] * rows.num_rows, pa.string()),
    )
    pq.write_table(rows, path / base_name)
    return t, {"D1": d1, "D2": d2, "C": c, "fid": fid, "base": base_name}


def _complete_compaction(path: Path, c: str, completion: str, fid: str, base: str) -> None:
    meta = {
        "partitionToWriteStats": {"": [{"fileId": fid, "path": base, "prevCommit": "x", "numWrites": 1}]},
        "compacted": True,
        "extraMetadata": {},
        "operationType": "COMPACT",
    }
    (path / ".hoodie" / "timeline" / f"{c}_{completion}.commit").write_bytes(encode_commit_metadata_avro(meta))


@pytest.mark.parametrize("stamp", ["real", "requested"])
def test_where_a_link_named_with_the_compaction_instant_replays(tmp_path: Path, stamp: str) -> None:
    path = tmp_path / "t"
    t, ids = _scenario(path)
    # Pending: base file and link are invisible; the old slice serves reads.
    assert _rs_value(path) == _ours_value(path) == ["v2"]
    w = t.write(_row("v3"))
    w_completion = t.refresh().timeline.completion_time(w)
    assert w_completion is not None and w > ids["C"]
    assert _rs_value(path) == _ours_value(path) == ["v3"]
    completion = new_instant_time([w_completion], "UTC") if stamp == "real" else ids["C"]
    _complete_compaction(path, ids["C"], completion, ids["fid"], ids["base"])
    t.refresh()
    (slice_,) = t.view.latest_file_slices()
    assert slice_.base_instant == ids["C"] and len(slice_.log_files) == 2
    rs_table = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
    (rs_slice,) = rs_table.get_file_slices()
    assert rs_slice.creation_instant_time == ids["C"] and rs_slice.base_file_name == ids["base"]
    assert sorted(rs_slice.log_file_names) == sorted(lf.name for lf in slice_.log_files)
    # Both readers replay a slice's logs by the instant in their name (LogFileComparator), so the link (named C)
    # replays before W whichever completion time C got; a completion-order reader would answer v2 for "real".
    name_instants = [lf.name.split("_")[1].split(".")[0] for lf in slice_.log_files]
    assert name_instants == [ids["C"], w]
    assert _rs_value(path) == _ours_value(path) == ["v3"]
    if stamp == "real":
        completions = [t.refresh().timeline.completion_time(i) for i in (ids["C"], w)]
        assert completions[0] is not None and completions[1] is not None and completions[0] > completions[1]
    # Time travel: the old slice at D2, the new one (and the same replay order) from W on.
    assert _rs_value(path, ids["D2"]) == _ours_value(path, ids["D2"]) == ["v2"]
    assert _rs_value(path, w) == _ours_value(path, w) == ["v3"]


@pytest.mark.parametrize("merge_mode", ["commit_time", "event_time"])
def test_overlapping_deltacommits_replay_by_requested_time(tmp_path: Path, merge_mode: str) -> None:
    """Non-blocking writers: ``W1`` requested before ``W2`` but completed after it, both updating ``a``.

    Java's ``HoodieFileGroupReader`` (``InputSplit`` sorts with ``HoodieLogFile.getLogFileComparator``) and hudi-rs
    (``reader_v2`` ``InputSplit``) replay by the instant in the log's name, so ``W2`` wins; so does our reader."""
    path = tmp_path / "t"
    t = evt.HudiTable.create(path, "o", "id", ordering_field="ts", buckets=1, table_version=9, merge_mode=merge_mode)
    t.write(_row("v1"))
    w1 = t.write(_row("w1"))
    w2 = t.write(_row("w2"))
    timeline = path / ".hoodie" / "timeline"
    (f1,) = timeline.glob(f"{w1}_*.deltacommit")
    (f2,) = timeline.glob(f"{w2}_*.deltacommit")
    c2 = f2.name.split("_")[1].split(".")[0]
    f1.rename(timeline / f"{w1}_{new_instant_time([c2], 'UTC')}.deltacommit")
    (slice_,) = evt.HudiTable.open(path).view.latest_file_slices()
    assert [lf.name.split("_")[1].split(".")[0] for lf in slice_.log_files][-2:] == [w1, w2]
    assert _rs_value(path) == ["w2"]
    assert _ours_value(path) == _rs_value(path)
