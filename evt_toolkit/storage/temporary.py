"""Names of the temporary files a write goes through on file systems that have them (local disks, HDFS-like).

A write puts its bytes into a temporary file beside its target and then gives it the target's name
(:mod:`evt_toolkit.storage.local`); a compaction's base file is streamed into one the same way. A process killed in
between leaves the temporary file behind. Its name must not be one any Hudi reader takes for a table file: named
``.<log name>.<hex>.tmp``, as they once were, hudi-rs parsed such a file as a log of a file group ``.<file id>`` and
read it (a copy link's or a carry-over log's records twice once the compaction completed). ``.evt-tmp-<32 hex>``
holds no ``.log.`` and no base-file extension, so Java Hudi, hudi-rs and this toolkit all pass it by, and
``compaction repair`` deletes such leftovers (of either naming) once they are old enough that no writer can still
be writing them (``docs/data-safety.md`` §1).

Example:
    >>> is_temporary_name(posixpath.basename(temporary_path("/t/p=x/.f_1.log.1_0-0-0")))
    True
    >>> is_temporary_name(".f_1.log.1_0-0-0")
    False
"""

from __future__ import annotations

import posixpath
import re
import uuid

__all__ = ["TEMPORARY_PREFIX", "is_temporary_name", "temporary_path"]

#: What every temporary file's name starts with.
TEMPORARY_PREFIX = ".evt-tmp-"

_CURRENT = re.compile(r"^\.evt-tmp-[0-9a-f]{32}$")
#: The names earlier versions gave: ``.<target>.<32 hex>.tmp`` (writes, copies, base files), ``.<target>.<pid>.tmp``
#: (a symlink replaced).
_EARLIER = re.compile(r"^\..+\.(?:[0-9a-f]{32}|[0-9]+)\.tmp$")


def temporary_path(full: str) -> str:
    """The path of a new temporary file for ``full``, in ``full``'s folder (so that the rename stays on one file
    system)."""
    return posixpath.join(posixpath.dirname(full), f"{TEMPORARY_PREFIX}{uuid.uuid4().hex}")


def is_temporary_name(name: str) -> bool:
    """Whether ``name`` is a temporary file's, of this version's naming or an earlier one's."""
    return bool(_CURRENT.match(name) or _EARLIER.match(name))
