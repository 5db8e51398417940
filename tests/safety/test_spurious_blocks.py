"""Spurious log blocks of a retried task (Hudi 0.14's ``BLOCK_IDENTIFIER`` header), against Java's reader.

Hudi 0.14.0's append handle heads every block it writes with ``BLOCK_IDENTIFIER = "<task attempt>,<sequence>"``;
when a Spark task is retried, the blocks of the failed (or speculative) attempt stay in the file group's logs next to
the retry's. Java's log reader (``AbstractHoodieLogRecordReader.scanInternalV1`` in 0.14-0.15,
``BaseHoodieLogRecordReader`` in 1.0-1.1: ``updateBlockSequenceTracker`` and ``reconcileSpuriousBlocksAndGetValidOnes``)
keeps, per instant, only the attempt with the most blocks (the later attempt on a tie). Drives, on a copy of a stock
version-6 table (``logshapes.Shaper``): one deltacommit whose task wrote two blocks in its retry and one block (a
partial sequence, other values) in an attempt that landed in a later log; a later commit on top. Checks:

* the snapshot, time travel and the later commit's incremental window equal the model (the retry's blocks only);
* the spurious attempt's block does not count in the event-time facts (it would lower its log's min event time),
  and its log is tied to the retry's, so that no compaction prefix separates the two attempts;
* the attempt rule itself (most blocks, ties to the higher attempt, no header = attempt 0), a malformed header
  failing the read (as Java's ``Long.parseLong`` does) and the tie of a span whose last log's min is unknown;
* with ``minEventTime`` in the write stats (which do not tell attempts), the facts are still the logs' own;
* random sequences of commits by retried tasks (``EVT_SPURIOUS_SEEDS`` seeds, 8 in CI): reads and a compaction at
  a random threshold equal the model of the last attempts;
* event-time compactions at thresholds around the spurious block's event time keep every answer (a compaction
  merges exactly what Java's reader reads), and the validation passes.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.event_times import _tie_attempt_spans, slice_infos
from evt_toolkit.errors import LogFormatError
from evt_toolkit.format.log_writer import encode_block
from evt_toolkit.format.logfile import HeaderKey, read_log_blocks_bytes
from evt_toolkit.read.slice_reader import spurious_attempts
from tests.conftest import SKIP_NO_SHARED
from tests.normalize import assert_same_rows
from tests.safety.logshapes import COLUMNS, FILE_ID, Shaper, log_name

T0 = 1695046462179  # the event time (ts) of the fixture's one log record
RETRIED = "20250401000000000"
LATER = "20250402000000000"


def _same(got: pa.Table, want: pa.Table, what: str) -> None:
    assert_same_rows(got.select(list(COLUMNS)), want.select(list(COLUMNS)), list(COLUMNS), what)


def _build(tmp_path: Path) -> tuple[Shaper, dict[str, pa.Table]]:
    s = Shaper.copy(tmp_path)
    keys = s.sf_keys()
    history: dict[str, pa.Table] = {}
    retry_log, zombie_log = log_name(2, "0-40-101"), log_name(3, "0-40-100")
    s.requested(RETRIED)
    # Attempt 1 (the retry) wrote its whole sequence: two blocks.
    up1 = s.updates(keys[:2], fare=8.0, ts=T0 + 100)
    up2 = s.updates(keys[2:3], fare=8.0, ts=T0 + 100)
    off, size = s.append(
        retry_log,
        s.with_block_id(s.data_block(RETRIED, up1), 1, 0),
        s.with_block_id(s.data_block(RETRIED, up2), 1, 1),
    )
    # Attempt 0 got one block out, into a later log, with other values and another key.
    spurious = s.updates([keys[0], keys[3]], fare=7.0, ts=T0 - 500)
    s.append(zombie_log, s.with_block_id(s.data_block(RETRIED, spurious), 0, 0))
    s.complete(RETRIED, [(retry_log, off, size, 3, 0)], {**up1, **up2})
    history[RETRIED] = s.model()
    s.requested(LATER)
    up = s.updates(keys[1:2], fare=9.0, ts=T0 + 200)
    name = log_name(4, "0-41-102")
    off, size = s.append(name, s.with_block_id(s.data_block(LATER, up), 0, 0))
    s.complete(LATER, [(name, off, size, 1, 0)], up)
    history[LATER] = s.model()
    return s, history


def _check(t: evt.HudiTable, s: Shaper, history: dict[str, pa.Table], windows: dict, what: str) -> None:
    _same(t.refresh().read(), s.model(), f"{what}: snapshot")
    for instant, rows in history.items():
        _same(t.read(as_of=instant), rows, f"{what}: time travel to {instant}")
    for (b, e), rows in windows.items():
        _same(t.read("incremental", begin=b, end=e), rows, f"{what}: incremental ({b}, {e}]")


@SKIP_NO_SHARED
@pytest.mark.parametrize("threshold", [None, T0 - 600, T0 - 500, T0 + 100, T0 + 10**9])
def test_only_the_attempt_with_the_most_blocks_counts(tmp_path: Path, threshold: int | None) -> None:
    s, history = _build(tmp_path)
    t = evt.HudiTable.open(s.root)
    # The window of each commit holds the rows it wrote, as a reader of the retry's blocks sees them.
    windows = {(RETRIED, LATER): history[LATER].filter(pc.equal(history[LATER]["fare"], 9.0))}
    _check(t, s, history, windows, "spurious")
    zombie = log_name(3, "0-40-100")
    [info] = [i for i in slice_infos(t, "ts") if i.file_id == FILE_ID]
    [lf] = [lf for lf in info.log_files if lf.name == zombie]
    # Its own block (ts T0 - 500) does not count; the log is tied to the retry's (min T0 + 100), so that no prefix
    # takes the retry into a base file and leaves the spurious block alone in the new slice, where it would count.
    assert lf.min_event_time == T0 + 100, "the spurious attempt's block counts in the facts"
    if threshold is None:
        return
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=threshold, event_time_field="ts"))
    if c is None:
        return
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    _check(t, s, history, windows, f"spurious: compacted at {threshold}")


def test_the_attempt_rule() -> None:
    a, b = "20250101000000000", "20250102000000000"
    # More blocks win; a tie goes to the higher attempt; blocks without the header are attempt 0; one group stays.
    assert spurious_attempts([(a, 0), (a, 1), (a, 1), (b, 0)]) == {0}
    assert spurious_attempts([(a, 1), (a, 0)]) == {1}
    assert spurious_attempts([(a, None), (a, 0), (a, 2)]) == {2}
    assert spurious_attempts([(a, None), (b, 3), (b, 3)]) == set()


def test_a_malformed_block_identifier_fails_the_read_naming_the_file() -> None:
    from tests.format.test_logfile import avro_block

    for bad in ("x,1", "1", "1;2", ",1"):
        data = avro_block([])
        [blk] = read_log_blocks_bytes(data, "f.log")
        header = {int(k): v for k, v in blk.header.items()}
        header[int(HeaderKey.BLOCK_IDENTIFIER)] = bad
        framed = encode_block(
            int(blk.block_type), header, data[blk.content_offset : blk.content_offset + blk.content_length]
        )
        [blk] = read_log_blocks_bytes(framed, "f.log")
        with pytest.raises(LogFormatError, match="BLOCK_IDENTIFIER") as err:
            _ = blk.block_identifier
        assert err.value.path == "f.log"
    assert read_log_blocks_bytes(Shaper.with_block_id(avro_block([]), 2, 5), "f.log")[0].block_identifier == (2, 5)
    assert read_log_blocks_bytes(Shaper.with_block_id(avro_block([]), -1, 5), "f.log")[0].block_identifier is None


def test_a_span_whose_last_log_is_unknown_becomes_unknown() -> None:
    facts = [
        (10, "scan", True, "i", None, 0, 0),
        (5, "scan", True, "i", None, 0, 0),
        (None, None, True, "i", None, 0, 0),
    ]
    tied = _tie_attempt_spans(facts, [(1, 2)])
    assert [f[0] for f in tied] == [10, None, None]
    tied = _tie_attempt_spans([facts[0], facts[1], (None, None, False, "i", None, 1, 0)], [(0, 2)])
    assert tied[2][:3] == (5, "scan", True)


def _random_retries(tmp_path: Path, seed: int) -> tuple[Shaper, dict[str, pa.Table], list[int]]:
    """Commits into the san_francisco file group, some by retried tasks: every attempt but the last wrote a partial
    sequence of blocks (other values, sometimes other keys), the last the whole one; attempts land in any order, in
    the current log or rolled over to a new one with their own write token. Returns the shaper, the model after each
    commit and every event time written."""
    rng = random.Random(seed)
    s = Shaper.copy(tmp_path)
    keys = s.sf_keys()
    history: dict[str, pa.Table] = {}
    times: list[int] = []
    version = 1
    for n in range(rng.randint(2, 4)):
        instant = f"2025040{n + 1}000000000"
        s.requested(instant)
        blocks = rng.randint(1, 3)
        attempts = rng.randint(1, 3)
        final: dict[str, dict] = {}
        writes: list[tuple[str, int, int, int, int]] = []
        # Attempts land in any order: a speculative or zombie attempt may append after the one that counts.
        for attempt in rng.sample(range(attempts), attempts):
            last = attempt == attempts - 1
            if rng.random() < 0.5:
                version += 1
            name = log_name(version, f"0-{40 + n}-{100 + attempt}")
            count = blocks if last else rng.randint(1, blocks - 1) if blocks > 1 else 0
            for seq in range(count):
                ts = T0 + rng.randint(-1000, 1000)
                times.append(ts)
                picked = rng.sample(keys, rng.randint(1, 3))
                up = s.updates(picked, fare=float(rng.randint(1, 99)), ts=ts)
                off, size = s.append(name, s.with_block_id(s.data_block(instant, up), attempt, seq))
                if last:
                    final.update(up)
                    writes.append((name, off, size, len(up), 0))
        s.complete(instant, writes, final)
        history[instant] = s.model()
    return s, history, times


@SKIP_NO_SHARED
@pytest.mark.parametrize("seed", range(int(os.environ.get("EVT_SPURIOUS_SEEDS", "8"))))
def test_random_retried_tasks_read_and_compact_as_java_reads_them(tmp_path: Path, seed: int) -> None:
    s, history, times = _random_retries(tmp_path, seed)
    t = evt.HudiTable.open(s.root)
    _check(t, s, history, {}, f"seed {seed}")
    rng = random.Random(seed)
    threshold = rng.choice([*times, T0 - 2000, T0 + 2000])
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=threshold, event_time_field="ts"))
    if c is None:
        return
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    _check(t, s, history, {}, f"seed {seed}: compacted at {threshold}")


@SKIP_NO_SHARED
def test_facts_from_write_stats_do_not_hide_a_spurious_attempt(tmp_path: Path) -> None:
    """With ``minEventTime`` in the write stats the retry's log is accounted for by them, which do not tell its blocks'
    attempts: the slice's facts are then read from the logs, and the spurious block still does not count."""
    s, _ = _build(tmp_path)
    for instant, mn in ((RETRIED, T0 + 100), (LATER, T0 + 200)):
        path = s.root / ".hoodie" / f"{instant}.deltacommit"
        meta = json.loads(path.read_text())
        for stats in meta["partitionToWriteStats"].values():
            for st in stats:
                st["minEventTime"] = mn
        path.write_text(json.dumps(meta))
    props = s.root / ".hoodie" / "hoodie.properties"  # stats record the table's own event-time field
    props.write_text(props.read_text() + "hoodie.payload.event.time.field=ts\n")
    t = evt.HudiTable.open(s.root)
    for use_write_stats in (True, False):
        [info] = [i for i in slice_infos(t, "ts", use_write_stats=use_write_stats) if i.file_id == FILE_ID]
        by_name = {lf.name: lf for lf in info.log_files}
        assert by_name[log_name(3, "0-40-100")].min_event_time == T0 + 100, use_write_stats
        assert by_name[log_name(2, "0-40-101")].min_event_time == T0 + 100, use_write_stats
