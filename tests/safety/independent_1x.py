"""An adversarial sequence tester for Hudi 1.x tables (versions 8 and 9, with and without a metadata table), locally
and on an S3 server, with its own oracle and its own reading of the timeline and of storage.

A sequence starts from a copy of a stock v8/v9 fixture (Spark-written, most with a metadata table) and runs a long,
seeded, random mix of

* writes through the SIMPLE index (upserts and ``insert`` of live, deleted and brand-new keys — some into new
  partitions — with greater, equal and smaller ordering values, duplicates inside a batch; deletes with and without
  ordering values, of live, deleted and unknown keys), failed writes, rollbacks of failed and of the last writes;
* compactions (event-time at several thresholds and unbounded; copy and symlink links, made at schedule or execute
  time; exact split), runs, unschedules, rollbacks of runs, repairs, cleans with both policies;
* crashes at a random storage change of any operation (the metadata-table sync included): in the process (every
  later change of the dying operation fails too, as after ``kill -9``) or a real ``kill -9`` of a child process,
  recovered at once or later, as the README's crash table says;
* overlapping operations: one operation is paused at a random storage change in a thread while others run through
  other handles (so writes complete in another order than they were requested), then goes on;
* several handles of one table, used in turn (each operation refreshes its own).

The oracle is a dict ``key -> (ordering value, row or tombstone, commit time)`` replayed from the committed writes
in the order they completed (``EVT_IND_ORDER=requested``: the order of their instants) by Hudi's merge rules (event
time: the greater ordering value wins, ties go to the later write, a delete without ordering value wins and loses to
every later record; commit time: the later write wins). It knows nothing of files: a deleted key written again
later must stay deleted when the record's ordering value is below the delete's, compacted or not. (One shape is kept
out: after a delete without ordering value, Hudi's reader compares the next record with the key's base row, not with
the delete, so a re-insert below the base row's value would answer with the deleted row — the re-inserts that follow
such a delete carry a value above every earlier one of the key.) After every step, with a handle opened afresh:

* our snapshot and hudi-rs's (listing through the metadata table) equal the oracle, row for row, and every row's
  ``_hoodie_commit_time`` is the instant of the write whose record the oracle kept;
* our read-optimized view equals hudi-rs's, and agrees with the snapshot on every event at or before the freshness
  the table reports;
* time travel to one of the sequence's writes equals the replay of the writes requested until then (or is refused
  with a ``ReadError`` a clean or a pending write explains); an incremental window between two of its completions
  holds every key whose winning record was committed in it, with that record, each key once, and otherwise only
  records a commit of the window wrote (Hudi merges a window's own records: a late record that lost may show);
* a handle other operations left behind answers with a state the table was in, or an ``EvtError``;
* the metadata table's ``files`` partition lists exactly the data files on storage whose instant completed (this
  module's own parse of the timeline folder), with their sizes, and hudi-rs's latest slices through the metadata
  table are those it finds listing storage;
* no file of a live slice is missing; every failure raised an ``EvtError``.

Knobs (environment): ``EVT_IND_SEQS`` sequences of ``EVT_IND_STEPS`` steps from seed ``EVT_IND_SEED``;
``EVT_IND_FIXTURES`` (comma-separated) restricts the fixtures; ``EVT_IND_S3_SEQS`` sequences on the S3 server,
``EVT_IND_PROXY=1`` through a loopback proxy that delays and drops responses; ``EVT_IND_KILL9`` the share of crashes
that kill a child process (default 0.05); ``EVT_IND_LATE_REVIVE=0`` keeps re-inserts of deleted keys at or above their
delete; ``EVT_IND_REPORT`` a file that gets one JSON line per sequence.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import decimal
import json
import os
import posixpath
import random
import re
import shutil
import signal
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import EvtError, ReadError, StorageError
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.metadata_table import read_files_partition
from evt_toolkit.write.task import write_file_group
from tests.faults.forked import run_forked

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Stock v8/v9 MOR fixtures the sequences start from (those with a metadata table first).
FIXTURES = [
    "mor_v9_txns_simple_meta",
    "mor_v8_trips_8i3u1d",
    "mor_v9_txns_complex_meta",
    "mor_v9_txns_nonpart_meta",
    "mor_table_evo_add_col",
    "mor_table_evo_promotion",
    "mor_v9_txns_simple_overwrite",
    "mor_v9_mor_compacted_incremental",
    "mor_v8_mor_boundary_windows",
    "mor_v9_txns_simple_nometa",
    # Ordering fields of other types: a string and a decimal or double (event-time merging, no event-time field), a
    # timestamp (its event-time field too).
    "mor_table_delete_ord_string",
    "mor_table_delete_ord_timestamp",
    "mor_table_delete_ord_decimal",
    "mor_table_delete_ord_double",
    # Integer ordering fields, a table whose late events arrive below the compacted ones, an uncommitted log left by a
    # failed writer, null and nested containers (arrays, maps, structs), commit-time merging on a v9 table.
    "mor_table_delete_ord_int",
    "mor_table_delete_ord_long",
    "mor_table_event_time_stale",
    "mor_table_uncommitted_log_v9",
    "mor_table_null_containers",
    "mor_v9_mor_8i4u_commit_time",
]
SIMPLE = {"hoodie.index.type": "SIMPLE"}
#: Re-insert deleted keys with ordering values below their tombstone too (a deleted key must stay deleted).
LATE_REVIVE = os.environ.get("EVT_IND_LATE_REVIVE", "1") == "1"
MUTATORS = ("write_bytes_atomic", "copy_file", "delete_file", "delete_files", "delete_dir", "symlink")


def _frozen(value: Any) -> Any:
    """A row value made hashable: lists (array columns) as tuples, maps and structs as sorted item tuples."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def _state(rows: dict[Any, Any]) -> frozenset[Any]:
    """A whole table state, hashable: the states the table was in, to recognise a stale handle's answer."""
    return frozenset((k, _frozen(v)) for k, v in rows.items())


class Killed(BaseException):
    """The simulated ``kill -9``: raised at the chosen storage change and at every one after it."""


class Defect(AssertionError):
    """What a sequence found: the message says the step and what differed."""


# -- the storage hook ------------------------------------------------------------------------------------------------


