"""Every column type the writer takes, at its edges, through writes, compactions and every read: no value changes.

A compaction must never change a query answer — its schema or a single value. Seeded random histories write rows
of a table holding every Arrow type the writer maps to Avro (:func:`evt_toolkit.format.log_writer.arrow_to_avro_schema`:
int8 to int64 and unsigned ones, float32/64, bool, string, binary, fixed-size binary, decimals of precision 1 to 38
and scales 0 to p, dates, times, timestamps of every unit with and without a zone, structs, lists and maps nested in
each other, nullable and NOT NULL fields at every depth) with values at the edges: NaN, ±inf, -0.0, subnormals,
empty and very long strings, astral characters and NUL, decimals that need every byte of their fixed, dates and
timestamps before 1970 and beyond Python's ``datetime`` range, null structs beside structs of nulls, empty lists
beside null ones, null elements, empty maps and null map values. Batches come as Arrow tables and as pandas frames
of ``pd.ArrowDtype`` columns, into version-6 and version-9 tables; event-time partial compactions (copy and symlink
links, made at schedule or execute time, exact split or not) and full compactions run between them.

After every write the snapshot equals the model — the batches themselves, cast by Arrow to the table's read types —
and after every compaction the snapshot is *identical* to the one before: same schema, every value bit for bit
(NaN equal to NaN, -0.0 not equal to 0.0, temporal values by their integer counts); projections, time travel to
every earlier write and incremental windows answer as before; the read-optimized view after a full compaction
equals the snapshot; hudi-rs reads the same snapshot and read-optimized view.

Focused cases: dates and timestamps beyond years 1..9999 (also nested) read back and compact; timestamps of every
unit nested in structs, lists and maps; values a table cannot hold are refused with an ``EvtError`` naming the table
before anything is written (nulls in NOT NULL fields at any depth, integers past ``long``, overflowing timestamps,
times outside the day, ``date64`` off midnight, structs without fields, decimals above 38 digits, types without an
Avro counterpart); deletes carry ordering values of every type or are refused whole; Arrow view columns are written
as plain ones; float ordering values merge in Java's ``Double.compareTo`` order (NaN, ±0.0) as Hudi and hudi-rs do,
locally and in a Spark DataFrame's de-duplication; stock fixtures with rich types keep every value through a full
compaction whose base file has a stock compaction's Parquet types; Spark DataFrame writes and the ``hudi_evt``
source (time columns included) agree with our reader before and after compactions.

``EVT_TYPES_EXAMPLES`` (default 1 per table version) histories of ``EVT_TYPES_STEPS`` (default 7) steps from seed
``EVT_TYPES_SEED`` (default 0) on; a failure names its seed and steps. Above 1 the Spark round trip runs on table
version 6 as well as 9.
"""

from __future__ import annotations

import decimal
import math
import os
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.errors import EvtError
from tests.conftest import SKIP_NO_SHARED, fixture_table_path

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

EXAMPLES = int(os.environ.get("EVT_TYPES_EXAMPLES", "1"))
STEPS = int(os.environ.get("EVT_TYPES_STEPS", "7"))
FIRST_SEED = int(os.environ.get("EVT_TYPES_SEED", "0"))

#: No timestamp nested in a struct or a map here: hudi-rs re-tags a Parquet timestamp's zone ("+00:00") as its Avro
#: schema's ("UTC") at the top level only, and fails on a nested one in any base file, stock or ours (see
#: :func:`test_nested_timestamps_and_dates_keep_their_values`, read by this toolkit alone).
_INNER = pa.struct([pa.field("x", pa.float64()), pa.field("day", pa.date32()), pa.field("n", pa.int8())])
_PAIR = pa.struct([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.decimal128(10, 2))])
#: The table's columns: every type the writer takes, nullable and NOT NULL, nested in each other.
SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("p", pa.string(), nullable=False),
        pa.field("ts", pa.int64(), nullable=False),
        pa.field("ev", pa.int64()),
        pa.field("i8", pa.int8()),
        pa.field("i16", pa.int16()),
        pa.field("i32", pa.int32(), nullable=False),
        pa.field("u16", pa.uint16()),
        pa.field("u32", pa.uint32()),
        pa.field("i64", pa.int64()),
        pa.field("f32", pa.float32()),
        pa.field("f64", pa.float64()),
        pa.field("flag", pa.bool_()),
        pa.field("s", pa.string()),
        pa.field("bin", pa.binary()),
        pa.field("fsb", pa.binary(3)),
        pa.field("d1", pa.decimal128(1, 0)),
        pa.field("d9", pa.decimal128(9, 9)),
        pa.field("d18", pa.decimal128(18, 4)),
        pa.field("d38", pa.decimal128(38, 0)),
        pa.field("d38s", pa.decimal128(38, 37)),
        pa.field("dt", pa.date32()),
        pa.field("t32", pa.time32("ms")),
        pa.field("t64", pa.time64("us")),
        pa.field("tsu", pa.timestamp("us", tz="UTC")),
        pa.field("tsms", pa.timestamp("ms", tz="UTC")),
        pa.field("tss", pa.timestamp("s")),
        pa.field("tsn", pa.timestamp("ns", tz="Asia/Kolkata")),
        pa.field(
            "st",
            pa.struct(
                [
                    pa.field("a", pa.int32()),
                    pa.field("b", pa.string()),
                    pa.field("inner", _INNER),
                    pa.field("req", pa.int64(), nullable=False),
                ]
            ),
        ),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("lnn", pa.list_(pa.field("element", pa.int32(), nullable=False))),
        pa.field("lst", pa.list_(_PAIR)),
        pa.field("ldt", pa.list_(pa.date32())),
        pa.field("m", pa.map_(pa.string(), pa.float64())),
        pa.field("mst", pa.map_(pa.string(), _INNER)),
        pa.field("mls", pa.map_(pa.string(), pa.list_(pa.string()))),
    ]
)
KEY_COLUMNS = ["p", "id"]

