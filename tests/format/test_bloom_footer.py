"""Base files carry stock Hudi's record-key bloom filter and a key range in Java's (UTF-16) string order.

Drives :mod:`evt_toolkit.format.bloom` against every base file stock Hudi wrote in the shared fixtures (the filter
rebuilt from the file's ``_hoodie_record_key`` column, in row order, must equal the footer's
``org.apache.hudi.bloomfilter`` byte for byte), then the two places this toolkit writes base files: a compaction of a
table created here, and inserts into a stock v9 table through the SIMPLE index (new file groups with a base file).
Record keys mix ASCII, characters U+E000-U+FFFF and supplementary-plane characters, whose order differs between code
points (UTF-8 bytes) and UTF-16 code units (Java's ``String.compareTo``, which a BLOOM-index writer prunes by).

Checked on every base file written: the footer's bloom filter equals the one rebuilt from the file's keys, the type
code is ``DYNAMIC_V0``, every key is a member, and ``hoodie_min_record_key``/``hoodie_max_record_key`` are the least
and greatest key in UTF-16 order. Also the dynamic filter's row layout past ``num_entries`` keys (rows opened up to
``dynamic.max.entries``, then round-robin) and the tail bytes of non-ASCII keys against hand-computed hashes.
"""

from __future__ import annotations

import base64
import itertools
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
import evt_toolkit.format.bloom as bloom_module
from evt_toolkit.compaction import UnBoundedCompactionStrategy
from evt_toolkit.format.bloom import (
    BLOOM_FILTER_KEY,
    BLOOM_FILTER_TYPE_CODE_KEY,
    BloomFilterBuilder,
    BloomFilterConfig,
    bit_positions,
    dynamic_rows,
    serialize_bloom_filter,
    utf16_min_max,
    utf16_min_max_arrow,
)
from tests.conftest import TABLES_DIR, fixture_table_path, shared_available

ODD_KEYS = ["a1", "\ue000x", "\U0001f600y", "\uffffz", "\U00010000w", "zz", "\ue000\U0001f600", "é"]


def _base_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts)


def _check_footer(path: Path) -> list[str]:
    meta = pq.read_metadata(path).metadata or {}
    keys = pq.read_table(path, columns=["_hoodie_record_key"])["_hoodie_record_key"].to_pylist()
    assert keys, path
    assert meta.get(BLOOM_FILTER_KEY.encode()) is not None, f"{path.name}: no bloom filter in the footer"
    assert meta[BLOOM_FILTER_KEY.encode()].decode() == serialize_bloom_filter(keys), path.name
    assert meta.get(BLOOM_FILTER_TYPE_CODE_KEY.encode()) == b"DYNAMIC_V0", path.name
    lo, hi = min(keys, key=lambda k: k.encode("utf-16-be")), max(keys, key=lambda k: k.encode("utf-16-be"))
    assert meta[b"hoodie_min_record_key"].decode() == lo, path.name
    assert meta[b"hoodie_max_record_key"].decode() == hi, path.name
    _members(meta[BLOOM_FILTER_KEY.encode()].decode(), keys)
    return keys


