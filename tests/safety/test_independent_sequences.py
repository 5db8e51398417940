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
from tests.safety.adversary import run_sequence, summary

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
