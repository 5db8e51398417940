"""HFile (version 3): the sorted key/value file of Hudi's metadata table, read and written as Hudi 1.1 writes it.

The metadata table (MDT) stores its base files as ``*.hfile`` and the content of its log blocks (``HFILE_DATA``) as
complete in-memory HFiles. Hudi 1.1 writes them with its own pure-Java writer (``org.apache.hudi.io.hfile.
HFileWriterImpl`` in ``hudi-io``); Hudi 1.0 and 0.x wrote them with HBase's writer. Both are read by Hudi's native
reader (``HFileReaderImpl``) and by hudi-rs (``crates/core/src/hfile``). Layout, all integers big-endian::

    data block(s)        DATABLK*  header(33) | compressed key/values | checksum bytes
    [meta blocks]        METABLKc  (bloom filter of base files; never in log blocks)
    load-on-open:        IDXROOT2  root data index: per data block  offset i64 | on-disk size i32 | vlong len |
                                   i16 key length | key
                         IDXROOT2  meta index (empty when there are no meta blocks)
                         FILEINF2  "PBUF" | varint length | InfoProto (repeated BytesBytesPair)
    trailer (4096)       TRABLK"$ | varint length | FileTrailerProto | zero padding | minor(1) major(3)

A block header is magic(8), on-disk size without header (i32), uncompressed size without header (i32), previous
block offset (i64), checksum type (1), bytes per checksum (i32), on-disk data size with header (i32). The checksum
area after the payload is ``ceil((33 + payload) / bytesPerChecksum) * 4`` bytes — zeros with checksum type NULL
(what Hudi 1.1 writes), CRC32C with type 2 (HBase); readers skip it either way. A key/value is ``klen i32 | vlen
i32 | key | value | mvcc vlong``, the key being ``row length i16 | row | family length 0 | timestamp i64 (MAX) |
type 4 (Put)``; Hudi's row is the record key.

:func:`encode_hfile` reproduces Hudi 1.1's bytes exactly (GZ level 6 with Java's gzip header, the file-info entries
in ``java.util.HashMap`` order): ``tests/mdt/test_hfile.py`` rebuilds a real metadata-table log block byte for byte.
One deliberate difference: the root index key length is written as a Hadoop vlong — what both readers decode —
where Java's writer emits a protobuf varint; the two agree below 128 bytes, and keys are partition paths.

Example:
    >>> data = encode_hfile([("a", b"1"), ("b", b"2")], create_time_ms=0)
    >>> read_hfile(data, "x.hfile").entries
    (('a', b'1'), ('b', b'2'))
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evt_toolkit.errors import MetadataTableError, UnsupportedFeatureError

__all__ = [
    "CODEC_GZ",
    "CODEC_NONE",
    "COMPARATOR",
    "GZIP_OS_UNKNOWN",
    "HFile",
    "HFileTrailer",
    "encode_hfile",
    "java_hashmap_order",
    "read_hfile",
]

BLOCK_HEADER_SIZE = 33
TRAILER_SIZE = 4096
BYTES_PER_CHECKSUM = 16 * 1024
#: ``HoodieHFileDataBlock``'s block size (1 MiB): metadata log blocks are one data block in practice.
DEFAULT_BLOCK_SIZE = 1024 * 1024
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
#: ``Compression.Algorithm`` ids stored in the trailer.
CODEC_GZ = 1
CODEC_NONE = 2

_DATA = b"DATABLK*"
_DATA_ENCODED = b"DATABLKE"
_META = b"METABLKc"
_ROOT_INDEX = b"IDXROOT2"
_FILE_INFO = b"FILEINF2"
_TRAILER = b'TRABLK"$'
_KNOWN_MAGICS = (
    _DATA,
    _DATA_ENCODED,
    _META,
    _ROOT_INDEX,
    _FILE_INFO,
    b"IDXLEAF2",
    b"IDXINTE2",
    b"BLMFBLK2",
    b"BLMFMET2",
)
_PBUF = b"PBUF"
_LATEST_TIMESTAMP = (1 << 63) - 1
_PUT = 4
# java.util.zip.GZIPOutputStream's header: no flags, no mtime, XFL 0, then the OS byte — 0 up to JDK 15, 255
# ("unknown") since JDK 16 (JDK-8244706); the fixtures hold both.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00"
GZIP_OS_UNKNOWN = 255

# HFileInfo keys (``hudi-io`` HFileInfo and HBase's HFileInfo).
LAST_KEY = "hfile.LASTKEY"
AVG_KEY_LEN = "hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = "hfile.AVG_VALUE_LEN"
CREATE_TIME_TS = "hfile.CREATE_TIME_TS"
KEY_VALUE_VERSION = "KEY_VALUE_VERSION"
MAX_MEMSTORE_TS_KEY = "MAX_MEMSTORE_TS_KEY"
SCHEMA_KEY = "schema"


# -- primitive codecs ---------------------------------------------------------------------------------------------


def _pb_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _pb_read_varint(data: bytes, pos: int, path: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise MetadataTableError(f"HFile {path}: truncated protobuf varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _pb_fields(data: bytes, path: str) -> list[tuple[int, int | bytes]]:
    """Decode a protobuf message into (field number, value) pairs (varint and length-delimited wire types)."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _pb_read_varint(data, pos, path)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _pb_read_varint(data, pos, path)
            out.append((number, value))
        elif wire == 2:
            length, pos = _pb_read_varint(data, pos, path)
            if pos + length > len(data):
                raise MetadataTableError(f"HFile {path}: protobuf field {number} runs past its message")
            out.append((number, data[pos : pos + length]))
            pos += length
        else:
            raise MetadataTableError(f"HFile {path}: unexpected protobuf wire type {wire} for field {number}")
    return out