# -- values -----------------------------------------------------------------------------------------------------------

_DAY_MIN, _DAY_MAX = -719162, 2932896  # 0001-01-01 and 9999-12-31 in days since 1970
_US_DAY = 86_400_000_000
_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1.0]
_FLOATS32 = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-45, 1.1754942106924411e-38, 3.4028234663852886e38, -2.5]
_STRINGS = ["", "a", "ü€𝄞", "\x00nul", "line\nbreak", "שלום", "x" * 20_000]


def _storage(t: pa.DataType) -> pa.DataType:
    """The type with every temporal type replaced by its integer storage (values beyond ``datetime``'s range and
    no time zone conversions when compared), recursively."""
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_date64(t):
        return pa.int64()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_storage(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_storage(t.key_type)), t.item_field.with_type(_storage(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_storage(t.value_type)))
    return t


def _viewable(t: pa.DataType) -> pa.DataType:
    """:func:`_storage` with every nested field nullable (a NOT NULL child may hold nulls under a null parent)."""
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_viewable(f.type)).with_nullable(True) for f in t])
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_viewable(t.key_type)),
            t.item_field.with_type(_viewable(t.item_type)).with_nullable(True),
        )
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_viewable(t.value_type)).with_nullable(True))
    return _storage(t)


class Values:
    """Random values of a type's storage (ints for temporal types), edges first."""

    def __init__(self, rng: random.Random, extreme: bool) -> None:
        self.rng, self.extreme = rng, extreme

    def of(self, field: pa.Field) -> Any:
        rng = self.rng
        if field.nullable and rng.random() < 0.15:
            return None
        t = field.type
        if pa.types.is_struct(t):
            return {f.name: self.of(f) for f in t}
        if pa.types.is_map(t):
            n = rng.choice([0, 0, 1, 2, 3, 40])
            keys = rng.sample([f"k{i}" for i in range(60)] + ["", "ü"], n)
            return [(k, self.of(t.item_field)) for k in keys]
        if pa.types.is_list(t):
            return [self.of(t.value_field) for _ in range(rng.choice([0, 0, 1, 2, 5]))]
        return self.scalar(t)

    def scalar(self, t: pa.DataType) -> Any:
        rng = self.rng
        if pa.types.is_integer(t):
            lo, hi = (
                (0, 2**t.bit_width - 1)
                if pa.types.is_unsigned_integer(t)
                else (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1)
            )
            return rng.choice([lo, hi, 0, -1 if lo < 0 else 1, rng.randint(lo, hi)])
        if pa.types.is_float32(t):
            return rng.choice([*_FLOATS32, rng.uniform(-1e30, 1e30)])
        if pa.types.is_floating(t):
            return rng.choice([*_FLOATS, rng.uniform(-1e300, 1e300)])
        if pa.types.is_boolean(t):
            return rng.random() < 0.5
        if pa.types.is_string(t):
            return rng.choice([*_STRINGS, "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(0, 30)))])
        if pa.types.is_fixed_size_binary(t):
            return bytes(rng.randint(0, 255) for _ in range(t.byte_width))
        if pa.types.is_binary(t):
            return rng.choice([b"", b"\x00", bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 40)))])
        if pa.types.is_decimal(t):
            top = 10**t.precision - 1
            unscaled = rng.choice(
                [top, -top, 0, 1, -1, rng.randint(-top, top), 2 ** (8 * 16 - 2) if t.precision == 38 else 0]
            )
            unscaled = max(-top, min(top, unscaled))
            return decimal.Decimal(unscaled).scaleb(-t.scale, decimal.Context(prec=100))
        if pa.types.is_date32(t):
            if self.extreme and rng.random() < 0.3:
                return rng.choice([-(2**31), 2**31 - 1, -(2**30), 2**30])
            return rng.choice([_DAY_MIN, _DAY_MAX, -1, 0, rng.randint(_DAY_MIN, _DAY_MAX)])
        if pa.types.is_time32(t):
            return rng.choice([0, 86_399_999, rng.randint(0, 86_399_999)])
        if pa.types.is_time64(t):
            return rng.choice([0, _US_DAY - 1, rng.randint(0, _US_DAY - 1)])
        if pa.types.is_timestamp(t):
            # Values of the column's unit; s and ms values must fit microseconds (the Avro unit), or are refused.
            lo_us, hi_us = (-(2**63), 2**63 - 1) if self.extreme else (-62135596800000000, 253402300799999999)
            if t.unit == "ns":
                lo, hi = (-(2**63), 2**63 - 1) if self.extreme else (lo_us * 1000, hi_us * 1000)
                lo, hi = max(lo, -(2**63)), min(hi, 2**63 - 1)
            else:
                per = {"s": 1_000_000, "ms": 1_000, "us": 1}[t.unit]
                lo, hi = -(-lo_us // per), hi_us // per
            return rng.choice([lo, hi, 0, -1, rng.randint(lo, hi)])
        raise AssertionError(t)


def make_batch(
    rng: random.Random, ids: list[tuple[str, str]], ts: int, extreme: bool, schema: pa.Schema = SCHEMA
) -> pa.Table:
    """A batch of rows ``(partition, id)`` with ordering value ``ts``, every other column random."""
    v = Values(rng, extreme)
    rows = []
    for p, i in ids:
        row = {f.name: v.of(f) for f in schema}
        row.update(p=p, id=i, ts=ts, ev=rng.choice([None, rng.randint(-(10**13), 10**13)]))
        rows.append(row)
    storage = pa.schema([f.with_type(_storage(f.type)) for f in schema])
    raw = pa.Table.from_pylist(rows, storage)
    return pa.Table.from_arrays([raw[f.name].combine_chunks().view(f.type) for f in schema], schema=schema)


# -- exact comparison ---------------------------------------------------------------------------------------------


def _canon(value: Any) -> Any:
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else ("f", struct.pack(">d", value))
    if isinstance(value, dict):
        return tuple((k, _canon(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_canon(v) for v in value)
    return value


def exact_rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """The rows of ``table`` (user columns, or ``columns``) sorted by partition and key, every value exact: floats by
    their bits (NaN equal to NaN, -0.0 not 0.0), temporal values by their integer storage."""
    names = columns if columns is not None else [n for n in table.column_names if not n.startswith("_hoodie")]
    cols = []
    for n in names:
        arr = table[n].combine_chunks()
        cols.append([_canon(v) for v in arr.view(_viewable(arr.type)).to_pylist()])
    rows = list(zip(*cols, strict=True)) if cols else []
    at = [names.index(k) for k in KEY_COLUMNS if k in names]
    return sorted(rows, key=lambda r: tuple(str(r[i]) for i in at) if at else str(r))


def to_read_types(batch: pa.Table, schema: pa.Schema) -> pa.Table:
    """The batch as the table answers it: Arrow's cast to the read types (sub-microsecond digits truncated, as the
    writer documents; any other loss raises)."""
    cols = []
    for f in schema:
        col = batch[f.name].combine_chunks()
        lossy = "timestamp[ns" in str(col.type)
        cols.append(pc.cast(col, f.type, safe=not lossy))
    return pa.Table.from_arrays(cols, schema=schema)


def rs_rows(path: str, schema: pa.Schema, *, ro: bool = False) -> list[tuple[Any, ...]]:
    """hudi-rs's answer cast to our read types (a value that does not cast is a difference)."""
    b = hudi.HudiTableBuilder.from_base_uri(path)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    batches = b.build().read()
    if not batches:
        return []
    got = pa.Table.from_batches(batches)
    names = [n for n in schema.names if not n.startswith("_hoodie")]
    return exact_rows(pa.Table.from_arrays([pc.cast(got[n], schema.field(n).type) for n in names], names=names))


# -- the history ------------------------------------------------------------------------------------------------


class TypedHistory:
    """One table, a model of its rows (the batches as written) and the answers recorded so far."""

    def __init__(self, root: Path, seed: int, version: int) -> None:
        self.rng = random.Random(seed)
        self.desc = f"seed {seed}, version {version}"
        self.path = root / f"t{seed}v{version}"
        self.extreme = self.rng.random() < 0.5
        self.t = evt.HudiTable.create(
            self.path,
            "types",
            "id",
            partition_by="p",
            ordering_field="ts",
            event_time_field="ev",
            buckets=2,
            merge_mode=self.rng.choice(["event_time", "commit_time"]),
            table_version=version,
        )
        self.model: dict[tuple[str, str], pa.Table] = {}
        self.ts = 0
        self.log: list[str] = []
        self.as_of: dict[str, list[tuple[Any, ...]]] = {}
        self.windows: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        self.schema: pa.Schema | None = None

    def fail(self, what: str) -> str:
        return f"{self.desc}: {what}\n  " + "\n  ".join(self.log)

    def keys(self) -> list[tuple[str, str]]:
        n = self.rng.randint(1, 6)
        return [(self.rng.choice(["a", "b"]), f"k{self.rng.randint(0, 9)}") for _ in range(n)]

    def upsert(self) -> None:
        self.ts += 1
        keys = list(dict.fromkeys(self.keys()))
        batch = make_batch(self.rng, keys, self.ts, self.extreme)
        as_pandas = self.rng.random() < 0.4
        data: Any = batch.to_pandas(types_mapper=pd.ArrowDtype) if as_pandas else batch
        instant = self.t.write(data)
        self.log.append(f"upsert {instant} {'pandas' if as_pandas else 'arrow'} {keys}")
        for j, k in enumerate(keys):
            self.model[k] = batch.slice(j, 1)
        self.wrote(instant)

    def delete(self) -> None:
        if not self.model:
            return
        self.ts += 1
        keys = self.rng.sample(sorted(self.model), self.rng.randint(1, min(3, len(self.model))))
        batch = pa.table(
            {"id": [k[1] for k in keys], "p": [k[0] for k in keys], "ts": pa.array([self.ts] * len(keys), pa.int64())}
        )
        instant = self.t.write(batch, operation="delete")
        self.log.append(f"delete {instant} {keys}")
        for k in keys:
            self.model.pop(k)
        self.wrote(instant)

    def wrote(self, instant: str) -> None:
        snap = self.t.read()
        if self.schema is None:
            self.schema = snap.schema
        assert snap.schema == self.schema, self.fail(f"the snapshot's schema changed:\n{snap.schema}")
        want = exact_rows(
            to_read_types(pa.concat_tables(self.model.values()), self.user_schema()) if self.model else snap.slice(0, 0)
        )
        got = exact_rows(snap)
        assert got == want, self.fail(f"the snapshot after {instant} is not what was written: {_first_diff(got, want)}")
        previous = list(self.as_of)
        self.as_of[instant] = got
        if previous:
            begin = previous[-1]
            self.windows[(begin, instant)] = exact_rows(self.t.read("incremental", begin=begin, end=instant))

    def user_schema(self) -> pa.Schema:
        assert self.schema is not None
        return pa.schema([f for f in self.schema if not f.name.startswith("_hoodie")])

    def compact(self) -> None:
        rng = self.rng
        full = rng.random() < 0.35
        link_mode, timing = rng.choice(["copy", "symlink"]), rng.choice(["schedule", "execute"])
        exact = not full and rng.random() < 0.5
        threshold = rng.randint(-(10**13), 1_700_000_000_000)
        strategy = UnBoundedCompactionStrategy() if full else EventTimeBasedCompactionStrategy(threshold=threshold)
        c = self.t.compaction.schedule(strategy, link_mode=link_mode, link_timing=timing, exact_split=exact)
        shape = f"{'full' if full else f'T={threshold}'} {link_mode}/{timing}{' exact' if exact else ''}"
        if c is None:
            self.log.append(f"compaction {shape}: nothing to compact")
            return
        before = self.t.refresh().read()
        self.t.compaction.run(c)
        self.log.append(f"compaction {c.instant} {shape} ran")
        self.check_after_compaction(before, full)

    def check_after_compaction(self, before: pa.Table, full: bool) -> None:
        t = self.t.refresh()
        after = t.read()
        assert after.schema == before.schema, self.fail(f"the compaction changed the schema:\n{after.schema}")
        got, want = exact_rows(after), exact_rows(before)
        assert got == want, self.fail(f"the compaction changed the snapshot: {_first_diff(got, want)}")
        cols = self.rng.sample(self.user_schema().names, 5)
        proj = t.read(columns=["p", "id", *[c for c in cols if c not in ("p", "id")]])
        assert proj.schema == pa.schema([before.schema.field(n) for n in proj.column_names]), self.fail("projection")
        assert exact_rows(proj) == exact_rows(before, proj.column_names), self.fail(f"projection {cols}")
        for instant, rows in self.as_of.items():
            assert exact_rows(t.read(as_of=instant)) == rows, self.fail(f"time travel to {instant}")
        for (begin, end), rows in self.windows.items():
            assert exact_rows(t.read("incremental", begin=begin, end=end)) == rows, self.fail(f"window {begin}..{end}")
        ro = t.read("read_optimized")
        assert ro.schema == before.schema, self.fail(f"the read-optimized schema:\n{ro.schema}")
        if full and not t.compaction.pending():
            assert exact_rows(ro) == want, self.fail(f"RO after a full compaction: {_first_diff(exact_rows(ro), want)}")
        for rows, expected, what in (
            (rs_rows(str(self.path), before.schema), want, "snapshot"),
            (rs_rows(str(self.path), before.schema, ro=True), exact_rows(ro), "RO view"),
        ):
            assert rows == expected, self.fail(f"hudi-rs's {what}: {_first_diff(rows, expected)}")


def _first_diff(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> str:
    if len(got) != len(want):
        return f"{len(got)} rows, expected {len(want)}"
    for g, w in zip(got, want, strict=True):
        if g != w:
            diff = [(i, a, b) for i, (a, b) in enumerate(zip(g, w, strict=True)) if a != b]
            return "; ".join(f"column #{i}: {str(a)[:120]} != {str(b)[:120]}" for i, a, b in diff[:3])
    return "same rows"


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + EXAMPLES))
def test_typed_histories_keep_every_value(tmp_path: Path, seed: int, version: int) -> None:
    h = TypedHistory(tmp_path, seed, version)
    h.upsert()
    for _ in range(STEPS):
        r = h.rng.random()
        if r < 0.5:
            h.upsert()
        elif r < 0.62:
            h.delete()
        else:
            h.compact()
    h.upsert()
    before = h.t.read()
    c = h.t.compaction.schedule(UnBoundedCompactionStrategy())
    if c is not None:
        h.t.compaction.run(c)
        h.log.append(f"final full compaction {c.instant}")
        h.check_after_compaction(before, True)


# -- focused cases ------------------------------------------------------------------------------------------------


def _files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _compact_both_ways(t: evt.HudiTable, threshold: int) -> None:
    for strategy, exact in (
        (EventTimeBasedCompactionStrategy(threshold=threshold), True),
        (UnBoundedCompactionStrategy(), False),
    ):
        before = t.refresh().read()
        c = t.compaction.schedule(strategy, link_mode="symlink", exact_split=exact)
        assert c is not None
        t.compaction.run(c)
        after = t.refresh().read()
        assert after.schema == before.schema
        assert exact_rows(after) == exact_rows(before), _first_diff(exact_rows(after), exact_rows(before))


@pytest.mark.parametrize("version", [6, 9])
def test_temporal_values_beyond_pythons_datetime_range_read_back(tmp_path: Path, version: int) -> None:
    """Dates and timestamps before year 1 or after 9999 are valid Avro ``int``/``long`` values (Spark's and hudi-rs's
    types hold them): a log holding one must read back and compact, also beside nested columns (no columnar fast
    path), also nested in a struct, a list or a map."""
    days = pa.array([2**30, -(2**31), 2**31 - 1, None, 0], pa.int32()).view(pa.date32())
    micros = pa.array([2**62, -(2**62), 2**63 - 1, -(2**63), None], pa.int64())
    when = micros.view(pa.timestamp("us", tz="UTC"))
    nested = pa.StructArray.from_arrays([days, when], names=["day", "when"])
    batch = pa.table(
        {
            "id": ["a", "b", "c", "d", "e"],
            "ts": pa.array([1] * 5, pa.int64()),
            "ev": pa.array([1000, 2000, 3000, 4000, 5000], pa.int64()),
            "day": days,
            "when": when,
            "local": micros.view(pa.timestamp("us")),
            "nested": nested,
            "days": pa.ListArray.from_arrays(pa.array([0, 1, 3, 3, 5, 5], pa.int32()), days),
            "by_name": pa.MapArray.from_arrays(pa.array([0, 2, 2, 3, 5, 5], pa.int32()), pa.array(list("vwxyz")), when),
        }
    )
    t = evt.HudiTable.create(
        tmp_path / "t",
        "far",
        "id",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        table_version=version,
    )
    t.write(batch)
    t.write(batch.slice(1, 2).set_column(1, "ts", pa.array([2, 2], pa.int64())))
    want = exact_rows(
        to_read_types(
            batch.set_column(1, "ts", pa.array([1, 2, 2, 1, 1], pa.int64())),
            pa.schema([f for f in t.read().schema if not f.name.startswith("_hoodie")]),
        )
    )
    assert exact_rows(t.read()) == want
    _compact_both_ways(t, 2500)
    assert exact_rows(t.read("read_optimized")) == want


def test_nested_timestamps_keep_their_values_through_compactions(tmp_path: Path) -> None:
    """Timestamps of every unit nested in structs, lists and maps, through an event-time partial and a full
    compaction: the snapshot is unchanged and the read-optimized view equals it (read by this toolkit: hudi-rs
    does not read a timestamp nested in a base file's struct)."""
    rng = random.Random(7)
    leaf = pa.struct(
        [
            pa.field("us", pa.timestamp("us", tz="UTC")),
            pa.field("ms", pa.timestamp("ms", tz="UTC")),
            pa.field("ns", pa.timestamp("ns")),
            pa.field("t", pa.time64("us")),
        ]
    )
    schema = pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("ts", pa.int64()),
            pa.field("ev", pa.int64()),
            pa.field("s", leaf),
            pa.field("l", pa.list_(leaf)),
            pa.field("m", pa.map_(pa.string(), leaf)),
        ]
    )
    t = evt.HudiTable.create(
        tmp_path / "t", "nested", "id", ordering_field="ts", event_time_field="ev", buckets=1, merge_mode="event_time"
    )
    model: dict[str, pa.Table] = {}
    for ts in range(1, 5):
        keys = list(dict.fromkeys(("", f"k{rng.randint(0, 6)}") for _ in range(4)))
        batch = make_batch(rng, keys, ts, True, schema)
        batch = batch.set_column(2, "ev", pa.array([1000 * ts] * len(keys), pa.int64()))
        t.write(batch)
        model.update({k[1]: batch.slice(j, 1) for j, k in enumerate(keys)})
    read_schema = pa.schema([f for f in t.read().schema if not f.name.startswith("_hoodie")])
    want = exact_rows(to_read_types(pa.concat_tables(model.values()), read_schema))
    assert exact_rows(t.read()) == want
    _compact_both_ways(t, 2500)
    assert exact_rows(t.read("read_optimized")) == want


