"""Adversarial sequences against an oracle of their own (:mod:`tests.safety.adversary`), and the defects they found.

``test_sequences`` runs ``EVT_ADV_SEQUENCES`` (default 2) seeded sequences of ``EVT_ADV_STEPS`` steps (default 12)
from seed ``EVT_ADV_SEED`` (default 0): writes, compactions of every strategy, link mode and timing, crashes at any
storage change, rollbacks, unschedules, cleans and repairs, through long-lived handles, ``evt`` and child processes,
each step checked against a plain dict of what was committed, hudi-rs and the answers before the step. A failure
names its seed; ``python -m tests.safety.adversary SEED`` replays it (``EVT_ADV_TRACE=1`` prints every step,
``EVT_ADV_KEEP=<dir>`` keeps the failing table). ``EVT_ADV_REPORT=<file>`` appends one line per sequence.

The tests after it pin each defect the sequences found, in a few steps.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from tests.faults import assert_killed, run_child
from tests.safety.adversary import Sequence, run_sequence, summary

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

SEQUENCES = int(os.environ.get("EVT_ADV_SEQUENCES", "2"))
STEPS = int(os.environ.get("EVT_ADV_STEPS", "12"))
FIRST_SEED = int(os.environ.get("EVT_ADV_SEED", "0"))
BASE = 1_700_000_000_000


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEQUENCES))
def test_sequences(tmp_path: Path, seed: int) -> None:
    seq = run_sequence(seed, STEPS, tmp_path)
    report = os.environ.get("EVT_ADV_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as out:
            out.write(f"seed {seed} {summary(seq)} {seq.counts}\n")


def test_rolling_back_again_a_write_whose_rollback_was_killed_resumes_that_rollback(tmp_path: Path) -> None:
    # Found with seed 11517: a rollback of the last write is killed once the write's instant is gone (its rollback
    # pending); "roll it back again" is drawn later. That resumes the pending rollback and must succeed (an earlier
    # tester expected a refusal, as for a write rolled back to the end); the step's checks then hold the table to the
    # oracle, and the sequence's recovery brings the table back to fully compacted. Played step by step here: the
    # seed's own path changed once overtaken rollbacks stopped holding schedules up.
    seq = Sequence(11517, tmp_path, crashes=False, cli=False)
    for _ in range(2):
        _, tried = seq.op_write("upsert")
        seq.sync(tried)
    last = seq.oracle.instants()[-1]
    assert_killed(run_child(seq.path, "rollback.before_complete", "rollback", last))
    seq.sync(None)
    assert last not in seq.oracle.instants() and last not in seq.timeline_states(), "the write left the timeline"
    seq.check(unchanged=None, tt_before={})
    out = seq.op_rerun()  # the only choice: roll the gone write back again
    assert out.what == "again-rollback-resumed" and not out.crashed
    seq.sync(None)
    assert seq.fresh().timeline.pending_rollback_of(last) is None, "the resumed rollback completed"
    seq.check(unchanged=seq.last_snapshot, tt_before={})
    seq.finish()


# -- helpers for the pinned defects ------------------------------------------------------------------------------------


def _table(path: Path, version: int) -> evt.HudiTable:
    return evt.HudiTable.create(
        path,
        "t",
        "id",
        partition_by="p",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        table_version=version,
    )


def _write(t: evt.HudiTable, ts: int, ev_s: int, v: str, deleted: bool = False) -> str:
    return t.write(
        pa.table(
            {
                "id": ["k"],
                "p": ["x"],
                "ts": pa.array([ts], pa.int32()),
                "ev": pa.array([BASE + ev_s * 1000], pa.int64()),
                "v": [v],
                "_hoodie_is_deleted": [deleted],
            }
        )
    )


def _values(t: evt.HudiTable) -> list[str]:
    return sorted(t.refresh().read()["v"].to_pylist())


def _rs_values(t: evt.HudiTable) -> list[str]:
    batches = hudi.HudiTableBuilder.from_base_uri(str(t.path)).build().read()
    return sorted(pa.Table.from_batches(batches)["v"].to_pylist()) if batches else []


# -- a soft delete with Hudi's default ordering value ------------------------------------------------------------------


@pytest.mark.parametrize("version", [6, 9])
def test_a_soft_delete_whose_ordering_value_is_the_int_zero_deletes_the_key(tmp_path: Path, version: int) -> None:
    """Hudi 1.x's record mergers take a record that is a delete and carries the default ordering value (the int 0)
    for a commit-time delete (``BufferedRecord.isCommitTimeOrderingDelete``): a ``_hoodie_is_deleted`` row of an
    ``int`` ordering field set to 0 deletes the key whatever came before it, in the logs and over the base row, as
    hudi-rs reads it."""
    t = _table(tmp_path / "t", version)
    _write(t, 146, 10, "first")
    _write(t, 0, 20, "deleted", deleted=True)
    assert _values(t) == [] == _rs_values(t)

    _write(t, 150, 30, "again")
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    assert _values(t) == ["again"] == _rs_values(t)
    _write(t, 0, 40, "deleted again", deleted=True)
    assert _values(t) == [] == _rs_values(t)


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
def test_a_compaction_keeps_the_answer_past_a_later_soft_commit_time_delete(
    tmp_path: Path, version: int, link_mode: str
) -> None:
    """After a commit-time delete a smaller record wins the log merge and is then compared with the base row: a
    compaction that moves an earlier, greater record into the base file must keep it out (the kept form) when a
    later log holds such a delete — a soft delete with the int 0 ordering value as much as a delete block."""
    t = _table(tmp_path / "t", version)
    _write(t, 10, 10, "early")  # event time <= T: compacted
    _write(t, 0, 500, "deleted", deleted=True)  # > T: left over, a commit-time delete
    _write(t, 5, 600, "late")  # > T: left over, wins after the delete
    assert _values(t) == ["late"] == _rs_values(t)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 100_000), link_mode=link_mode)
    assert c is not None and c.plan.operations[0].delta_files
    t.compaction.run(c)
    assert _values(t) == ["late"]
    assert _rs_values(t) == ["late"]


# -- a process killed between a file's temporary copy and its name -----------------------------------------------------

_KILL_BEFORE_NAMING = """
import os, signal, sys, json
spec = json.loads(sys.argv[1])
for name in ("link", "replace"):
    original = getattr(os, name)

    def wrapped(src, dst, *a, _original=original, **kw):
        if ".log." in os.path.basename(str(dst)) and "/.hoodie/" not in str(dst):
            os.kill(os.getpid(), signal.SIGKILL)  # the temporary file is written, the log not yet named
        return _original(src, dst, *a, **kw)

    setattr(os, name, wrapped)
