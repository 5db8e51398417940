"""Hudi log file framing: blocks, headers, footers and corrupt-block detection.

A Hudi log file is a plain concatenation of blocks with no file header (``HoodieLogFormat``,
``HoodieLogFileReader.readBlock``). Each block of log format version 1 is laid out as, big-endian::

    magic "#HUDI#" (6) | blockSize int64 | version int32 | block type int32 | header map
    | content length int64 | content | footer map | reverse pointer int64 (= blockSize + 6)

``blockSize`` counts every byte after itself up to the end of the block, so a block starting at
``offset`` ends at ``offset + 14 + blockSize``. A header/footer map is an int32 entry count followed by
``(int32 key ordinal, int32 byte length, UTF-8 bytes)`` entries.

This module only frames blocks. :func:`scan_log_blocks` reads magic, sizes, headers and footers but
*skips* the content by offset: a small log costs one read, a large one about one read per block, and the fields
are parsed from the buffer with ``struct``. Decoding the content is :mod:`evt_toolkit.format.log_content`'s job.

Example:
    >>> blocks = read_log_blocks_bytes(open(path, "rb").read(), path)  # doctest: +SKIP
    >>> [(b.block_type.name, b.instant_time) for b in blocks]  # doctest: +SKIP
    [('AVRO_DATA', '20250316025828811')]
"""

from __future__ import annotations

import enum
import itertools
import struct
import types
from collections.abc import Callable, Iterator, Mapping
from typing import BinaryIO, NamedTuple

from evt_toolkit.errors import LogFormatError, UnsupportedFeatureError

MAGIC = b"#HUDI#"

_MAGIC_LEN = len(MAGIC)
# magic + the int64 blockSize that follows it.
_PREFIX_LEN = _MAGIC_LEN + 8
# The smallest version-1 block: version, type, empty header, content length, empty footer, reverse pointer.
_MIN_V1_BLOCK_SIZE = 4 + 4 + 4 + 8 + 4 + 8
# Bound on header/footer entry counts. Real writers emit at most 9 distinct keys; a count far beyond that can
# only be garbage, and bounding it keeps a mutated count from driving a long loop.
MAX_METADATA_ENTRIES = 1024
# Forward scans for the next magic read this much at a time, as hudi-rs does (Java uses the same idea with
# its BLOCK_SCAN_READ_BUFFER_SIZE), so a corrupt region of any size is crossed in bounded memory.
SCAN_WINDOW = 1 << 20
# The header scan reads at least this much at a time. Reading 64 KiB costs about what reading 1 KiB does, on a
# local disk (page cache, read-ahead) as on an object store (one request either way), so a typical log of a few
# KiB is read whole in one call and a larger one costs about one read per block.
READ_AHEAD = 1 << 16
# The read at a block's end starts this many bytes before the reverse pointer, so it also holds a small footer.
_FOOTER_SLACK = 56

_I32 = struct.Struct(">i").unpack_from
_I64 = struct.Struct(">q").unpack_from
_I32I32 = struct.Struct(">ii").unpack_from
# A block's last 12 bytes: the footer's entry count and the reverse pointer (the block's size).
_I32I64 = struct.Struct(">iq").unpack_from
# magic, blockSize, version, block type, header entry count: the first 26 bytes of a version-1 block.
_HEAD = struct.Struct(">6sqiii").unpack_from


