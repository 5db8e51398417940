"""Hudi log file framing: blocks, headers, footers and corrupt-block detection.

A Hudi log file is a plain concatenation of blocks with no file header (``HoodieLogFormat``,
``HoodieLogFileReader.readBlock``). Each block of log format version 1 is laid out as, big-endian::

    magic "#HUDI#" (6) | blockSize int64 | version int32 | block type int32 | header map
    | content length int64 | content | footer map | reverse pointer int64 (= blockSize + 6)

``blockSize`` counts every byte after itself up to the end of the block, so a block starting at
``offset`` ends at ``offset + 14 + blockSize``. A header/footer map is an int32 entry count followed by
``(int32 key ordinal, int32 byte length, UTF-8 bytes)`` entries.

This module only frames blocks. :func:`scan_log_blocks` reads magic, sizes, headers and footers but
*seeks over* the content, so listing the blocks of a large log costs a few small reads per block. Decoding
the content is :mod:`evt_toolkit.format.log_content`'s job.

Example:
    >>> blocks = read_log_blocks_bytes(open(path, "rb").read(), path)  # doctest: +SKIP
    >>> [(b.block_type.name, b.instant_time) for b in blocks]  # doctest: +SKIP
    [('AVRO_DATA', '20250316025828811')]
"""

from __future__ import annotations

import enum
import io
import re
import struct
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO

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

_DECIMAL_RE = re.compile(r"-?[0-9]+")


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
_BLOCK_TYPES = {t.value: t for t in BlockType}
_DATA_BLOCK_TYPES = frozenset({BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA, BlockType.CDC_DATA})

_EMPTY: Mapping[HeaderKey, str] = types.MappingProxyType({})


