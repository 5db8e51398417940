"""The link graph of a table: every partial-compaction link, where it points, and what a live link keeps alive.

A partial compaction at ``C`` carries each leftover log ``L`` into the new slice as a link ``.{f}_{C}.log.{v}_…``
(design §2.3). The plan's ``symlinkOperations`` list them while ``C`` is pending and the completed ``C.commit``
records them again in ``extraMetadata["evt.compaction.links"]`` (the RFC: "clean and rollback read them back").
This module turns those records into a graph and answers the one question the cleaner must get right: *which files
must stay because a link that stays needs them?*

* A ``symlink``-mode link is only a name: its bytes live in its target, so the target must exist as long as the link
  does. A later compaction may link to a file that is itself a link (the leftover of a leftover), so targets are
  followed along chains across several compactions.
* A ``copy``-mode link holds its own bytes: nothing it was copied from is needed any more, which is why in copy mode
  the originals become cleanable once the slice holding the copy is retained.

Nothing here does I/O; :func:`links_from_plan` and :func:`links_from_commit` read decoded metadata dicts, and the
executors add what they find on storage (:meth:`LinkGraph.with_symlinks`).

Example:
    >>> g = LinkGraph.of([Link("p", ".f_3.log.2_0-0-0", ".f_2.log.2_0-0-0", "3", "symlink"),
    ...                   Link("p", ".f_2.log.2_0-0-0", ".f_1.log.4_0-0-0", "2", "symlink")])
    >>> sorted(g.needed_by(["p/.f_3.log.2_0-0-0"]))
    ['p/.f_1.log.4_0-0-0', 'p/.f_2.log.2_0-0-0']
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evt_toolkit.errors import MetadataDecodeError

__all__ = [
    "COMMIT_LINKS_KEY",
    "COPY",
    "SYMLINK",
    "Link",
    "LinkGraph",
    "links_from_commit",
    "links_from_plan",
]

#: ``extraMetadata`` key of a completed partial compaction's ``C.commit`` (see ``compaction/executor.py``).
COMMIT_LINKS_KEY = "evt.compaction.links"
#: ``extraMetadata`` key holding the plan's link mode (``compaction/plan.py``: ``EXTRA_LINK_MODE``).
LINK_MODE_KEY = "evt.compaction.link.mode"
#: ``extraMetadata`` key holding the plan's link timing (``compaction/plan.py``: ``EXTRA_LINK_TIMING``).
LINK_TIMING_KEY = "evt.compaction.link.timing"
COPY = "copy"
SYMLINK = "symlink"


def _rel(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


@dataclass(frozen=True, slots=True)
class Link:
    """One link of a partial compaction.

    Attributes:
        partition_path: the partition both files live in (``""`` when not partitioned).
        symlink: bare name of the link in the new slice.
        target: bare name of the file it stands for.
        compaction_instant: the compaction that created it (``""`` when only seen on storage).
        mode: ``copy`` or ``symlink``.
        timing: ``schedule`` or ``execute`` (when the link was created).
    """

    partition_path: str
    symlink: str
    target: str
    compaction_instant: str
    mode: str
    timing: str = "schedule"

    @property
    def symlink_path(self) -> str:
        """The link, relative to the table base path."""
        return _rel(self.partition_path, self.symlink)

    @property
    def target_path(self) -> str:
        """The target, relative to the table base path (normalised: a storage symlink may point elsewhere)."""
        return posixpath.normpath(_rel(self.partition_path, self.target))

    @property
    def needs_target(self) -> bool:
        """Whether the link's bytes live in its target (a symlink), so the target must outlive it."""
        return self.mode == SYMLINK