class BlockType(enum.IntEnum):
    """``HoodieLogBlock.HoodieLogBlockType`` ordinals (identical in Hudi 0.14 and 1.x)."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(enum.IntEnum):
    """``HoodieLogBlock.HeaderMetadataType`` ordinals, plus this toolkit's opt-in extension.

    Ordinals 0-6 exist in Hudi 0.14, 7-8 were added in 1.0. ``MIN_EVENT_TIME`` (100) is written only by
    this toolkit when explicitly enabled; stock Hudi readers fail on it (they index ``values()[ordinal]``).
    Its value is the block's minimum event time in epoch milliseconds, as a decimal string.
    """

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8
    MIN_EVENT_TIME = 100


_HEADER_KEYS = {k.value: k for k in HeaderKey}
_MIN_EVENT_TIME = HeaderKey.MIN_EVENT_TIME
_BLOCK_TYPES = {t.value: t for t in BlockType}
_DATA_BLOCK_TYPES = frozenset({BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA, BlockType.CDC_DATA})

_EMPTY: Mapping[HeaderKey, str] = types.MappingProxyType({})

#: Header values at least this long (a writer schema: hundreds of bytes to tens of KB, the same in every block a
#: writer appends) are decoded once and shared (:data:`_SHARED_TEXTS`).
_SHARED_TEXT_MIN = 64
#: Long header values decoded so far, by length: ``(bytes, text)``. Blocks listed together then hold one string per
#: distinct schema instead of a copy each (a compaction run keeps the listed blocks of every planned log). A hit is
#: a byte-for-byte comparison, so the text is exactly what decoding would give. Entries are replaced whole (one
#: tuple), which keeps a pair consistent for threads scanning at once; the map is emptied before it would hold more
#: than ``_SHARED_TEXT_SLOTS`` values or ``_SHARED_TEXT_BYTES`` bytes of them (a longer value is not kept).
_SHARED_TEXTS: dict[int, tuple[bytes, str]] = {}
_SHARED_TEXT_SLOTS = 256
_SHARED_TEXT_BYTES = 8 << 20
_shared_text_bytes = 0


class LogBlock(NamedTuple):
    """One block of a log file, as framed on disk (the content itself is not held).

    An immutable typed record built on a tuple rather than a frozen dataclass: a scan builds one per block of every
    log it lists, and the scanner builds a tuple in ~0.2 µs where a frozen dataclass took ~0.8 µs even with its
    slots set through their descriptors (~1.1 µs through its ``__init__``; ~0.35 µs for ``LogBlock(...)`` here),
    a quarter of the parse of a small log's block; a field read costs ~10 ns more. Blocks compare by their fields,
    in order, and are not hashable (their header is a mapping), as before.

    Attributes:
        log_file: the path string the caller passed; used in errors and as the block's identity.
        offset: absolute byte offset of the block's magic.
        size: total bytes of the block including the magic. For a corrupt block: up to the next magic or EOF.
        block_type: the block type; ``CORRUPT`` for a block detected as corrupt.
        format_version: the log format version (1), ``None`` for corrupt blocks.
        header: header entries (order is not significant: Java writes a ``HashMap``). For a corrupt block, the
            ``INSTANT_TIME`` its intact first bytes hold, when they hold it whole (a torn append), else empty.
        footer: footer entries (always empty in files written by Hudi).
        content_offset: absolute offset of the content bytes (0 for corrupt blocks).
        content_length: number of content bytes (0 for corrupt blocks).
        corrupt_reason: why the block was classified as corrupt, else ``None``.
    """

    log_file: str
    offset: int
    size: int
    block_type: BlockType
    format_version: int | None
    header: Mapping[HeaderKey, str]
    footer: Mapping[HeaderKey, str]
    content_offset: int
    content_length: int
    corrupt_reason: str | None = None

    @property
    def instant_time(self) -> str | None:
        """The ``INSTANT_TIME`` header: the instant that wrote the block (a rollback for command blocks)."""
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        """The ``TARGET_INSTANT_TIME`` header: for a rollback command block, the instant rolled back."""
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema_json(self) -> str | None:
        """The ``SCHEMA`` header: the Avro writer schema as compact JSON."""
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_corrupt(self) -> bool:
        """Whether the reader classified this block as corrupt."""
        return self.block_type is BlockType.CORRUPT

    @property
    def is_data(self) -> bool:
        """Whether this is a data block (Avro, Parquet, HFile or CDC)."""
        return self.block_type in _DATA_BLOCK_TYPES

    @property
    def compacted_block_times(self) -> tuple[str, ...]:
        """The ``COMPACTED_BLOCK_TIMES`` header of a log-compaction block, split on commas."""
        raw = self.header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
        if not raw:
            return ()
        return tuple(part.strip() for part in raw.split(",") if part.strip())

    @property
    def is_partial(self) -> bool:
        """The ``IS_PARTIAL`` header (partial-update block), parsed like Java's ``Boolean.parseBoolean``."""
        return self.header.get(HeaderKey.IS_PARTIAL, "").strip().lower() == "true"

    @property
    def block_identifier(self) -> tuple[int, int] | None:
        """The ``BLOCK_IDENTIFIER`` header Hudi 0.14.0's append handle writes, ``(task attempt, block sequence)``, or
        ``None`` when absent (or either part is -1, which Java reads as absent).

        Parsed as Java's reader does (``"<attempt>,<sequence>".split(",")``, ``Long.parseLong`` and
        ``Integer.parseInt`` of the first two parts): anything else fails Java's whole read, and fails here too.

        Raises:
            LogFormatError: the header is present but not two comma-separated integers.
        """
        raw = self.header.get(HeaderKey.BLOCK_IDENTIFIER)
        if not raw:
            return None
        parts = raw.split(",")
        while parts and not parts[-1]:  # Java's String.split drops trailing empty strings
            parts.pop()
        numbers: list[int] = []
        for part in parts[:2]:
            digits = part[1:] if part[:1] in ("-", "+") else part
            if not (digits.isascii() and digits.isdigit()):
                break
            numbers.append(int(part))
        if len(numbers) != 2:
            raise LogFormatError(
                f"BLOCK_IDENTIFIER header is not '<attempt>,<sequence>': {raw[:40]!r}", self.log_file, self.offset
            )
        attempt, seq = numbers
        return None if attempt == -1 or seq == -1 else (attempt, seq)

    @property
    def min_event_time_header(self) -> int | None:
        """The ``MIN_EVENT_TIME`` extension header as epoch milliseconds, or ``None`` when absent.

        Raises:
            LogFormatError: the header is present but not a plain decimal integer.
        """
        raw = self.header.get(_MIN_EVENT_TIME)
        if raw is None:
            return None
        if raw.isdigit() and raw.isascii():  # what this toolkit writes: plain ASCII digits
            return int(raw)
        text = raw.strip()
        digits = text[1:] if text[:1] == "-" else text
        # int() alone would also accept "1_000", " +5" and non-ASCII digits; the header format is stricter.
        if not (digits.isascii() and digits.isdigit()):
            raise LogFormatError(
                f"MIN_EVENT_TIME header is not a decimal integer: {raw[:40]!r}", self.log_file, self.offset
            )
        return int(text)