def _ids(n: int) -> dict[str, Any]:
    return {"id": [f"k{i}" for i in range(n)], "ts": pa.array([1] * n, pa.int64())}


_NOT_NULL = pa.schema(
    [pa.field("id", pa.string()), pa.field("ts", pa.int64()), pa.field("v", pa.int64(), nullable=False)]
)
_NESTED_NOT_NULL = pa.struct([pa.field("x", pa.int32(), nullable=False)])
#: name -> (the table's first batch or None, the batch refused, the error class): each refused batch holds a value
#: the table's Avro schema cannot hold, or that would be written as another value.
_REFUSED: dict[str, tuple[pa.Table | None, pa.Table, type[EvtError]]] = {
    "null in a NOT NULL column": (
        pa.table({**_ids(1), "v": [1]}, schema=_NOT_NULL),
        pa.table({**_ids(3), "v": [1, None, 3]}),
        evt.SchemaMismatchError,
    ),
    "null in a NOT NULL field of a struct": (
        None,
        pa.table({**_ids(3), "v": pa.array([{"x": 1}, None, {"x": None}], _NESTED_NOT_NULL)}),
        evt.SchemaMismatchError,
    ),
    "null element in a list of NOT NULL elements": (
        None,
        pa.table(
            {**_ids(2), "v": pa.array([[1], [2, None]], pa.list_(pa.field("element", pa.int32(), nullable=False)))}
        ),
        evt.SchemaMismatchError,
    ),
    "null value in a map of NOT NULL values": (
        None,
        pa.table(
            {
                **_ids(2),
                "v": pa.array(
                    [[("a", 1)], [("b", None)]], pa.map_(pa.string(), pa.field("value", pa.int32(), nullable=False))
                ),
            }
        ),
        evt.SchemaMismatchError,
    ),
    "uint64 above the long range": (
        None,
        pa.table({**_ids(2), "v": pa.array([1, 2**63], pa.uint64())}),
        evt.SchemaMismatchError,
    ),
    "timestamp in seconds beyond the microsecond range": (
        None,
        pa.table({**_ids(2), "v": pa.array([1, 2**62], pa.int64()).view(pa.timestamp("s"))}),
        evt.SchemaMismatchError,
    ),
    "timestamp in milliseconds beyond the microsecond range, in a list": (
        None,
        pa.table({**_ids(2), "v": pa.array([[1], [-(2**61)]], pa.list_(pa.timestamp("ms", tz="UTC")))}),
        evt.SchemaMismatchError,
    ),
    "time of day below zero": (
        None,
        pa.table({**_ids(2), "v": pa.array([1, -5], pa.int32()).view(pa.time32("ms"))}),
        evt.SchemaMismatchError,
    ),
    "time of day past midnight": (
        None,
        pa.table({**_ids(2), "v": pa.array([1, 86_400_000_000], pa.int64()).view(pa.time64("us"))}),
        evt.SchemaMismatchError,
    ),
    "date64 not at midnight": (
        None,
        pa.table({**_ids(2), "v": pa.array([0, 86_400_000 + 1], pa.int64()).view(pa.date64())}),
        evt.SchemaMismatchError,
    ),
    "struct without fields": (
        None,
        pa.table({**_ids(2), "v": pa.array([{}, None], pa.struct([]))}),
        evt.UnsupportedFeatureError,
    ),
    "duration (no Avro type)": (
        None,
        pa.table({**_ids(2), "v": pa.array([1, 2], pa.duration("s"))}),
        evt.UnsupportedFeatureError,
    ),
    "map with integer keys": (
        None,
        pa.table({**_ids(2), "v": pa.array([[(1, 2)], None], pa.map_(pa.int32(), pa.int32()))}),
        evt.UnsupportedFeatureError,
    ),
    "decimal of precision above 38": (
        None,
        pa.table({**_ids(2), "v": pa.array([decimal.Decimal(1), None], pa.decimal256(40, 2))}),
        evt.UnsupportedFeatureError,
    ),
}


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_values_the_table_cannot_hold_are_refused_before_anything_is_written(
    tmp_path: Path, case: str, version: int
) -> None:
    """A batch is checked whole before the first storage change (docs/data-safety.md §6): a null where the schema
    has none, an integer past ``long``, a timestamp whose microseconds overflow, a time of day outside the day, a
    date64 that is not a day, a struct Parquet cannot store or a decimal Spark cannot read fails as an ``EvtError``
    naming the table, and leaves every byte of it as it was — not a write failed half-way (left inflight with its
    logs) nor a value silently written as another."""
    first, refused, error = _REFUSED[case]
    path = tmp_path / "t"
    t = evt.HudiTable.create(path, "refusals", "id", ordering_field="ts", buckets=2, table_version=version)
    if first is not None:
        t.write(first)
    before = _files(path)
    with pytest.raises(error, match=str(path)):
        t.write(refused)
    assert _files(path) == before, f"{case}: the refused write changed the table"


