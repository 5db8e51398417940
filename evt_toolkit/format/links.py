"""The one link model: a partial compaction's leftover log carried into the new slice (design §2.3 "Links").

A leftover log ``L`` of file group ``f`` becomes visible in the new slice ``C`` as ``.{f}_{C}.log.{v}_{token}`` in the
same partition, as a byte copy (``copy``) or a relative symlink (``symlink``). The plan records the links of each
operation as ``symlinkOperations`` (``[{symlink, target}]``, the RFC's schema), and the completed ``C.commit``
records them again as ``evt.compaction.links`` (``[{partition, symlink, target}]``; the RFC: "clean and rollback read
them back"). This module is the record and its (de)coding; :mod:`evt_toolkit.storage.links` makes and checks them on
storage, :mod:`evt_toolkit.table.links` builds the graph a cleaner needs.

Example:
    >>> link = Link("p", ".f_2.log.1_0-0-0", ".f_1.log.3_0-0-0", "2", SYMLINK)
    >>> link.symlink_path, link.to_avro()
    ('p/.f_2.log.1_0-0-0', {'symlink': '.f_2.log.1_0-0-0', 'target': '.f_1.log.3_0-0-0'})
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evt_toolkit.errors import MetadataDecodeError
from evt_toolkit.format.extra_metadata import COMPACTION_LINK_MODE, COMPACTION_LINK_TIMING, COMPACTION_LINKS

__all__ = [
    "COPY",
    "LINK_MODES",
    "LINK_TIMINGS",
    "SYMLINK",
    "Link",
    "encode_commit_links",
    "links_from_commit",
    "links_from_operation",
    "rel_path",
]

COPY = "copy"
SYMLINK = "symlink"
LINK_MODES = (COPY, SYMLINK)
LINK_TIMINGS = ("schedule", "execute")


def rel_path(partition: str, name: str) -> str:
    """``partition/name`` (``name`` alone for a non-partitioned table)."""
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
        timing: ``schedule`` or ``execute`` (when the link is created).
    """

    partition_path: str
    symlink: str
    target: str
    compaction_instant: str = ""
    mode: str = COPY
    timing: str = "schedule"

    @property
    def symlink_path(self) -> str:
        """The link, relative to the table base path."""
        return rel_path(self.partition_path, self.symlink)

    @property
    def target_path(self) -> str:
        """The target, relative to the table base path (normalised: a storage symlink may point elsewhere)."""
        return posixpath.normpath(rel_path(self.partition_path, self.target))

    @property
    def needs_target(self) -> bool:
        """Whether the link's bytes live in its target (a symlink), so the target must outlive it."""
        return self.mode == SYMLINK

    def to_avro(self) -> dict[str, str]:
        """The plan's ``{symlink, target}`` record (``HoodieSymlinkOperation``)."""
        return {"symlink": self.symlink, "target": self.target}

    def to_json(self) -> dict[str, str]:
        """``{partition, symlink, target}`` as recorded in the commit's ``evt.compaction.links``."""
        return {"partition": self.partition_path, "symlink": self.symlink, "target": self.target}


def links_from_operation(
    op: Mapping[str, Any], instant: str = "", mode: str = COPY, timing: str = "schedule"
) -> list[Link]:
    """The links of one ``HoodieCompactionOperation`` (its ``symlinkOperations``), in plan order."""
    partition = str(op.get("partitionPath") or "")
    return [
        Link(partition, str(x["symlink"]), str(x["target"]), instant, mode, timing)
        for x in op.get("symlinkOperations") or []
    ]


def encode_commit_links(links: list[Link]) -> str:
    """The ``evt.compaction.links`` value of ``C.commit``."""
    return json.dumps([link.to_json() for link in links], separators=(",", ":"))


def links_from_commit(extra: Mapping[str, str], instant: str, path: str = "") -> list[Link]:
    """The links a completed compaction recorded in its ``C.commit`` (``evt.compaction.links`` of ``extra``).

    Raises:
        MetadataDecodeError: the recorded links are not a JSON list of ``{partition, symlink, target}``.
    """
    text = extra.get(COMPACTION_LINKS)
    if not text:
        return []
    mode = str(extra.get(COMPACTION_LINK_MODE) or COPY)
    timing = str(extra.get(COMPACTION_LINK_TIMING) or "schedule")
    try:
        raw = json.loads(str(text))
        return [
            Link(str(x.get("partition") or ""), str(x["symlink"]), str(x["target"]), instant, mode, timing) for x in raw
        ]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise MetadataDecodeError(f"{path or instant}: {COMPACTION_LINKS} is not a list of links: {exc}") from exc