def _hadoop_vlong(n: int) -> bytes:
    """``WritableUtils.writeVLong``: one byte for -112..127, else a length byte and the big-endian magnitude."""
    if -112 <= n <= 127:
        return struct.pack(">b", n)
    length = -112
    if n < 0:
        n = ~n
        length = -120
    tmp = n
    while tmp:
        tmp >>= 8
        length -= 1
    size = -(length + 112) if length >= -120 else -(length + 120)
    return struct.pack(">b", length) + n.to_bytes(size, "big")


def _hadoop_read_vlong(data: bytes, pos: int, path: str) -> tuple[int, int]:
    if pos >= len(data):
        raise MetadataTableError(f"HFile {path}: truncated vlong")
    first = struct.unpack_from(">b", data, pos)[0]
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    if pos + size > len(data):
        raise MetadataTableError(f"HFile {path}: truncated vlong")
    value = int.from_bytes(data[pos + 1 : pos + size], "big")
    return (~value if negative else value), pos + size


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap<String, ?>`` filled with ``keys`` in this order.

    Hudi's HFile writer keeps the file info in a ``HashMap``, so its entries are serialized in bucket order:
    ``hash = h ^ (h >>> 16)`` of ``String.hashCode``, bucket ``hash & (capacity - 1)``, insertion order within a
    bucket, capacity 16 doubled whenever the size passes 3/4 of it.

    Example:
        >>> java_hashmap_order(["MAX_MEMSTORE_TS_KEY", "schema", "hfile.LASTKEY"])
        ['schema', 'hfile.LASTKEY', 'MAX_MEMSTORE_TS_KEY']
    """
    unique = list(dict.fromkeys(keys))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = 0
        for unit in struct.unpack(f">{len(key.encode('utf-16-be')) // 2}H", key.encode("utf-16-be")):
            h = (31 * h + unit) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(unique, key=lambda k: bucket(k))  # sorted() is stable: insertion order within a bucket


# -- reading -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HFileTrailer:
    """``FileTrailerProto`` plus the version from the trailer's last four bytes."""

    major_version: int
    minor_version: int
    file_info_offset: int
    load_on_open_offset: int
    uncompressed_data_index_size: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    num_data_index_levels: int
    first_data_block_offset: int
    last_data_block_offset: int
    comparator: str
    codec: int


