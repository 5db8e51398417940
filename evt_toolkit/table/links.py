"""The link graph of a table: every partial-compaction link, where it points, and what a live link keeps alive.

Pending plans list their links (``symlinkOperations``) and completed compactions record them again in ``C.commit``
(``evt.compaction.links``; the RFC: "clean and rollback read them back"); :func:`table_links` gathers them and
:class:`LinkGraph` answers the one question the cleaner must get right: *which files must stay because a link that
stays needs them?*

* A ``symlink``-mode link is only a name: its bytes live in its target, so the target must exist as long as the link
  does. A later compaction may link to a file that is itself a link (the leftover of a leftover), so targets are
  followed along chains across several compactions.
* A ``copy``-mode link holds its own bytes: nothing it was copied from is needed any more, which is why in copy mode
  the originals become cleanable once the slice holding the copy is retained.

Example:
    >>> g = LinkGraph.of([Link("p", ".f_3.log.2_0-0-0", ".f_2.log.2_0-0-0", "3", "symlink"),
    ...                   Link("p", ".f_2.log.2_0-0-0", ".f_1.log.4_0-0-0", "2", "symlink")])
    >>> sorted(g.needed_by(["p/.f_3.log.2_0-0-0"]))
    ['p/.f_1.log.4_0-0-0', 'p/.f_2.log.2_0-0-0']
"""

from __future__ import annotations

import heapq
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evt_toolkit.errors import TimelineError
from evt_toolkit.format.extra_metadata import COMPACTION_LINKS
from evt_toolkit.format.links import SYMLINK, Link, links_from_commit
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.table import Table
from evt_toolkit.table.timeline import COMMIT, COMPACTION, LOG_COMPACTION

__all__ = ["LinkGraph", "deletion_order", "storage_symlinks", "table_links"]


def table_links(table: Table) -> list[Link]:
    """Every link recorded on the timeline: pending plans' ``symlinkOperations`` and completed commits' links.

    A completed compaction without ``evt.compaction.links`` in its commit (written by another tool) falls back to
    its plan, which stays on the timeline as ``C.compaction.requested``.
    """
    tl = table.timeline
    out: list[Link] = []
    for inst in tl.instants:
        if inst.action in (COMPACTION, LOG_COMPACTION) and not inst.is_completed:
            out.extend(tl.compaction_plan(inst).links)
        elif inst.action == COMMIT and inst.is_completed:
            meta = tl.commit_metadata(inst)
            if not meta.compacted:
                continue
            found = links_from_commit(meta.extra, inst.time, tl.state_file(inst) or "")
            if not found and COMPACTION_LINKS not in meta.extra:
                try:
                    found = list(tl.compaction_plan(inst).links)
                except TimelineError:
                    found = []
            out.extend(found)
    return out


def storage_symlinks(storage: TableStorage, paths: Iterable[str]) -> dict[str, str]:
    """``link -> target`` (relative paths) of the listed data files that are symlinks (local storage only)."""
    out: dict[str, str] = {}
    if not storage.supports_symlink:
        return out
    for rel in paths:
        dest = storage.read_link(rel)
        if dest is not None:
            partition = posixpath.dirname(rel)
            out[rel] = posixpath.normpath(posixpath.join(partition, dest)) if partition else posixpath.normpath(dest)
    return out


def deletion_order(paths: Sequence[str], symlinks: Mapping[str, str]) -> list[str]:
    """``paths`` in an order to delete them in so that no symlink among them ever points at a file already gone.

    ``symlinks`` maps the paths that are symlinks to their targets (:func:`storage_symlinks`). Every symlink goes
    before the files it leads to, along chains too: a later compaction's link to an earlier one's link (a leftover of
    a leftover) goes before that link, which goes before the log holding the bytes. Symlinks come first, the other
    files after them, each in path order where the chains leave a choice; a crash at any point then leaves only links
    whose targets still stand (sorting the symlinks by path deleted an earlier compaction's link first whenever its
    name sorted first, leaving the later link dangling until the delete ran again).

    Example:
        >>> deletion_order(["p/a", "p/b", "p/c", "p/d"], {"p/b": "p/c", "p/c": "p/a", "p/d": "p/x"})
        ['p/b', 'p/c', 'p/d', 'p/a']
    """
    links = sorted(p for p in paths if p in symlinks)
    waiting = dict.fromkeys(links, 0)  # per link: the links among ``paths`` that point at it and are not yet out
    for link in links:
        target = symlinks[link]
        if target in waiting and target != link:
            waiting[target] += 1
    ready = [link for link in links if not waiting[link]]
    heapq.heapify(ready)
    ordered: list[str] = []
    while ready:
        link = heapq.heappop(ready)
        ordered.append(link)
        target = symlinks[link]
        if target in waiting and target != link:
            waiting[target] -= 1
            if not waiting[target]:
                heapq.heappush(ready, target)
    if len(ordered) < len(links):  # a cycle (hand-made: Hudi's links always point at an older slice)
        done = set(ordered)
        ordered += [link for link in links if link not in done]
    return ordered + sorted(p for p in paths if p not in symlinks)


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