#: Builds a sound version-1 :class:`LogBlock` (empty footer) from its fields without the generated ``__new__``'s
#: keyword handling: ``_new_block(LogBlock, (fields...))``. Only the scanner uses it, for blocks it has checked.
_new_block = tuple.__new__


class _Source:
    """Random access to one log file's bytes with as few reads as possible.

    A file is read in windows of at least ``READ_AHEAD`` bytes, so a log smaller than that costs one read in all,
    and a larger one about one read per block: the read at a block's reverse pointer also brings the footer, the
    next block's magic (the corruption check) and that block's headers. Two windows are kept, the most recent and
    the one before, because a block's corruption check (at its end) comes before its headers (at its start) are
    parsed. A bytes-like object is used as one window (without a copy, but for a memoryview, copied once).
    """

    __slots__ = ("a", "a_end", "a_start", "b", "b_end", "b_start", "f", "read_at", "size")

    def __init__(self, f: BinaryIO | bytes | bytearray | memoryview, size: int) -> None:
        self.size = size
        self.b: bytes | bytearray = b""
        self.b_start = self.b_end = 0
        self.a_start = 0
        self.read_at: Callable[[int, int], bytes] | None = None
        if isinstance(f, (bytes, bytearray, memoryview)):
            self.f: BinaryIO | None = None
            self.a = f.tobytes() if isinstance(f, memoryview) else f
            self.a_end = len(self.a)
        else:
            self.f = f
            self.a = b""
            self.a_end = 0
            # A positional read (pyarrow's NativeFile.read_at, the storage layer's files) saves the seek call.
            self.read_at = getattr(f, "read_at", None)

    def window(self, pos: int, n: int) -> tuple[bytes | bytearray, int]:
        """``(buffer, offset of pos in it)`` with ``n`` bytes from ``pos`` in the buffer, fewer only at EOF."""
        if self.a_start <= pos and pos + n <= self.a_end:
            return self.a, pos - self.a_start
        if self.b_start <= pos and pos + n <= self.b_end:
            return self.b, pos - self.b_start
        if self.f is None:  # a buffer holds the whole file: what it lacks is past EOF
            return self.a, pos
        want = min(max(n, READ_AHEAD), max(0, self.size - pos))
        if self.read_at is not None:
            data = self.read_at(want, pos)
        else:
            self.f.seek(pos)
            data = self.f.read(want)
        self.b, self.b_start, self.b_end = self.a, self.a_start, self.a_end
        self.a, self.a_start, self.a_end = data, pos, pos + len(data)
        return data, 0

    def find_magic(self, start: int) -> int:
        """Offset of the first magic at or after ``start``, or the file size when there is none.

        Searches ``SCAN_WINDOW`` bytes at a time, windows overlapping by ``len(MAGIC) - 1`` bytes so a magic
        straddling two windows is still found (mirrors ``HoodieLogFileReader.scanForNextAvailableBlockOffset``),
        which keeps a corrupt region of any size crossed in bounded memory.
        """
        size = self.size
        pos = start
        while pos < size:
            end = min(size, pos + SCAN_WINDOW)
            if self.f is None:
                hit = self.a.find(MAGIC, pos, end)
                if hit >= 0:
                    return hit
            else:
                self.f.seek(pos)
                chunk = self.f.read(end - pos)
                if not chunk:
                    break
                hit = chunk.find(MAGIC)
                if hit >= 0:
                    return pos + hit
                end = pos + len(chunk)
            if end >= size:
                break
            # Always advances: a window is at least SCAN_WINDOW > len(MAGIC) bytes here.
            pos = max(pos + 1, end - (_MAGIC_LEN - 1))
        return size


