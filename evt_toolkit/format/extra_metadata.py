"""The toolkit's own ``extraMetadata`` entries of plans and commits — every key defined once, here.

Hudi keeps ``extraMetadata`` (a string map) in every ``HoodieCommitMetadata`` and ``HoodieCompactionPlan`` and
ignores keys it does not know; the toolkit's keys all start with ``evt.`` so they never meet Hudi's own
(``schema``, checkpoints). ``hoodie.payload.event.time.field`` is Hudi's key, recorded in plans for readers.

Example:
    >>> d = DeleteEventTimes(True, 5, 9).merge(DeleteEventTimes(False, None, None))
    >>> d.known, decode_delete_event_times(encode_delete_event_times({"p/.f.log.1_0-0-0": d}))["p/.f.log.1_0-0-0"]
    (False, DeleteEventTimes(known=False, min_ms=None, max_ms=None))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from evt_toolkit.errors import MetadataDecodeError

__all__ = [
    "COMPACTION_CARRY_OVER_LOGS",
    "COMPACTION_EXACT_SPLIT",
    "COMPACTION_LINKS",
    "COMPACTION_LINK_MODE",
    "COMPACTION_LINK_TIMING",
    "COMPACTION_STRATEGY",
    "COMPACTION_THRESHOLD_ISO",
    "COMPACTION_THRESHOLD_MS",
    "EVENT_TIME_FIELD",
    "LEGACY_CARRY_OVER_SLOT",
    "REMAINING_PREFIX",
    "STRATEGY_SETTING_PREFIX",
    "WRITE_DELETE_EVENT_TIMES",
    "DeleteEventTimes",
    "decode_delete_event_times",
    "encode_delete_event_times",
]

COMPACTION_STRATEGY = "evt.compaction.strategy"
STRATEGY_SETTING_PREFIX = "evt.compaction.strategy."
COMPACTION_THRESHOLD_MS = "evt.compaction.threshold.ms"
COMPACTION_THRESHOLD_ISO = "evt.compaction.threshold.iso"
COMPACTION_LINK_MODE = "evt.compaction.link.mode"
COMPACTION_LINK_TIMING = "evt.compaction.link.timing"
COMPACTION_EXACT_SPLIT = "evt.compaction.exact_split"
#: ``C.commit``: the plan's links, JSON ``[{partition, symlink, target}]`` (clean and rollback read them back).
COMPACTION_LINKS = "evt.compaction.links"
#: ``C.commit``: the carry-over logs written, JSON ``[{partition, log, records, tombstones, kept, split}]``.
COMPACTION_CARRY_OVER_LOGS = "evt.compaction.carry_over_logs"
#: Plans of earlier toolkit versions: ``"true"`` when version 1 of the new slices was kept for a carry-over log.
LEGACY_CARRY_OVER_SLOT = "evt.compaction.carry_over"
#: Prefix of the RFC's remaining-log figures (plan, copied into ``C.commit``).
REMAINING_PREFIX = "evt.metrics.remaining."
#: Hudi's event-time field key (``HoodiePayloadConfig.EVENT_TIME_FIELD``), recorded in plans.
EVENT_TIME_FIELD = "hoodie.payload.event.time.field"
#: Deltacommits: event times of the records each log file deletes, JSON ``{path: [min, max] | null}``.
WRITE_DELETE_EVENT_TIMES = "evt.write.delete_event_times"


@dataclass(frozen=True, slots=True)
class DeleteEventTimes:
    """Event times of the records a log file deletes: known only when the delete batch carried every one."""

    known: bool
    min_ms: int | None
    max_ms: int | None

    def merge(self, other: DeleteEventTimes | None) -> DeleteEventTimes:
        """Both files' deletes together (unknown when either is)."""
        if other is None:
            return self
        if not (self.known and other.known):
            return DeleteEventTimes(False, None, None)
        lows = [v for v in (self.min_ms, other.min_ms) if v is not None]
        highs = [v for v in (self.max_ms, other.max_ms) if v is not None]
        return DeleteEventTimes(True, min(lows) if lows else None, max(highs) if highs else None)


def encode_delete_event_times(by_path: Mapping[str, DeleteEventTimes]) -> str:
    """The ``evt.write.delete_event_times`` value."""
    doc = {p: ([d.min_ms, d.max_ms] if d.known else None) for p, d in sorted(by_path.items())}
    return json.dumps(doc, separators=(",", ":"))


def decode_delete_event_times(text: str, source: str = "") -> dict[str, DeleteEventTimes]:
    """Parse an ``evt.write.delete_event_times`` value.

    Raises:
        MetadataDecodeError: not a JSON map of path to ``[min, max]`` or null (names ``source``).
    """
    try:
        doc = json.loads(text)
        out = {}
        for path, v in doc.items():
            if v is None:
                out[str(path)] = DeleteEventTimes(False, None, None)
            else:
                lo, hi = v
                out[str(path)] = DeleteEventTimes(
                    True, None if lo is None else int(lo), None if hi is None else int(hi)
                )
        return out
    except (ValueError, TypeError, AttributeError) as exc:
        raise MetadataDecodeError(
            f"{source}: {WRITE_DELETE_EVENT_TIMES} is not a map of delete event times: {exc}"
        ) from exc