@dataclass(frozen=True, slots=True)
class LogBlock:
    """One block of a log file, as framed on disk (the content itself is not held).

    Attributes:
        log_file: the path string the caller passed; used in errors and as the block's identity.
        offset: absolute byte offset of the block's magic.
        size: total bytes of the block including the magic. For a corrupt block: up to the next magic or EOF.
        block_type: the block type; ``CORRUPT`` for a block detected as corrupt.
        format_version: the log format version (1), ``None`` for corrupt blocks.
        header: header entries (order is not significant: Java writes a ``HashMap``).
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
    corrupt_reason: str | None = field(default=None)

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
    def min_event_time_header(self) -> int | None:
        """The ``MIN_EVENT_TIME`` extension header as epoch milliseconds, or ``None`` when absent.

        Raises:
            LogFormatError: the header is present but not a plain decimal integer.
        """
        raw = self.header.get(HeaderKey.MIN_EVENT_TIME)
        if raw is None:
            return None
        text = raw.strip()
        # int() alone would also accept "1_000", " +5" and non-ASCII digits; the header format is stricter.
        if not _DECIMAL_RE.fullmatch(text):
            raise LogFormatError(
                f"MIN_EVENT_TIME header is not a decimal integer: {raw[:40]!r}", self.log_file, self.offset
            )
        return int(text)


class _BlockReader:
    """Sequential big-endian reads that never go past ``limit`` (the end of the current block)."""

    __slots__ = ("f", "limit", "path", "pos")

    def __init__(self, f: BinaryIO, pos: int, limit: int, path: str) -> None:
        self.f = f
        self.pos = pos
        self.limit = limit
        self.path = path

    def read(self, n: int, what: str) -> bytes:
        # Checking the length against the block end *before* reading is what keeps a garbage length field
        # from turning into a huge allocation.
        if n < 0 or n > self.limit - self.pos:
            raise LogFormatError(
                f"{what} of {n} bytes runs past the end of the block (ends at byte {self.limit})", self.path, self.pos
            )
        data = self.f.read(n)
        if len(data) != n:
            raise LogFormatError(f"unexpected end of file reading {what}", self.path, self.pos)
        self.pos += n
        return data

    def int32(self, what: str) -> int:
        return int(struct.unpack(">i", self.read(4, what))[0])

    def int64(self, what: str) -> int:
        return int(struct.unpack(">q", self.read(8, what))[0])

    def skip(self, n: int, what: str) -> None:
        if n < 0 or n > self.limit - self.pos:
            raise LogFormatError(
                f"{what} of {n} bytes runs past the end of the block (ends at byte {self.limit})", self.path, self.pos
            )
        self.pos += n
        self.f.seek(self.pos)

    def metadata(self, what: str) -> Mapping[HeaderKey, str]:
        """Reads one header/footer map (``HoodieLogBlock.getHeaderMetadata``)."""
        start = self.pos
        count = self.int32(f"{what} entry count")
        if count == 0:
            return _EMPTY
        # Every entry takes at least 8 bytes (key + length), which bounds a sane count by the bytes left.
        if count < 0 or count > MAX_METADATA_ENTRIES or count * 8 > self.limit - self.pos:
            raise LogFormatError(f"invalid {what} entry count {count}", self.path, start)
        entries: dict[HeaderKey, str] = {}
        for _ in range(count):
            key_pos = self.pos
            ordinal = self.int32(f"{what} key")
            key = _HEADER_KEYS.get(ordinal)
            if key is None:
                # Java indexes HeaderMetadataType.values()[ordinal] (ArrayIndexOutOfBoundsException, not turned
                # into a corrupt block) and hudi-rs returns "Invalid metadata key": both fail the whole read.
                raise LogFormatError(f"Invalid metadata key: {ordinal} in {what}", self.path, key_pos)
            length = self.int32(f"{what} value length")
            raw = self.read(length, f"{what} value of {key.name}")
            try:
                value = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise LogFormatError(
                    f"{what} value of {key.name} is not valid UTF-8: {exc}", self.path, key_pos
                ) from exc
            # Java fills a HashMap, so a repeated key keeps the last value.
            entries[key] = value
        return types.MappingProxyType(entries)


def _find_magic(f: BinaryIO, start: int, file_size: int) -> int:
    """Offset of the first magic at or after ``start``, or ``file_size`` when there is none.

    Reads in ``SCAN_WINDOW`` windows that overlap by ``len(MAGIC) - 1`` bytes so a magic straddling two
    windows is still found (mirrors ``HoodieLogFileReader.scanForNextAvailableBlockOffset``).
    """
    pos = start
    while pos < file_size:
        f.seek(pos)
        window = f.read(min(SCAN_WINDOW, file_size - pos))
        if not window:
            break
        hit = window.find(MAGIC)
        if hit >= 0:
            return pos + hit
        if pos + len(window) >= file_size:
            break
        # Always advances: the window is at least SCAN_WINDOW > len(MAGIC) bytes here.
        pos += max(1, len(window) - (_MAGIC_LEN - 1))
    return file_size


def _corrupt_block(path: str, offset: int, end: int, reason: str) -> LogBlock:
    return LogBlock(
        log_file=path,
        offset=offset,
        size=end - offset,
        block_type=BlockType.CORRUPT,
        format_version=None,
        header=_EMPTY,
        footer=_EMPTY,
        content_offset=0,
        content_length=0,
        corrupt_reason=reason,
    )


def _corruption_reason(f: BinaryIO, offset: int, block_size: int, file_size: int) -> str | None:
    """Hudi's corrupt-block test for the block whose magic is at ``offset``; ``None`` when it is sound.

    Mirrors ``HoodieLogFileReader.isBlockCorrupted`` and hudi-rs ``is_block_corrupted``: with the stream just
    after the blockSize field (``offset + 14``), the reverse pointer sits at ``offset + 14 + blockSize - 8``.
    The block is corrupt when that pointer is past EOF, when ``pointer - 6 != blockSize`` (the pointer also
    counts the magic), or when the bytes after the block are neither a magic nor EOF.
    """
    if block_size < _MIN_V1_BLOCK_SIZE:
        return f"block size {block_size} is smaller than the smallest block ({_MIN_V1_BLOCK_SIZE})"
    block_end = offset + _PREFIX_LEN + block_size
    if block_end > file_size:
        return f"block size {block_size} runs past EOF (file size {file_size})"
    f.seek(block_end - 8)
    raw = f.read(8)
    if len(raw) != 8:
        return "reverse pointer runs past EOF"
    reverse_pointer = int(struct.unpack(">q", raw)[0])
    if reverse_pointer - _MAGIC_LEN != block_size:
        return f"reverse pointer {reverse_pointer} does not match block size {block_size}"
    if file_size - block_end >= _MAGIC_LEN:
        following = f.read(_MAGIC_LEN)
        if following != MAGIC:
            return "the bytes after the block are neither a magic nor EOF"
    # Fewer than 6 trailing bytes: Java's readFully hits EOF and treats the block as sound; the stray tail is
    # reported separately by the scanner as its own corrupt block.
    return None


def _read_block(f: BinaryIO, offset: int, block_size: int, path: str) -> LogBlock:
    """Parses a block that passed the corruption test; its framing is trusted, its fields are not."""
    block_end = offset + _PREFIX_LEN + block_size
    # Fields live between the blockSize field and the reverse pointer.
    reader = _BlockReader(f, offset + _PREFIX_LEN, block_end - 8, path)
    f.seek(reader.pos)
    version = reader.int32("log format version")
    if version == 0:
        # Version 0 (Hudi < 0.3) has no block type, headers or reverse pointer; no supported table has them.
        raise UnsupportedFeatureError(f"legacy log format version 0 is not supported [{path} @ byte {offset}]")
    if version != 1:
        raise LogFormatError(f"Invalid log format version: {version}", path, offset + _PREFIX_LEN)
    type_pos = reader.pos
    ordinal = reader.int32("block type")
    block_type = _BLOCK_TYPES.get(ordinal)
    if block_type is None:
        # Java: checkArgument(type < values().length); hudi-rs: "Invalid block type". A hard error in both.
        raise LogFormatError(f"Invalid block type: {ordinal}", path, type_pos)
    header = reader.metadata("header")
    content_length = reader.int64("content length")
    content_offset = reader.pos
    reader.skip(content_length, "content")
    footer = reader.metadata("footer")
    if reader.pos != reader.limit:
        raise LogFormatError(
            f"block fields end at byte {reader.pos} but the reverse pointer is at byte {reader.limit}", path, offset
        )
    return LogBlock(
        log_file=path,
        offset=offset,
        size=_PREFIX_LEN + block_size,
        block_type=block_type,
        format_version=version,
        header=header,
        footer=footer,
        content_offset=content_offset,
        content_length=content_length,
    )


def scan_log_blocks(f: BinaryIO, file_size: int, path: str) -> Iterator[LogBlock]:
    """Lists the blocks of one log file without reading their content.

    Reads each block's magic, sizes, headers and footer and seeks past the content. Corrupt blocks (per
    Hudi's rules, see :func:`_corruption_reason`) are yielded with ``block_type == CORRUPT`` and scanning
    resumes at the next magic, as Java's ``HoodieLogFileReader`` does; callers skip them like Hudi's scanner.

    Args:
        f: a seekable binary stream over the whole log file.
        file_size: the file's size in bytes (bounds every read and size check).
        path: the file's path, recorded in each block and named in errors.

    Yields:
        The blocks in file order.

    Raises:
        LogFormatError: a block passed the corruption test but has an unknown header key ordinal, an unknown
            block type, an invalid log format version, invalid UTF-8 in a header, or fields that do not fit.
        UnsupportedFeatureError: a legacy (version 0) block.
    """
    pos = 0
    while pos < file_size:
        remaining = file_size - pos
        f.seek(pos)
        magic = f.read(_MAGIC_LEN)
        if magic != MAGIC:
            # hudi-rs fails with "Invalid magic" and Java raises CorruptedLogFileException from hasNext(). We
            # report the region as a CORRUPT block instead and resume at the next magic: the bytes can only be
            # the torn remains of an earlier write, Hudi's scanner ignores corrupt blocks anyway, and an
            # inspection tool that dies on one bad region would hide every sound block after it.
            if len(magic) < _MAGIC_LEN and MAGIC.startswith(magic):
                magic_problem = f"truncated magic ({remaining} trailing bytes)"
            else:
                magic_problem = "invalid magic at block start"
            end = _find_magic(f, pos + 1, file_size)
            yield _corrupt_block(path, pos, end, magic_problem)
            pos = end
            continue
        if remaining < _PREFIX_LEN:
            end = _find_magic(f, pos + _MAGIC_LEN, file_size)
            yield _corrupt_block(path, pos, end, "truncated block size field")
            pos = end
            continue
        block_size = int(struct.unpack(">q", f.read(8))[0])
        reason = _corruption_reason(f, pos, block_size, file_size)
        if reason is not None:
            # Java scans forward from just after the magic (createCorruptBlock / scanForNextAvailableBlockOffset).
            end = _find_magic(f, pos + _MAGIC_LEN, file_size)
            yield _corrupt_block(path, pos, end, reason)
            pos = end
            continue
        block = _read_block(f, pos, block_size, path)
        yield block
        pos += block.size


def read_log_blocks_bytes(data: bytes, path: str) -> list[LogBlock]:
    """Lists the blocks of a log file held in memory.

    Args:
        data: the whole log file.
        path: the file's path, recorded in each block and named in errors.

    Returns:
        The blocks in file order (see :func:`scan_log_blocks`).
    """
    return list(scan_log_blocks(io.BytesIO(data), len(data), path))


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
]