def _past_block(what: str, n: int, limit: int, path: str, pos: int) -> LogFormatError:
    return LogFormatError(f"{what} of {n} bytes runs past the end of the block (ends at byte {limit})", path, pos)


def _metadata(
    src: _Source, buf: bytes | bytearray, base: int, pos: int, limit: int, what: str, path: str
) -> tuple[Mapping[HeaderKey, str], int, bytes | bytearray, int]:
    """One header/footer map at ``pos`` (``HoodieLogBlock.getHeaderMetadata``).

    ``buf`` holds the file's bytes from offset ``base`` (a window that likely holds the map; another is fetched when
    it does not). Every length is checked against ``limit`` (the block's reverse pointer) *before* anything is
    read, which keeps a garbage length from turning into a huge read.

    Returns:
        The map, the offset after it, and the window last used (for the caller's next field).
    """
    if limit - pos < 4:
        raise _past_block(f"{what} entry count", 4, limit, path, pos)
    end = base + len(buf)  # absolute end of the bytes held in buf
    if pos < base or pos + 4 > end:
        buf, o = src.window(pos, 4)
        base, end = pos - o, pos - o + len(buf)
        if pos + 4 > end:
            raise LogFormatError(f"unexpected end of file reading {what} entry count", path, pos)
    count = _I32(buf, pos - base)[0]
    start = pos
    pos += 4
    if count == 0:
        return _EMPTY, pos, buf, base
    # Every entry takes at least 8 bytes (key + length), which bounds a sane count by the bytes left.
    if count < 0 or count > MAX_METADATA_ENTRIES or count * 8 > limit - pos:
        raise LogFormatError(f"invalid {what} entry count {count}", path, start)
    entries: dict[HeaderKey, str] = {}
    for _ in range(count):
        if limit - pos < 8:
            # No room for a key and a value length: report the first field that does not fit, as a field-by-field
            # reader would (an unknown key before a missing length).
            if limit - pos < 4:
                raise _past_block(f"{what} key", 4, limit, path, pos)
            buf, o = src.window(pos, 4)
            if len(buf) - o < 4:
                raise LogFormatError(f"unexpected end of file reading {what} key", path, pos)
            ordinal = _I32(buf, o)[0]
            if ordinal not in _HEADER_KEYS:
                raise LogFormatError(f"Invalid metadata key: {ordinal} in {what}", path, pos)
            raise _past_block(f"{what} value length", 4, limit, path, pos + 4)
        if pos + 8 > end:
            buf, o = src.window(pos, 8)
            base, end = pos - o, pos - o + len(buf)
            if pos + 8 > end:
                raise LogFormatError(f"unexpected end of file reading {what} key", path, pos)
        ordinal, length = _I32I32(buf, pos - base)
        key = _HEADER_KEYS.get(ordinal)
        if key is None:
            # Java indexes HeaderMetadataType.values()[ordinal] (ArrayIndexOutOfBoundsException, not turned into a
            # corrupt block) and hudi-rs returns "Invalid metadata key": both fail the whole read.
            raise LogFormatError(f"Invalid metadata key: {ordinal} in {what}", path, pos)
        key_pos = pos
        pos += 8
        if length < 0 or length > limit - pos:
            raise _past_block(f"{what} value of {key.name}", length, limit, path, pos)
        if pos + length > end:
            buf, o = src.window(pos, length)
            base, end = pos - o, pos - o + len(buf)
            if pos + length > end:
                raise LogFormatError(f"unexpected end of file reading {what} value of {key.name}", path, pos)
        o = pos - base
        try:
            value = buf[o : o + length].decode("utf-8") if length < _SHARED_TEXT_MIN else _long_text(buf, o, length)
        except UnicodeDecodeError as exc:
            raise LogFormatError(f"{what} value of {key.name} is not valid UTF-8: {exc}", path, key_pos) from exc
        pos += length
        # Java fills a HashMap, so a repeated key keeps the last value.
        entries[key] = value
    return types.MappingProxyType(entries), pos, buf, base