import pyarrow as pa
import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy

t = evt.HudiTable.open(spec["path"])
if spec["action"] == "write":
    t.write(pa.table({k: pa.array(v, pa.int32() if k == "ts" else None) for k, v in spec["rows"].items()}))
else:
    t.compaction.run(spec["instant"])
"""


def _killed(spec: dict[str, object]) -> None:
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _KILL_BEFORE_NAMING, json.dumps(spec)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == -9, proc.stderr[-2000:]


def _rows(ids: list[str], ts: int, ev_s: int, v: str) -> dict[str, list[object]]:
    n = len(ids)
    return {
        "id": ids,
        "p": ["x"] * n,
        "ts": [ts] * n,
        "ev": [BASE + ev_s * 1000] * n,
        "v": [f"{v}{i}" for i in ids],
        "_hoodie_is_deleted": [False] * n,
    }


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_killed_before_its_log_is_named_leaves_nothing_a_reader_takes_for_data(
    tmp_path: Path, version: int
) -> None:
    """A local write puts a file's bytes into a temporary file beside it, then gives it its name. Killed in between,
    the temporary file stays: it must not be named so that a reader takes it for a log (hudi-rs took
    ``.<log name>.<hex>.tmp`` for a log of a file group ``.<file id>``), and ``compaction repair`` deletes it."""
    t = _table(tmp_path / "t", version)
    t.write(pa.table({**_rows(["a", "b"], 1, 10, "one"), "ts": pa.array([1, 1], pa.int32())}))
    _killed({"path": str(t.path), "action": "write", "rows": _rows(["a", "c"], 2, 20, "two")})
    assert _values(t) == ["onea", "oneb"]
    assert _rs_values(t) == ["onea", "oneb"]
    failed = [i.time for i in t.refresh().timeline.inflight_writes()]
    assert len(failed) == 1
    t.rollback(failed[0])
    assert _values(t) == ["onea", "oneb"] == _rs_values(t)
    left = _leftovers(tmp_path / "t" / "p=x")
    assert left and not [n for n in left if ".log." in n]
    assert len(t.compaction.repair(older_than_s=0).stale_temporary_files) == len(left)
    t.compaction.repair(dry_run=False, older_than_s=0)
    assert _leftovers(tmp_path / "t" / "p=x") == []
    assert _values(t) == ["onea", "oneb"] == _rs_values(t)


def _leftovers(folder: Path) -> list[str]:
    """Files in ``folder`` that are neither table files nor the partition's metafile."""
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.name != ".hoodie_partition_metadata"
        and not (p.name.endswith(".parquet") and not p.name.startswith("."))
        and not (p.name.startswith(".") and p.name.split(".log.")[-1].count(".") == 0 and ".log." in p.name)
    )


