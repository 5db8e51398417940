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

Hashing is vectorized with numpy over batches of keys read in place from Arrow's buffers (keys of mixed lengths
padded to the longest's 4-byte blocks, the step of a block a key lacks made a no-op), and the bit positions are
taken with an unsigned division by a scalar: about 0.3 µs a key at Hudi's 30 hashes (0.3 s for a million keys).
"""

from __future__ import annotations

import base64
import itertools
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


def _mix_words(words: np.ndarray) -> np.ndarray:
    """Murmur2's seed-independent mixing of little-endian 4-byte blocks: ``k *= m; k ^= k >> 24; k *= m``."""
    k = words * _M
    k ^= k >> np.uint32(24)
    k *= _M
    return k


def _sign_extended(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Bytes ``data[at]`` as Java's ``(int) byte``, as ``uint32`` bit patterns."""
    return data[at].view(np.int8).astype(np.int32).view(np.uint32)


def _murmur_rounds(
    mixed: np.ndarray,
    block_mult: np.ndarray | None,
    lengths: np.ndarray,
    tail: np.ndarray | None,
    tail_mult: np.ndarray | np.uint32,
    n_hashes: int,
    vector_size: int,
) -> np.ndarray:
    """The ``n_hashes`` chained murmur2 rounds of ``n`` keys at once; bit positions ``int64[n_hashes, n]``.

    ``mixed`` is ``uint32[blocks, n]``, each key's 4-byte blocks already mixed (:func:`_mix_words`); a key with fewer
    blocks than the longest has zeros there and ``block_mult`` (``uint32[blocks, n]``) 1 instead of ``m``, so the
    step ``h = h * m ^ k`` leaves its hash alone (``None``: every key has every block). ``tail`` is the xor of the
    1-3 tail bytes (zero for a key without), ``tail_mult`` ``m`` where a key has a tail and 1 where not. The same
    operations run for every key of the batch, so numpy's per-call cost is paid once per step, not once per key or
    per key length.
    """
    n = mixed.shape[1]
    hashes = np.empty((n_hashes, n), dtype=np.uint32)
    out = np.empty((n_hashes, n), dtype=np.int64)
    tmp = np.empty(n, dtype=np.uint32)
    lens = lengths.astype(np.uint32)
    # Positions are taken for a few rounds at a time: few numpy calls for few keys, cache-sized arrays for many.
    group = max(1, _POSITION_GROUP // max(n, 1))
    with np.errstate(over="ignore"):
        for i in range(n_hashes):
            h = hashes[i]
            np.bitwise_xor(hashes[i - 1] if i else np.uint32(0), lens, out=h)
            for b in range(mixed.shape[0]):
                h *= _M if block_mult is None else block_mult[b]
                h ^= mixed[b]
            if tail is not None:
                h ^= tail
                h *= tail_mult
            np.right_shift(h, np.uint32(13), out=tmp)
            h ^= tmp
            h *= _M
            np.right_shift(h, np.uint32(15), out=tmp)
            h ^= tmp
            if (i + 1) % group == 0 or i + 1 == n_hashes:
                first = i + 1 - ((i % group) + 1)
                _java_positions(hashes[first : i + 1], vector_size, out[first : i + 1])
    return out


def _java_positions(hashes: np.ndarray, vector_size: int, out: np.ndarray) -> None:
    """Java's ``Math.abs(hash % vectorSize)`` of the signed ints ``hashes``, into ``out``.

    A truncated remainder's magnitude is ``|hash| mod vectorSize``, and ``|hash|`` fits an unsigned int (``-2^31``
    too, whose absolute value wraps to itself and reads as ``2^31``); numpy divides unsigned ints by a scalar with a
    multiplication, several times faster than its remainder or a floating-point quotient.
    """
    size = np.uint32(vector_size)
    magnitude = np.abs(hashes.view(np.int32)).view(np.uint32)
    quotient = magnitude // size
    quotient *= size
    magnitude -= quotient
    np.copyto(out, magnitude, casting="unsafe")


#: Hash values whose positions are taken in one pass (see :func:`_murmur_rounds`).
_POSITION_GROUP = 1 << 16


#: Longest padding the one-batch hashing of keys of mixed lengths accepts, in bytes per byte of key: past it (a few
#: very long keys among short ones) keys are hashed in groups of one length.
_MAX_PADDING = 4


def _positions_of_blobs(data: np.ndarray, offsets: np.ndarray, n_hashes: int, vector_size: int) -> np.ndarray:
    """Bit positions of the consecutive byte strings ``data[offsets[i]:offsets[i + 1]]``, ``int64[n_hashes, n]``.

    Keys of one length are read in place (a reshape of ``data``); keys of mixed lengths are hashed in one batch,
    padded to the longest key's blocks (or, when that padding would outweigh the keys, in groups of one length).
    """
    offsets = offsets.astype(np.int64, copy=False)
    n = len(offsets) - 1
    if n <= 0:
        return np.empty((n_hashes, 0), dtype=np.int64)
    lengths = np.diff(offsets)
    shortest, longest = int(lengths.min()), int(lengths.max())
    if shortest <= 0:
        raise ValueError("a bloom filter key must not be empty")
    first = int(offsets[0])
    if shortest == longest:
        length = shortest
        blocks = length >> 2
        rows = data[first : first + n * length].reshape(n, length)
        mixed = _mix_words(np.ascontiguousarray(rows[:, : blocks * 4]).view("<u4").astype(np.uint32).T.copy())
        left = length & 3
        tail = None
        if left:
            ends = offsets[1:]
            tail = _sign_extended(data, ends - 1)
            if left >= 2:
                tail ^= _sign_extended(data, ends - 2) << np.uint32(8)
            if left >= 3:
                tail ^= _sign_extended(data, ends - 3) << np.uint32(16)
        return _murmur_rounds(mixed, None, lengths, tail, _M, n_hashes, vector_size)
    max_blocks = longest >> 2
    if n * max_blocks * 4 > _MAX_PADDING * int(offsets[-1] - first) + (1 << 16):
        out = np.empty((n_hashes, n), dtype=np.int64)
        for length in np.unique(lengths):
            idx = np.nonzero(lengths == length)[0]
            gather = offsets[idx, None] + np.arange(int(length), dtype=np.int64)[None, :]
            packed = data[gather].reshape(-1)
            sub = np.arange(len(idx) + 1, dtype=np.int64) * int(length)
            out[:, idx] = _positions_of_blobs(packed, sub, n_hashes, vector_size)
        return out
    starts = offsets[:-1]
    n_blocks = lengths >> 2
    present = np.arange(max_blocks, dtype=np.int64)[:, None] < n_blocks[None, :]  # [block, key]
    mixed = np.zeros((max_blocks, n), dtype=np.uint32)
    if max_blocks:
        gather = starts[:, None] + np.arange(max_blocks * 4, dtype=np.int64)[None, :]
        np.minimum(gather, len(data) - 1, out=gather)
        words = np.ascontiguousarray(data[gather].view("<u4").astype(np.uint32).T)  # [block, key]
        mixed = _mix_words(words)
        mixed *= present
    block_mult = np.where(present, _M, np.uint32(1)).astype(np.uint32)
    ends = offsets[1:]
    lefts = lengths & 3
    zero = np.uint32(0)
    tail = np.where(lefts >= 1, _sign_extended(data, ends - 1), zero)
    tail ^= np.where(lefts >= 2, _sign_extended(data, np.maximum(ends - 2, 0)) << np.uint32(8), zero)
    tail ^= np.where(lefts >= 3, _sign_extended(data, np.maximum(ends - 3, 0)) << np.uint32(16), zero)
    tail_mult = np.where(lefts > 0, _M, np.uint32(1)).astype(np.uint32)
    return _murmur_rounds(mixed, block_mult, lengths, tail.astype(np.uint32), tail_mult, n_hashes, vector_size)


def bit_positions(keys: Sequence[str], n_hashes: int, vector_size: int) -> np.ndarray:
    """Each key's ``n_hashes`` bit positions, ``int64[len(keys), n_hashes]``, in key order."""
    encoded = [k.encode("utf-8") for k in keys]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return _positions_of_blobs(data, offsets, n_hashes, vector_size).T


_OFFSET_TYPES = {
    pa.string(): np.int32,
    pa.binary(): np.int32,
    pa.large_string(): np.int64,
    pa.large_binary(): np.int64,
}


def _utf8_buffers(keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string or binary array's data bytes and its ``len(keys) + 1`` offsets into them, read in place (string
    views and other layouts: after one cast to offsets and data)."""
    offset_type = _OFFSET_TYPES.get(keys.type)
    if offset_type is None:
        keys = pc.cast(keys, pa.large_binary())
        offset_type = np.int64
    buffers = keys.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[keys.offset : keys.offset + len(keys) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    return data, offsets


def _arrow_positions(keys: pa.Array, n_hashes: int, vector_size: int) -> np.ndarray:
    """:func:`bit_positions` of a string array, ``int64[n_hashes, n]``, read from its buffers in place (no Python
    strings, no copy)."""
    if keys.null_count:
        raise ValueError("a record key in a base file must not be null")
    data, offsets = _utf8_buffers(keys)
    return _positions_of_blobs(data, offsets, n_hashes, vector_size)


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


#: Keys hashed in one batch: the positions of a batch take ``8 * n_hashes`` bytes a key (15 MiB at Hudi's defaults).
_BATCH_KEYS = 1 << 16


class BloomFilterBuilder:
    """Stock Hudi's bloom filter of a base file, fed the file's record keys in the order they are written."""

    def __init__(self, config: BloomFilterConfig = DEFAULT_BLOOM_CONFIG) -> None:
        self.config = config
        self.vector_size, self.n_hashes = config.sizes()
        self._rows = _DynamicRows(config.num_entries, config.dynamic_max_entries)
        self._bits = np.zeros((1, self.vector_size), dtype=bool)  # one row per row of the dynamic filter

    def _set(self, positions: np.ndarray) -> None:
        """Set the bits of the next keys, ``positions`` being ``int64[n_hashes, n_keys]``."""
        if self.config.filter_type == SIMPLE:
            self._bits[0][positions.ravel()] = True
            return
        rows = self._rows.assign(positions.shape[1])
        if len(self._bits) < self._rows.n_rows:  # rows opened (at most dynamic_max_entries / num_entries)
            grown = np.zeros((self._rows.n_rows, self.vector_size), dtype=bool)
            grown[: len(self._bits)] = self._bits
            self._bits = grown
        changes = np.flatnonzero(rows[1:] != rows[:-1]) + 1
        if len(changes) <= 8:  # rows in a few runs (as a rule one): slices, no gather
            bounds = [0, *changes.tolist(), len(rows)]
            for a, b in itertools.pairwise(bounds):
                self._bits[int(rows[a])][positions[:, a:b].ravel()] = True
            return
        # Round-robin past the bound: each key's bits land in its row of the one (rows, bits) array.
        flat = positions + rows[None, :] * self.vector_size
        self._bits.reshape(-1)[flat.ravel()] = True

    def add(self, keys: Sequence[str]) -> None:
        """Add ``keys`` (Python strings), in order."""
        self.add_arrow(pa.array(keys, pa.string()))

    def add_arrow(self, keys: pa.Array | pa.ChunkedArray) -> None:
        """Add a string array's values, in order."""
        chunks = keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]
        for chunk in chunks:
            for start in range(0, len(chunk), _BATCH_KEYS):
                self._set(_arrow_positions(chunk.slice(start, _BATCH_KEYS), self.n_hashes, self.vector_size))

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


def _has_supplementary(keys: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a string holds a supplementary-plane character: its UTF-8 has a 4-byte sequence, led by a byte
    ``0xF0``-``0xF4`` (checked on the data bytes, no regex)."""
    for chunk in keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]:
        if len(chunk):
            data, offsets = _utf8_buffers(chunk)
            body = data[int(offsets[0]) : int(offsets[-1])]
            if len(body) and int(body.max()) >= 0xF0:
                return True
    return False


def utf16_min_max_arrow(keys: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """:func:`utf16_min_max` of a string array: Arrow's min/max (code-point order) unless a key holds a
    supplementary-plane character, where code points and UTF-16 code units order differently."""
    if len(keys) == keys.null_count:
        return None
    if _has_supplementary(keys):
        return utf16_min_max([k for k in keys.to_pylist() if k is not None])
    mm = pc.min_max(keys)
    return mm["min"].as_py(), mm["max"].as_py()


def utf16_less(a: str, b: str) -> bool:
    """``a < b`` as Java compares strings."""
    return utf16_sort_key(a) < utf16_sort_key(b)
