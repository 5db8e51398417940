"""An adversarial sequence tester with an oracle of its own: seeded sequences of writes, compactions, crashes and
services on one table, checked after every step against a plain dict of what was committed.

The oracle (:class:`Oracle`) knows nothing of files, slices or forms: it keeps the list of committed writes (each a
dict ``(partition, key) -> record`` after the batch's de-duplication) and folds it per key under Hudi's log-merge
rules. Every record starts in a log (inserts into an empty bucket create a log-only file group), so the answer of a
table that was never compacted is exactly that fold, and a compaction may not change it. One exception is Hudi's own
rule, not the toolkit's: in event-time ordering a base row beats a later log winner whose ordering value is smaller,
and after a delete without an ordering value (a commit-time delete) a smaller record does win the log merge. So once
a compaction has completed, a key deleted by a commit-time delete and then written with a smaller ordering value may
read as the row a compaction put in its base file; the oracle accepts those rows too for such keys (and only them),
and the step checks below bind them exactly (hudi-rs, and "a compaction changes no answer").

The oracle is fed from the timeline, never from what an operation reported: after every step the deltacommits that
completed since are committed with the batch that was written, the ones that went (rolled back) are removed, and
completed compactions are noted. So the same checks hold whatever did the step — the Python API through one of
several long-lived handles, the ``evt`` command, or a child process killed with ``SIGKILL`` right before a randomly
chosen change to storage (every mutating storage call and every rename counts, not only the named fault points).

What varies, on purpose beyond the project's own model tests: table versions 6, 8 and 9; both merge modes; up to
five partitions and four buckets (many file groups); event time in its own nullable column or the ordering field
itself; an ``int`` ordering field (a delete whose ordering value is ``0`` is then Hudi's commit-time delete); event
times exactly at a compaction's threshold; soft deletes, deletes with and without ordering values and event times,
deletes of keys never written, keys written again after a delete; inserts; long chains of event-time, unbounded and
log-count compactions (leftover links of one becoming leftovers of the next), in both link modes and timings, with
and without exact split; writes landing between a schedule and its run; unschedules after such writes; rollbacks of
the last write after a compaction was planned over it, of failed writes and of inflight runs; cleans of both
policies between steps; repairs; crashes of any operation recovered at once, later, or never before other services
ran.

After every step (:meth:`Sequence.check`):

* a fresh handle's snapshot is the oracle's answer (one row per key, each key's row allowed);
* hudi-rs reads the same snapshot (not while a compaction is pending on version 6: hudi-rs drops logs named after a
  pending compaction) and the same read-optimized view; every read-optimized row is a row some committed write wrote;
* a step that writes no data (schedule, run, unschedule, clean, repair, a refused or crashed operation that left no
  committed change) changes no answer: the snapshot, and time travel to sampled writes, are what they were;
* the freshness the table reports holds: the read-optimized rows with event time ≤ it are the snapshot's;
* time travel to sampled committed writes is the oracle's answer as of them (or a ``ReadError`` justified by a clean
  or a pending write), and hudi-rs answers the same as of one of them;
* incremental windows between consecutive writes return each key once and only rows the window's writes wrote; under
  commit-time ordering exactly the oracle's, and hudi-rs's;
* every file a latest slice needs is there and no visible symlink dangles; every pending plan validates;
* a stale handle (not refreshed for others' steps) answers as the table was at some step since it last loaded, or
  raises an ``EvtError`` — never anything else.

At the end (:meth:`Sequence.finish`) the table must come back to fully compacted through the documented recovery —
pending rollbacks resumed (or refused only because they can no longer finish), failed writes rolled back, pending
plans run or taken back, a full compaction scheduled and run, a clean — each step checked as above, and then the
read-optimized view is the snapshot. A table that can no longer be compacted is a defect too.

Used by ``tests/safety/test_independent_sequences.py``; ``python -m tests.safety.adversary SEED [N]`` runs seeds
from the command line (``EVT_ADV_TRACE=1`` prints each step).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import evt_toolkit as evt
from evt_toolkit.cli.app import main as evt_main
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import (
    LogFileNumBasedCompactionStrategy,
    LogFileSizeBasedCompactionStrategy,
    UnBoundedCompactionStrategy,
)
from evt_toolkit.errors import EvtError, ReadError
from evt_toolkit.faults import ENV_VAR
from evt_toolkit.format.names import LogFileName
from evt_toolkit.table.timeline import Timeline
from evt_toolkit.write.bucket import bucket_ids
from tests.faults.forked import run_forked

REPO_ROOT = Path(__file__).resolve().parents[2]
BASE = 1_700_000_000_000
MARK = 1_000  # event times sit on marks of one second, so thresholds can hit them exactly
COLS = ["id", "p", "ts", "ev", "v"]
TRACE = os.environ.get("EVT_ADV_TRACE") == "1"

Key = tuple[str, str]  # (partition value, record key)
Row = tuple[Any, ...]  # (id, p, ts, ev, v)


class Failure(AssertionError):
    """A check failed; the message names the seed, the step and what differed."""


# -- the oracle --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rec:
    """One record of a committed write: ``data`` (a row, maybe soft-deleted), ``del`` (a delete with an ordering
    value) or ``ct`` (a delete without one, or Hudi's ``IntWrapper(0)``)."""

    kind: str
    ts: int | None
    row: Row | None = None
    soft: bool = False

    @property
    def live(self) -> bool:
        return self.kind == "data" and not self.soft


@dataclass
class Write:
    instant: str
    recs: dict[Key, Rec]


@dataclass
class Allowed:
    """The rows a key may read as (``None``: absent), the first being the fold's."""

    rows: list[Row | None]

    @property
    def exact(self) -> bool:
        return len(self.rows) == 1


class Oracle:
    """Committed writes in commit order and completed compactions; answers per key by folding Hudi's merge rules."""

    def __init__(self, event_time: bool) -> None:
        self.event_time = event_time
        self.writes: list[Write] = []
        self.compactions: list[str] = []  # completed compaction instants (requested times)

    def instants(self) -> list[str]:
        return [w.instant for w in self.writes]

    def commit(self, instant: str, recs: dict[Key, Rec]) -> None:
        self.writes.append(Write(instant, recs))
        self.writes.sort(key=lambda w: w.instant)

    def remove(self, instant: str) -> None:
        self.writes = [w for w in self.writes if w.instant != instant]

    def compacted(self, instant: str) -> None:
        if instant not in self.compactions:
            self.compactions.append(instant)

    def row_instant(self) -> dict[Row, str]:
        return {r.row: w.instant for w in self.writes for r in w.recs.values() if r.row is not None}

    def _wins(self, state: Rec | None, r: Rec) -> bool:
        if not self.event_time or state is None:
            return True
        if r.kind == "ct":
            return True
        if state.kind == "ct":
            return r.kind == "data"  # a delete arriving on a commit-time delete is dropped
        assert r.ts is not None and state.ts is not None
        return r.ts >= state.ts

    def answer(self, as_of: str | None = None) -> dict[Key, Allowed]:
        """Every key ever written (up to ``as_of``, a requested time) with the rows it may read as."""
        events: list[tuple[str, int, Write | None]] = [(w.instant, 1, w) for w in self.writes]
        events += [(c, 0, None) for c in self.compactions]
        events.sort(key=lambda e: (e[0], e[1]))
        state: dict[Key, Rec] = {}
        history: dict[Key, list[Row]] = {}  # live rows written, in order
        pool_at_compaction: dict[Key, list[Row]] = {}  # live rows written before the latest compaction
        suspects: dict[Key, list[Row]] = {}  # rows a base file may hold after the key's last commit-time delete
        for instant, _kind, w in events:
            if as_of is not None and instant > as_of:
                break
            if w is None:
                pool_at_compaction = {k: list(v) for k, v in history.items()}
                continue
            for key, r in w.recs.items():
                if self._wins(state.get(key), r):
                    if self.event_time and r.kind == "ct":
                        suspects[key] = list(pool_at_compaction.get(key, []))
                    state[key] = r
                if r.live and r.row is not None:
                    history.setdefault(key, []).append(r.row)
        out: dict[Key, Allowed] = {}
        for key, s in state.items():
            exact = s.row if s.live else None
            rows: list[Row | None] = [exact]
            if self.event_time and s.kind != "ct" and s.ts is not None:
                rows += [row for row in suspects.get(key, []) if row[2] > s.ts and row not in rows]
            out[key] = Allowed(rows)
        return out


# -- a sequence --------------------------------------------------------------------------------------------------------


@dataclass
class Config:
    version: int
    merge_mode: str
    partitions: list[str]
    buckets: int
    keys: int
    ev_field: str  # "ev" (its own nullable column) or "ts" (the ordering field)
    ts_type: pa.DataType
    soft_deletes: bool
    hive: bool
    ev_unit: str = "ms"  # the epoch unit of an "ev" column: "ms" or "s"
    header: bool = False  # MIN_EVENT_TIME log block headers (hudi-rs cannot read such tables)
    dense: bool = False  # few keys and file groups, many deletes and compactions, few crashes

    @classmethod
    def draw(cls, rng: random.Random) -> Config:
        ev_field = rng.choice(["ev", "ev", "ts"])
        dense = rng.random() < 0.5
        return cls(
            version=rng.choice([6, 6, 9, 9, 8]),
            merge_mode=rng.choice(["event_time", "commit_time", "event_time"]),
            partitions=[f"p{i}" for i in range(rng.choice([1, 2] if dense else [0, 1, 2, 3, 5]))],
            buckets=rng.choice([1, 2] if dense else [1, 2, 4]),
            keys=rng.choice([3, 5] if dense else [6, 12, 24]),
            ev_field=ev_field,
            ts_type=pa.int32() if ev_field == "ev" and rng.random() < 0.3 else pa.int64(),
            soft_deletes=rng.random() < 0.5,
            hive=rng.random() < 0.7,
            ev_unit="s" if ev_field == "ev" and rng.random() < 0.25 else "ms",
            header=rng.random() < 0.1,
            dense=dense,
        )


@dataclass
class Handle:
    table: evt.HudiTable
    loaded_at: int  # the step from which on its cached state may date


@dataclass
class Outcome:
    what: str
    refused: str | None = None
    crashed: bool = False


CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, threading
    kill_at = int(sys.argv[1])
    spec = json.loads(sys.argv[2])
    lock = threading.Lock()
    calls = [0]

    def hit():
        with lock:
            calls[0] += 1
            if calls[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    from evt_toolkit.storage.fs import TableStorage

    def wrap(owner, name):
        original = getattr(owner, name)

        def wrapped(*a, **kw):
            hit()
            return original(*a, **kw)

        setattr(owner, name, wrapped)

    for name in ("write_bytes_atomic", "copy_file", "delete_file", "delete_files", "delete_dir", "delete_contents",
                 "symlink", "makedirs"):
        wrap(TableStorage, name)
    wrap(os, "replace")
    wrap(os, "rename")
    import pyarrow.parquet as pq
    import evt_toolkit as evt
    from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
    from evt_toolkit.compaction.strategy import (
        LogFileNumBasedCompactionStrategy, LogFileSizeBasedCompactionStrategy, UnBoundedCompactionStrategy)

    def strategy_from_spec(s):
        return {
            "event_time": lambda: EventTimeBasedCompactionStrategy(threshold=s.get("threshold")),
            "lateness": lambda: EventTimeBasedCompactionStrategy(allowed_lateness=s.get("lateness")),
            "unbounded": UnBoundedCompactionStrategy,
            "log_num": lambda: LogFileNumBasedCompactionStrategy(num_threshold=s.get("n")),
            "log_size": lambda: LogFileSizeBasedCompactionStrategy(size_threshold=s.get("size")),
        }[s["kind"]]()

    t = evt.HudiTable.open(spec["path"])
    a = spec["action"]
    if a == "write":
        t.write(pq.read_table(spec["batch"]), spec["operation"])
    elif a == "schedule":
        t.compaction.schedule(strategy_from_spec(spec["strategy"]), link_mode=spec["link_mode"],
                              link_timing=spec["link_timing"], exact_split=spec["exact_split"])
    elif a == "run":
        t.compaction.run(spec["instant"])
    elif a == "unschedule":
        t.compaction.unschedule(spec["instant"], dry_run=False)
    elif a == "rollback":
        t.rollback(spec["instant"])
    elif a == "clean":
        t.clean(spec["policy"], spec["retained"], dry_run=False)
    elif a == "repair":
        t.compaction.repair(dry_run=False, older_than_s=0)
    print("finished", calls[0], flush=True)
    """
)


def strategy_from_spec(spec: dict[str, Any]) -> Any:
    kind = spec["kind"]
    if kind == "event_time":
        return EventTimeBasedCompactionStrategy(threshold=spec["threshold"])
    if kind == "lateness":
        return EventTimeBasedCompactionStrategy(allowed_lateness=spec["lateness"])
    if kind == "unbounded":
        return UnBoundedCompactionStrategy()
    if kind == "log_num":
        return LogFileNumBasedCompactionStrategy(num_threshold=spec["n"])
    if kind == "log_size":
        return LogFileSizeBasedCompactionStrategy(size_threshold=spec["size"])
    raise ValueError(kind)


def _rows(t: pa.Table) -> list[Row]:
    if t.num_rows == 0:
        return []
    if "ev" not in t.column_names:  # event time is the ordering field
        t = t.append_column("ev", t["ts"].cast(pa.int64()))
    cols = [t[c].to_pylist() for c in COLS]
    return list(zip(*cols, strict=True))


def _by_key(rows: list[Row], what: str) -> dict[Key, Row]:
    out: dict[Key, Row] = {}
    for r in rows:
        k = (r[1], r[0])
        if k in out:
            raise Failure(f"{what}: key {k} read twice: {out[k]} and {r}")
        out[k] = r
    return out


def _hudi_rs() -> Any:
    import hudi

    return hudi


class Sequence:
    """One table, one oracle, several handles; :meth:`step` draws and applies a step, then :meth:`check`."""

    def __init__(self, seed: int, root: Path, *, crashes: bool = True, cli: bool = True) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.cfg = Config.draw(self.rng)
        self.path = root / f"t{seed}"
        self.crashes = crashes
        self.cli = cli
        self.event_time = self.cfg.merge_mode == "event_time"
        self.oracle = Oracle(self.event_time)
        self.batches: dict[str, dict[Key, Rec]] = {}  # by instant, once the timeline shows it
        self.pending_writes: dict[str, dict[Key, Rec]] = {}  # failed, not rolled back
        self.known: dict[str, str] = {}  # instant -> state key of the last timeline seen
        self.clock = 100
        self.n = 0
        self.trace: list[str] = []
        self.snapshots: list[frozenset[Row]] = []
        self.counts: dict[str, int] = {}
        self.key_part: dict[str, str] = {}
        for i in range(self.cfg.keys):
            self.key_part[f"k{i:02d}"] = self.rng.choice(self.cfg.partitions) if self.cfg.partitions else ""
        t = evt.HudiTable.create(
            self.path,
            "adv",
            "id",
            partition_by="p" if self.cfg.partitions else None,
            ordering_field="ts",
            event_time_field=self.cfg.ev_field,
            buckets=self.cfg.buckets,
            merge_mode=self.cfg.merge_mode,
            table_version=self.cfg.version,
            hive_style_partitioning=self.cfg.hive,
            event_time_unit=self.cfg.ev_unit,
            min_event_time_header=self.cfg.header,
        )
        self.handles = [Handle(t, 0)] + [Handle(evt.HudiTable.open(self.path), 0) for _ in range(2)]
        self.last_snapshot: frozenset[Row] = frozenset()
        self.queue: list[str] = []  # steps a composite step planned
        self.marks: list[int] = []  # event times written (thresholds pick among them)
        self.note(f"config {self.cfg}")

    # -- bookkeeping ---------------------------------------------------------------------------------------------------
    def note(self, msg: str) -> None:
        self.trace.append(f"[{self.n}] {msg}")
        if TRACE:
            print(f"seed {self.seed} [{self.n}] {msg}", flush=True)

    def fail(self, msg: str) -> Failure:
        tail = "\n".join(self.trace[-25:])
        return Failure(f"seed {self.seed}, step {self.n}: {msg}\n--- last steps ---\n{tail}")

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def fresh(self) -> evt.HudiTable:
        return evt.HudiTable.open(self.path)

    def timeline_states(self) -> dict[str, tuple[str, str]]:
        """instant -> (action, state) of every instant on the timeline, as a fresh handle sees it."""
        tl = self.fresh().timeline
        return {i.time: (i.action, i.state) for i in tl.instants}

    def sync(self, tried: dict[Key, Rec] | None) -> None:
        """Feed the oracle what the timeline says happened since the last step."""
        tl = self.fresh().timeline
        now: dict[str, tuple[str, bool]] = {}
        for i in tl.instants:
            now[i.time] = (i.action, i.is_completed)
        # Writes: completed deltacommits not yet committed to the oracle; pending ones are failed writes.
        committed = set(self.oracle.instants())
        for instant, (action, done) in sorted(now.items()):
            if action != "deltacommit":
                continue
            if done and instant not in committed:
                recs = self.pending_writes.pop(instant, None)
                if recs is None:
                    recs = self.batches.get(instant)
                if recs is None:
                    if tried is None:
                        raise self.fail(f"deltacommit {instant} completed and no batch is known for it")
                    recs = tried
                    tried = None
                self.batches[instant] = recs
                self.oracle.commit(instant, self._effective(recs))
            elif not done and instant not in committed and instant not in self.pending_writes:
                recs = self.batches.get(instant)
                if recs is None:
                    if tried is None:
                        raise self.fail(f"deltacommit {instant} pending and no batch is known for it")
                    recs = tried
                    tried = None
                self.batches[instant] = recs
                self.pending_writes[instant] = recs
        for instant in list(committed):
            state = now.get(instant)
            if state is None or not state[1]:
                self.oracle.remove(instant)  # rolled back (or being rolled back: uncommitted)
                self.note(f"  write {instant} is no longer committed")
                if state is not None:
                    self.pending_writes[instant] = self.batches[instant]
        for instant in list(self.pending_writes):
            if instant not in now:
                del self.pending_writes[instant]
        for instant, (action, done) in now.items():
            if action in ("commit", "compaction") and done:
                self.oracle.compacted(instant)

    def _effective(self, recs: dict[Key, Rec]) -> dict[Key, Rec]:
        """The batch as it lands: deletes into buckets without a committed file group are dropped by the writer."""
        groups = self._committed_groups()
        out: dict[Key, Rec] = {}
        for key, r in recs.items():
            if r.row is None and (key[0], self._bucket(key[1])) not in groups:
                continue
            out[key] = r
        return out

    def _bucket(self, key: str) -> int:
        extraction = "1.x" if self.cfg.version >= 8 else "0.x"
        return int(bucket_ids([key], ["id"], self.cfg.buckets, key_extraction=extraction)[0])

    def _committed_groups(self) -> set[tuple[str, int]]:
        return {(k[0], self._bucket(k[1])) for w in self.oracle.writes for k, r in w.recs.items() if r.row is not None}

    def _pending_groups(self) -> set[tuple[str, int]]:
        return {(k[0], self._bucket(k[1])) for recs in self.pending_writes.values() for k, r in recs.items() if r.row}

    # -- batches -------------------------------------------------------------------------------------------------------
    def _ev(self) -> int | None:
        r = self.rng.random()
        if self.cfg.ev_field == "ev" and r < 0.12:
            return None
        if self.marks and r < 0.35:
            return self.rng.choice(self.marks)  # exactly an earlier event time (thresholds sit on these)
        if r < 0.6:
            return BASE + self.rng.randint(0, 400) * MARK
        # Event time mostly follows the steps, now and then late: event-time plans then leave logs over.
        return BASE + max(0, 5 * self.n - self.rng.choice([0, 0, 0, 1, 2, 8, 30])) * MARK

    def _ev_value(self, ev_ms: int | None) -> int | None:
        """An event time (epoch ms, on whole seconds) as the event-time column holds it."""
        if ev_ms is None or self.cfg.ev_unit == "ms":
            return ev_ms
        return ev_ms // 1000

    def _ev_ms(self, value: int | None) -> int | None:
        if value is None or self.cfg.ev_unit == "ms":
            return value
        return value * 1000

    def _key(self) -> str:
        return f"k{self.rng.randrange(self.cfg.keys):02d}"

    def _part(self, key: str) -> str:
        """The key's partition; now and then another one (one key in two partitions is two records)."""
        if len(self.cfg.partitions) > 1 and self.rng.random() < 0.08:
            return self.rng.choice(self.cfg.partitions)
        return self.key_part[key]

    def _ordering(self, key: str) -> int:
        r = self.rng.random()
        self.clock += self.rng.randint(0, 3)
        if r < 0.55:
            return self.clock
        if r < 0.75:
            return max(0, self.clock - self.rng.randint(1, 30))  # late
        if r < 0.9:
            cur = self._current_ts(key)
            return cur if cur is not None else self.clock  # a tie with the current record
        return 0

    def _current_ts(self, key: str) -> int | None:
        for w in reversed(self.oracle.writes):
            r = w.recs.get((self.key_part[key], key))
            if r is not None and r.ts is not None:
                return r.ts
        return None

    def upsert_batch(self) -> tuple[pa.Table, dict[Key, Rec]]:
        n = self.rng.randint(1, max(2, self.cfg.keys // 2))
        rows: list[dict[str, Any]] = []
        for i in range(n):
            key = self._key()
            if rows and self.rng.random() < 0.15:
                key = rows[self.rng.randrange(len(rows))]["id"]  # a duplicate in the batch
            ev = self._ev()
            ts = self._ordering(key)
            if self.cfg.ev_field == "ts":
                ts = ev if ev is not None else BASE
                ev = ts
            soft = self.cfg.soft_deletes and self.rng.random() < 0.12
            if ev is not None and ev not in self.marks:
                self.marks.append(ev)
            part = self._part(key)
            row = {"id": key, "p": part, "ts": ts, "ev": self._ev_value(ev), "v": f"s{self.n}.{i}", "soft": soft}
            rows.append(row)
        cols: dict[str, Any] = {
            "id": pa.array([r["id"] for r in rows], pa.string()),
            "p": pa.array([r["p"] for r in rows], pa.string()),
            "ts": pa.array([r["ts"] for r in rows], self.cfg.ts_type),
            "v": pa.array([r["v"] for r in rows], pa.string()),
        }
        if self.cfg.ev_field == "ev":
            cols["ev"] = pa.array([r["ev"] for r in rows], pa.int64())
        if self.cfg.soft_deletes:
            cols["_hoodie_is_deleted"] = pa.array([r["soft"] for r in rows], pa.bool_())
        batch = pa.table(cols)
        recs: dict[Key, Rec] = {}
        best: dict[Key, dict[str, Any]] = {}
        for r in rows:  # greatest ordering value wins, ties to the later row
            k = (r["p"], r["id"])
            if k not in best or r["ts"] >= best[k]["ts"]:
                best[k] = r
        for k, r in best.items():
            row = (r["id"], r["p"], r["ts"], r["ev"], r["v"])
            if self.event_time and r["soft"] and r["ts"] == 0 and self.cfg.ts_type == pa.int32():
                # A soft delete whose ordering value is Hudi's default (the int 0) is a commit-time delete to Hudi
                # 1.x's record mergers (BufferedRecord.isCommitTimeOrderingDelete), as to hudi-rs.
                recs[k] = Rec("ct", None, row, True)
            else:
                recs[k] = Rec("data", r["ts"], row, r["soft"])
        return batch, recs

    def delete_batch(self) -> tuple[pa.Table, dict[Key, Rec]] | None:
        blocked = self._pending_groups() - self._committed_groups()
        keys: list[str] = []
        parts: list[str] = []
        for _ in range(self.rng.randint(1, 4)):
            key = self._key()
            part = self._part(key)
            if (part, self._bucket(key)) in blocked:
                continue  # a bucket whose only file group a pending write created: where it lands is not settled
            if (part, key) not in zip(parts, keys, strict=True):
                keys.append(key)
                parts.append(part)
        if not keys:
            return None
        with_ts = self.rng.random() < (0.5 if self.cfg.dense else 0.6)
        with_ev = self.cfg.ev_field == "ev" and self.rng.random() < 0.5
        cols: dict[str, Any] = {
            "id": pa.array(keys, pa.string()),
            "p": pa.array(parts, pa.string()),
        }
        recs: dict[Key, Rec] = {}
        ts_values: list[int | None] = []
        for k, part in zip(keys, parts, strict=True):
            ts: int | None = self._ordering(k) if with_ts else 0
            if self.cfg.ev_field == "ts" and with_ts:
                ts = self._ev() or BASE
            if with_ts and self.rng.random() < 0.12:
                ts = None  # a delete without an ordering value in a batch that has the column
            ts_values.append(ts)
            if not with_ts or ts is None or (self.cfg.ts_type == pa.int32() and ts == 0):
                recs[(part, k)] = Rec("ct", None)
            else:
                recs[(part, k)] = Rec("del", ts)
        if with_ts:
            cols["ts"] = pa.array(ts_values, self.cfg.ts_type)
        if with_ev:
            cols["ev"] = pa.array([self._ev_value(self._ev()) for _ in keys], pa.int64())
        return pa.table(cols), recs

    # -- operations ----------------------------------------------------------------------------------------------------
    def handle(self) -> Handle:
        return self.rng.choice(self.handles)

    def pending_compactions(self) -> list[tuple[str, bool]]:
        return [(i.time, i.is_inflight) for i in self.fresh().timeline.pending_compactions()]

    def strategy_spec(self) -> dict[str, Any]:
        r = self.rng.random() if self.marks else 0.65 + 0.35 * self.rng.random()
        if r < 0.55:
            t = self.rng.choice(self.marks) + self.rng.choice([0, 0, 0, -1, 1])
            return {"kind": "event_time", "threshold": t}
        if r < 0.65:
            return {"kind": "lateness", "lateness": self.rng.randint(0, 200) * MARK}
        if r < 0.8:
            return {"kind": "unbounded"}
        if r < 0.92:
            return {"kind": "log_num", "n": self.rng.randint(1, 3)}
        return {"kind": "log_size", "size": self.rng.choice([0, 2000, 5000])}

    def _cli(self, argv: list[str]) -> Outcome:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = evt_main(argv)
        if code == 0:
            return Outcome(f"{argv[0]} (evt)")
        if code == 1:  # an EvtError, or a refusal the command reports (unschedule)
            said = (err.getvalue().strip() or out.getvalue().strip() or "exit 1").splitlines()[-1]
            return Outcome(f"{argv[0]} (evt)", refused=said[:300])
        raise self.fail(f"evt {argv} exited {code}: {err.getvalue()[-2000:]}")

    def _api(self, what: str, fn: Callable[[], Any]) -> Outcome:
        try:
            result = fn()
        except EvtError as exc:
            return Outcome(what, refused=f"{type(exc).__name__}: {str(exc)[:300]}")
        if what == "schedule" and result is None:
            return Outcome("schedule-nothing")
        return Outcome(what)

    def _child(self, spec: dict[str, Any]) -> Outcome:
        kill_at = self.rng.randint(1, 12) if self.rng.random() < 0.7 else self.rng.randint(1, 60)
        env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
        proc = run_forked(CHILD, [str(kill_at), json.dumps(spec)], env, REPO_ROOT, 300)
        if proc.returncode == -9:
            return Outcome(f"{spec['action']} killed at storage change {kill_at}", crashed=True)
        if proc.returncode == 0:
            return Outcome(f"{spec['action']} (finished before change {kill_at})")
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
        if last.startswith("evt_toolkit.errors."):  # refused, before the change it was to be killed at
            return Outcome(f"{spec['action']} (in a child)", refused=last[:300])
        raise self.fail(f"child {spec} exited {proc.returncode}: {proc.stderr[-3000:]}")

    def _via(self, spec: dict[str, Any], api: Callable[[evt.HudiTable], Any], argv: list[str] | None) -> Outcome:
        """Run an operation through the API on some handle, through ``evt``, or in a child killed at random."""
        r = self.rng.random()
        if self.crashes and r < (0.08 if self.cfg.dense else 0.22):
            return self._child({**spec, "path": str(self.path)})
        if self.cli and argv is not None and r < 0.4:
            return self._cli(argv)
        h = self.handle()
        h.loaded_at = self.n
        return self._api(spec["action"], lambda: api(h.table))

    def op_write(self, operation: str) -> tuple[Outcome, dict[Key, Rec] | None]:
        if operation == "delete":
            got = self.delete_batch()
            if got is None:
                return Outcome("delete (nothing to delete)"), None
            batch, recs = got
        else:
            batch, recs = self.upsert_batch()
        shown = sorted(
            ((k[1], r.kind + ("/soft" if r.soft else ""), r.ts, r.row[3] if r.row else None) for k, r in recs.items()),
            key=str,  # one key name in two partitions: an ordering value may be None beside a number
        )
        self.note(f"{operation} {shown}")
        if self.crashes and self.rng.random() < (0.05 if self.cfg.dense else 0.14):
            name = str(self.path.parent / f"batch-{self.n}.parquet")
            pq.write_table(batch, name)
            out = self._child({"action": "write", "batch": name, "operation": operation, "path": str(self.path)})
            os.unlink(name)
            return out, recs
        h = self.handle()
        h.loaded_at = self.n
        return self._api(operation, lambda: h.table.write(batch, operation)), recs

    def op_schedule(self) -> Outcome:
        spec = self.strategy_spec()
        link_mode = self.rng.choice(["copy", "symlink"])
        link_timing = self.rng.choice(["schedule", "execute"])
        exact = spec["kind"] in ("event_time", "lateness") and self.rng.random() < 0.3
        self.note(f"schedule {spec} {link_mode} {link_timing} exact_split={exact}")
        argv: list[str] | None = None
        if spec["kind"] in ("event_time", "unbounded", "lateness"):
            argv = ["schedule", str(self.path), "--link-mode", link_mode, "--link-timing", link_timing]
            if spec["kind"] == "event_time":
                argv += ["--threshold", str(spec["threshold"])]
            elif spec["kind"] == "lateness":
                argv += ["--allowed-lateness", f"{spec['lateness'] // 1000}s"]
            else:
                argv += ["--strategy", "unbounded"]
            if exact:
                argv.append("--exact-split")
        return self._via(
            {
                "action": "schedule",
                "strategy": spec,
                "link_mode": link_mode,
                "link_timing": link_timing,
                "exact_split": exact,
            },
            lambda t: t.compaction.schedule(
                strategy_from_spec(spec), link_mode=link_mode, link_timing=link_timing, exact_split=exact
            ),
            argv,
        )

    def op_run(self) -> Outcome:
        pending = self.pending_compactions()
        if not pending:
            out = self.op_schedule()
            if out.crashed or out.refused:
                return out
            self.sync(None)
            pending = self.pending_compactions()
            if not pending:
                return Outcome("run (nothing pending)")
        c = self.rng.choice(pending)[0]
        self.note(f"run {c}")
        return self._via({"action": "run", "instant": c}, lambda t: t.compaction.run(c), ["run", str(self.path), c])

    def op_unschedule(self) -> Outcome:
        pending = self.pending_compactions()
        if not pending:
            return Outcome("unschedule (nothing pending)")
        c = self.rng.choice(pending)[0]
        self.note(f"unschedule {c}")
        return self._via(
            {"action": "unschedule", "instant": c},
            lambda t: t.compaction.unschedule(c, dry_run=False),
            ["unschedule", str(self.path), c, "--yes"],
        )

    def op_rollback(self) -> Outcome:
        tl = self.fresh().timeline
        choices: list[str] = []
        writes = [i.time for i in tl.instants if i.action == "deltacommit" and i.is_completed]
        if writes:
            choices += [writes[-1]] * 3 + [self.rng.choice(writes)]
        choices += list(self.pending_writes) * 2
        choices += [c for c, inflight in self.pending_compactions() if inflight] * 2
        pending_rb = self._pending_rollbacks(tl)
        choices += list(pending_rb)
        if not choices:
            return Outcome("rollback (nothing to roll back)")
        target = self.rng.choice(choices)
        if target in pending_rb:
            # A pending rollback is resumed by rolling back its target again.
            plan_target = pending_rb[target]
            if plan_target is None:
                return Outcome("rollback (pending rollback without a readable plan)")
            target = plan_target
        self.note(f"rollback {target}")
        return self._via(
            {"action": "rollback", "instant": target},
            lambda t: t.rollback(target),
            ["rollback", str(self.path), target, "--yes"],
        )

    @staticmethod
    def _pending_rollbacks(tl: Timeline) -> dict[str, str | None]:
        """Each pending rollback's instant and the write its plan rolls back (``None``: no readable plan)."""
        out: dict[str, str | None] = {}
        for i in tl.instants:
            if i.action == "rollback" and not i.is_completed:
                out[i.time] = None
                with contextlib.suppress(EvtError):
                    out[i.time] = tl.rollback_plan(i).target
        return out

    def op_recover(self) -> Outcome:
        """The common recovery: roll back every failed write (and resume pending rollbacks)."""
        targets = sorted(self.pending_writes)
        if not targets:
            return Outcome("recover (nothing failed)")
        self.note(f"recover: roll back {targets}")
        out = Outcome("recover")
        for target in targets:
            out = self._via(
                {"action": "rollback", "instant": target},
                lambda t, target=target: t.rollback(target),
                ["rollback", str(self.path), target, "--yes"],
            )
            if out.crashed or out.refused:
                break
        return out

    def op_rerun(self) -> Outcome:
        """Run a completed compaction again, unschedule it, or roll back an instant already rolled back: refused,
        nothing changes (the step-differential check holds the table to it). A write whose rollback a crash left
        pending is the exception: rolling it back again resumes that rollback, which must succeed."""
        tl = self.fresh().timeline
        done = [i.time for i in tl.instants if i.action == "commit" and i.is_completed]
        # A write whose rollback a crash left pending is gone from the timeline but not yet rolled back: rolling it back
        # again resumes that rollback and must succeed (the step's checks then hold the table to the oracle).
        resumable = set(self._pending_rollbacks(tl).values())
        gone = sorted(set(self.batches) - {i.time for i in tl.instants})
        choices: list[tuple[str, str]] = [("run", c) for c in done] + [("unschedule", c) for c in done]
        choices += [("rollback", g) for g in gone]
        if not choices:
            return Outcome("rerun (nothing done yet)")
        what, instant = self.rng.choice(choices)
        self.note(f"again: {what} {instant}")
        if what == "run":
            out = self._via({"action": "run", "instant": instant}, lambda t: t.compaction.run(instant), None)
        elif what == "unschedule":
            out = self._via(
                {"action": "unschedule", "instant": instant},
                lambda t: t.compaction.unschedule(instant, dry_run=False),
                ["unschedule", str(self.path), instant, "--yes"],
            )
        else:
            out = self._via(
                {"action": "rollback", "instant": instant},
                lambda t: t.rollback(instant),
                ["rollback", str(self.path), instant, "--yes"],
            )
        if what == "rollback" and instant in resumable:
            if out.refused:
                raise self.fail(f"resuming the pending rollback of {instant} was refused: {out.refused}")
            return Outcome("again-rollback-resumed", crashed=out.crashed)
        if not out.refused and not out.crashed and what != "unschedule":  # unschedule reports its refusal
            raise self.fail(f"{what} of {instant} again was not refused")
        return Outcome(f"again-{what}", refused=out.refused, crashed=out.crashed)

    def op_clean(self) -> Outcome:
        policy = self.rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"])
        retained = self.rng.randint(1, 3)
        self.note(f"clean {policy} {retained}")
        return self._via(
            {"action": "clean", "policy": policy, "retained": retained},
            lambda t: t.clean(policy, retained, dry_run=False),
            ["clean", "run", str(self.path), "--policy", policy, "--retained", str(retained), "--yes"],
        )

    def op_repair(self) -> Outcome:
        self.note("repair")
        return self._via(
            {"action": "repair"},
            lambda t: t.compaction.repair(dry_run=False, older_than_s=0),
            ["repair", str(self.path), "--yes"],
        )

    def op_preview(self) -> Outcome:
        spec = self.strategy_spec()
        h = self.handle()
        return self._api("preview", lambda: h.table.compaction.preview(strategy_from_spec(spec)))

    # -- a step --------------------------------------------------------------------------------------------------------
    def step(self) -> None:
        self.n += 1
        before = self.last_snapshot
        tt_before = self._sample_time_travel()
        r = self.rng.random()
        tried: dict[Key, Rec] | None = None
        data_before = [w.instant for w in self.oracle.writes]
        if self.queue:
            r = {"upsert": 0.0, "delete": 0.3, "run": 0.5}[self.queue.pop(0)]
        elif self.pending_writes and self.rng.random() < 0.2:
            r = 0.85  # failed writes are usually rolled back soon (they block compaction schedules)
        elif self.cfg.dense and r < 0.5:
            # Dense sequences: writes, deletes and compactions of a few keys, in about equal parts.
            r = (0.0, 0.0, 0.29, 0.63, 0.63)[self.rng.randrange(5)]
        if r < 0.25:
            out, tried = self.op_write("upsert")
        elif r < 0.28:
            out, tried = self.op_write("insert")
        elif r < 0.36:
            out, tried = self.op_write("delete")
        elif r < 0.46:
            out = self.op_schedule()
        elif r < 0.58:
            out = self.op_run()
        elif r < 0.72:
            out = self.op_schedule()
            if not out.crashed:
                # The next steps: writes may land in the plan's new slices, then it runs (each step checked on its
                # own, so that the run's step commits no data and may change no answer).
                landing = ["upsert", "delete", "upsert"][: self.rng.choice([0, 0, 1, 2, 3])]
                self.queue = [*landing, "run"]
        elif r < 0.76:
            out = self.op_unschedule()
        elif r < 0.83:
            out = self.op_rollback()
        elif r < 0.9:
            out = self.op_recover()
        elif r < 0.96:
            out = self.op_clean()
        elif r < 0.98:
            out = self.op_repair()
        elif r < 0.99:
            out = self.op_rerun()
        else:
            out = self.op_preview()
        self.count(out.what.split(" ")[0] + (" refused" if out.refused else "") + (" crashed" if out.crashed else ""))
        self.note(f"  -> {out.what}{' REFUSED ' + out.refused if out.refused else ''}")
        self.sync(tried)
        data_after = [w.instant for w in self.oracle.writes]
        self.last_step_wrote_nothing = data_before == data_after
        self.check(unchanged=before if self.last_step_wrote_nothing else None, tt_before=tt_before)

    # -- checks --------------------------------------------------------------------------------------------------------
    def _sample_time_travel(self) -> dict[str, frozenset[Row] | None]:
        """Time travel to a few committed writes now, for the step-differential check."""
        instants = self.oracle.instants()
        if not instants:
            return {}
        picks = set(self.rng.sample(instants, min(2, len(instants))))
        t = self.fresh()
        out: dict[str, frozenset[Row] | None] = {}
        for i in sorted(picks):
            try:
                out[i] = frozenset(_rows(t.read(as_of=i)))
            except ReadError:
                out[i] = None
        return out

    def check(self, unchanged: frozenset[Row] | None, tt_before: dict[str, frozenset[Row] | None]) -> None:
        t = self.fresh()
        pending = t.timeline.pending_compactions()
        snap = _rows(t.read())
        ours = _by_key(snap, "snapshot")
        self._against_oracle(ours, self.oracle.answer(), "snapshot")
        snapset = frozenset(snap)
        if unchanged is not None and snapset != unchanged:
            raise self.fail(
                f"a step that committed no data changed the snapshot: gone {sorted(unchanged - snapset)[:6]}, "
                f"new {sorted(snapset - unchanged)[:6]}"
            )
        self.last_snapshot = snapset
        self.snapshots.append(snapset)
        # hudi-rs drops v6 logs named after a pending compaction, and fails on MIN_EVENT_TIME headers.
        skip_rs = (self.cfg.version == 6 and bool(pending)) or self.cfg.header
        if not skip_rs:
            rs = frozenset(self._rs())
            if rs != snapset:
                raise self.fail(
                    f"hudi-rs snapshot differs: only ours {sorted(snapset - rs)[:6]}, "
                    f"only rs {sorted(rs - snapset)[:6]}"
                )
            self._file_groups(t)
        ro = _rows(t.read("read_optimized"))
        _by_key(ro, "read-optimized view")
        if not self.cfg.header:
            rs_ro = self._rs(ro=True)
            if frozenset(ro) != frozenset(rs_ro):
                raise self.fail(f"hudi-rs RO differs: ours {sorted(ro)[:6]}, rs {sorted(rs_ro)[:6]}")
        written = {r.row for w in self.oracle.writes for r in w.recs.values() if r.row is not None}
        written |= {r.row for recs in self.batches.values() for r in recs.values() if r.row is not None}
        phantom = [r for r in ro if r not in written]
        if phantom:
            raise self.fail(f"RO rows no write wrote: {phantom[:5]}")
        self._freshness(t, ro, snap)
        self._time_travel(t, tt_before, skip_rs)
        self._incremental(t, skip_rs)
        self._files(t)
        self._stale()

    def _file_groups(self, t: evt.HudiTable) -> None:
        """hudi-rs sees the file groups we see: no file of ours (a leftover, a link) reads as another one."""
        ours = {(r["partition_path"], r["file_id"]) for r in t.file_slices().to_pylist()}
        table = _hudi_rs().HudiTableBuilder.from_base_uri(str(self.path)).build()
        rs = {(fs.partition_path, fs.file_id) for fs in table.get_file_slices()}
        if ours != rs:
            raise self.fail(f"hudi-rs file groups differ: only ours {sorted(ours - rs)}, only rs {sorted(rs - ours)}")

    def _against_oracle(self, ours: dict[Key, Row], expected: dict[Key, Allowed], what: str) -> None:
        bad = []
        for key in set(ours) | set(expected):
            got = ours.get(key)
            allowed = expected.get(key, Allowed([None])).rows
            if got not in allowed:
                bad.append((key, got, allowed[:3]))
        if bad:
            raise self.fail(f"{what} vs oracle: {len(bad)} keys differ, e.g. {sorted(bad, key=str)[:4]}")

    def _rs(self, ro: bool = False, as_of: str | None = None, window: tuple[str, str] | None = None) -> list[Row]:
        hudi = _hudi_rs()
        b = hudi.HudiTableBuilder.from_base_uri(str(self.path))
        if ro:
            b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
        table = b.build()
        opts = hudi.HudiReadOptions()
        if as_of is not None:
            opts = opts.with_as_of_timestamp(as_of)
        if window is not None:
            opts = (
                opts.with_query_type(hudi.HudiQueryType.Incremental)
                .with_start_timestamp(window[0])
                .with_end_timestamp(window[1])
            )
        batches = table.read(opts)
        if not batches:
            return []
        return _rows(pa.Table.from_batches(batches))

    def _freshness(self, t: evt.HudiTable, ro: list[Row], snap: list[Row]) -> None:
        f = t.ro_freshness()
        if f.threshold_ms is None:
            return
        le_ro = {r for r in ro if r[3] is not None and self._ev_ms(r[3]) <= f.threshold_ms}
        le_snap = {r for r in snap if r[3] is not None and self._ev_ms(r[3]) <= f.threshold_ms}
        if le_ro != le_snap:
            raise self.fail(
                f"freshness {f.threshold_ms} does not hold: RO only {sorted(le_ro - le_snap)[:4]}, snapshot only "
                f"{sorted(le_snap - le_ro)[:4]} ({f.reason})"
            )

    def _refusal_ok(self, t: evt.HudiTable, exc: ReadError, at: str) -> bool:
        msg = str(exc)
        cleans = [i for i in t.timeline.instants if i.action == "clean"]
        if "earliest instant still readable" in msg and cleans:
            return True
        pending = [i.time for i in t.timeline.inflight_writes()]
        return ("not settled" in msg or "has not completed" in msg) and bool(pending)

    def _time_travel(self, t: evt.HudiTable, tt_before: dict[str, frozenset[Row] | None], skip_rs: bool) -> None:
        instants = self.oracle.instants()
        if not instants:
            return
        picks = set(self.rng.sample(instants, min(3, len(instants)))) | {instants[-1]} | set(tt_before)
        done = [c for c in self.oracle.compactions if c > instants[0]]
        if done:
            picks.add(self.rng.choice(done))  # as of a compaction's own instant
        rs_done = False
        for i in sorted(picks):
            if i not in instants and i not in done:
                continue
            try:
                got = _rows(t.read(as_of=i))
            except ReadError as exc:
                if not self._refusal_ok(t, exc, i):
                    raise self.fail(f"time travel to {i} refused without a clean or a pending write: {exc}") from exc
                continue
            self._against_oracle(_by_key(got, f"time travel to {i}"), self.oracle.answer(as_of=i), f"time travel {i}")
            prev = tt_before.get(i)
            if prev is not None and frozenset(got) != prev and self.last_step_wrote_nothing:
                raise self.fail(f"time travel to {i} changed by a step that committed no data")
            if not skip_rs and not rs_done:
                rs_done = True
                rs = self._rs(as_of=i)
                if frozenset(rs) != frozenset(got):
                    raise self.fail(f"hudi-rs time travel to {i} differs: ours {sorted(got)[:4]}, rs {sorted(rs)[:4]}")

    last_step_wrote_nothing = False

    def _incremental(self, t: evt.HudiTable, skip_rs: bool) -> None:
        instants = self.oracle.instants()
        if len(instants) < 2:
            return
        completion = {i.time: i.completion_time for i in t.timeline.instants if i.is_completed}
        j = self.rng.randrange(1, len(instants))
        k = j - 1 if self.rng.random() < 0.6 else self.rng.randrange(0, j)  # one write, or several
        begin, end = instants[k], instants[j]
        if t.config.timeline_layout >= 2:
            b, e = completion.get(begin), completion.get(end)
            if b is None or e is None:
                return
        else:
            b, e = begin, end
        try:
            got = _rows(t.read("incremental", begin=b, end=e))
        except ReadError as exc:
            if not self._refusal_ok(t, exc, e):
                raise self.fail(f"incremental ({b}, {e}] refused: {exc}") from exc
            return
        by_key = _by_key(got, f"incremental ({b}, {e}]")
        row_instant = self.oracle.row_instant()
        inside = set(instants[k + 1 : j + 1])
        if t.config.timeline_layout >= 2:
            inside = {i for i in instants if b < (completion.get(i) or "") <= e}
        stray = [r for r in got if row_instant.get(r) not in inside]
        if stray:
            raise self.fail(f"incremental ({b}, {e}] returns rows no write of the window wrote: {stray[:4]}")
        state = self.oracle.answer(as_of=end)
        for key, allowed in state.items():
            row = allowed.rows[0]
            if allowed.exact and row is not None and row_instant.get(row) in inside and by_key.get(key) != row:
                raise self.fail(f"incremental ({b}, {e}]: key {key} should be {row}, got {by_key.get(key)}")
        if not self.event_time:
            want = {
                k: a.rows[0] for k, a in state.items() if a.rows[0] is not None and row_instant.get(a.rows[0]) in inside
            }
            if want != by_key:
                raise self.fail(
                    f"incremental ({b}, {e}]: ours {sorted(by_key.items())[:4]}, oracle {sorted(want.items())[:4]}"
                )
            if not skip_rs:
                rs = self._rs(window=(b, e))
                if frozenset(rs) != frozenset(got):
                    raise self.fail(
                        f"hudi-rs incremental ({b}, {e}] differs: ours {sorted(got)[:4]} rs {sorted(rs)[:4]}"
                    )

    def _files(self, t: evt.HudiTable) -> None:
        known = {i.time for i in t.timeline.instants}
        for s in t.view.latest_merged_file_slices():
            files = ([s.base_file.path] if s.base_file else []) + [lf.path for lf in s.log_files]
            for f in files:
                if not os.path.exists(t.storage.full_path(f)):
                    raise self.fail(f"a latest slice needs {f}, which is missing or dangles")
        for dirpath, _, names in os.walk(self.path):
            for name in names:
                p = os.path.join(dirpath, name)
                if os.path.islink(p) and not os.path.exists(p):
                    parsed = LogFileName.parse(name)
                    if parsed is None or parsed.base_instant in known:
                        raise self.fail(f"a visible symlink dangles: {p}")
        for c in t.timeline.pending_compactions():
            with contextlib.suppress(EvtError):
                report = t.compaction.validate(c.time)
                if not report.ok and not all("link" in p for p in report.problems):
                    raise self.fail(f"pending plan {c.time} does not validate: {report.problems}")

    def _stale(self) -> None:
        h = self.rng.choice(self.handles)
        seen = self.snapshots[h.loaded_at :] if h.loaded_at < len(self.snapshots) else self.snapshots[-1:]
        try:
            got = frozenset(_rows(h.table.read()))
        except EvtError:
            self.count("stale read refused")
            return
        if got not in seen:
            raise self.fail(
                f"a stale handle (loaded at step {h.loaded_at}) read a table that never was: {sorted(got)[:6]}"
            )
        if self.rng.random() < 0.3:
            h.table.refresh()
            h.loaded_at = self.n

    # -- the end: the table can always be brought back to fully compacted ---------------------------------------------
    def finish(self) -> None:
        """The documented recovery, through the API with nothing killed: resume pending rollbacks, roll back failed
        writes, run (or take back) pending plans, schedule and run a full compaction, clean. Every one of them must
        succeed or be refused for a reason that leaves the next one possible — a table that can no longer be
        compacted (a refusal naming a remedy that is refused in turn) is a defect as much as a lost record. Checked
        after each step as any step is; at the end the read-optimized view is the snapshot."""
        self.n += 1
        self.note("finish")
        tl = self.fresh().timeline
        for r, target in sorted(self._pending_rollbacks(tl).items()):
            if target is None:
                raise self.fail(f"finish: pending rollback {r} has no readable plan")
            try:
                self.fresh().rollback(target)
                self.note(f"  finish: resumed rollback {r} of {target}")
            except EvtError as exc:
                t = self.fresh()
                pending = t.timeline.pending_rollback_of(target)
                if pending is None or not t.timeline.rollback_overtaken_by(pending[1]):
                    raise self.fail(f"finish: resuming rollback {r} of {target} was refused: {exc}") from exc
                self.note(f"  finish: rollback {r} of {target} can no longer finish ({type(exc).__name__})")
            self.sync(None)
        for w in sorted(self.pending_writes):
            self.fresh().rollback(w)
            self.note(f"  finish: rolled back failed write {w}")
            self.sync(None)
        self.check(unchanged=None, tt_before={})
        before = self.last_snapshot
        for c, _ in self.pending_compactions():
            try:
                self.fresh().compaction.run(c)
                self.note(f"  finish: ran {c}")
            except EvtError as exc:
                self.note(f"  finish: run {c} refused ({type(exc).__name__}: {str(exc)[:160]}); unschedule it")
                try:
                    self.fresh().compaction.unschedule(c, dry_run=False)
                except EvtError as exc2:
                    raise self.fail(
                        f"finish: compaction {c} can neither run ({exc}) nor be unscheduled ({exc2})"
                    ) from exc2
            self.sync(None)
        self.check(unchanged=before, tt_before={})
        try:
            c = self.fresh().compaction.schedule(UnBoundedCompactionStrategy())
        except EvtError as exc:
            raise self.fail(f"finish: a full compaction was refused with nothing pending: {exc}") from exc
        if c is not None:
            self.fresh().compaction.run(c.instant)
            self.note(f"  finish: full compaction {c.instant}")
        self.fresh().clean("KEEP_LATEST_COMMITS", 1, dry_run=False)
        self.sync(None)
        self.check(unchanged=before, tt_before={})
        t = self.fresh()
        ro = frozenset(_rows(t.read("read_optimized")))
        if ro != self.last_snapshot:
            raise self.fail(
                f"finish: after a full compaction the read-optimized view is not the snapshot: only RO "
                f"{sorted(ro - self.last_snapshot)[:6]}, only snapshot {sorted(self.last_snapshot - ro)[:6]}"
            )


def summary(seq: Sequence) -> dict[str, int]:
    """What the sequence's table went through: completed compactions, carry-over logs and links seen at the end."""
    t = seq.fresh()
    done = [i for i in t.timeline.instants if i.action == "commit" and i.is_completed]
    carry = links = 0
    for _, _, names in os.walk(seq.path):
        for name in names:
            parsed = LogFileName.parse(name)
            if parsed is not None and parsed.version == 0:
                carry += 1
    for s in t.file_slices().to_pylist():
        links += sum(1 for f in s["log_files"] if (p := LogFileName.parse(f)) and p.base_instant == s["base_instant"])
    return {"compactions": len(done), "carry_over_logs": carry, "slice_logs": links, "steps": seq.n}


def run_sequence(seed: int, steps: int, root: Path, **kw: Any) -> Sequence:
    seq = Sequence(seed, root, **kw)
    try:
        seq.check(unchanged=None, tt_before={})
        for _ in range(steps):
            seq.step()
        seq.finish()
    except BaseException:
        keep = os.environ.get("EVT_ADV_KEEP")  # a folder to copy the failing table into, for a look
        if keep:
            shutil.copytree(seq.path, Path(keep) / seq.path.name, symlinks=True, dirs_exist_ok=True)
        raise
    return seq


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="evt-adv-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    n_steps = int(os.environ.get("EVT_ADV_STEPS", "25"))
    for s in range(first, first + count):
        t0 = time.time()
        with scratch() as root:
            seq = run_sequence(s, n_steps, root)
            info = summary(seq)
        print(f"seed {s}: ok in {time.time() - t0:.1f}s {info} {seq.counts}", flush=True)
