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

from dataclasses import dataclass

from evt_toolkit.errors import ObjectNotFoundError, StorageError
from evt_toolkit.format.logfile import BlockType, scan_log_blocks
from evt_toolkit.storage.fs import TableStorage

__all__ = ["BlockInstants", "read_block_instants", "unreadable_log"]


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
        with storage.open_input(rel) as f:
            blocks = list(scan_log_blocks(f, size, full))
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