@dataclass(frozen=True, slots=True)
class HFile:
    """A decoded HFile: its trailer, file info and every key/value in file (= key) order.

    Attributes:
        trailer: the trailer fields.
        file_info: ``FILEINF2`` entries (``schema`` holds the Avro writer schema of metadata-table files).
        entries: ``(row key, value)`` pairs in file order.
    """

    trailer: HFileTrailer
    file_info: Mapping[str, bytes]
    entries: tuple[tuple[str, bytes], ...] = field(default=())

    @property
    def schema_json(self) -> str | None:
        """The Avro schema Hudi stores under the ``schema`` file-info key, or ``None``."""
        raw = self.file_info.get(SCHEMA_KEY)
        return raw.decode("utf-8") if raw is not None else None


def _read_trailer(data: bytes, path: str) -> HFileTrailer:
    if len(data) < TRAILER_SIZE:
        raise MetadataTableError(f"HFile {path}: {len(data)} bytes is smaller than the {TRAILER_SIZE}-byte trailer")
    trailer = data[-TRAILER_SIZE:]
    if trailer[:8] != _TRAILER:
        raise MetadataTableError(f"HFile {path}: no trailer magic (not an HFile)")
    minor, major = trailer[-4], int.from_bytes(trailer[-3:], "big")
    if major != 3:
        raise UnsupportedFeatureError(f"HFile {path}: major version {major} (only version 3 is read)")
    length, pos = _pb_read_varint(trailer, 8, path)
    if pos + length > TRAILER_SIZE - 4:
        raise MetadataTableError(f"HFile {path}: trailer message runs past the trailer")
    fields = dict(_pb_fields(trailer[pos : pos + length], path))

    def num(n: int, default: int = 0) -> int:
        value = fields.get(n, default)
        return value if isinstance(value, int) else default

    comparator = fields.get(11, b"")
    return HFileTrailer(
        major_version=major,
        minor_version=minor,
        file_info_offset=num(1),
        load_on_open_offset=num(2),
        uncompressed_data_index_size=num(3),
        data_index_count=num(5),
        meta_index_count=num(6),
        entry_count=num(7),
        num_data_index_levels=num(8, 1),
        first_data_block_offset=num(9),
        last_data_block_offset=num(10),
        comparator=comparator.decode("utf-8", "replace") if isinstance(comparator, bytes) else "",
        codec=num(12, CODEC_NONE),
    )


def _gunzip(payload: bytes, path: str) -> bytes:
    out = bytearray()
    rest = payload
    # Hadoop's gzip streams may hold several members back to back.
    while rest:
        d = zlib.decompressobj(31)
        try:
            out += d.decompress(rest)
            out += d.flush()
        except zlib.error as exc:
            raise MetadataTableError(f"HFile {path}: GZ block does not decompress: {exc}") from exc
        if not d.eof:
            raise MetadataTableError(f"HFile {path}: truncated GZ block")
        rest = d.unused_data
    return bytes(out)