def _members(serialized: str, keys: list[str]) -> None:
    """Every key's bits are set in some row of the serialized dynamic filter (Hudi's ``mightContain``)."""
    raw = base64.b64decode(serialized)
    _, n_hashes, _, vector_size = struct.unpack(">iibi", raw[:13])
    n_rows = struct.unpack(">i", raw[21:25])[0]
    row_bytes = (vector_size + 7) // 8
    rows = [raw[25 + r * (13 + row_bytes) + 13 : 25 + (r + 1) * (13 + row_bytes)] for r in range(n_rows)]
    for key, pos in zip(keys, bit_positions(keys, n_hashes, vector_size), strict=True):
        assert any(all(row[p // 8] >> (p % 8) & 1 for p in pos) for row in rows), f"{key!r} not in the filter"


@pytest.mark.skipif(not shared_available(), reason="real Hudi fixtures not found")
def test_rebuilt_filter_equals_every_stock_footer() -> None:
    checked = 0
    for path in sorted(TABLES_DIR.glob("*/**/*.parquet")):
        meta = pq.read_metadata(path).metadata or {}
        footer = meta.get(BLOOM_FILTER_KEY.encode())
        if footer is None:
            continue
        keys = pq.read_table(path, columns=["_hoodie_record_key"])["_hoodie_record_key"].to_pylist()
        assert serialize_bloom_filter(keys) == footer.decode(), path
        assert meta[BLOOM_FILTER_TYPE_CODE_KEY.encode()] == b"DYNAMIC_V0"
        checked += 1
    assert checked >= 100


def test_hash_tail_bytes_and_sizes() -> None:
    cfg = BloomFilterConfig()
    assert cfg.sizes() == (2587966, 30)
    # Murmur2 by hand for 1-3 tail bytes, non-ASCII (sign-extended, read from the end), seed 0 then chained.
    for key in ["é", "\ue000", "ab\xff", "abcd\u00e9", "x\U0001f600"]:
        data = key.encode()
        seed, want = 0, []
        for _ in range(3):
            seed = _murmur(data, seed)
            want.append(abs(_java_rem(_signed(seed), 1000)))
        assert bit_positions([key], 3, 1000)[0].tolist() == want, key


def _signed(x: int) -> int:
    return x - (1 << 32) if x & 0x80000000 else x


def _java_rem(a: int, b: int) -> int:
    return abs(a) % b * (1 if a >= 0 else -1)


def _murmur(data: bytes, seed: int) -> int:
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (seed ^ len(data)) & mask
    n4 = len(data) // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    left = len(data) - 4 * n4
    sb = [b - 256 if b > 127 else b for b in data]
    if left:
        if left >= 3:
            h ^= (sb[-3] << 16) & mask
        if left >= 2:
            h ^= (sb[-2] << 8) & mask
        h ^= sb[-1] & mask
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h


def test_dynamic_rows_follow_the_java_filter() -> None:
    rows, n, cur = dynamic_rows(10, 3, 7)
    # 3 keys to row 0, 3 to row 1, 3 to row 2 (3*3 >= 7 stops growth), then row 0 and round-robin from row 0.
    assert rows.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 0]
    assert (n, cur) == (3, 4)
    rows, n, cur = dynamic_rows(14, 3, 7)
    assert rows.tolist()[9:] == [0, 0, 1, 2, 0]
    assert (n, cur) == (3, 8)
    assert dynamic_rows(0, 3, 7)[1:] == (1, 0)


def test_utf16_order() -> None:
    assert utf16_min_max(ODD_KEYS) == ("a1", "\uffffz")
    assert max(ODD_KEYS) == "\U0001f600y"  # code-point order disagrees


def _odd_rows(n: int) -> pa.Table:
    keys = [ODD_KEYS[i % len(ODD_KEYS)] + str(i // len(ODD_KEYS)) for i in range(n)]
    return pa.table({"k": keys, "ts": pa.array(range(n), pa.int64()), "v": [f"v{i}" for i in range(n)]})


def test_compacted_base_files_carry_the_footer(tmp_path: Path) -> None:
    t = evt.HudiTable.create(tmp_path / "t", "bloomt", "k", ordering_field="ts", buckets=2, table_version=9)
    t.write(_odd_rows(40))
    t.write(_odd_rows(24))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    t.compaction.run(c)
    files = _base_files(tmp_path / "t")
    assert len(files) == 2
    keys = [k for f in files for k in _check_footer(f)]
    assert sorted(keys) == sorted(_odd_rows(40)["k"].to_pylist())


@pytest.mark.skipif(not shared_available(), reason="real Hudi fixtures not found")
def test_inserted_base_files_carry_the_footer(tmp_path: Path) -> None:
    name = "mor_v9_txns_simple_nometa"
    dst = tmp_path / name
    shutil.copytree(fixture_table_path(name), dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    before = set(_base_files(dst))
    t = evt.HudiTable.open(dst)
    key = t.config.record_key_fields[0]
    gold = pq.read_table(TABLES_DIR / name / "gold_data")
    cols = [c for c in gold.column_names if not c.startswith("_hoodie_")]
    new = gold.select(cols).slice(0, len(ODD_KEYS))
    new = new.set_column(new.column_names.index(key), key, pa.array(ODD_KEYS[: new.num_rows]))
    t.write(new, "insert", options={"hoodie.index.type": "SIMPLE"})
    added = [f for f in _base_files(dst) if f not in before]
    assert added
    keys = [k for f in added for k in _check_footer(f)]
    assert sorted(keys) == sorted(new[key].to_pylist())


def test_arrow_slices_and_chunks_match_python_keys() -> None:
    keys = [f"k{i}" + "é" * (i % 5) + "\U0001f600" * (i % 2) for i in range(50)]
    for arr, want in (
        (pa.array(keys).slice(7, 30), keys[7:37]),
        (pa.array(keys, pa.large_string()).slice(3, 9), keys[3:12]),
        (pa.chunked_array([pa.array(keys[:5]), pa.array(keys[5:])]), keys),
    ):
        builder = BloomFilterBuilder()
        builder.add_arrow(arr)
        assert builder.serialize() == serialize_bloom_filter(want)
        assert utf16_min_max_arrow(arr) == utf16_min_max(want)


def _reference_filter(keys: list[str], cfg: BloomFilterConfig) -> str:
    """The dynamic filter built key by key with the plain-Python murmur2 above (no numpy hashing)."""
    vector_size, n_hashes = cfg.sizes()
    rows, n_rows, cur = dynamic_rows(len(keys), cfg.num_entries, cfg.dynamic_max_entries)
    bits = [bytearray((vector_size + 7) // 8) for _ in range(n_rows)]
    for key, row in zip(keys, rows.tolist(), strict=True):
        seed = 0
        for _ in range(n_hashes):
            seed = _murmur(key.encode(), seed)
            pos = abs(_java_rem(_signed(seed), vector_size))
            bits[row][pos // 8] |= 1 << (pos % 8)
    header = struct.pack(">iibi", -1, n_hashes, 1, vector_size)
    body = header + struct.pack(">iii", cfg.num_entries, cur, n_rows) + b"".join(header + bytes(b) for b in bits)
    return base64.b64encode(body).decode()


@pytest.mark.parametrize(
    "kind", ["mixed", "fixed4", "fixed5", "fixed6", "fixed7", "one_long", "non_ascii", "past_max_entries"]
)
def test_batched_hashing_equals_key_by_key_murmur(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys of one length (hashed in place), of mixed lengths (one padded batch), with a few very long keys (hashed
    by length) and non-ASCII tails, fed in uneven Arrow chunks of every string layout and in batches of 7 keys,
    against the filter built key by key with the plain-Python hash; ``past_max_entries`` also crosses the dynamic
    rows into round-robin."""
    import random

    rnd = random.Random(kind)
    alphabet = "abcXYZ0189-_é\ue000\U0001f600"
    cfg = BloomFilterConfig(num_entries=40, fpp=0.01, dynamic_max_entries=100)
    n = 300 if kind == "past_max_entries" else 120
    if kind.startswith("fixed"):
        width = int(kind[5:])
        keys = ["".join(rnd.choice("0123456789abcdef") for _ in range(width)) for _ in range(n)]
    elif kind == "one_long":
        keys = [str(rnd.randrange(10**6)) for _ in range(n)] + ["L" * 5000]
    elif kind == "non_ascii":
        keys = ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(1, 4))) for _ in range(n)]
    else:
        keys = ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(1, 41))) for _ in range(n)]
    want = _reference_filter(keys, cfg)
    builder = BloomFilterBuilder(cfg)
    builder.add(keys)
    assert builder.serialize() == want
    cuts = sorted({0, len(keys), *(rnd.randrange(len(keys)) for _ in range(4))})
    for layout in (pa.string(), pa.large_string(), pa.string_view(), pa.binary()):
        padded = pa.array(["pad", *keys, "pad"], layout).slice(1, len(keys))  # a sliced array: offsets not at 0
        builder = BloomFilterBuilder(cfg)
        builder.add_arrow(pa.chunked_array([padded.slice(a, b - a) for a, b in itertools.pairwise(cuts)]))
        assert builder.serialize() == want, layout
    monkeypatch.setattr(bloom_module, "_BATCH_KEYS", 7)
    builder = BloomFilterBuilder(cfg)
    builder.add(keys)
    assert builder.serialize() == want


def test_positions_are_javas_abs_of_the_remainder() -> None:
    """``Math.abs(hash % vectorSize)`` on Java ints, at the edges: ``-2^31``, ``±1``, 0, ``2^31 - 1`` and multiples of
    the vector size either side."""
    import numpy as np

    for size in (2587966, 1000, 7, 2**31 - 1):
        values = [-(2**31), -1, 0, 1, 2**31 - 1, size, -size, 3 * size, -3 * size, 3 * size - 1, -(3 * size) + 1]
        values = [v for v in values if -(2**31) <= v < 2**31]
        hashes = np.array(values, dtype=np.int64).astype(np.int32).view(np.uint32)[None, :]
        out = np.empty(hashes.shape, dtype=np.int64)
        bloom_module._java_positions(hashes, size, out)
        assert out[0].tolist() == [abs(_java_rem(v, size)) for v in values], size
