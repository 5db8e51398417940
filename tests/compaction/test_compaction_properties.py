"""Invariants of event-time partial compaction over random ingestion histories (local execution).

For a random history of upserts (with late data), event-time deletes and soft deletes, a random threshold, link
mode, link timing and merge mode, scheduling and running a compaction must:

* leave the snapshot unchanged (our reader and hudi-rs);
* make RO equal each operation's old base merged with exactly its compacted prefix;
* leave every remaining log with min event time > T unless written after scheduling (freshness rule).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction
from tests.tables import (
    BASE,
    carried_keys,
    create,
    deletes,
    expected_ro,
    freshness_holds,
    hudi_rs,
    remaining_logs_ok,
    rows,
    same,
    same_ro,
    snapshot,
)

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

EXAMPLES = int(os.environ.get("EVT_PROPERTY_EXAMPLES", "10"))

_batch = st.tuples(
    st.sampled_from(["upsert", "upsert", "upsert", "delete"]),
    st.lists(st.integers(0, 24), min_size=1, max_size=8, unique=True),
    st.integers(1, 60),  # ordering value
    st.integers(0, 1000),  # event time offset (late data: any order)
    st.booleans(),  # soft delete the first row
)


@seed(20250101)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    history=st.lists(_batch, min_size=2, max_size=7),
    threshold=st.integers(0, 1000),
    merge_mode=st.sampled_from(["commit_time", "event_time"]),
    link_mode=st.sampled_from(["copy", "symlink"]),
    link_timing=st.sampled_from(["schedule", "execute"]),
    rounds=st.integers(1, 2),
)
def test_random_histories(
    history: list[tuple[str, list[int], int, int, bool]],
    threshold: int,
    merge_mode: str,
    link_mode: str,
    link_timing: str,
    rounds: int,
) -> None:
    root = Path(tempfile.mkdtemp(prefix="evt-prop-"))
    try:
        t = create(root / "t", merge_mode)
        for op, ids, ts, ev, soft in history:
            if op == "delete":
                t.write(deletes(ids, ts), "delete")
            else:
                flags = [soft] + [False] * (len(ids) - 1)
                t.write(rows(ids, ts, [ev + (i * 37) % 200 for i in range(len(ids))], deleted=flags))
        for r in range(rounds):
            thr = BASE + threshold + 200 * r
            before = snapshot(t)
            c = schedule_compaction(
                t, EventTimeBasedCompactionStrategy(threshold=thr), link_mode=link_mode, link_timing=link_timing
            )
            if c is None:
                continue
            want_ro = expected_ro(t, c.instant)
            run_compaction(t, c.instant)
            same(snapshot(t), before, "snapshot unchanged by compaction")
            same(hudi_rs(t.path), before, "hudi-rs snapshot")
            same_ro(t.read("read_optimized"), want_ro, carried_keys(t, c.instant), "RO = base ⊕ compacted prefix")
            assert remaining_logs_ok(t, thr, c.instant) == []
            freshness_holds(t)
            t.write(rows([1, 2, 3], 61 + r, 100 + r))  # more late data for the next round
    finally:
        shutil.rmtree(root, ignore_errors=True)