def _block(data: bytes, offset: int, codec: int, path: str) -> tuple[bytes, bytes, int]:
    """(magic, uncompressed payload, offset of the next block) of the block at ``offset``."""
    if offset + BLOCK_HEADER_SIZE > len(data):
        raise MetadataTableError(f"HFile {path}: block header at byte {offset} runs past the file")
    magic = data[offset : offset + 8]
    if magic not in _KNOWN_MAGICS:
        raise MetadataTableError(f"HFile {path}: unknown block magic {magic!r} at byte {offset}")
    on_disk, uncompressed = struct.unpack_from(">ii", data, offset + 8)
    data_size_with_header = struct.unpack_from(">i", data, offset + 29)[0]
    end = offset + BLOCK_HEADER_SIZE + on_disk
    if on_disk < 0 or uncompressed < 0 or end > len(data) or data_size_with_header < BLOCK_HEADER_SIZE:
        raise MetadataTableError(f"HFile {path}: block at byte {offset} has impossible sizes")
    if codec == CODEC_NONE:
        payload = data[offset + BLOCK_HEADER_SIZE : offset + BLOCK_HEADER_SIZE + uncompressed]
    elif codec == CODEC_GZ:
        payload = _gunzip(data[offset + BLOCK_HEADER_SIZE : offset + data_size_with_header], path)
    else:
        raise UnsupportedFeatureError(f"HFile {path}: compression codec id {codec} (only GZ and NONE are read)")
    if len(payload) != uncompressed:
        raise MetadataTableError(
            f"HFile {path}: block at byte {offset} holds {len(payload)} bytes, its header says {uncompressed}"
        )
    return magic, payload, end


def _file_info(payload: bytes, path: str) -> dict[str, bytes]:
    if payload[:4] != _PBUF:
        raise MetadataTableError(f"HFile {path}: file info block without PBUF magic")
    length, pos = _pb_read_varint(payload, 4, path)
    out: dict[str, bytes] = {}
    for number, entry in _pb_fields(payload[pos : pos + length], path):
        if number != 1 or not isinstance(entry, bytes):
            continue
        pair = dict(_pb_fields(entry, path))
        first, second = pair.get(1, b""), pair.get(2, b"")
        if isinstance(first, bytes) and isinstance(second, bytes):
            out[first.decode("utf-8", "replace")] = second
    return out


def _key_values(payload: bytes, with_mvcc: bool, path: str) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    pos = 0
    while pos < len(payload):
        if pos + 8 > len(payload):
            raise MetadataTableError(f"HFile {path}: truncated key/value in a data block")
        klen, vlen = struct.unpack_from(">ii", payload, pos)
        pos += 8
        if klen < 2 or vlen < 0 or pos + klen + vlen > len(payload):
            raise MetadataTableError(f"HFile {path}: key/value lengths {klen}/{vlen} run past the data block")
        key = payload[pos : pos + klen]
        row_len = struct.unpack_from(">H", key, 0)[0]
        if 2 + row_len > klen:
            raise MetadataTableError(f"HFile {path}: row length {row_len} runs past its key")
        out.append((key[2 : 2 + row_len].decode("utf-8"), payload[pos + klen : pos + klen + vlen]))
        pos += klen + vlen
        if with_mvcc:
            _, pos = _hadoop_read_vlong(payload, pos, path)
    return out


def read_hfile(data: bytes, path: str) -> HFile:
    """Decode a whole HFile held in memory (a metadata-table base file or the content of an ``HFILE_DATA`` block).

    Data blocks are walked in file order from the first data block to the load-on-open section (meta, leaf-index
    and bloom blocks in between are skipped), which works for single- and multi-level indexes alike.

    Args:
        data: the HFile bytes.
        path: named in errors.

    Raises:
        MetadataTableError: the bytes are not a well-formed HFile, or the entry count disagrees with the trailer.
        UnsupportedFeatureError: HFile major version other than 3, or a codec other than GZ and NONE.
    """
    trailer = _read_trailer(data, path)
    body_end = len(data) - TRAILER_SIZE
    if not 0 <= trailer.file_info_offset < body_end or not 0 <= trailer.load_on_open_offset <= body_end:
        raise MetadataTableError(f"HFile {path}: trailer offsets point outside the file")
    magic, payload, _ = _block(data, trailer.file_info_offset, trailer.codec, path)
    if magic != _FILE_INFO:
        raise MetadataTableError(f"HFile {path}: no file info block at byte {trailer.file_info_offset}")
    info = _file_info(payload, path)
    version = info.get(KEY_VALUE_VERSION)
    with_mvcc = version is not None and len(version) == 4 and struct.unpack(">i", version)[0] == 1
    entries: list[tuple[str, bytes]] = []
    if trailer.entry_count:
        pos = trailer.first_data_block_offset
        while pos < trailer.load_on_open_offset:
            magic, payload, pos = _block(data, pos, trailer.codec, path)
            if magic in (_DATA, _DATA_ENCODED):
                entries.extend(_key_values(payload, with_mvcc, path))
    if len(entries) != trailer.entry_count:
        raise MetadataTableError(f"HFile {path}: {len(entries)} entries, the trailer says {trailer.entry_count}")
    return HFile(trailer, info, tuple(entries))