@pytest.mark.parametrize("version", [6, 9])
def test_a_compaction_run_killed_before_a_link_is_named_leaves_nothing_a_reader_takes_for_data(
    tmp_path: Path, version: int
) -> None:
    """Killed before an execute-time copy link took its name, a run left a temporary copy named after the link,
    and once the run was made again and completed, hudi-rs read that copy as a log of another file group: every
    record in it twice. ``compaction repair`` deletes such leftovers of killed processes."""
    t = _table(tmp_path / "t", version)
    t.write(pa.table({**_rows(["a", "b"], 1, 10, "one"), "ts": pa.array([1, 1], pa.int32())}))
    t.write(pa.table({**_rows(["a", "c"], 2, 500, "two"), "ts": pa.array([2, 2], pa.int32())}))
    c = t.compaction.schedule(
        EventTimeBasedCompactionStrategy(threshold=BASE + 100_000), link_mode="copy", link_timing="execute"
    )
    assert c is not None and c.plan.operations[0].delta_files
    _killed({"path": str(t.path), "action": "run", "instant": c.instant})
    t.refresh().compaction.run(c.instant)
    assert _values(t) == ["oneb", "twoa", "twoc"]
    assert _rs_values(t) == ["oneb", "twoa", "twoc"]

    # A leftover of a killed process is deleted by repair once it is old enough that no process can still be
    # writing it, whatever version of the toolkit named it.
    legacy = tmp_path / "t" / "p=x" / f".{next((tmp_path / 't' / 'p=x').glob('*.parquet')).name}.{'0' * 32}.tmp"
    legacy.write_bytes(b"partial")
    report = t.compaction.repair(older_than_s=0)
    assert "p=x/" + legacy.name in report.stale_temporary_files
    assert len(report.stale_temporary_files) == len(_leftovers(tmp_path / "t" / "p=x"))
    t.compaction.repair(dry_run=False, older_than_s=0)
    assert _leftovers(tmp_path / "t" / "p=x") == []
    assert t.compaction.repair(older_than_s=0).clean
    assert _values(t) == ["oneb", "twoa", "twoc"] == _rs_values(t)


# -- a commit-time delete a compaction took into the base file ---------------------------------------------------------


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("with_base_row", [False, True])
def test_a_delete_after_a_compacted_commit_time_delete_is_dropped_as_before(
    tmp_path: Path, version: int, with_base_row: bool
) -> None:
    """A delete with an ordering value that arrives on a commit-time delete is dropped (Hudi keeps the commit-time
    delete), so a later upsert with a smaller ordering value wins. A compaction that took the commit-time delete into
    the base file (the key simply absent) made that later delete count, as on a key never written: the upsert after
    it stayed hidden — the compaction changed the answer of every later read."""
    t = _table(tmp_path / "t", version)
    t.write(pa.table({**_rows(["k"], 10, 10, "first"), "ts": pa.array([10], pa.int32())}))
    if with_base_row:
        c = t.compaction.schedule(UnBoundedCompactionStrategy())
        assert c is not None
        t.compaction.run(c)
    t.write(pa.table({"id": ["k"], "p": ["x"]}), "delete")  # no ordering value: a commit-time delete
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    assert _values(t) == [] == _rs_values(t)
    t.write(pa.table({"id": ["k"], "p": ["x"], "ts": pa.array([83], pa.int32())}), "delete")  # dropped
    t.write(pa.table({**_rows(["k"], 75, 20, "late"), "ts": pa.array([75], pa.int32())}))
    assert _values(t) == ["latek"]
    assert _rs_values(t) == ["latek"]