def _corrupt_block(path: str, offset: int, end: int, reason: str, header: Mapping[HeaderKey, str] = _EMPTY) -> LogBlock:
    return LogBlock(path, offset, end - offset, BlockType.CORRUPT, None, header, _EMPTY, 0, 0, reason)


def _torn_header(src: _Source, offset: int, end: int) -> Mapping[HeaderKey, str]:
    """The ``INSTANT_TIME`` header of the torn block at ``offset`` (its region ends at ``end``), when its intact
    first bytes hold it whole; else empty.

    A crashed append writes a prefix of its block: magic, size, version, type and the header map come first, so
    the write a torn block belongs to can often be told. Only an entry that lies whole in the region, after a
    version-1 prefix and a known block type and header keys, counts; anything that does not parse tells nothing.
    """
    pos = offset + _PREFIX_LEN
    if end - pos < 12:
        return _EMPTY
    buf, o = src.window(pos, end - pos)
    limit = min(len(buf), o + end - pos)
    if limit - o < 12:
        return _EMPTY
    version, ordinal, count = struct.unpack_from(">iii", buf, o)
    if version != 1 or ordinal not in _BLOCK_TYPES or not 0 < count <= MAX_METADATA_ENTRIES:
        return _EMPTY
    p = o + 12
    for _ in range(count):
        if p + 8 > limit:
            break
        key, length = _I32I32(buf, p)
        p += 8
        if key not in _HEADER_KEYS or length < 0 or p + length > limit:
            break
        if key == HeaderKey.INSTANT_TIME:
            try:
                value = buf[p : p + length].decode("utf-8")
            except UnicodeDecodeError:
                break
            if value.isascii() and value.isdigit():
                return types.MappingProxyType({HeaderKey.INSTANT_TIME: value})
            break
        p += length
    return _EMPTY


def _corruption_reason(src: _Source, offset: int, block_size: int) -> str | None:
    """Hudi's corrupt-block test for the block whose magic is at ``offset``; ``None`` when it is sound.

    Mirrors ``HoodieLogFileReader.isBlockCorrupted`` and hudi-rs ``is_block_corrupted``: with the stream just
    after the blockSize field (``offset + 14``), the reverse pointer sits at ``offset + 14 + blockSize - 8``.
    The block is corrupt when that pointer is past EOF, when ``pointer - 6 != blockSize`` (the pointer also
    counts the magic), or when the bytes after the block are neither a magic nor EOF.
    """
    if block_size < _MIN_V1_BLOCK_SIZE:
        return f"block size {block_size} is smaller than the smallest block ({_MIN_V1_BLOCK_SIZE})"
    file_size = src.size
    block_end = offset + _PREFIX_LEN + block_size
    if block_end > file_size:
        return f"block size {block_size} runs past EOF (file size {file_size})"
    # The pointer and, when there is room for one, the next magic: one window brings both, and starting it a little
    # earlier brings the footer too (empty in every file Hudi writes: a 4-byte count).
    tail = 8 + _MAGIC_LEN if file_size - block_end >= _MAGIC_LEN else 8
    start = max(offset + _PREFIX_LEN, block_end - 8 - _FOOTER_SLACK)
    buf, o = src.window(start, block_end - 8 - start + tail)
    o += block_end - 8 - start
    if len(buf) - o < 8:
        return "reverse pointer runs past EOF"
    reverse_pointer = _I64(buf, o)[0]
    if reverse_pointer - _MAGIC_LEN != block_size:
        return f"reverse pointer {reverse_pointer} does not match block size {block_size}"
    if tail > 8 and buf[o + 8 : o + 8 + _MAGIC_LEN] != MAGIC:
        return "the bytes after the block are neither a magic nor EOF"
    # Fewer than 6 trailing bytes: Java's readFully hits EOF and treats the block as sound, and the scanner then
    # stops at the stray tail (the end of the file, as HoodieLogFileReader.hasNext says).
    return None