# -- writing -----------------------------------------------------------------------------------------------------


def _gzip(payload: bytes, os_byte: int) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = c.compress(payload) + c.flush()
    return _GZIP_HEADER + bytes([os_byte]) + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def _serialize_block(magic: bytes, payload: bytes, prev_offset: int, codec: int, gzip_os: int) -> bytes:
    """``HFileBlock.serialize``: header, (compressed) payload, NULL-type checksum bytes."""
    compressed = _gzip(payload, gzip_os) if codec == CODEC_GZ else payload
    with_header = BLOCK_HEADER_SIZE + len(compressed)
    checksum_bytes = -(-with_header // BYTES_PER_CHECKSUM) * 4
    header = magic + struct.pack(
        ">iiqbii", len(compressed) + checksum_bytes, len(payload), prev_offset, 0, BYTES_PER_CHECKSUM, with_header
    )
    return header + compressed + b"\x00" * checksum_bytes


def _kv(key: bytes, value: bytes) -> bytes:
    # key length counts the row length (2), family length (1), timestamp (8) and type (1); then value; MVCC 0.
    return (
        struct.pack(">iiH", len(key) + 12, len(value), len(key))
        + key
        + struct.pack(">bqb", 0, _LATEST_TIMESTAMP, _PUT)
        + value
        + b"\x00"
    )


def _pb_bytes_field(number: int, value: bytes) -> bytes:
    return _pb_varint(number << 3 | 2) + _pb_varint(len(value)) + value


def _pb_int_field(number: int, value: int) -> bytes:
    return _pb_varint(number << 3) + _pb_varint(value)


def encode_hfile(
    entries: Sequence[tuple[str, bytes]],
    *,
    file_info: Mapping[str, bytes] | None = None,
    create_time_ms: int,
    block_size: int = DEFAULT_BLOCK_SIZE,
    codec: int = CODEC_GZ,
    gzip_os: int = GZIP_OS_UNKNOWN,
) -> bytes:
    """Write an HFile as Hudi 1.1's ``HFileWriterImpl`` does (single-level index, no meta blocks, NULL checksums).

    Args:
        entries: ``(row key, value)`` pairs, strictly increasing by the key's UTF-8 bytes (Hudi's comparator).
        file_info: extra file-info entries, added first (Hudi adds ``schema``); the writer adds
            ``MAX_MEMSTORE_TS_KEY``, ``hfile.LASTKEY``, ``hfile.AVG_KEY_LEN``, ``hfile.CREATE_TIME_TS``,
            ``hfile.AVG_VALUE_LEN`` and ``KEY_VALUE_VERSION`` as Java does.
        create_time_ms: ``hfile.CREATE_TIME_TS`` (epoch ms).
        block_size: a data block is closed before a new key would take it past this many uncompressed bytes.
        codec: ``CODEC_GZ`` (Hudi's default, ``hoodie.hfile.compression.algorithm``) or ``CODEC_NONE``.
        gzip_os: the OS byte of each GZ member's header (255 as JDK 16+ writes it, 0 as older JDKs did).

    Raises:
        MetadataTableError: no entries, or keys not strictly increasing.
    """
    if not entries:
        raise MetadataTableError("an HFile needs at least one entry (Hudi never writes an empty one)")
    if codec not in (CODEC_GZ, CODEC_NONE):
        raise UnsupportedFeatureError(f"HFile compression codec id {codec} is not written (GZ or NONE)")
    keys = [k.encode("utf-8") for k, _ in entries]
    for a, b in itertools.pairwise(keys):
        if not a < b:
            raise MetadataTableError(f"HFile keys must be strictly increasing: {a!r} then {b!r}")

    out = bytearray()
    index: list[tuple[bytes, int, int]] = []
    block: list[bytes] = []
    block_first = b""
    block_bytes = 0
    prev_offset = -1
    first_offset = last_offset = -1
    uncompressed_total = 0

    def flush() -> None:
        nonlocal block, block_bytes, prev_offset, first_offset, last_offset, uncompressed_total
        if not block:
            return
        payload = b"".join(block)
        start = len(out)
        if first_offset < 0:
            first_offset = start
        last_offset = start
        serialized = _serialize_block(_DATA, payload, prev_offset, codec, gzip_os)
        out.extend(serialized)
        uncompressed_total += len(payload)
        index.append((block_first, start, len(serialized)))
        # Java creates the next data block with the current offset as its "previous block offset".
        prev_offset = len(out)
        block = []
        block_bytes = 0

    for key, (_, value) in zip(keys, entries, strict=True):
        if block and block_bytes + len(key) + len(value) + 9 > block_size:
            flush()
        if not block:
            block_first = key
        block.append(_kv(key, value))
        block_bytes += len(key) + len(value) + 9
    flush()

    load_on_open = len(out)
    root = b"".join(
        struct.pack(">qi", offset, size) + _hadoop_vlong(len(k) + 2) + struct.pack(">H", len(k)) + k
        for k, offset, size in index
    )
    out += _serialize_block(_ROOT_INDEX, root, -1, codec, gzip_os)
    out += _serialize_block(_ROOT_INDEX, b"", -1, codec, gzip_os)  # meta index: Java writes it even when empty

    # Insertion order as Java's: the constructor adds MAX_MEMSTORE_TS_KEY, the caller its entries, close() the rest.
    info: dict[str, bytes] = {MAX_MEMSTORE_TS_KEY: struct.pack(">q", 0)}
    for name, value in (file_info or {}).items():
        info[name] = value
    info[LAST_KEY] = struct.pack(">H", len(keys[-1])) + keys[-1]
    info[AVG_KEY_LEN] = struct.pack(">i", sum(len(k) for k in keys) // len(keys))
    info[CREATE_TIME_TS] = struct.pack(">q", create_time_ms)
    info[AVG_VALUE_LEN] = struct.pack(">i", sum(len(v) for _, v in entries) // len(entries))
    info.setdefault(KEY_VALUE_VERSION, struct.pack(">i", 1))
    pairs = b"".join(
        _pb_bytes_field(1, _pb_bytes_field(1, name.encode("utf-8")) + _pb_bytes_field(2, info[name]))
        for name in java_hashmap_order(info)
    )
    file_info_offset = len(out)
    out += _serialize_block(_FILE_INFO, _PBUF + _pb_varint(len(pairs)) + pairs, -1, codec, gzip_os)

    trailer_msg = b"".join(
        (
            _pb_int_field(1, file_info_offset),
            _pb_int_field(2, load_on_open),
            _pb_int_field(3, uncompressed_total),
            _pb_int_field(5, len(index)),
            _pb_int_field(6, 0),
            _pb_int_field(7, len(entries)),
            _pb_int_field(8, 1),
            _pb_int_field(9, first_offset),
            _pb_int_field(10, last_offset),
            _pb_bytes_field(11, COMPARATOR.encode("ascii")),
            _pb_int_field(12, codec),
        )
    )
    trailer = _TRAILER + _pb_varint(len(trailer_msg)) + trailer_msg
    out += trailer + b"\x00" * (TRAILER_SIZE - 4 - len(trailer)) + b"\x00\x00\x00\x03"
    return bytes(out)