# -- Spark ----------------------------------------------------------------------------------------------------------


def _nested_nullable(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_nested_nullable(f.type)).with_nullable(True) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_type, t.item_field.with_type(_nested_nullable(t.item_type)).with_nullable(True))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_nested_nullable(t.value_type)).with_nullable(True))
    return t


#: The columns a Spark DataFrame carries: Spark has no unsigned, fixed-size binary, time or nanosecond types, and its
#: Arrow conversion cannot hold a null struct whose field is NOT NULL (nested fields are nullable here).
_SPARK_DROPPED = ("u16", "u32", "fsb", "t32", "t64", "tss", "tsn", "lnn", "mst")
_SPARK_SCHEMA = pa.schema([f.with_type(_nested_nullable(f.type)) for f in SCHEMA if f.name not in _SPARK_DROPPED])


@pytest.mark.spark
@pytest.mark.parametrize("version", [6, 9] if EXAMPLES > 1 else [9])
def test_spark_writes_and_the_spark_source_keep_every_value(spark: Any, tmp_path: Path, version: int) -> None:
    """Spark DataFrame writes of every type Spark has, at its edges, into a table that already holds NOT NULL
    columns; the ``hudi_evt`` source's snapshot and read-optimized answers equal ours before and after an
    event-time partial and a full compaction; and a DataFrame holding a null where the table has a NOT NULL column
    is refused with the table unchanged (its rows are checked on Spark before the deltacommit is requested)."""
    rng = random.Random(version)
    path = tmp_path / "t"
    t = evt.HudiTable.create(
        path,
        "sp",
        "id",
        partition_by="p",
        ordering_field="ts",
        event_time_field="ev",
        buckets=2,
        merge_mode="event_time",
        table_version=version,
    )
    model: dict[tuple[str, str], pa.Table] = {}
    for ts in range(1, 4):
        keys = list(dict.fromkeys((rng.choice("ab"), f"k{rng.randint(0, 7)}") for _ in range(6)))
        batch = make_batch(rng, keys, ts, False, _SPARK_SCHEMA)
        if ts == 1:
            t.write(batch)  # the table's schema: NOT NULL id, p, ts and i32
        else:
            t.write(spark.createDataFrame(batch), spark=spark)
        model.update({k: batch.slice(j, 1) for j, k in enumerate(keys)})
    user = pa.schema([f for f in t.read().schema if not f.name.startswith("_hoodie")])
    want = exact_rows(to_read_types(pa.concat_tables(model.values()), user))

    def spark_rows(query_type: str) -> list[tuple[Any, ...]]:
        got = spark.read.format("hudi_evt").option("hoodie.datasource.query.type", query_type).load(str(path)).toArrow()
        return exact_rows(pa.Table.from_arrays([pc.cast(got[n], user.field(n).type) for n in user.names], schema=user))

    assert exact_rows(t.read()) == want
    assert spark_rows("snapshot") == want
    _compact_both_ways(t, rng.randint(-(10**13), 10**12))
    assert spark_rows("snapshot") == want
    assert spark_rows("read_optimized") == exact_rows(t.read("read_optimized")) == want

    before = _files(path)
    n = 40  # the null in the last row: not the row per file group the driver collects to plan the write
    bad = make_batch(rng, [("ab"[i % 2], f"k{i}") for i in range(n)], 9, False, _SPARK_SCHEMA)
    i32 = pa.array([*range(n - 1), None], pa.int32())
    bad = bad.set_column(bad.schema.get_field_index("i32"), pa.field("i32", pa.int32()), i32)
    with pytest.raises(evt.SchemaMismatchError, match=str(path)):
        t.write(spark.createDataFrame(bad), spark=spark)
    assert _files(path) == before