def _read_block(src: _Source, buf: bytes | bytearray, base: int, offset: int, block_size: int, path: str) -> LogBlock:
    """Parses a block that passed the corruption test; its framing is trusted, its fields are not.

    ``buf`` is the window holding the block's magic, from file offset ``base``.
    """
    block_end = offset + _PREFIX_LEN + block_size
    # Fields live between the blockSize field and the reverse pointer.
    limit = block_end - 8
    pos = offset + _PREFIX_LEN
    if pos + 8 > base + len(buf):
        buf, o = src.window(pos, 8)
        base = pos - o
        if pos + 8 > base + len(buf):
            raise LogFormatError("unexpected end of file reading log format version", path, pos)
    version, ordinal = _I32I32(buf, pos - base)
    if version == 0:
        # Version 0 (Hudi < 0.3) has no block type, headers or reverse pointer; no supported table has them.
        raise UnsupportedFeatureError(f"legacy log format version 0 is not supported [{path} @ byte {offset}]")
    if version != 1:
        raise LogFormatError(f"Invalid log format version: {version}", path, pos)
    block_type = _BLOCK_TYPES.get(ordinal)
    if block_type is None:
        # Java: checkArgument(type < values().length); hudi-rs: "Invalid block type". A hard error in both.
        raise LogFormatError(f"Invalid block type: {ordinal}", path, pos + 4)
    header, pos, buf, base = _metadata(src, buf, base, pos + 8, limit, "header", path)
    if limit - pos < 8:
        raise _past_block("content length", 8, limit, path, pos)
    if pos < base or pos + 8 > base + len(buf):
        buf, o = src.window(pos, 8)
        base = pos - o
        if pos + 8 > base + len(buf):
            raise LogFormatError("unexpected end of file reading content length", path, pos)
    content_length = _I64(buf, pos - base)[0]
    content_offset = pos + 8
    if content_length < 0 or content_length > limit - content_offset:
        raise _past_block("content", content_length, limit, path, content_offset)
    footer, pos, _, _ = _metadata(src, buf, base, content_offset + content_length, limit, "footer", path)
    if pos != limit:
        raise LogFormatError(f"block fields end at byte {pos} but the reverse pointer is at byte {limit}", path, offset)
    return LogBlock(
        path, offset, _PREFIX_LEN + block_size, block_type, version, header, footer, content_offset, content_length
    )


def _long_text(buf: bytes | bytearray, p: int, length: int) -> str:
    """The UTF-8 text of ``buf[p : p + length]`` (a long header value), shared with earlier blocks holding the same
    bytes (:data:`_SHARED_TEXTS`). The caller has checked that the bytes lie in ``buf``.

    Raises:
        UnicodeDecodeError: the bytes are not UTF-8.
    """
    global _shared_text_bytes
    shared = _SHARED_TEXTS.get(length)
    if shared is not None and buf.startswith(shared[0], p):
        return shared[1]
    raw = bytes(buf[p : p + length])
    text = raw.decode("utf-8")
    if length <= _SHARED_TEXT_BYTES:
        if len(_SHARED_TEXTS) >= _SHARED_TEXT_SLOTS or _shared_text_bytes + length > _SHARED_TEXT_BYTES:
            _SHARED_TEXTS.clear()
            _shared_text_bytes = 0
        _SHARED_TEXTS[length] = (raw, text)
        _shared_text_bytes += length  # a replaced value of the same length still counts: an earlier emptying, no more
    return text


def _sound_block(
    buf: bytes | bytearray, o: int, pos: int, file_size: int, path: str, tail: bytes | None = None
) -> LogBlock | None:
    """The block at file offset ``pos`` (``buf[o]``) when it lies whole in ``buf`` and is sound, else ``None``.

    The common case — a block within the bytes already read, with valid framing, known header keys, UTF-8 values
    and an empty footer — parsed with a few ``struct`` calls and no further reads. Anything else returns ``None``
    and goes through the field-by-field path (:func:`_corruption_reason`, :func:`_read_block`), which classifies
    corrupt blocks and names the fault, so this function never decides an error.

    With ``tail`` (the file's last bytes), ``buf`` is the file's first bytes (``o == pos == 0``) and the block must
    be the whole file: its framing and headers are read from ``buf``, its footer count and reverse pointer from
    ``tail`` (:func:`scan_log_ends`). The checks are the same; bytes in neither give ``None``.
    """
    n = len(buf)
    if n - o < 26:
        return None
    magic, block_size, version, ordinal, count = _HEAD(buf, o)
    if magic != MAGIC or version != 1 or block_size < _MIN_V1_BLOCK_SIZE:
        return None
    end = o + _PREFIX_LEN + block_size  # the block's end, in buf
    if tail is None:
        if end > n:
            return None
        back, at = buf, end - 12  # where the footer's entry count is (the reverse pointer right after it)
    else:
        if end != file_size or len(tail) < 12:
            return None
        back, at = tail, len(tail) - 12
    footer_count, reverse = _I32I64(back, at)
    if reverse != block_size + _MAGIC_LEN:
        return None
    if file_size - (pos + _PREFIX_LEN + block_size) >= _MAGIC_LEN and buf[end : end + _MAGIC_LEN] != MAGIC:
        return None  # the next magic is not in buf, or the bytes after the block are not a magic
    block_type = _BLOCK_TYPES.get(ordinal)
    if block_type is None or count < 0 or count > MAX_METADATA_ENTRIES:
        return None
    limit = end - 8
    stop = limit if limit < n else n  # the header must lie in buf
    p = o + 26
    header: Mapping[HeaderKey, str] = _EMPTY
    if count:
        entries: dict[HeaderKey, str] = {}
        for _ in range(count):
            if p + 8 > stop:
                return None
            ordinal, length = _I32I32(buf, p)
            key = _HEADER_KEYS.get(ordinal)
            p += 8
            if key is None or length < 0 or p + length > stop:
                return None
            try:
                entries[key] = buf[p : p + length].decode() if length < _SHARED_TEXT_MIN else _long_text(buf, p, length)
            except UnicodeDecodeError:
                return None
            p += length
        header = types.MappingProxyType(entries)
    if p + 12 > limit or p + 8 > n:
        return None
    content_length = _I64(buf, p)[0]
    p += 8
    if content_length < 0 or p + content_length + 4 != limit or footer_count != 0:
        return None  # fields that do not add up, or a footer: the field-by-field path reads it
    size = _PREFIX_LEN + block_size
    return _new_block(LogBlock, (path, pos, size, block_type, 1, header, _EMPTY, pos - o + p, content_length, None))


