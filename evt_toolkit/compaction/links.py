"""Links that carry a partial compaction's leftover logs into the new file slice (design §2.3 "Links").

A leftover log ``L`` of file group ``f`` becomes visible in the new slice ``C`` as ``.{f}_{C}.log.{v}_{token}`` in
the same partition, either as a byte copy (``copy``, safe on object stores and with stock cleaners) or as a relative
symlink (``symlink``, the RFC's HDFS/local mode; only where :attr:`TableStorage.supports_symlink`).

Creating a link is idempotent, because a crash between the links and ``C.compaction.requested`` (or during the
execute-time links) must converge on a re-run: an existing link that already is the wanted one is accepted; one
that differs is an error naming it, never silently replaced (a differing file under a link name could be a writer's
log holding data).

Example:
    >>> from evt_toolkit.storage.fs import TableStorage
    >>> create_link(TableStorage.from_uri("/data/t"), "p", LinkOperation(".f_2.log.1_0-0-0", ".f_1.log.3_0-0-0"),
    ...             "copy")  # doctest: +SKIP
    'created'
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from evt_toolkit.compaction.model import LinkOperation
from evt_toolkit.errors import (
    ObjectExistsError,
    PlanValidationError,
    StorageError,
    SymlinkUnsupportedError,
)
from evt_toolkit.faults import fault_point
from evt_toolkit.storage.fs import TableStorage

__all__ = [
    "LinkCheck",
    "PartitionLink",
    "SymlinkUnsupportedError",
    "check_link",
    "create_link",
    "create_links",
    "rel_path",
]


@dataclass(frozen=True, slots=True)
class PartitionLink:
    """A link operation together with the partition it lives in (both names are bare file names)."""

    partition_path: str
    symlink: str
    target: str

    @property
    def link(self) -> LinkOperation:
        """The plan's ``{symlink, target}`` record."""
        return LinkOperation(self.symlink, self.target)

    @property
    def symlink_path(self) -> str:
        """The link, relative to the table base path."""
        return rel_path(self.partition_path, self.symlink)

    @property
    def target_path(self) -> str:
        """The target, relative to the table base path."""
        return rel_path(self.partition_path, self.target)

    def to_json(self) -> dict[str, str]:
        """``{partition, symlink, target}`` as recorded in the commit's ``evt.compaction.links``."""
        return {"partition": self.partition_path, "symlink": self.symlink, "target": self.target}


@dataclass(frozen=True, slots=True)
class LinkCheck:
    """What :func:`check_link` found: ``ok`` or a problem sentence naming the file."""

    ok: bool
    problem: str | None = None


def rel_path(partition: str, name: str) -> str:
    """``partition/name`` (``name`` alone for a non-partitioned table)."""
    return posixpath.join(partition, name) if partition else name


def _local_full(storage: TableStorage, rel: str) -> str:
    return storage.full_path(rel)


def _existing_symlink_target(storage: TableStorage, rel: str) -> str | None:
    full = _local_full(storage, rel)
    return os.readlink(full) if os.path.islink(full) else None


def check_link(storage: TableStorage, link: PartitionLink, mode: str, *, deep: bool = True) -> LinkCheck:
    """Whether ``link`` exists and stands for its target.

    ``copy``: same size and (with ``deep``) same bytes as the target; ``symlink``: a symlink that resolves to the
    target.
    """
    sym, tgt = link.symlink_path, link.target_path
    if mode == "symlink" and storage.supports_symlink:
        dest = _existing_symlink_target(storage, sym)
        if dest is None:
            if storage.exists(sym):
                return LinkCheck(False, f"link {storage.full_path(sym)} is a regular file, not a symlink")
            return LinkCheck(False, f"link {storage.full_path(sym)} is missing")
        resolved = os.path.normpath(os.path.join(os.path.dirname(storage.full_path(sym)), dest))
        if resolved != os.path.normpath(storage.full_path(tgt)):
            return LinkCheck(False, f"symlink {storage.full_path(sym)} points to {dest}, not to {link.target}")
        if not os.path.exists(resolved):
            return LinkCheck(False, f"symlink {storage.full_path(sym)} is dangling: target {resolved} is missing")
        return LinkCheck(True)
    if not storage.exists(sym):
        return LinkCheck(False, f"link {storage.full_path(sym)} is missing")
    if not storage.exists(tgt):
        return LinkCheck(False, f"link target {storage.full_path(tgt)} is missing")
    if storage.size(sym) != storage.size(tgt):
        return LinkCheck(
            False,
            f"link {storage.full_path(sym)} has {storage.size(sym)} bytes but its target {link.target} has "
            f"{storage.size(tgt)}",
        )
    if deep and mode == "copy" and storage.read_bytes(sym) != storage.read_bytes(tgt):
        return LinkCheck(False, f"link {storage.full_path(sym)} differs from its target {link.target}")
    return LinkCheck(True)


def create_link(storage: TableStorage, link: PartitionLink, mode: str) -> str:
    """Create one link; ``"created"`` or ``"existing"`` (already the wanted link).

    Raises:
        PlanValidationError: the target is missing, or a different file already has the link's name.
        SymlinkUnsupportedError: ``symlink`` mode on a storage without symlinks.
    """
    sym, tgt = link.symlink_path, link.target_path
    if mode == "symlink" and not storage.supports_symlink:
        raise SymlinkUnsupportedError(
            f"link_mode='symlink' needs a file system with symlinks; {storage.uri} has none through pyarrow "
            "(use link_mode='copy')"
        )
    if not storage.exists(tgt):
        raise PlanValidationError(f"cannot link {link.symlink}: target log {storage.full_path(tgt)} is missing")
    if mode == "symlink":
        full = storage.full_path(sym)
        if os.path.lexists(full):
            if _existing_symlink_target(storage, sym) == link.target:
                return "existing"
            raise PlanValidationError(f"{full} already exists and is not a symlink to {link.target}; not replacing it")
        # Relative and in the same folder, so the table stays valid when its base path moves.
        tmp = posixpath.join(posixpath.dirname(full), f".{link.symlink}.{uuid.uuid4().hex}.tmp")
        try:
            os.symlink(link.target, tmp)
            os.replace(tmp, full)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise StorageError(f"cannot create symlink {full}: {exc}") from exc
        fault_point("links.after_link")
        return "created"
    if mode != "copy":
        raise PlanValidationError(f"unknown link mode {mode!r} (copy or symlink)")
    # Server-side copy on object stores (no byte through this process); create-only, so an existing link is kept.
    try:
        storage.copy_file(tgt, sym, overwrite=False)
    except ObjectExistsError:
        if storage.size(sym) == storage.size(tgt) and storage.read_bytes(sym) == storage.read_bytes(tgt):
            return "existing"
        raise PlanValidationError(
            f"{storage.full_path(sym)} already exists with other content than {link.target}; not replacing it"
        ) from None
    fault_point("links.after_link")
    return "created"


def create_links(storage: TableStorage, links: Iterable[PartitionLink], mode: str) -> int:
    """Create every link (idempotently, in parallel with the storage's bounded concurrency); returns how many were
    newly created."""
    todo = list(links)
    if not storage.is_object_store:
        # One at a time locally: a crash leaves a prefix of the links, as the crash-recovery tests expect.
        return sum(1 for link in todo if create_link(storage, link, mode) == "created")
    return sum(1 for r in storage.parallel(lambda link: create_link(storage, link, mode), todo) if r == "created")