class Hook:
    """Counts the storage changes of the operation it is armed for and kills it, or pauses it, at the n-th."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mode = ""  # "" | "kill" | "pause"
        self.n = 0
        self.count = 0
        self.dead = False
        self.thread: int | None = None  # pause: the thread of the paused operation (and its pool)
        self.paused = threading.Event()
        self.resume = threading.Event()
        self.counting = False

    def before(self, name: str, args: tuple[Any, ...]) -> None:
        with self.lock:
            if self.dead:
                raise Killed(f"dead before {name}{args[:1]}")
            if not self.counting or not self.mode:
                return
            if self.mode == "pause" and threading.get_ident() == MAIN_THREAD:
                return
            self.count += 1
            if self.count != self.n:
                return
            if self.mode == "kill":
                self.dead = True
                raise Killed(f"killed at change {self.n}: {name}{args[:1]}")
            self.counting = False
        self.paused.set()
        if not self.resume.wait(300):
            raise RuntimeError("the paused operation was never resumed")

    @contextlib.contextmanager
    def kill_at(self, n: int) -> Iterator[None]:
        with self.lock:
            self.mode, self.n, self.count, self.dead, self.counting = "kill", n, 0, False, True
        try:
            yield
        finally:
            with self.lock:
                self.mode, self.dead, self.counting = "", False, False

    def arm_pause(self, n: int) -> None:
        with self.lock:
            self.mode, self.n, self.count, self.counting = "pause", n, 0, True
            self.paused.clear()
            self.resume.clear()

    def disarm(self) -> None:
        with self.lock:
            self.mode, self.counting = "", False
        self.resume.set()


HOOK = Hook()
MAIN_THREAD = threading.main_thread().ident


def _install_hook() -> None:
    if getattr(TableStorage, "_independent_hooked", False):
        return
    for name in MUTATORS:
        original = getattr(TableStorage, name)

        def wrapped(self: Any, *a: Any, __o: Any = original, __n: str = name, **kw: Any) -> Any:
            HOOK.before(__n, a)
            return __o(self, *a, **kw)

        setattr(TableStorage, name, wrapped)
    TableStorage._independent_hooked = True  # type: ignore[attr-defined]


# -- values ------------------------------------------------------------------------------------------------------------


def canon(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return ("ts", int((v - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1)))
    if isinstance(v, decimal.Decimal):
        return ("d", v.normalize())
    if isinstance(v, float):
        return ("f", repr(v))
    if isinstance(v, list | tuple):  # arrays, and maps as Arrow lists them (key-value pairs)
        return tuple(canon(x) for x in v)
    if isinstance(v, dict):  # structs
        return tuple(sorted((k, canon(x)) for k, x in v.items()))
    return v


def canon_row(row: dict[str, Any], columns: list[str]) -> tuple[Any, ...]:
    return tuple(canon(row.get(c)) for c in columns)


# -- the oracle --------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Write:
    requested: str
    completion: str
    op: str  # upsert | delete
    rows: list[dict[str, Any]]
    natural: bool = False  # a delete without ordering values


#: The order the oracle replays committed writes in: ``completion`` (a 1.x commit is later when it completed later)
#: or ``requested`` (the instant in a log's name, as readers replay one slice's logs). The two agree once writes of one
#: file group complete in the order they were requested.
ORDER = os.environ.get("EVT_IND_ORDER", "completion")


class Oracle:
    """Hudi's answer replayed from the committed writes, per key, in commit order (:data:`ORDER`)."""

    NATURAL = ("natural",)

    def __init__(self, keys: list[str], ordering: str | None, event_time: bool) -> None:
        self.keys = keys
        self.ordering = ordering
        self.event_time = event_time
        self.initial: dict[tuple[Any, ...], tuple[Any, dict[str, Any] | None, str]] = {}
        self.writes: list[Write] = []

    def key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in self.keys)

    def dedupe(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        best: dict[tuple[Any, ...], dict[str, Any]] = {}
        for r in rows:
            k = self.key(r)
            if k not in best or self.ordering is None or r[self.ordering] >= best[k][self.ordering]:
                best[k] = r
        return list(best.values())

    def state(
        self, until: Callable[[Write], bool] | None = None
    ) -> dict[tuple[Any, ...], tuple[Any, dict[str, Any] | None, str]]:
        s = dict(self.initial)
        for w in sorted(self.writes, key=lambda w: w.completion if ORDER == "completion" else w.requested):
            if until is not None and not until(w):
                continue
            for r in self.dedupe(w.rows):
                k = self.key(r)
                cur = s.get(k)
                if w.op == "delete":
                    if cur is None:
                        continue
                    if not self.event_time:
                        del s[k]
                        continue
                    if cur[0] == self.NATURAL and cur[1] is None:
                        continue  # a delete on a commit-time delete is dropped
                    o = self.NATURAL if w.natural else r[self.ordering]
                    if o == self.NATURAL or cur[0] == self.NATURAL or o >= cur[0]:
                        s[k] = (o, None, w.requested)
                    continue
                o = r[self.ordering] if self.ordering else None
                if not self.event_time or cur is None or cur[0] == self.NATURAL or o >= cur[0]:
                    s[k] = (o, r, w.requested)
        if not self.event_time:
            s = {k: v for k, v in s.items() if v[1] is not None}
        return s

    def live(self, until: Callable[[Write], bool] | None = None) -> dict[tuple[Any, ...], tuple[dict[str, Any], str]]:
        return {k: (v[1], v[2]) for k, v in self.state(until).items() if v[1] is not None}


# -- storage as this module reads it ---------------------------------------------------------------------------------

BASE_RE = re.compile(r"^(?P<fid>.+)_(?P<tok>\d+-\d+-\d+)_(?P<inst>\d{14,17})\.parquet$")
LOG_RE = re.compile(r"^\.(?P<fid>.+)_(?P<inst>\d{14,17})\.log\.(?P<ver>\d+)_(?P<tok>[0-9-]+)$")
DONE_RE = re.compile(r"^(?P<req>\d{14,17})_(?P<done>\d{14,17})\.(?P<action>[a-z_]+)$")
PENDING_RE = re.compile(r"^(?P<t>\d{14,17})\.(?P<action>[a-z_]+)\.(?P<state>requested|inflight)$")


@dataclasses.dataclass
class Timeline:
    completed: dict[str, tuple[str, str]]  # requested -> (completion, action)
    pending: dict[str, set[str]]  # instant -> {action.state}

    @property
    def first(self) -> str | None:
        times = list(self.completed) + list(self.pending)
        return min(times) if times else None

    def committed(self, instant: str) -> bool:
        first = self.first
        return instant in self.completed or (first is not None and instant < first and instant not in self.pending)

    def pending_actions(self, action: str) -> list[str]:
        return sorted(t for t, s in self.pending.items() if any(x.startswith(action + ".") for x in s))


class Store:
    """Lists a table's files: a local folder, or a bucket prefix through boto3."""

    def __init__(self, path: str, options: dict[str, str] | None) -> None:
        self.path = path
        self.options = options
        self._s3 = None
        if options:
            import boto3

            self._s3 = boto3.client(
                "s3",
                endpoint_url=options["aws_endpoint_url"],
                aws_access_key_id=options["aws_access_key_id"],
                aws_secret_access_key=options["aws_secret_access_key"],
                region_name=options["aws_region"],
            )
            rest = path[len("s3://") :]
            self.bucket, _, self.prefix = rest.partition("/")

    def files(self, under: str = "") -> dict[str, int]:
        """relative path -> size of every file under ``under`` (symlinks: the target's size; dangling: -1)."""
        out: dict[str, int] = {}
        if self._s3 is None:
            root = Path(self.path) / under
            for dirpath, _, names in os.walk(root):
                for n in names:
                    p = Path(dirpath) / n
                    try:
                        size = p.stat().st_size
                    except FileNotFoundError:
                        size = -1
                    out[p.relative_to(self.path).as_posix()] = size
            return out
        prefix = self.prefix.rstrip("/") + "/" + under
        token = None
        while True:
            kw = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kw["ContinuationToken"] = token
            resp = self._s3.list_objects_v2(**kw)
            for o in resp.get("Contents", []):
                out[o["Key"][len(self.prefix.rstrip("/")) + 1 :]] = o["Size"]
            if not resp.get("IsTruncated"):
                return out
            token = resp["NextContinuationToken"]

    def timeline(self) -> Timeline:
        completed: dict[str, tuple[str, str]] = {}
        pending: dict[str, set[str]] = {}
        for rel in self.files(".hoodie/timeline/"):
            name = rel.rsplit("/", 1)[-1]
            if rel.count("/") != 2:
                continue  # history/
            if m := DONE_RE.match(name):
                completed[m["req"]] = (m["done"], m["action"])
            elif m := PENDING_RE.match(name):
                pending.setdefault(m["t"], set()).add(f"{m['action']}.{m['state']}")
        for t in completed:
            pending.pop(t, None)
        return Timeline(completed, pending)

    def data_files(self) -> dict[tuple[str, str], int]:
        out = {}
        for rel, size in self.files().items():
            if rel.startswith(".hoodie/"):
                continue
            part, name = posixpath.split(rel)
            if BASE_RE.match(name) or LOG_RE.match(name):
                out[(part, name)] = size
        return out


def name_instant(name: str) -> str:
    m = BASE_RE.match(name) or LOG_RE.match(name)
    assert m, name
    return m["inst"]


def committed_files(store: Store, tl: Timeline) -> dict[tuple[str, str], int]:
    return {k: v for k, v in store.data_files().items() if tl.committed(name_instant(k[1]))}


# -- a loopback proxy that delays and drops responses ----------------------------------------------------------------


class Proxy:
    """Forwards HTTP to the S3 server; now and then delays a request, or forwards a change and drops the answer."""

    def __init__(self, upstream: str, seed: int) -> None:
        import http.client
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit

        u = urlsplit(upstream)
        self.rng = random.Random(seed)
        self.drop_rate = 0.0
        self.delay_rate = 0.0
        self.dropped = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _go(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with proxy.lock:
                    delay = proxy.rng.random() < proxy.delay_rate
                    drop = self.command in ("PUT", "POST", "DELETE") and proxy.rng.random() < proxy.drop_rate
                    if drop:
                        proxy.dropped += 1
                if delay:
                    time.sleep(0.05 + 0.2 * random.random())
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if drop:
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        import socket
                        import struct

                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.connection.close()
                    return
                self.send_response(resp.status, resp.reason)
                head = self.command == "HEAD"
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "keep-alive", "transfer-encoding") and (
                        head or k.lower() != "content-length"
                    ):
                        self.send_header(k, v)
                if not head:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _go

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- a child process killed at its n-th storage change ---------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    import pyarrow.parquet as pq
    import evt_toolkit as evt
    from evt_toolkit.storage.fs import TableStorage
    from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
    from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy

    n = int(sys.argv[1]); spec = json.loads(sys.argv[2])
    calls = [0]
    for name in ("write_bytes_atomic", "copy_file", "delete_file", "delete_files", "delete_dir", "symlink"):
        orig = getattr(TableStorage, name)
        def w(self, *a, __o=orig, **k):
            calls[0] += 1
            if calls[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return __o(self, *a, **k)
        setattr(TableStorage, name, w)
    t = evt.HudiTable.open(spec["path"], storage_options=spec.get("options"))
    a = spec["action"]
    if a == "write":
        t.write(pq.read_table(spec["batch"]), spec["op"], options={"hoodie.index.type": "SIMPLE"})
    elif a == "schedule":
        s = EventTimeBasedCompactionStrategy(threshold=spec["threshold"]) if spec["threshold"] is not None \\
            else UnBoundedCompactionStrategy()
        t.compaction.schedule(s, link_mode=spec["mode"], link_timing=spec["timing"], exact_split=spec["exact"])
    elif a == "run":
        t.compaction.run(spec["c"])
    elif a == "clean":
        t.clean(spec["policy"], spec["retained"], dry_run=False)
    elif a == "rollback":
        t.rollback(spec["c"])
    elif a == "unschedule":
        t.compaction.unschedule(spec["c"], dry_run=False)
    elif a == "repair":
        t.compaction.repair(dry_run=False, older_than_s=0)
    print("finished", calls[0])
    """
)


# -- a sequence ------------------------------------------------------------------------------------------------------


def shift_ordering(base: Any, d: int) -> Any:
    """An ordering value ``d`` steps above (below, equal to) ``base``, whatever its type: numbers and decimals add
    ``d``; timestamps move by ``d`` milliseconds and dates by ``d`` days; strings grow by ``d`` ``~`` characters (a
    longer string with the same prefix sorts after it) or lose ``-d`` characters from their end (a prefix sorts
    before)."""
    if isinstance(base, str):
        if d >= 0:
            return base + "~" * d
        return base[: max(0, len(base) + d)]
    if isinstance(base, dt.datetime):
        return base + dt.timedelta(milliseconds=d)
    if isinstance(base, dt.date):
        return base + dt.timedelta(days=d)
    return base + d


def epoch_ms(v: Any) -> int:
    """An event time as epoch milliseconds: integers are taken as they are; a timestamp without a zone is UTC; a date
    is its midnight; a canonical timestamp (:func:`canon`) is its microseconds."""
    if isinstance(v, tuple) and v[:1] == ("ts",):
        return v[1] // 1000
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.UTC)
        delta = v - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(v, dt.date):
        return (v - dt.date(1970, 1, 1)).days * 86_400_000
    return int(v)


def _copy_fixture(name: str, dst: Path) -> Path:
    from tests.conftest import fixture_table_path

    shutil.copytree(fixture_table_path(name), dst, symlinks=True)
    for p in [dst, *dst.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)
    return dst


def _rs(path: str, options: dict[str, str] | None, **kw: Any) -> pa.Table:
    import hudi

    b = hudi.HudiTableBuilder.from_base_uri(path)
    if options:
        b = b.with_storage_options(options)
    if kw.get("ro"):
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    opts = hudi.HudiReadOptions()
    if kw.get("as_of"):
        opts = opts.with_as_of_timestamp(kw["as_of"])
    if kw.get("window"):
        begin, end = kw["window"]
        opts = opts.with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(begin).with_end_timestamp(end)
    batches = b.build().read(opts)
    return pa.Table.from_batches(batches) if batches else pa.table({})


class Sequence:
    def __init__(self, seed: int, fixture: str, root: Path, *, s3: Any = None, proxy: bool = False) -> None:
        _install_hook()  # inert until a crash or a pause arms it
        self.rng = random.Random(seed)
        self.seed = seed
        self.fixture = fixture
        self.root = root
        self.log: list[str] = []
        self.steps = 0
        self.kill9 = float(os.environ.get("EVT_IND_KILL9", "0.05"))
        self.proxy: Proxy | None = None
        local = _copy_fixture(fixture, root / fixture)
        t0 = evt.HudiTable.open(local)
        snap = t0.read()  # the fixture's rows: the same wherever the copy lives (the oracle starts from them)
        field = t0.config.ordering_field
        event_field_ok = field is not None and fixture not in ("mor_v9_mor_8i4u_commit_time",)
        if event_field_ok:  # named as the event-time field only when it is one, as an operator would
            typ = snap.schema.field(field).type
            event_field_ok = pa.types.is_integer(typ) or pa.types.is_timestamp(typ) or pa.types.is_date(typ)
        if event_field_ok:
            props = local / ".hoodie" / "hoodie.properties"
            props.write_text(props.read_text() + f"hoodie.payload.event.time.field={field}\n")
        self.options: dict[str, str] | None = None
        self.path = str(local)
        if s3 is not None:
            bucket = s3.new_bucket("ind")
            self.options = dict(s3.options)
            if proxy:
                self.proxy = Proxy(s3.endpoint, seed)
                self.options["aws_endpoint_url"] = self.proxy.endpoint
            self.path = f"s3://{bucket}/{fixture}"
            storage = TableStorage.from_uri(self.path, s3.options)
            storage.write_many(
                {p.relative_to(local).as_posix(): p.read_bytes() for p in local.rglob("*") if p.is_file()}
            )
        self.store = Store(self.path, self.options)
        self.handles = [self.open() for _ in range(3)]
        t = self.handles[0]
        for inst in t.timeline.inflight_writes():
            t.rollback(inst.time)
        self.keys = list(t.config.record_key_fields)
        self.ordering = t.config.ordering_field
        self.event_time = "EVENT_TIME" in (
            t.config.properties.get("hoodie.record.merge.mode") or "EVENT_TIME"
        ) and bool(self.ordering)
        self.has_event_field = bool(t.config.event_time_field)
        pfields = t.config.partition_fields
        self.partition = pfields[0] if pfields else None
        self.hive = (t.config.properties.get("hoodie.datasource.write.hive_style_partitioning") or "false") == "true"
        # Hudi's meta columns are the writer's; ``_hoodie_is_deleted``, when the table has it, is a data column.
        self.columns = [c for c in snap.column_names if not c.startswith("_hoodie_") or c == "_hoodie_is_deleted"]
        self.schema = pa.schema([snap.schema.field(c) for c in self.columns])
        self.value = next(
            (
                c
                for c in self.columns
                if c not in self.keys
                and c != self.partition
                and c != self.ordering
                and pa.types.is_string(self.schema.field(c).type)
            ),
            None,
        )
        self.oracle = Oracle(self.keys, self.ordering, self.event_time)
        for r in snap.to_pylist():
            row = {c: r[c] for c in self.columns}
            self.oracle.initial[self.oracle.key(row)] = (
                row[self.ordering] if self.ordering else None,
                row,
                r["_hoodie_commit_time"],
            )
        self.templates = [{c: r[c] for c in self.columns} for r in snap.to_pylist()]
        self.fresh_keys: set[tuple[Any, ...]] = set()
        self.our_deleted: set[tuple[Any, ...]] = set()
        self.failed: list[str] = []
        self.n = 0
        self.first_own: str | None = None
        self.seen: set[frozenset[Any]] = set()

    def open(self) -> evt.HudiTable:
        return evt.HudiTable.open(self.path, storage_options=self.options)

    def handle(self) -> evt.HudiTable:
        return self.rng.choice(self.handles)

    def note(self, s: str) -> None:
        self.log.append(s)

    # -- batches ---------------------------------------------------------------------------------------------------
    def _ord(self, base: Any) -> Any:
        return shift_ordering(base, self.rng.choice([1, 1, 2, 5, 0, 0, -1, -3]))

    def _new_key_row(self) -> dict[str, Any]:
        row = dict(self.rng.choice(self.templates))
        self.n += 1
        for k in self.keys:
            if pa.types.is_string(self.schema.field(k).type):
                row[k] = f"FZ-{self.seed}-{self.n}-{k}"
            else:
                row[k] = 10_000_000 + self.n
        if self.partition and self.partition not in self.keys and self.rng.random() < 0.2:
            row[self.partition] = f"fz{self.rng.randint(0, 2)}"
        return row

    def batch(self, kind: str) -> tuple[str, list[dict[str, Any]], bool]:
        """(operation, rows, natural delete)."""
        state = self.oracle.state()
        live = [k for k, v in state.items() if v[1] is not None]
        gone = [k for k in self.our_deleted if k in state and state[k][1] is None]
        rows: list[dict[str, Any]] = []
        m = self.rng.randint(1, 3)
        for _ in range(m):
            pick = self.rng.random()
            if kind == "delete":
                if live and pick < 0.8:
                    k = self.rng.choice(live)
                    row = dict(state[k][1])  # type: ignore[arg-type]
                else:
                    row = self._new_key_row()  # unknown key: dropped
                if self.ordering:
                    row[self.ordering] = self._ord(row[self.ordering])
                rows.append(row)
                continue
            if pick < 0.55 and live:
                k = self.rng.choice(live)
                row = dict(state[k][1])  # type: ignore[arg-type]
                if self.ordering:
                    row[self.ordering] = self._ord(row[self.ordering])
            elif pick < 0.75 and gone:
                k = self.rng.choice(gone)
                o, _, _ = state[k]
                row = dict(next(w for w in self.templates_for(k)))
                if self.ordering:
                    if o == Oracle.NATURAL:
                        # After a commit-time delete a later record wins the log merge and is then compared with
                        # the key's base row (Hudi's reader): a record above every earlier value of the key wins.
                        row[self.ordering] = shift_ordering(self.max_ordering(k), self.rng.randint(1, 3))
                    elif LATE_REVIVE:
                        row[self.ordering] = self._ord(o)
                    else:
                        row[self.ordering] = shift_ordering(o, self.rng.randint(0, 3))
            else:
                row = self._new_key_row()
                self.fresh_keys.add(self.oracle.key(row))
            self.n += 1
            if self.value:
                row[self.value] = f"s{self.seed}-v{self.n}"
            rows.append(row)
            if self.ordering and self.event_time and self.rng.random() < 0.15:
                dup = dict(row)
                dup[self.ordering] = self._ord(row[self.ordering])
                self.n += 1
                if self.value:
                    dup[self.value] = f"s{self.seed}-v{self.n}"
                rows.append(dup)
        if not self.event_time:  # commit time: the in-batch winner is the later row; keep keys unique
            seen: dict[tuple[Any, ...], dict[str, Any]] = {}
            for r in rows:
                seen[self.oracle.key(r)] = r
            rows = list(seen.values())
        natural = kind == "delete" and self.event_time and self.rng.random() < 0.3
        return ("delete" if kind == "delete" else self.rng.choice(["upsert", "upsert", "insert"])), rows, natural

    def max_ordering(self, k: tuple[Any, ...]) -> Any:
        vals = [r[self.ordering] for w in self.oracle.writes for r in w.rows if self.oracle.key(r) == k]
        if k in self.oracle.initial and self.oracle.initial[k][1] is not None:
            vals.append(self.oracle.initial[k][0])
        return max(vals)

    def templates_for(self, k: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
        for w in reversed(self.oracle.writes):
            for r in w.rows:
                if self.oracle.key(r) == k and w.op != "delete":
                    yield r
        for w in reversed(self.oracle.writes):
            for r in w.rows:
                if self.oracle.key(r) == k:
                    yield r

    def arrow(self, rows: list[dict[str, Any]], natural: bool) -> pa.Table:
        t = pa.Table.from_pylist(rows, schema=self.schema)
        if natural:
            keep = [c for c in self.columns if c in self.keys or c == self.partition]
            t = t.select(keep)
        return t

    # -- bookkeeping -------------------------------------------------------------------------------------------------
    def commit(self, instant: str, op: str, rows: list[dict[str, Any]], natural: bool) -> None:
        tl = self.store.timeline()
        assert instant in tl.completed, f"{instant} reported written but not completed"
        completion = tl.completed[instant][0]
        self.oracle.writes.append(Write(instant, completion, "delete" if op == "delete" else "upsert", rows, natural))
        if op == "delete":
            for r in rows:
                self.our_deleted.add(self.oracle.key(r))
        if self.first_own is None:
            self.first_own = instant
        self.remember()

    def remember(self) -> None:
        """Every state the oracle passes through (a stale handle may have loaded any of them)."""
        self.seen.add(_state(self.expected_rows(self.oracle.live())))

    def new_instants(self, before: Timeline) -> tuple[list[str], list[str]]:
        """Deltacommits that appeared since ``before``: (completed, pending)."""
        tl = self.store.timeline()
        done = [t for t, (_, a) in tl.completed.items() if a == "deltacommit" and t not in before.completed]
        pend = [t for t in tl.pending_actions("deltacommit") if t not in before.pending]
        return done, pend

    def pending_compactions(self) -> list[str]:
        return self.store.timeline().pending_actions("compaction")

    # -- operations --------------------------------------------------------------------------------------------------
    def op_write(self, kind: str = "upsert", t: evt.HudiTable | None = None) -> None:
        op, rows, natural = self.batch(kind)
        t = t or self.handle()
        before = self.store.timeline()
        try:
            instant = t.write(self.arrow(rows, natural), op, options=SIMPLE)
        except EvtError as e:
            self.note(f"write refused: {type(e).__name__}: {str(e)[:160]}")
            # On a store whose answers get lost, a write may fail after its commit landed: the timeline decides.
            done, _ = self.new_instants(before)
            for d in done:
                self.commit(d, op, rows, natural)
                self.note(f"  ... but it completed: {d}")
            self.adopt_pending_writes()
            return
        if instant:
            self.commit(instant, op, rows, natural)
            self.note(f"{op}{'(natural)' if natural else ''} {len(rows)} -> {instant}")

    def adopt_pending_writes(self) -> None:
        tl = self.store.timeline()
        for t in tl.pending_actions("deltacommit"):
            if t not in self.failed:
                self.failed.append(t)

    def op_failed_write(self) -> None:
        op, rows, natural = self.batch("upsert")
        t = self.handle()

        def crash(spec: Any, tasks: list[Any]) -> Any:
            for i, (fg, up, de) in enumerate(tasks[: self.rng.randint(0, len(tasks))]):
                write_file_group(spec, fg, up, de, task_partition_id=i)
            raise RuntimeError("executor lost")

        before = self.store.timeline()
        with contextlib.suppress(EvtError):
            t.write(self.arrow(rows, natural), op, executor=crash, options=SIMPLE)
        done, pend = self.new_instants(before)
        assert not done, f"a failed write completed {done}"
        self.failed += pend
        self.note(f"failed write {pend}")

    def op_rollback_failed(self) -> None:
        if not self.failed:
            return
        f = self.rng.choice(self.failed)
        try:
            self.handle().rollback(f)
        except EvtError as e:
            self.note(f"rollback {f} refused: {type(e).__name__}: {str(e)[:160]}")
            if f not in self.store.timeline().pending:
                self.failed.remove(f)
            return
        self.failed.remove(f)
        self.note(f"rollback failed {f}")

    def resume_rollback(self, target: str) -> None:
        """Roll ``target`` back, finishing a rollback of it that began. Through the proxy an answer can be lost again
        (the rollback stays pending): it is resumed, up to four times in all."""
        for attempt in range(4):
            try:
                self.handle().rollback(target)
                return
            except StorageError as e:
                if self.proxy is None or attempt == 3:
                    raise
                self.note(f"  resuming the rollback of {target} failed ({str(e)[:80]}); again")

    def op_rollback_last(self) -> None:
        tl = self.store.timeline()
        ours = [w for w in self.oracle.writes]
        if not ours:
            return
        by = self.rng.choice(["requested", "completion"])
        w = max(ours, key=lambda w: w.requested if by == "requested" else w.completion)
        try:
            self.handle().rollback(w.requested)
        except EvtError as e:
            self.note(f"rollback last {w.requested} refused: {type(e).__name__}: {str(e)[:120]}")
            tl2 = self.store.timeline()
            if tl2.pending_actions("rollback") and self.proxy is not None:
                # An answer lost on the way: the rollback began; it is finished before anything reads. (The pending
                # rollback may be another instant's, left by an earlier failure: then this one is refused again.)
                with contextlib.suppress(EvtError):
                    self.resume_rollback(w.requested)
                tl2 = self.store.timeline()
            if w.requested in tl2.completed:
                return
            assert self.proxy is not None, f"a refused rollback un-committed {w.requested}"
        assert w.requested not in self.store.timeline().completed
        self.oracle.writes.remove(w)
        self.remember()
        self.note(f"rollback last {w.requested} ({tl.completed.get(w.requested)})")

    def _strategy(self) -> tuple[Any, int | None]:
        if not self.has_event_field or self.rng.random() < 0.3:
            return UnBoundedCompactionStrategy(), None
        vals = sorted(epoch_ms(v[0]) for v in self.oracle.state().values() if v[0] not in (None, Oracle.NATURAL))
        if not vals:
            return UnBoundedCompactionStrategy(), None
        th = vals[self.rng.randint(0, len(vals) - 1)] + self.rng.choice([-1, 0, 1])
        return EventTimeBasedCompactionStrategy(threshold=int(th)), int(th)

    def _link(self) -> tuple[str, str, bool]:
        mode = "copy" if self.options else self.rng.choice(["copy", "symlink"])
        return mode, self.rng.choice(["schedule", "schedule", "execute"]), self.rng.random() < 0.2

    def op_schedule(self) -> str | None:
        strategy, th = self._strategy()
        mode, timing, exact = self._link()
        try:
            c = self.handle().compaction.schedule(strategy, link_mode=mode, link_timing=timing, exact_split=exact)
        except EvtError as e:
            self.note(f"schedule refused: {type(e).__name__}: {str(e)[:120]}")
            return None
        self.note(f"schedule T={th} {mode}/{timing}{'/exact' if exact else ''} -> {c.instant if c else None}")
        return c.instant if c else None

    def op_run(self) -> None:
        pend = self.pending_compactions()
        if not pend:
            return
        c = self.rng.choice(pend)
        try:
            self.handle().compaction.run(c)
        except EvtError as e:
            self.note(f"run {c} refused: {type(e).__name__}: {str(e)[:200]}")
            return
        self.note(f"run {c}")

    def op_compact(self) -> None:
        if self.pending_compactions():
            return self.op_run()
        c = self.op_schedule()
        if c:
            self.op_run()

    def op_unschedule(self) -> None:
        pend = self.pending_compactions()
        if not pend:
            return
        c = self.rng.choice(pend)
        try:
            r = self.handle().compaction.unschedule(c, dry_run=False)
        except EvtError as e:
            self.note(f"unschedule {c} refused: {type(e).__name__}: {str(e)[:120]}")
            return
        self.note(f"unschedule {c} deleted={r.deleted}")

    def op_rollback_run(self) -> None:
        tl = self.store.timeline()
        inflight = [t for t, s in tl.pending.items() if "compaction.inflight" in s]
        if not inflight:
            return
        c = self.rng.choice(inflight)
        try:
            self.handle().rollback(c)
        except EvtError as e:
            self.note(f"rollback run {c} refused: {type(e).__name__}: {str(e)[:120]}")
            return
        self.note(f"rollback run {c}")

    def op_clean(self) -> None:
        policy = self.rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"])
        retained = self.rng.randint(1, 2)
        try:
            r = self.handle().clean(policy, retained, dry_run=False)
        except EvtError as e:
            self.note(f"clean refused: {type(e).__name__}: {str(e)[:120]}")
            return
        self.note(f"clean {policy} {retained}: {len(r.deleted)} deleted")

    def op_repair(self) -> None:
        try:
            self.handle().compaction.repair(dry_run=False, older_than_s=0)
        except EvtError as e:
            self.note(f"repair refused: {type(e).__name__}: {str(e)[:120]}")
            return
        self.note("repair")

    # -- crashes -----------------------------------------------------------------------------------------------------
    CRASHABLE = (
        "write",
        "delete",
        "schedule",
        "run",
        "clean",
        "rollback_failed",
        "rollback_last",
        "unschedule",
        "repair",
        "rollback_run",
    )

    def op_crash(self) -> None:
        what = self.rng.choice(self.CRASHABLE)
        n = self.rng.randint(1, 30)
        child = self.rng.random() < self.kill9
        before = self.store.timeline()
        oracle_writes = list(self.oracle.writes)
        pending_rows: dict[str, Any] = {}
        self.note(f"crash {what} at change {n}{' (kill -9)' if child else ''}")
        if child:
            self._crash_child(what, n, pending_rows)
        else:
            with HOOK.kill_at(n):
                try:
                    self._crash_inprocess(what, pending_rows)
                except Killed:
                    pass
                except EvtError as e:
                    self.note(f"  refused: {type(e).__name__}: {str(e)[:120]}")
            self.handles = [self.open() if self.rng.random() < 0.5 else h for h in self.handles]
        self.settle_after_crash(what, before, oracle_writes, pending_rows)

    def _crash_inprocess(self, what: str, pending: dict[str, Any]) -> None:
        t = self.handle()
        if what in ("write", "delete"):
            op, rows, natural = self.batch("delete" if what == "delete" else "upsert")
            pending["batch"] = (op, rows, natural)
            t.write(self.arrow(rows, natural), op, options=SIMPLE)
        elif what == "schedule":
            strategy, _ = self._strategy()
            mode, timing, exact = self._link()
            t.compaction.schedule(strategy, link_mode=mode, link_timing=timing, exact_split=exact)
        elif what == "run":
            if p := self.pending_compactions():
                t.compaction.run(self.rng.choice(p))
        elif what == "clean":
            t.clean(self.rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"]), 1, dry_run=False)
        elif what == "rollback_failed":
            if self.failed:
                t.rollback(self.rng.choice(self.failed))
        elif what == "rollback_last":
            if self.oracle.writes:
                w = max(self.oracle.writes, key=lambda w: w.requested)
                pending["rollback_last"] = w.requested
                t.rollback(w.requested)
        elif what == "rollback_run":
            tl = self.store.timeline()
            inflight = [c for c, s in tl.pending.items() if "compaction.inflight" in s]
            if inflight:
                t.rollback(inflight[0])
        elif what == "unschedule":
            if p := self.pending_compactions():
                t.compaction.unschedule(self.rng.choice(p), dry_run=False)
        elif what == "repair":
            t.compaction.repair(dry_run=False, older_than_s=0)

    def _crash_child(self, what: str, n: int, pending: dict[str, Any]) -> None:
        spec: dict[str, Any] = {"path": self.path, "options": self.options}
        if what in ("write", "delete"):
            op, rows, natural = self.batch("delete" if what == "delete" else "upsert")
            pending["batch"] = (op, rows, natural)
            f = self.root / f"batch-{self.n}.parquet"
            pq.write_table(self.arrow(rows, natural), f)
            spec.update(action="write", batch=str(f), op=op)
        elif what == "schedule":
            _, th = self._strategy()
            mode, timing, exact = self._link()
            spec.update(action="schedule", threshold=th, mode=mode, timing=timing, exact=exact)
        elif what == "run" and (p := self.pending_compactions()):
            spec.update(action="run", c=self.rng.choice(p))
        elif what == "clean":
            spec.update(action="clean", policy="KEEP_LATEST_COMMITS", retained=1)
        elif what == "rollback_failed" and self.failed:
            spec.update(action="rollback", c=self.rng.choice(self.failed))
        elif what == "rollback_last" and self.oracle.writes:
            w = max(self.oracle.writes, key=lambda w: w.requested)
            pending["rollback_last"] = w.requested
            spec.update(action="rollback", c=w.requested)
        elif what == "unschedule" and (p := self.pending_compactions()):
            spec.update(action="unschedule", c=self.rng.choice(p))
        elif what == "repair":
            spec.update(action="repair")
        else:
            return
        env = {k: v for k, v in os.environ.items() if k != "EVT_FAULT_AT"}
        proc = run_forked(CHILD, [str(n), json.dumps(spec)], env, REPO_ROOT, 300)
        if proc.returncode not in (0, -signal.SIGKILL):
            last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
            if "evt_toolkit.errors" not in proc.stderr and "Error:" not in last:
                raise Defect(f"child {what} failed: {proc.stderr[-2000:]}")
            self.note(f"  child refused: {last[:160]}")
        self.handles = [self.open() if self.rng.random() < 0.5 else h for h in self.handles]

    def settle_after_crash(self, what: str, before: Timeline, writes: list[Write], pending: dict[str, Any]) -> None:
        tl = self.store.timeline()
        recover = self.rng.random() < 0.6
        if what in ("write", "delete") and "batch" in pending:
            op, rows, natural = pending["batch"]
            done, pend = self.new_instants(before)
            for d in done:
                self.commit(d, op, rows, natural)
                self.note(f"  the write completed: {d}")
            for p in pend:
                self.failed.append(p)
                if recover:
                    self.op_rollback_failed_instant(p)
        if "rollback_last" in pending:
            target = pending["rollback_last"]
            # A rollback that began un-committing must be finished before reading (the README's table). Whether it
            # began is told by a rollback instant the child left pending: one that was pending before it (another
            # target's, left by an earlier crash) says nothing about this one.
            began = [r for r in tl.pending_actions("rollback") if r not in before.pending]
            if target in tl.completed and not began:
                return
            if began or target in tl.pending:  # (still completed here means it began)
                self.resume_rollback(target)
                self.note(f"  rollback of {target} resumed")
            w = next(w for w in writes if w.requested == target)
            if w in self.oracle.writes:
                self.oracle.writes.remove(w)
                self.remember()
            return
        # pending rollbacks (of failed writes or runs) are resumed now or later; a rollback must not stay pending
        # across a write that lands meanwhile only if its target is a completed write (handled above).
        for f in list(self.failed):
            if f not in tl.pending and f not in tl.completed:
                self.failed.remove(f)
        if not recover:
            return
        if what == "schedule":
            self.op_repair()
        elif what == "run":
            self.op_run()
        elif what == "clean":
            self.op_clean()
        elif what == "unschedule":
            self.op_unschedule()
        elif what == "repair":
            self.op_repair()
        elif what == "rollback_failed":
            for f in list(self.failed):
                self.op_rollback_failed_instant(f)
        elif what == "rollback_run":
            self.op_rollback_run()

    def op_rollback_failed_instant(self, f: str) -> None:
        try:
            self.handle().rollback(f)
        except EvtError as e:
            self.note(f"  rollback {f} refused: {type(e).__name__}: {str(e)[:160]}")
            return
        if f in self.failed:
            self.failed.remove(f)
        self.note(f"  rolled back {f}")

    # -- overlapping operations ----------------------------------------------------------------------------------------
    def op_overlap(self) -> None:
        kind = self.rng.choice(["write", "write", "delete", "run", "clean", "schedule"])
        n = self.rng.randint(1, 14)
        t = self.handle()
        before = self.store.timeline()
        result: dict[str, Any] = {}
        batch = None
        if kind in ("write", "delete"):
            batch = self.batch("delete" if kind == "delete" else "upsert")

        def go() -> None:
            try:
                if batch is not None:
                    op, rows, natural = batch
                    result["instant"] = t.write(self.arrow(rows, natural), op, options=SIMPLE)
                elif kind == "run":
                    p = self.pending_compactions()
                    if p:
                        t.compaction.run(p[0])
                elif kind == "clean":
                    t.clean("KEEP_LATEST_COMMITS", 1, dry_run=False)
                elif kind == "schedule":
                    strategy, _ = self._strategy()
                    mode, timing, exact = self._link()
                    t.compaction.schedule(strategy, link_mode=mode, link_timing=timing, exact_split=exact)
            except EvtError as e:
                result["error"] = e
            except BaseException as e:
                result["bad"] = e
                result["tb"] = traceback.format_exc()

        HOOK.arm_pause(n)
        th = threading.Thread(target=go, daemon=True)
        th.start()
        while th.is_alive() and not HOOK.paused.wait(0.05):
            pass
        paused = HOOK.paused.is_set()
        others: list[str] = []
        try:
            if paused:
                for _ in range(self.rng.randint(1, 3)):
                    other = self.rng.choice(
                        ["write", "write", "delete", "failed", "schedule", "run", "clean", "rollback_failed"]
                    )
                    others.append(other)
                    {
                        "write": lambda: self.op_write("upsert"),
                        "delete": lambda: self.op_write("delete"),
                        "failed": self.op_failed_write,
                        "schedule": self.op_schedule,
                        "run": self.op_run,
                        "clean": self.op_clean,
                        "rollback_failed": self.op_rollback_failed,
                    }[other]()
        finally:
            HOOK.disarm()
            th.join(300)
        assert not th.is_alive(), "the paused operation hangs"
        self.note(
            f"overlap {kind} paused at {n}: {paused}, others {others}, result {result.get('instant')} "
            f"{type(result.get('error')).__name__ if 'error' in result else ''}"
        )
        if "bad" in result:
            raise Defect(f"overlapped {kind} raised a non-EvtError: {result['tb']}")
        if batch is not None:
            op, rows, natural = batch
            ours = result.get("instant")
            if ours:
                self.commit(ours, op, rows, natural)
            known = {w.requested for w in self.oracle.writes}
            for d in self.new_instants(before)[0]:
                if d not in known and "error" in result and d == self.paused_instant(before, d):
                    self.commit(d, op, rows, natural)
            _, pend = self.new_instants(before)
            for p in pend:
                if p not in self.failed:
                    self.failed.append(p)

    def paused_instant(self, before: Timeline, d: str) -> str | None:
        """``d`` when no operation of this sequence accounts for it (the paused write's, failed after its commit)."""
        return None if any(w.requested == d for w in self.oracle.writes) else d

    # -- the judges ----------------------------------------------------------------------------------------------------
    def expected_rows(
        self, live: dict[tuple[Any, ...], tuple[dict[str, Any], str]]
    ) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        return {k: canon_row(r, self.columns) for k, (r, _) in live.items()}

    def got_rows(self, table: pa.Table, what: str) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        out: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        if table.num_rows == 0:
            return out
        for r in table.to_pylist():
            k = tuple(r[c] for c in self.keys)
            if k in out:
                raise Defect(f"{what}: key {k} read twice: {out[k]} and {canon_row(r, self.columns)}")
            out[k] = canon_row(r, self.columns)
        return out

    def compare(self, got: dict[Any, Any], want: dict[Any, Any], what: str) -> None:
        if got == want:
            return
        extra = {k: got[k] for k in got if k not in want}
        missing = {k: want[k] for k in want if k not in got}
        diff = {k: (got[k], want[k]) for k in got if k in want and got[k] != want[k]}
        raise Defect(
            f"{what}: {len(got)} rows vs {len(want)} expected; extra {list(extra.items())[:3]}; "
            f"missing {list(missing.items())[:3]}; different (got, want) {list(diff.items())[:3]}"
        )

    def check(self) -> None:
        self.steps += 1
        t = self.open()
        tl = self.store.timeline()
        live = self.oracle.live()
        want = self.expected_rows(live)
        ours = t.read()
        self.compare(self.got_rows(ours, "our snapshot"), want, "our snapshot vs oracle")
        commit_times = (
            {tuple(r[c] for c in self.keys): r["_hoodie_commit_time"] for r in ours.to_pylist()}
            if ours.num_rows
            else {}
        )
        wrong = {k: (commit_times.get(k), ct) for k, (_, ct) in live.items() if commit_times.get(k) != ct}
        if wrong:
            raise Defect(f"_hoodie_commit_time (got, want): {list(wrong.items())[:3]}")
        theirs = _rs(self.path, self.options)
        self.compare(self.got_rows(theirs, "hudi-rs snapshot"), want, "hudi-rs snapshot vs oracle")
        # read-optimized and freshness
        ro = t.read("read_optimized")
        ro_rs = _rs(self.path, self.options, ro=True)
        self.compare(self.got_rows(ro, "our RO"), self.got_rows(ro_rs, "hudi-rs RO"), "our RO vs hudi-rs RO")
        if self.has_event_field and self.ordering:
            fr = t.ro_freshness().threshold_ms
            if fr is not None:
                i = self.columns.index(self.ordering)
                ro_cut = {k: v for k, v in self.got_rows(ro, "RO").items() if v[i] is not None and epoch_ms(v[i]) <= fr}
                sn_cut = {k: v for k, v in want.items() if v[i] is not None and epoch_ms(v[i]) <= fr}
                self.compare(ro_cut, sn_cut, f"RO vs snapshot at or before the freshness {fr}")
        self.check_metadata_table(t, tl)
        self.check_history(t, tl)
        self.seen.add(_state(want))
        self.check_stale_handle()

    def check_stale_handle(self) -> None:
        """A handle other operations left behind answers from what it loaded: some state the table was in, or an
        ``EvtError`` (a file it listed is gone) — never a mix."""
        if self.rng.random() > 0.3:
            return
        h = self.rng.choice(self.handles)
        try:
            rows = self.got_rows(h.read(), "a stale handle's snapshot")
        except EvtError:
            return
        if _state(rows) not in self.seen:
            raise Defect(f"a stale handle read a state the table never was in: {len(rows)} rows")

    def check_metadata_table(self, t: evt.HudiTable, tl: Timeline) -> None:
        on_storage = committed_files(self.store, tl)
        dangling = [k for k, v in on_storage.items() if v < 0]
        if not (Path(self.path) / ".hoodie" / "metadata").exists() and not self.options:
            return
        if t.metadata_table.exists():
            listing = read_files_partition(t)
            listed = {(p, n): s for p, fs in listing.files.items() for n, s in fs.items()}
            clean_pending = bool(tl.pending_actions("clean"))
            if clean_pending:  # Hudi syncs a clean when it completes: the deleted files may still be listed
                listed = {k: v for k, v in listed.items() if k in on_storage}
            if listed != on_storage:
                only = sorted(set(listed) - set(on_storage))
                miss = sorted(set(on_storage) - set(listed))
                sizes = [
                    (k, listed[k], on_storage[k]) for k in set(listed) & set(on_storage) if listed[k] != on_storage[k]
                ]
                raise Defect(
                    f"files partition vs storage: listed only {only[:4]}; missing {miss[:4]}; sizes {sizes[:3]}"
                )
        if dangling:
            live_files = self.live_files(t)
            gone = [k for k in dangling if k in live_files]
            if gone:
                raise Defect(f"live slices need files whose link dangles: {gone[:3]}")
        if not self.options and (Path(self.path) / ".hoodie" / "metadata").exists() and self.rng.random() < 0.5:
            self.check_rs_slices()

    def live_files(self, t: evt.HudiTable) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for s in t.view.latest_merged_file_slices():
            if s.base_file is not None:
                out.add((s.partition_path, s.base_file.name))
            out.update((s.partition_path, lf.name) for lf in s.log_files)
        return out

    def check_rs_slices(self) -> None:
        """hudi-rs's latest slices listed through the metadata table equal those it lists from storage (a view of
        the table without ``.hoodie/metadata``), file groups with a base file (hudi-rs drops log-only ones)."""
        import hudi

        farm = self.root / f"farm-{self.steps}"
        src = Path(self.path)
        for dirpath, _, names in os.walk(src):
            rel = Path(dirpath).relative_to(src)
            if rel.parts[:2] == (".hoodie", "metadata"):
                continue
            (farm / rel).mkdir(parents=True, exist_ok=True)
            for n in names:
                if rel.parts[:2] == (".hoodie", "metadata"):
                    continue
                (farm / rel / n).symlink_to((Path(dirpath) / n).resolve())
        dirs_meta = farm / ".hoodie" / "metadata"
        if dirs_meta.exists():
            shutil.rmtree(dirs_meta)

        def slices(path: Path) -> set[tuple[str, str, str, tuple[str, ...]]]:
            t = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
            return {
                (fs.partition_path, fs.file_id, fs.base_file_name, tuple(sorted(fs.log_file_names)))
                for fs in t.get_file_slices()
                if fs.base_file_name
            }

        try:
            via_mdt, via_listing = slices(src), slices(farm)
        finally:
            shutil.rmtree(farm, ignore_errors=True)
        if via_mdt != via_listing:
            raise Defect(
                f"hudi-rs slices through the metadata table differ from storage: only via MDT "
                f"{sorted(via_mdt - via_listing)[:2]}; only via listing {sorted(via_listing - via_mdt)[:2]}"
            )

    def check_history(self, t: evt.HudiTable, tl: Timeline) -> None:
        own = sorted(self.oracle.writes, key=lambda w: w.requested)
        if not own:
            return
        w = own[self.rng.randint(0, len(own) - 1)]
        at = w.requested
        want = self.expected_rows(self.oracle.live(lambda x: x.requested <= at))
        try:
            got = t.read(as_of=at)
        except ReadError as e:
            msg = str(e)
            pend_before = [p for p in tl.pending_actions("deltacommit") if p <= at]
            if not ("earliest" in msg or pend_before or "clean" in msg):
                raise Defect(f"time travel to {at} refused without a reason: {msg}") from None
        else:
            self.compare(self.got_rows(got, "time travel"), want, f"time travel to {at}")
            self.compare(
                self.got_rows(_rs(self.path, self.options, as_of=at), "hudi-rs time travel"),
                want,
                f"hudi-rs time travel to {at}",
            )
        # an incremental window (begin, end] between two completions of our writes
        comps = sorted({w.completion for w in own})
        if len(comps) < 2:
            return
        i = self.rng.randint(0, len(comps) - 2)
        j = self.rng.randint(i + 1, len(comps) - 1)
        begin, end = comps[i], comps[j]
        if any(p for p in tl.pending_actions("deltacommit")):
            return
        state_end = self.oracle.live(lambda x: x.completion <= end)
        inwin = {x.requested for x in own if begin < x.completion <= end}
        # Every key whose winner at ``end`` was committed in the window is there with that record; any other row
        # must at least be a record a commit of the window wrote (stock readers return losing window records too).
        want_inc = {k: canon_row(r, self.columns) for k, (r, ct) in state_end.items() if ct in inwin}
        written: dict[tuple[Any, ...], set[tuple[Any, ...]]] = {}
        for x in own:
            if x.requested in inwin and x.op != "delete":
                for r in x.rows:
                    written.setdefault(self.oracle.key(r), set()).add(canon_row(r, self.columns))
        try:
            got = t.read("incremental", begin=begin, end=end)
        except ReadError as e:
            if "earliest" not in str(e) and "clean" not in str(e):
                raise Defect(f"incremental ({begin}, {end}] refused: {e}") from None
            return
        try:
            rows = self.got_rows(got, "incremental")
            extra = {k: v for k, v in rows.items() if k not in want_inc}
            bad = {k: v for k, v in extra.items() if v not in written.get(k, set())}
            if bad:
                raise Defect(
                    f"incremental ({begin}, {end}]: rows no commit of the window wrote: {list(bad.items())[:3]}"
                )
            self.compare({k: v for k, v in rows.items() if k in want_inc}, want_inc, f"incremental ({begin}, {end}]")
        except Defect as e:
            detail = [(r["_hoodie_commit_time"], r.get(self.value)) for r in got.to_pylist()]
            writes = [(x.requested, x.completion, x.op, [r.get(self.value) for r in x.rows]) for x in own]
            raise Defect(f"{e}\n got commit times {detail}\n writes {writes}") from None

    # -- driving -------------------------------------------------------------------------------------------------------
    WEIGHTS: ClassVar[dict[str, int]] = {
        "write": 22,
        "delete": 8,
        "failed": 5,
        "rollback_failed": 5,
        "rollback_last": 4,
        "schedule": 6,
        "run": 7,
        "compact": 9,
        "unschedule": 3,
        "rollback_run": 2,
        "clean": 6,
        "repair": 2,
        "crash": 12,
        "overlap": 6,
    }

    def step(self) -> None:
        ops = list(self.WEIGHTS)
        what = self.rng.choices(ops, [self.WEIGHTS[o] for o in ops])[0]
        if self.proxy is not None:
            self.proxy.drop_rate = 0.05 if self.rng.random() < 0.5 else 0.0
            self.proxy.delay_rate = 0.1
        try:
            {
                "write": lambda: self.op_write("upsert"),
                "delete": lambda: self.op_write("delete"),
                "failed": self.op_failed_write,
                "rollback_failed": self.op_rollback_failed,
                "rollback_last": self.op_rollback_last,
                "schedule": self.op_schedule,
                "run": self.op_run,
                "compact": self.op_compact,
                "unschedule": self.op_unschedule,
                "rollback_run": self.op_rollback_run,
                "clean": self.op_clean,
                "repair": self.op_repair,
                "crash": self.op_crash,
                "overlap": self.op_overlap,
            }[what]()
        finally:
            if self.proxy is not None:
                self.proxy.drop_rate = 0.0
                self.proxy.delay_rate = 0.0
        self.check()

    def finish(self) -> None:
        """The documented recovery: roll back pending writes, run pending plans, compact fully, clean; the answer
        stays the oracle's."""
        tl = self.store.timeline()
        for f in sorted(set(self.failed) | set(tl.pending_actions("deltacommit"))):
            self.op_rollback_failed_instant(f)
        for c in self.pending_compactions():
            try:
                self.open().compaction.run(c)
            except EvtError:
                self.open().compaction.unschedule(c, dry_run=False)
        self.check()
        for _ in range(5):
            try:
                c = self.open().compaction.schedule(UnBoundedCompactionStrategy())
                break
            except EvtError as e:
                # A rollback a crash left pending is finished first: its error names the call that resumes it.
                resume = re.search(r"t\.rollback\('(\d+)'\)", str(e))
                if resume is None:
                    raise
                self.open().rollback(resume[1])
                self.note(f"finish: resumed the rollback of {resume[1]}")
        else:
            raise Defect("pending rollbacks kept a full compaction from being scheduled")
        if c is not None:
            self.open().compaction.run(c.instant)
        self.open().clean("KEEP_LATEST_COMMITS", 1, dry_run=False)
        self.check()


def run_sequence(seed: int, fixture: str, steps: int, *, s3: Any = None, proxy: bool = False) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="evt-ind-"))
    seq: Sequence | None = None
    try:
        seq = Sequence(seed, fixture, root, s3=s3, proxy=proxy)
        seq.check()
        for _ in range(steps):
            seq.step()
        seq.finish()
        dropped = seq.proxy.dropped if seq.proxy is not None else 0
        return {
            "seed": seed,
            "fixture": fixture,
            "steps": seq.steps,
            "ok": True,
            "s3": s3 is not None,
            "proxy": proxy,
            "dropped": dropped,
        }
    except BaseException as e:
        log = "\n".join(seq.log[-40:]) if seq else ""
        where = f"seed {seed} fixture {fixture} s3={s3 is not None} proxy={proxy}"
        raise Defect(f"{where}: {type(e).__name__}: {e}\n--- steps:\n{log}") from e
    finally:
        if seq is not None and seq.proxy is not None:
            seq.proxy.close()
        HOOK.disarm()
        if not os.environ.get("EVT_IND_KEEP"):
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept", root, file=sys.stderr)


def s3_server() -> Any:
    """A moto S3 server on 127.0.0.1 for the long runs (the tests use the session's)."""
    from tests.conftest import start_s3_server

    return start_s3_server()


def fixtures() -> list[str]:
    chosen = os.environ.get("EVT_IND_FIXTURES")
    return [f for f in chosen.split(",") if f] if chosen else FIXTURES


def main() -> None:  # pragma: no cover - the long runs
    seqs = int(os.environ.get("EVT_IND_SEQS", "20"))
    steps = int(os.environ.get("EVT_IND_STEPS", "25"))
    seed0 = int(os.environ.get("EVT_IND_SEED", "0"))
    report = os.environ.get("EVT_IND_REPORT")
    s3_seqs = int(os.environ.get("EVT_IND_S3_SEQS", "0"))
    proxy = os.environ.get("EVT_IND_PROXY") == "1"
    fx = fixtures()
    fails = 0
    server = s3_server() if s3_seqs else None
    plan = [(seed0 + i, None) for i in range(seqs)] + [(seed0 + 10_000 + i, server) for i in range(s3_seqs)]
    for seed, s3 in plan:
        name = fx[seed % len(fx)]
        t0 = time.time()
        try:
            r = run_sequence(seed, name, steps, s3=s3, proxy=proxy and s3 is not None)
        except Defect as e:
            fails += 1
            r = {"seed": seed, "fixture": name, "ok": False, "error": str(e)[:6000]}
        r["secs"] = round(time.time() - t0, 1)
        print(json.dumps(r)[:3000], flush=True)
        if report:
            with open(report, "a") as f:
                f.write(json.dumps(r) + "\n")
    if server is not None:
        server.proc.terminate()
    print(f"{len(plan) - fails} passed, {fails} failed")


if __name__ == "__main__":  # pragma: no cover
    main()
