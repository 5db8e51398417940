"""Which instants wrote the blocks of one log file on storage — the evidence a rollback and a write's reconcile
judge a log's ownership by (``docs/data-safety.md`` §1).

One rule for both: a name that is gone (or a dangling link) is *missing* and there is nothing a delete would lose;
anything else standing under the name that cannot be read — a folder, an entry the disk cannot stat, a read that
fails part-way — is *unreadable*, and the caller deletes nothing it cannot check.

Example:
    >>> read_block_instants(storage, "p/.f_1.log.1_0-0-0", "to tell which instants wrote into it")  # doctest: +SKIP
    BlockInstants(size=1234, instants=('20250101000000000',), corrupt=0)
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import cast

from evt_toolkit.errors import ObjectNotFoundError, StorageError
from evt_toolkit.format.logfile import (
    READ_AHEAD,
    BlockType,
    LogBlock,
    scan_log_blocks,
    scan_log_bytes,
    scan_log_ends,
)
from evt_toolkit.storage.fs import TableStorage

__all__ = ["BlockInstants", "read_block_instants", "scan_log", "scan_logs", "small_log_bytes", "unreadable_log"]


#: Logs whose bytes are read in one call before they are parsed: enough to spread the call's cost, few enough that
#: their bytes stay in the CPU cache and the allocator's free lists (256 logs of 10 KiB at once cost twice as much).
_BATCH = 32

#: What a scan reads first of a small local log: its first ``_HEAD`` bytes (the magic, sizes and headers of a
#: one-block log whose schema has a few dozen columns; a scan of wider ones grows its head) and its last ``_TAIL``
#: (an empty footer and the reverse pointer). A log at most their sum is read whole.
_HEAD = 4096
_TAIL = 12


def small_log_bytes(storage: TableStorage, logs: Sequence[tuple[str, int]]) -> Iterator[bytes | None]:
    """Per log ``(rel, size)``, in order: its first ``size`` bytes when it is a local log of up to ``READ_AHEAD``
    bytes, else ``None`` (the caller reads it through :meth:`TableStorage.open_input`).

    The local logs are read ``_BATCH`` at a time with one call (:meth:`TableStorage.read_ends`: per log
    ``os.open``, one ``pread`` of its listed size, ``os.close``). A log that came back shorter than listed is yielded
    as read. A log that cannot be read raises its error (``ObjectNotFoundError`` when it is gone, else
    ``StorageError``) when the iteration reaches it, after the logs before it.
    """
    if not storage.is_local:
        for _ in logs:
            yield None
        return
    for start in range(0, len(logs), _BATCH):
        batch = logs[start : start + _BATCH]
        small = [item for item in batch if item[1] <= READ_AHEAD]
        heads = iter(storage.read_ends(small, READ_AHEAD, 0) if small else ())
        for _, size in batch:
            if size > READ_AHEAD:
                yield None
                continue
            data = next(heads)
            if isinstance(data, StorageError):
                raise data
            yield cast(bytes, data)


def scan_logs(
    storage: TableStorage, logs: Sequence[tuple[str, int]], *, full_paths: bool = False
) -> Iterator[list[LogBlock]]:
    """The blocks of each log ``(rel, size)`` as of its first ``size`` bytes (its listed size), headers only, in order.

    The one way the toolkit lists logs' blocks on storage (:func:`~evt_toolkit.format.logfile.scan_log_blocks` does
    the parsing). On a local disk the logs are read ``_BATCH`` at a time with one call (:meth:`TableStorage.read_ends`;
    no stream object, whose cost per log would exceed the parse), each by its two ends (``_HEAD`` and ``_TAIL``
    bytes), which answer for a log of one sound block (:func:`~evt_toolkit.format.logfile.scan_log_ends`) of any size;
    a log they do not answer for is read whole when it is at most ``READ_AHEAD`` bytes, else through a stream (which
    reads only what its blocks' framing needs). Once a batch holds more such logs than not, the rest of the scan reads
    a longer head when they were one-block logs whose headers ended past it (a wide schema; the head then holds the
    longest such headers and a quarter more), else every small log whole and every larger one through a stream. On an
    object store every log goes through a stream (one GET, or none when prefetched, see
    :meth:`TableStorage.open_input`). Blocks (and errors) are named by ``rel``, or by the full path with
    ``full_paths``.

    Raises (when the iteration reaches the log):
        ObjectNotFoundError: the log is gone. StorageError: it cannot be read. LogFormatError: its framing is broken.
    """
    local = storage.is_local
    head = _HEAD  # READ_AHEAD once the scan reads small logs whole: then larger ones go straight to a stream
    for start in range(0, len(logs), _BATCH):
        batch = logs[start : start + _BATCH]
        large_by_ends = head < READ_AHEAD
        by_ends = [item for item in batch if large_by_ends or item[1] <= READ_AHEAD] if local else []
        parts = iter(storage.read_ends(by_ends, head, _TAIL) if by_ends else ())
        ends = whole = longer = 0  # logs read by their ends; of them read again whole; of those, longer headers only
        need = head
        for rel, size in batch:
            name = storage.full_path(rel) if full_paths else rel
            if not local or (size > READ_AHEAD and not large_by_ends):
                yield _streamed(storage, rel, size, name)
                continue
            part: bytes | tuple[bytes, bytes] | StorageError | None = next(parts)
            retried = False
            if type(part) is tuple:
                ends += 1
                answer = scan_log_ends(part[0], part[1], size, name)
                if answer is not None:
                    yield answer
                    continue
                whole += 1  # not one sound block in the bytes at hand: read it whole
                retried = True
                if size > READ_AHEAD:  # through a stream, which reads what the blocks' framing needs
                    blocks = _streamed(storage, rel, size, name)
                    part = None
                else:
                    part = storage.read_ends([(rel, size)], READ_AHEAD, 0)[0]
            if isinstance(part, StorageError):
                raise part
            if part is not None:
                data = cast(bytes, part)
                if len(data) < size:  # shorter than listed: the stream path names the missing bytes
                    blocks = list(scan_log_blocks(io.BytesIO(data), size, name))
                else:
                    blocks = scan_log_bytes(data, size, name)
            if retried and len(blocks) == 1 and blocks[0].content_offset > head and not blocks[0].is_corrupt:
                longer += 1  # one block whose headers end past the head (a wide schema)
                need = max(need, blocks[0].content_offset)
            yield blocks
        if whole * 2 > ends:  # most logs here need more than their ends
            # Mostly longer headers (a wide schema): a longer head, with room; else (more blocks, other shapes) the
            # rest is read whole, the larger logs through a stream.
            wider = need + need // 4
            head = wider if longer * 2 > whole and wider + _TAIL < READ_AHEAD else READ_AHEAD


def _streamed(storage: TableStorage, rel: str, size: int, name: str) -> list[LogBlock]:
    """The blocks of one log read through a stream (:meth:`TableStorage.open_input`)."""
    with storage.open_input(rel) as f:
        return list(scan_log_blocks(f, size, name))


def scan_log(storage: TableStorage, rel: str, size: int, *, full_paths: bool = False) -> list[LogBlock]:
    """The blocks of one log (:func:`scan_logs`)."""
    return next(scan_logs(storage, ((rel, size),), full_paths=full_paths))


@dataclass(frozen=True)
class BlockInstants:
    """The blocks of one log: its size, the instant of each readable block in order, and its corrupt blocks."""

    size: int
    instants: tuple[str, ...]
    corrupt: int


def unreadable_log(storage: TableStorage, full: str, why: str, exc: BaseException) -> StorageError:
    """The error for a log that stands under its name but cannot be read; names the table and the file."""
    return StorageError(f"{storage.uri}: cannot read log file {full} {why} ({exc})")


def read_block_instants(storage: TableStorage, rel: str, why: str) -> BlockInstants | None:
    """The block instants of log ``rel``, or ``None`` when no log is there any more.

    Args:
        storage: the table's storage.
        rel: the log's path relative to the base path.
        why: what the caller reads it for and does when it cannot, for the error (``"to tell ..."``).

    Raises:
        StorageError: something stands under the name that cannot be read (names it and the table).
        LogFormatError: the log's framing is broken.
    """
    full = storage.full_path(rel)
    try:
        size = storage.size(rel)
        blocks = scan_log(storage, rel, size, full_paths=True)
    except ObjectNotFoundError as exc:
        # Gone (deleted by an earlier attempt), or a dangling link: nothing to read and nothing a delete would lose.
        if storage.lexists(rel) and not storage.is_symlink(rel):
            raise unreadable_log(storage, full, why, exc) from exc
        return None
    except (StorageError, OSError) as exc:  # a log that cannot be read is never taken for a missing one
        raise unreadable_log(storage, full, why, exc) from exc
    instants = tuple(b.instant_time or "" for b in blocks if b.block_type is not BlockType.CORRUPT)
    corrupt = sum(1 for b in blocks if b.block_type is BlockType.CORRUPT)
    return BlockInstants(size, instants, corrupt)