def scan_log_blocks(f: BinaryIO | bytes | bytearray | memoryview, file_size: int, path: str) -> Iterator[LogBlock]:
    """Lists the blocks of one log file without reading their content.

    Reads each block's magic, sizes, headers and footer and skips the content by offset: a log smaller than
    ``READ_AHEAD`` bytes costs one read, a larger one about one read per block (see :class:`_Source`). Corrupt
    blocks (per Hudi's rules, see :func:`_corruption_reason`) are yielded with ``block_type == CORRUPT`` and
    scanning resumes at the next magic, as Java's ``HoodieLogFileReader`` does; callers skip them like Hudi's
    scanner. Fewer than 6 bytes where a block would start end the file (``hasNext``'s ``readMagic`` hitting EOF).

    Args:
        f: a seekable binary stream over the whole log file (only ``seek`` and ``read`` are used, and the stream
            may be used by the caller between blocks), or the file's bytes.
        file_size: the file's size in bytes (bounds every read and size check).
        path: the file's path, recorded in each block and named in errors.

    Returns:
        An iterator over the blocks in file order. A small log is read (and its sound blocks parsed) at the call;
        anything else is read as the iterator advances, and errors are raised when it reaches the faulty block.

    Raises:
        LogFormatError: the file does not start with a magic (Java's ``CorruptedLogFileException``; fewer than 6
            bytes are an empty file, and fewer than 6 after a block are the end of the file, as in Java), or a
            block passed the corruption test but has an unknown header key ordinal, an unknown
            block type, an invalid log format version, invalid UTF-8 in a header, or fields that do not fit.
        UnsupportedFeatureError: a legacy (version 0) block.
    """
    data: bytes | bytearray | None = None
    if type(f) is bytes or isinstance(f, bytearray):
        data = f
    elif isinstance(f, memoryview):
        data = f.tobytes()
    elif file_size <= READ_AHEAD:  # a small log: one read, then parse from memory
        read_at = getattr(f, "read_at", None)
        if read_at is not None:
            data = read_at(file_size, 0)
        else:
            f.seek(0)  # type: ignore[union-attr]
            data = f.read(file_size)  # type: ignore[union-attr]
        if len(data) != file_size:  # the file is not the size we were told: let the careful path say so
            data = None
    if data is None:
        return _scan(_Source(f, file_size), 0, path)
    # The sound blocks of a buffer are parsed right away (no generator to resume per block); the first block that
    # is not sound hands over to the careful path, which yields it (or raises) when the caller gets there.
    blocks: list[LogBlock] = []
    pos = 0
    while pos < file_size:
        block = _sound_block(data, pos, pos, file_size, path)
        if block is None:
            return itertools.chain(blocks, _scan(_Source(data, file_size), pos, path))
        blocks.append(block)
        pos += block.size
    return iter(blocks)


def scan_log_bytes(data: bytes | bytearray, file_size: int, path: str) -> list[LogBlock]:
    """``list(scan_log_blocks(data, file_size, path))`` for a log's bytes (at least ``file_size`` of them).

    A log of one sound block (the common small log: one append) is answered by one parse, without the iterator
    and the copies the general path makes (a fifth of the scan of a small delete log); the blocks are exactly the
    general path's, which starts with the same parse at offset 0.

    Raises:
        LogFormatError, UnsupportedFeatureError: as :func:`scan_log_blocks`.
    """
    if len(data) >= file_size:
        block = _sound_block(data, 0, 0, file_size, path)
        if block is not None and block.size == file_size:
            return [block]
    return list(scan_log_blocks(data, file_size, path))