def links_from_plan(plan: Mapping[str, Any], instant: str) -> list[Link]:
    """The links of a ``HoodieCompactionPlan`` (our ``symlinkOperations`` extension), in plan order.

    Args:
        plan: the decoded plan.
        instant: the compaction instant.
    """
    extra = plan.get("extraMetadata") or {}
    mode = str(extra.get(LINK_MODE_KEY) or COPY)
    timing = str(extra.get(LINK_TIMING_KEY) or "schedule")
    out: list[Link] = []
    for op in plan.get("operations") or []:
        partition = str(op.get("partitionPath") or "")
        for x in op.get("symlinkOperations") or []:
            out.append(Link(partition, str(x["symlink"]), str(x["target"]), instant, mode, timing))
    return out


def links_from_commit(metadata: Mapping[str, Any], instant: str, path: str = "") -> list[Link]:
    """The links a completed compaction recorded in its ``C.commit`` (``evt.compaction.links``).

    Args:
        metadata: the decoded commit metadata.
        instant: the compaction instant.
        path: the commit file, for error messages.

    Raises:
        MetadataDecodeError: the recorded links are not a JSON list of ``{partition, symlink, target}``.
    """
    extra = metadata.get("extraMetadata") or {}
    text = extra.get(COMMIT_LINKS_KEY)
    if not text:
        return []
    try:
        raw = json.loads(str(text))
        mode = str(extra.get(LINK_MODE_KEY) or COPY)
        timing = str(extra.get(LINK_TIMING_KEY) or "schedule")
        return [
            Link(str(x.get("partition") or ""), str(x["symlink"]), str(x["target"]), instant, mode, timing) for x in raw
        ]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise MetadataDecodeError(f"{path or instant}: {COMMIT_LINKS_KEY} is not a list of links: {exc}") from exc


@dataclass(frozen=True, slots=True)
class LinkGraph:
    """Every known link, keyed by the link's path (relative to the base path).

    Attributes:
        links: ``symlink path -> Link``. When the same name is known twice (plan and storage), the metadata wins:
            it also knows the compaction that made the link.
    """

    links: Mapping[str, Link]

    @classmethod
    def of(cls, links: Iterable[Link]) -> LinkGraph:
        """A graph of ``links`` (the first record of a name wins)."""
        out: dict[str, Link] = {}
        for link in links:
            out.setdefault(link.symlink_path, link)
        return cls(out)

    def with_symlinks(self, symlinks: Mapping[str, str]) -> LinkGraph:
        """Add symlinks found on storage (``link path -> target path``, both relative to the base path).

        A symlink no plan or commit knows of (a plan unscheduled half-way, a hand-made link) still holds no bytes
        of its own, so it protects its target like any other symlink-mode link.
        """
        out = dict(self.links)
        for link_path, target_path in symlinks.items():
            known = out.get(link_path)
            if known is not None and known.mode == SYMLINK:
                continue
            partition = posixpath.dirname(link_path)
            out[link_path] = Link(
                partition,
                posixpath.basename(link_path),
                posixpath.relpath(target_path, partition or ".") if partition else target_path,
                known.compaction_instant if known is not None else "",
                SYMLINK,
                known.timing if known is not None else "schedule",
            )
        return LinkGraph(out)

    def chain(self, path: str) -> list[str]:
        """The files ``path`` depends on for its bytes, nearest first (empty unless it is a symlink-mode link).

        Follows symlink-mode links until a file that holds its own bytes (a real log, or a copy-mode link).
        A cycle (impossible for links Hudi names, as a link always targets an older slice) stops the walk.
        """
        out: list[str] = []
        seen = {path}
        cur = self.links.get(path)
        while cur is not None and cur.needs_target:
            nxt = cur.target_path
            if nxt in seen:
                break
            out.append(nxt)
            seen.add(nxt)
            cur = self.links.get(nxt)
        return out

    def needed_by(self, live: Iterable[str]) -> set[str]:
        """Every file that the ``live`` files need for their bytes (the closure of :meth:`chain`)."""
        needed: set[str] = set()
        for path in live:
            needed.update(self.chain(path))
        return needed

    def links_created_by(self, instant: str) -> list[Link]:
        """The links of one compaction, in path order."""
        return [self.links[p] for p in sorted(self.links) if self.links[p].compaction_instant == instant]