@pytest.mark.parametrize("version", [6, 9])
def test_deletes_keep_ordering_values_of_every_type_or_are_refused_whole(tmp_path: Path, version: int) -> None:
    """A delete block carries each key's ordering value in Hudi's wrapper records (``DateWrapper`` holds days,
    ``DecimalWrapper`` a decimal of scale 15 and at most 30 digits). A date beyond Python's range is a valid day
    count: the delete is written, and the tombstone the compaction carries keeps it. A decimal that the wrapper
    cannot hold without rounding is refused before anything is written, not in the write task."""
    path = tmp_path / "d"
    t = evt.HudiTable.create(
        path, "d", "id", ordering_field="o", buckets=1, merge_mode="event_time", table_version=version
    )
    days = pa.array([2**30 - 1, 2**30 - 1, 0], pa.int32()).view(pa.date32())
    t.write(pa.table({"id": ["a", "b", "c"], "o": days, "v": [1, 2, 3]}))
    t.write(pa.table({"id": ["a"], "o": pa.array([2**30], pa.int32()).view(pa.date32())}), operation="delete")
    assert sorted(t.read()["id"].to_pylist()) == ["b", "c"]
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    t.write(pa.table({"id": ["a"], "o": pa.array([2**30 - 2], pa.int32()).view(pa.date32()), "v": [9]}))
    assert sorted(t.refresh().read()["id"].to_pylist()) == ["b", "c"], "a late record resurrected the deleted key"

    for scale, value in ((20, decimal.Decimal("0.00000000000000000001")), (0, decimal.Decimal(10**35))):
        p = tmp_path / f"dec{scale}"
        d = evt.HudiTable.create(
            p, "d", "id", ordering_field="o", buckets=1, merge_mode="event_time", table_version=version
        )
        d.write(pa.table({"id": ["a", "b"], "o": pa.array([decimal.Decimal(1)] * 2, pa.decimal128(38, scale))}))
        before = _files(p)
        with pytest.raises(evt.SchemaMismatchError, match=str(p)):
            d.write(
                pa.table({"id": ["a", "b"], "o": pa.array([decimal.Decimal(2), value], pa.decimal128(38, scale))}),
                operation="delete",
            )
        assert _files(p) == before


