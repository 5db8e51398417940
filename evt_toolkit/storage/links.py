"""Making and checking links on storage (:class:`evt_toolkit.format.links.Link`): copies and symlinks.

A ``copy`` link is a server-side copy on object stores (no byte passes through this process) and holds its own
bytes; a ``symlink`` link is a relative symlink in the same folder (local file systems only), so the table stays
valid when its base path moves, and its bytes live in its target.

Creating a link is idempotent, because a crash between the links and ``C.compaction.requested`` (or during
execute-time links) must converge on a re-run: an existing link that already is the wanted one is accepted; one
that differs is an error naming it, never silently replaced (a differing file under a link name could be a writer's
log holding data).

Example:
    >>> create_link(storage, Link("p", ".f_2.log.1_0-0-0", ".f_1.log.3_0-0-0"))  # doctest: +SKIP
    'created'
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from evt_toolkit.errors import ObjectExistsError, PlanValidationError, SymlinkUnsupportedError
from evt_toolkit.faults import fault_point
from evt_toolkit.format.links import COPY, SYMLINK, Link
from evt_toolkit.storage.fs import TableStorage

__all__ = [
    "LinkCheck",
    "check_link",
    "create_link",
    "create_links",
    "delete_link_or_file",
    "held_by_another_file",
    "require_symlinks",
]


@dataclass(frozen=True, slots=True)
class LinkCheck:
    """What :func:`check_link` found: ``ok`` or a problem sentence naming the file."""

    ok: bool
    problem: str | None = None


def require_symlinks(storage: TableStorage, mode: str) -> None:
    """Refuse ``symlink`` links on a storage that cannot make symlinks.

    Raises:
        SymlinkUnsupportedError: object stores (and HDFS through this layer).
    """
    if mode == SYMLINK and not storage.supports_symlink:
        raise SymlinkUnsupportedError(
            f"link_mode='symlink' needs a file system with symlinks; {storage.uri} has none (use link_mode='copy')"
        )


def _resolved(link: Link, dest: str) -> str:
    return posixpath.normpath(posixpath.join(link.partition_path, dest)) if link.partition_path else dest


def check_link(storage: TableStorage, link: Link, *, deep: bool = True) -> LinkCheck:
    """Whether ``link`` exists and stands for its target.

    ``copy``: same size and (with ``deep``) same bytes as the target; ``symlink``: a symlink that resolves to the
    target, which exists.
    """
    sym, tgt = link.symlink_path, link.target_path
    if link.mode == SYMLINK and storage.supports_symlink:
        dest = storage.read_link(sym)
        if dest is None:
            if storage.exists(sym):
                return LinkCheck(False, f"link {storage.full_path(sym)} is a regular file, not a symlink")
            return LinkCheck(False, f"link {storage.full_path(sym)} is missing")
        if _resolved(link, dest) != tgt:
            return LinkCheck(False, f"symlink {storage.full_path(sym)} points to {dest}, not to {link.target}")
        if not storage.exists(tgt):
            return LinkCheck(False, f"symlink {storage.full_path(sym)} is dangling: target {tgt} is missing")
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
    if deep and link.mode == COPY and storage.read_bytes(sym) != storage.read_bytes(tgt):
        return LinkCheck(False, f"link {storage.full_path(sym)} differs from its target {link.target}")
    return LinkCheck(True)


def held_by_another_file(storage: TableStorage, link: Link) -> bool:
    """Whether a file that is not ``link`` holds its name: never the compaction's to delete or to record.

    On version 6 a writer that does not know a plan's links (stock Hudi starts slice ``C`` at version 1) can commit a
    log under the very name the plan gave an execute-time link (the same write token). Only a symlink to the link's
    target, or a copy of its target's bytes — all of them, or the first ones when a stock writer appended to the
    target since the copy was made — is the link; anything else under its name (also a copy whose target is gone,
    which cannot be told from a writer's log) is somebody else's.
    """
    sym, tgt = link.symlink_path, link.target_path
    if not storage.lexists(sym):
        return False
    if link.mode == SYMLINK and storage.supports_symlink:
        dest = storage.read_link(sym)
        return dest is None or _resolved(link, dest) != tgt
    if not storage.exists(tgt):
        return True
    size = storage.size(sym)
    if size > storage.size(tgt):
        return True
    return size > 0 and storage.read_bytes(sym) != storage.read_range(tgt, 0, size)


def create_link(storage: TableStorage, link: Link) -> str:
    """Create one link; ``"created"`` or ``"existing"`` (already the wanted link).

    Raises:
        PlanValidationError: the target is missing, or a different file already has the link's name.
        SymlinkUnsupportedError: ``symlink`` mode on a storage without symlinks.
    """
    require_symlinks(storage, link.mode)
    sym, tgt = link.symlink_path, link.target_path
    if not storage.exists(tgt):
        raise PlanValidationError(f"cannot link {link.symlink}: target log {storage.full_path(tgt)} is missing")
    if link.mode == SYMLINK:
        if storage.lexists(sym):
            if storage.read_link(sym) == link.target:
                return "existing"
            raise PlanValidationError(
                f"{storage.full_path(sym)} already exists and is not a symlink to {link.target}; not replacing it"
            )
        storage.symlink(link.target, sym)
        fault_point("links.after_link")
        return "created"
    if link.mode != COPY:
        raise PlanValidationError(f"unknown link mode {link.mode!r} (copy or symlink)")
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


def create_links(storage: TableStorage, links: Iterable[Link]) -> int:
    """Create every link (idempotently; in parallel on object stores); returns how many were newly created."""
    todo = list(links)
    if not storage.is_object_store:
        # One at a time locally: a crash leaves a prefix of the links, as the crash-recovery tests expect.
        return sum(1 for link in todo if create_link(storage, link) == "created")
    return sum(1 for r in storage.parallel(lambda link: create_link(storage, link), todo) if r == "created")


def delete_link_or_file(storage: TableStorage, rel: str) -> bool:
    """Delete ``rel`` — a symlink is removed itself, never followed; returns whether something was there."""
    if not storage.lexists(rel):
        return False
    storage.delete_file(rel)
    return True
