"""Hudi's record-key bloom filter, byte-exact, and the UTF-16 key order of a base file's key range.

Stock Hudi writes, in the footer of every base file, the file's record keys as a bloom filter
(``org.apache.hudi.bloomfilter``, Base64 text) and, for the dynamic filter, its type code
(``hoodie_bloom_filter_type_code``), next to the key range ``hoodie_min_record_key``/``hoodie_max_record_key``.
A writer using the BLOOM index prunes base files by that range and then asks the filter; a file without a filter
fails that lookup and a range in the wrong order sends an existing key to a new file (the key read twice).

The serialization is Hadoop's ``Filter.write`` as Hudi keeps it:

- ``InternalFilter``: int ``-1`` (version), int ``nbHash``, byte ``hashType`` (1 = murmur), int ``vectorSize``;
- ``InternalBloomFilter``: the header, then ``ceil(vectorSize / 8)`` bytes, bit ``i`` in byte ``i // 8`` at
  mask ``1 << (i % 8)``;
- ``InternalDynamicBloomFilter`` (``DYNAMIC_V0``): the header, int ``nr``, int ``currentNbRecord``, int rows,
  then each row as an ``InternalBloomFilter``.

A key's bits are ``abs(h_i % vectorSize)`` for ``h_i = murmur2(utf8(key), seed=h_{i-1})``, ``h_{-1} = 0``
(Hudi's ``MurmurHash``: Java ``int`` arithmetic, the 1-3 tail bytes taken from the end, ``data[len-3] << 16``,
``data[len-2] << 8``, ``data[len-1]``, each sign-extended — not Hadoop's order). Sizes follow ``BloomFilterUtils``:
``bits = ceil(n * -ln(fpp) / ln(2)^2)``, ``hashes = ceil(ln(2) * bits / n)``. The dynamic filter adds keys to
its last row until it holds ``nr`` keys, then opens a new row while ``rows * nr < maxNr``; after that it adds
round-robin over its rows (the first key past the bound to row 0, then row 0, 1, 0, 1, ...).

Hashing is vectorized with numpy (keys grouped by byte length) so a million keys take about a second.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import TableConfigError

BLOOM_FILTER_KEY = "org.apache.hudi.bloomfilter"
BLOOM_FILTER_TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"
MIN_RECORD_KEY = "hoodie_min_record_key"
MAX_RECORD_KEY = "hoodie_max_record_key"

DYNAMIC_V0 = "DYNAMIC_V0"
SIMPLE = "SIMPLE"
MURMUR_HASH = 1
_VERSION = -1
_M = np.uint32(0x5BD1E995)


@dataclass(frozen=True)
class BloomFilterConfig:
    """The writer settings that shape the filter (Hudi's defaults)."""

    num_entries: int = 60000  # hoodie.index.bloom.num_entries
    fpp: float = 0.000000001  # hoodie.index.bloom.fpp
    dynamic_max_entries: int = 100000  # hoodie.bloom.index.filter.dynamic.max.entries
    filter_type: str = DYNAMIC_V0  # hoodie.bloom.index.filter.type

    def sizes(self) -> tuple[int, int]:
        """``(vector size in bits, number of hashes)`` as ``BloomFilterUtils`` computes them."""
        bits = math.ceil(self.num_entries * (-math.log(self.fpp) / (math.log(2) * math.log(2))))
        return bits, math.ceil(math.log(2) * bits / self.num_entries)


DEFAULT_BLOOM_CONFIG = BloomFilterConfig()


def bloom_config_from_properties(props: Mapping[str, str], where: str = "") -> BloomFilterConfig:
    """The filter settings named in ``props`` (table properties, then write options over them), Hudi's defaults
    otherwise. Raises :class:`TableConfigError` (naming ``where``) for a value Hudi would refuse."""
    default = BloomFilterConfig()
    try:
        kind = props.get("hoodie.bloom.index.filter.type", default.filter_type).strip().upper()
        if kind not in (DYNAMIC_V0, SIMPLE):
            raise ValueError(f"unknown bloom filter type {kind!r} (hoodie.bloom.index.filter.type)")
        cfg = BloomFilterConfig(
            num_entries=int(props.get("hoodie.index.bloom.num_entries", default.num_entries)),
            fpp=float(props.get("hoodie.index.bloom.fpp", default.fpp)),
            dynamic_max_entries=int(
                props.get("hoodie.bloom.index.filter.dynamic.max.entries", default.dynamic_max_entries)
            ),
            filter_type=kind,
        )
        if cfg.num_entries <= 0 or not 0.0 < cfg.fpp < 1.0 or cfg.dynamic_max_entries <= 0:
            raise ValueError("hoodie.index.bloom.num_entries and .dynamic.max.entries must be > 0, fpp in (0, 1)")
    except ValueError as exc:
        raise TableConfigError(f"{where}: bloom filter settings: {exc}") from exc
    return cfg


def _murmur_rounds(data: np.ndarray, n_hashes: int, vector_size: int) -> np.ndarray:
    """Bit positions ``(n_keys, n_hashes)`` of keys of one byte length ``data`` (``uint8[n_keys, length]``)."""
    n, length = data.shape
    if length == 0:
        raise ValueError("a bloom filter key must not be empty")
    blocks = length >> 2
    words = None
    if blocks:
        w = np.ascontiguousarray(data[:, : blocks * 4]).view("<u4").astype(np.uint32)
        words = w * _M
        words ^= words >> np.uint32(24)
        words *= _M
    left = length - blocks * 4
    tail = np.zeros(n, dtype=np.uint32)
    if left:
        signed = data[:, blocks * 4 :].astype(np.int8).astype(np.int32)
        # Hudi's MurmurHash reads the tail from the end: data[len-3] << 16, data[len-2] << 8, data[len-1].
        if left >= 3:
            tail ^= (signed[:, left - 3] << 16).astype(np.uint32)
        if left >= 2:
            tail ^= (signed[:, left - 2] << 8).astype(np.uint32)
        tail ^= signed[:, left - 1].astype(np.uint32)
    out = np.empty((n, n_hashes), dtype=np.int64)
    seed = np.zeros(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i in range(n_hashes):
            h = seed ^ np.uint32(length)
            for b in range(blocks):
                assert words is not None
                h *= _M
                h ^= words[:, b]
            if left:
                h ^= tail
                h *= _M
            h ^= h >> np.uint32(13)
            h *= _M
            h ^= h >> np.uint32(15)
            seed = h
            signed_h = h.view(np.int32).astype(np.int64)
            out[:, i] = np.abs(np.fmod(signed_h, vector_size))
    return out


def _positions_of_blobs(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, n_hashes: int, vector_size: int
) -> np.ndarray:
    """Bit positions of the byte strings ``data[starts[i]:starts[i] + lengths[i]]``, grouped by length."""
    out = np.empty((len(starts), n_hashes), dtype=np.int64)
    for length in np.unique(lengths):
        idx = np.nonzero(lengths == length)[0]
        gather = starts[idx, None] + np.arange(int(length), dtype=np.int64)[None, :]
        out[idx] = _murmur_rounds(data[gather].reshape(len(idx), int(length)), n_hashes, vector_size)
    return out


def bit_positions(keys: Sequence[str], n_hashes: int, vector_size: int) -> np.ndarray:
    """Each key's ``n_hashes`` bit positions, ``int64[len(keys), n_hashes]``, in key order."""
    encoded = [k.encode("utf-8") for k in keys]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(encoded) else lengths
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return _positions_of_blobs(data, starts, lengths, n_hashes, vector_size)


def _arrow_positions(keys: pa.Array, n_hashes: int, vector_size: int) -> np.ndarray:
    """:func:`bit_positions` of a string array, read from its buffers (no Python strings)."""
    if keys.null_count:
        raise ValueError("a record key in a base file must not be null")
    arr = pc.cast(keys, pa.large_binary())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    return _positions_of_blobs(data, offsets[:-1], np.diff(offsets), n_hashes, vector_size)


class _DynamicRows:
    """``InternalDynamicBloomFilter.getActiveStandardBF`` as a state machine over consecutive keys."""

    def __init__(self, nr: int, max_nr: int) -> None:
        self.nr, self.max_nr = nr, max_nr
        self.n_rows, self.cur, self.reached, self.next_index = 1, 0, False, 0

    def assign(self, n_keys: int) -> np.ndarray:
        """The row of each of the next ``n_keys`` keys."""
        rows = np.zeros(n_keys, dtype=np.int64)
        i = 0
        while i < n_keys:
            if self.reached:
                rest = n_keys - i
                rows[i:] = (self.next_index + np.arange(rest, dtype=np.int64)) % self.n_rows
                self.next_index += rest
                self.cur += rest
                break
            if self.cur >= self.nr and self.n_rows * self.nr < self.max_nr:
                self.n_rows += 1
                self.cur = 0
            elif self.cur >= self.nr:
                # The bound is reached: this key goes to row 0 and the next ones round-robin from row 0.
                self.reached = True
                rows[i] = 0
                self.cur += 1
                i += 1
                continue
            take = min(n_keys - i, self.nr - self.cur)
            rows[i : i + take] = self.n_rows - 1
            self.cur += take
            i += take
        return rows


def dynamic_rows(n_keys: int, nr: int, max_nr: int) -> tuple[np.ndarray, int, int]:
    """Which row each key goes to in ``InternalDynamicBloomFilter``; also the row count and ``currentNbRecord``."""
    state = _DynamicRows(nr, max_nr)
    rows = state.assign(n_keys)
    return rows, state.n_rows, state.cur


def _header(n_hashes: int, vector_size: int) -> bytes:
    return struct.pack(">iibi", _VERSION, n_hashes, MURMUR_HASH, vector_size)


class BloomFilterBuilder:
    """Stock Hudi's bloom filter of a base file, fed the file's record keys in the order they are written."""

    def __init__(self, config: BloomFilterConfig = DEFAULT_BLOOM_CONFIG) -> None:
        self.config = config
        self.vector_size, self.n_hashes = config.sizes()
        self._rows = _DynamicRows(config.num_entries, config.dynamic_max_entries)
        self._bits: list[np.ndarray] = [np.zeros(self.vector_size, dtype=bool)]

    def _set(self, positions: np.ndarray) -> None:
        if self.config.filter_type == SIMPLE:
            self._bits[0][positions.ravel()] = True
            return
        rows = self._rows.assign(len(positions))
        while len(self._bits) < self._rows.n_rows:
            self._bits.append(np.zeros(self.vector_size, dtype=bool))
        for r in np.unique(rows):
            self._bits[int(r)][positions[rows == r].ravel()] = True

    def add(self, keys: Sequence[str]) -> None:
        """Add ``keys`` (Python strings), in order."""
        self._set(bit_positions(keys, self.n_hashes, self.vector_size))

    def add_arrow(self, keys: pa.Array | pa.ChunkedArray) -> None:
        """Add a string array's values, in order."""
        chunks = keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]
        for chunk in chunks:
            if len(chunk):
                self._set(_arrow_positions(chunk, self.n_hashes, self.vector_size))

    def serialize(self) -> str:
        """The Base64 text Hudi stores under ``org.apache.hudi.bloomfilter``."""
        header = _header(self.n_hashes, self.vector_size)
        if self.config.filter_type == SIMPLE:
            body = header + np.packbits(self._bits[0], bitorder="little").tobytes()
            return base64.b64encode(body).decode("ascii")
        parts = [header, struct.pack(">iii", self.config.num_entries, self._rows.cur, self._rows.n_rows)]
        for bits in self._bits:
            parts.append(header)
            parts.append(np.packbits(bits, bitorder="little").tobytes())
        return base64.b64encode(b"".join(parts)).decode("ascii")

    def footer(self) -> dict[str, str]:
        """The footer entries: the filter, and for a dynamic filter its type code."""
        out = {BLOOM_FILTER_KEY: self.serialize()}
        if self.config.filter_type == DYNAMIC_V0:
            out[BLOOM_FILTER_TYPE_CODE_KEY] = DYNAMIC_V0
        return out


def serialize_bloom_filter(keys: Sequence[str], config: BloomFilterConfig = DEFAULT_BLOOM_CONFIG) -> str:
    """The footer value stock Hudi writes for a base file holding ``keys`` (in the order they were written)."""
    builder = BloomFilterBuilder(config)
    builder.add(keys)
    return builder.serialize()


def utf16_sort_key(key: str) -> bytes:
    """A key that orders strings as Java's ``String.compareTo`` does (UTF-16 code units)."""
    return key.encode("utf-16-be", "surrogatepass")


def utf16_min_max(keys: Sequence[str]) -> tuple[str, str] | None:
    """The smallest and largest key in Java's order, or ``None`` for no keys."""
    if not keys:
        return None
    return min(keys, key=utf16_sort_key), max(keys, key=utf16_sort_key)


_SUPPLEMENTARY = "[\\x{10000}-\\x{10FFFF}]"


def utf16_min_max_arrow(keys: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """:func:`utf16_min_max` of a string array: Arrow's min/max (code-point order) unless a key holds a
    supplementary-plane character, where code points and UTF-16 code units order differently."""
    if len(keys) == keys.null_count:
        return None
    if pc.any(pc.match_substring_regex(keys, _SUPPLEMENTARY)).as_py():
        return utf16_min_max([k for k in keys.to_pylist() if k is not None])
    mm = pc.min_max(keys)
    return mm["min"].as_py(), mm["max"].as_py()


def utf16_less(a: str, b: str) -> bool:
    """``a < b`` as Java compares strings."""
    return utf16_sort_key(a) < utf16_sort_key(b)