# -- stock tables ---------------------------------------------------------------------------------------------------

#: Stock fixtures with rich types: every Avro type Spark writes (decimals fixed and INT64-backed, dates, timestamps,
#: binary, structs in structs, arrays of structs, maps of structs, empty and null containers, null elements and map
#: values), Parquet data blocks, decimal and timestamp delete ordering values, promoted and added columns.
_RICH_STOCK = [
    "mor_table_all_data_types",
    "mor_table_column_projection",
    "mor_table_delete_ord_decimal",
    "mor_table_delete_ord_timestamp",
    "mor_table_evo_add_col",
    "mor_table_evo_promotion",
    "mor_table_null_containers",
    "mor_table_parquet_log_block",
    "mor_v6_complexkeygen_hivestyle",
    "mor_v6_nonpartitioned",
]


def _leaves(path: Path) -> dict[str, Any]:
    """Leaf columns of a Parquet file by path, lists named alike (the 2-level ``array`` and 3-level
    ``list.element`` forms Hudi's writers use hold the same values)."""
    schema = pq.ParquetFile(path).schema
    out = {}
    for i in range(len(schema)):
        col = schema.column(i)
        name = col.path.replace(".list.element", ".[]").replace(".array", ".[]")
        out[name] = col
    return out


@SKIP_NO_SHARED
@pytest.mark.parametrize("name", _RICH_STOCK)
def test_stock_tables_with_rich_types_keep_every_value_through_a_full_compaction(tmp_path: Path, name: str) -> None:
    """A full compaction of a stock table keeps its snapshot — schema, meta columns and every value — and its
    read-optimized view then equals it, in our reader and in hudi-rs. The new base file has the Parquet types a
    stock compaction writes (parquet-avro from the table's Avro schema): the same logical type per column as the
    stock base files; a decimal is a ``FIXED_LEN_BYTE_ARRAY`` (what parquet-avro writes for Avro's fixed decimal, where
    Spark's row writer writes ``INT64`` up to 18 digits)."""
    path = tmp_path / name
    shutil.copytree(fixture_table_path(name), path, symlinks=True)
    t = evt.HudiTable.open(path)
    if t.config.properties.get("hoodie.table.metadata.partitions"):
        t.metadata_table.disable(dry_run=False)
        t = evt.HudiTable.open(path)
    before = t.read()
    columns = [n for n in before.column_names if n != "_hoodie_file_name"]
    want = exact_rows(before, columns)
    stock_files = sorted(path.rglob("*.parquet"))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    t = evt.HudiTable.open(path)
    after, ro = t.read(), t.read("read_optimized")
    assert after.schema == before.schema and ro.schema == before.schema, after.schema
    assert exact_rows(after, columns) == want, _first_diff(exact_rows(after, columns), want)
    assert exact_rows(ro, columns) == want
    user = pa.schema([f for f in before.schema if not f.name.startswith("_hoodie")])
    assert rs_rows(str(path), user) == exact_rows(before), "hudi-rs's snapshot"
    assert rs_rows(str(path), user, ro=True) == exact_rows(before), "hudi-rs's read-optimized view"

    ours = [p for p in path.rglob("*.parquet") if c.instant in p.name]
    assert ours
    stock = _leaves(stock_files[0]) if stock_files else {}
    promoted = name == "mor_table_evo_promotion"  # the stock base file predates the promotion
    for leaf, col in _leaves(ours[0]).items():
        if leaf not in stock or promoted:
            continue
        theirs = stock[leaf]
        assert str(col.logical_type) == str(theirs.logical_type), (leaf, col.logical_type, theirs.logical_type)
        if "Decimal" in str(col.logical_type):
            assert col.physical_type == "FIXED_LEN_BYTE_ARRAY", (leaf, col.physical_type)
        else:
            assert col.physical_type == theirs.physical_type, (leaf, col.physical_type, theirs.physical_type)