def scan_log_ends(head: bytes, tail: bytes, file_size: int, path: str) -> list[LogBlock] | None:
    """The blocks of a log of ``file_size`` bytes read only at its two ends, when that is enough; else ``None``.

    ``head`` is the file's first bytes, ``tail`` its last (at least the 12 bytes of an empty footer and the reverse
    pointer). Enough means the whole file is one sound block (the common log of a streaming writer: one append)
    whose magic, sizes and headers lie in ``head``: the answer is then exactly what :func:`scan_log_blocks` gives
    for the whole file, with the content between never read. Anything else — more blocks, a corrupt block, a
    header longer than ``head``, a footer — is ``None`` and the caller reads the file whole; this never raises.
    """
    if len(head) >= file_size:
        return None
    block = _sound_block(head, 0, 0, file_size, path, tail)
    return None if block is None else [block]


def _scan(src: _Source, pos: int, path: str) -> Iterator[LogBlock]:
    """:func:`scan_log_blocks` from ``pos`` on, through ``src``'s windows."""
    file_size = src.size
    while pos < file_size:
        buf, o = src.window(pos, _PREFIX_LEN)
        block = _sound_block(buf, o, pos, file_size, path)
        if block is not None:
            yield block
            pos += block.size
            continue
        remaining = file_size - pos
        if remaining < _MAGIC_LEN:
            # HoodieLogFileReader.hasNext -> readMagic: readFully of the 6 magic bytes hits EOF, which is the end of
            # the file (a crashed append that wrote part of a magic holds no record). hudi-rs stops there too.
            return
        magic = buf[o : o + _MAGIC_LEN]
        if magic != MAGIC:
            # Only the file's first bytes can get here: a sound block is followed by a magic, EOF or a short tail
            # (else it is itself corrupt, as in Java's isBlockCorrupted), and a corrupt region runs to the next magic.
            # Java's HoodieLogFileReader.hasNext throws CorruptedLogFileException ("Did not find the magic bytes at
            # the start of the block") and hudi-rs fails with "Invalid magic": the file cannot be read. Reading on
            # from the next magic would answer with part of the file.
            raise LogFormatError(
                f"log file does not start with the magic {MAGIC!r} (found {bytes(magic)!r}); it cannot be read",
                path,
                pos,
            )
        if remaining < _PREFIX_LEN:
            end = src.find_magic(pos + _MAGIC_LEN)
            yield _corrupt_block(path, pos, end, "truncated block size field")
            pos = end
            continue
        block_size = _I64(buf, o + _MAGIC_LEN)[0]
        reason = _corruption_reason(src, pos, block_size)
        if reason is not None:
            # Java scans forward from just after the magic (createCorruptBlock / scanForNextAvailableBlockOffset).
            end = src.find_magic(pos + _MAGIC_LEN)
            yield _corrupt_block(path, pos, end, reason, _torn_header(src, pos, end))
            pos = end
            continue
        block = _read_block(src, buf, pos - o, pos, block_size, path)
        yield block
        pos += block.size


def read_log_blocks_bytes(data: bytes | bytearray | memoryview, path: str) -> list[LogBlock]:
    """Lists the blocks of a log file held in memory.

    Args:
        data: the whole log file.
        path: the file's path, recorded in each block and named in errors.

    Returns:
        The blocks in file order (see :func:`scan_log_blocks`).
    """
    return list(scan_log_blocks(data, len(data), path))


def read_block_content(f: BinaryIO, block: LogBlock) -> bytes:
    """Reads exactly the content bytes of ``block``.

    Args:
        f: a seekable binary stream over the block's log file.
        block: a block from :func:`scan_log_blocks` on the same file.

    Returns:
        ``block.content_length`` bytes (empty for command and corrupt blocks).

    Raises:
        LogFormatError: the file is shorter than the block says.
    """
    if block.content_length == 0:
        return b""
    f.seek(block.content_offset)
    data = f.read(block.content_length)
    if len(data) != block.content_length:
        raise LogFormatError(
            f"block content is truncated: expected {block.content_length} bytes, got {len(data)}",
            block.log_file,
            block.content_offset,
        )
    return data


__all__ = [
    "MAGIC",
    "BlockType",
    "HeaderKey",
    "LogBlock",
    "read_block_content",
    "read_log_blocks_bytes",
    "scan_log_blocks",
    "scan_log_bytes",
    "scan_log_ends",
]