def test_arrow_view_types_are_written_as_their_plain_types(tmp_path: Path) -> None:
    """Arrow's view layouts (``string_view``, ``binary_view``, ``list_view`` — what polars hands over) hold the same
    values as ``string``, ``binary`` and ``list``: a batch with them is written as those (it failed with a bare
    Arrow error, or was refused), and reads back, also through a compaction."""
    values = {
        "id": ["a", "b", "c"],
        "ts": [1, 1, 1],
        "s": ["x", None, "ü" * 30],
        "b": [b"", None, b"\x00\x01"],
        "l": [[1, None], None, []],
        "st": [{"v": "y"}, None, {"v": None}],
    }
    views = pa.schema(
        [
            ("id", pa.string_view()),
            ("ts", pa.int64()),
            ("s", pa.string_view()),
            ("b", pa.binary_view()),
            ("l", pa.list_view(pa.int32())),
            ("st", pa.struct([("v", pa.string_view())])),
        ]
    )
    batch = pa.table(values, schema=views)
    plain = pa.schema(
        [
            ("id", pa.string()),
            ("ts", pa.int64()),
            ("s", pa.string()),
            ("b", pa.binary()),
            ("l", pa.list_(pa.int32())),
            ("st", pa.struct([("v", pa.string())])),
        ]
    )
    t = evt.HudiTable.create(tmp_path / "t", "views", "id", ordering_field="ts", buckets=1)
    t.write(batch)
    t.write(pa.table(values, schema=plain).slice(0, 1))  # the same table takes the plain types
    want = exact_rows(pa.table(values, schema=plain), plain.names)
    assert exact_rows(t.read(), plain.names) == want
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    assert exact_rows(t.read(), plain.names) == want == exact_rows(t.read("read_optimized"), plain.names)


@pytest.mark.spark
def test_the_spark_source_reads_time_of_day_columns(spark: Any, tmp_path: Path) -> None:
    """Avro ``time-millis`` and ``time-micros`` columns (Arrow ``time32``/``time64``, which the writer takes) read
    through the ``hudi_evt`` source as Spark times with the same values; a ``time-millis`` column made the whole
    table unreadable there."""
    path = tmp_path / "t"
    t = evt.HudiTable.create(path, "times", "id", ordering_field="ts", buckets=1)
    ms = pa.array([0, 86_399_999, None, 1], pa.int32()).view(pa.time32("ms"))
    us = pa.array([0, 86_399_999_999, 5, None], pa.int64()).view(pa.time64("us"))
    t.write(pa.table({"id": ["a", "b", "c", "d"], "ts": pa.array([1] * 4, pa.int64()), "ms": ms, "us": us}))
    ours = t.read(columns=["id", "ms", "us"])
    got = spark.read.format("hudi_evt").load(str(path)).select("id", "ms", "us").toArrow()
    cast = pa.Table.from_arrays(
        [pc.cast(got[n], ours.schema.field(n).type) for n in ours.column_names], schema=ours.schema
    )
    assert exact_rows(cast, ["id", "ms", "us"]) == exact_rows(ours, ["id", "ms", "us"])


def _java_order(x: float) -> tuple[int, float, int]:
    """Java's ``Double.compareTo`` order (what Hudi's payloads and record mergers compare ordering values by, and
    hudi-rs's Arrow comparisons follow): -0.0 below 0.0, NaN above +inf and equal to itself."""
    if math.isnan(x):
        return (2, 0.0, 0)
    return (1, x, 0 if x == 0.0 and math.copysign(1.0, x) < 0 else 1)


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("float_type", ["float64", "float32"])
@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + EXAMPLES))
def test_float_ordering_values_merge_as_hudi_compares_them(
    tmp_path: Path, version: int, float_type: str, seed: int
) -> None:
    """An event-time table ordered by a float: records with ordering values NaN, ±inf, ±0.0 meet in one batch
    (de-duplication), across logs (the log merge), against base rows (after compactions, full and event-time
    partial) and in a compaction's merge. The winner is the last record with the greatest value in Java's
    ``Double.compareTo`` order, as Hudi and hudi-rs decide; IEEE comparison let -0.0 tie with 0.0 and NaN lose to
    every base row."""
    rng = random.Random(seed * 100 + version * 10 + len(float_type))
    typ = pa.float64() if float_type == "float64" else pa.float32()
    values = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0]
    path = tmp_path / "t"
    t = evt.HudiTable.create(
        path,
        "fo",
        "id",
        ordering_field="o",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        table_version=version,
    )
    model: dict[str, tuple[tuple[int, float, int], int]] = {}
    log: list[str] = []
    n = 0
    for step in range(14):
        if step > 2 and rng.random() < 0.3:
            strategy = (
                UnBoundedCompactionStrategy()
                if rng.random() < 0.5
                else EventTimeBasedCompactionStrategy(threshold=rng.randint(0, 40))
            )
            before = exact_rows(t.refresh().read())
            c = t.compaction.schedule(strategy, link_mode=rng.choice(["copy", "symlink"]))
            if c is not None:
                t.compaction.run(c)
                log.append(f"compaction {c.instant}")
                assert exact_rows(t.refresh().read()) == before, log
            continue
        rows = []
        for _ in range(rng.randint(1, 3)):
            n += 1
            key, o = f"k{rng.randint(0, 2)}", rng.choice(values)
            rows.append({"id": key, "o": o, "v": n, "ev": n})
            if key not in model or _java_order(o) >= model[key][0]:
                model[key] = (_java_order(o), n)
        t.write(
            pa.Table.from_pylist(
                rows, pa.schema([("id", pa.string()), ("o", typ), ("v", pa.int64()), ("ev", pa.int64())])
            )
        )
        log.append(f"write {[(r['id'], r['o'], r['v']) for r in rows]}")
        want = sorted((k, v) for k, (_, v) in model.items())
        got = t.refresh().read()
        assert sorted(zip(got["id"].to_pylist(), got["v"].to_pylist(), strict=True)) == want, log
        rs = rs_rows(str(path), pa.schema([("id", pa.string()), ("v", pa.int64())]))
        assert sorted(rs) == want, ("hudi-rs", log)


@pytest.mark.spark
def test_a_spark_dataframe_keeps_the_duplicate_hudi_keeps_for_float_ordering_values(spark: Any, tmp_path: Path) -> None:
    """In-batch duplicates of a Spark DataFrame are resolved on Spark, whose sort takes -0.0 for 0.0; Hudi keeps
    the record with the greater value in ``Double.compareTo`` order (0.0 over a later -0.0), as the local writer
    does."""
    path = tmp_path / "t"
    t = evt.HudiTable.create(path, "fo", "id", ordering_field="o", buckets=1, merge_mode="event_time")
    rows = pa.table({"id": ["a", "a", "b", "b"], "o": [0.0, -0.0, -0.0, 0.0], "v": [1, 2, 3, 4]})
    t.write(spark.createDataFrame(rows).coalesce(1), spark=spark)
    got = t.read(columns=["id", "v"])
    assert sorted(zip(got["id"].to_pylist(), got["v"].to_pylist(), strict=True)) == [("a", 1), ("b", 4)]
