"""An independent replay of Hudi MOR write semantics in plain pandas: the expected rows of a table after a history.

It knows nothing of files, buckets or log blocks: it applies each batch, in commit order, to a dict of current rows.

* In-batch de-duplication (``OverwriteWithLatestAvroPayload.preCombine``): per key, the row with the greatest
  ordering value wins, ties go to the later row; without an ordering field the later row wins.
* ``commit_time``: a later write always wins; a delete (operation ``delete`` or ``_hoodie_is_deleted = True``)
  removes the key.
* ``event_time``: an incoming record (or delete carrying an ordering value) replaces the stored state only when its
  ordering value is greater than or equal to the stored one; a deleted key keeps its ordering value as a tombstone.
  A delete without an ordering value ("natural order") always wins; a record written after it wins over it, a delete
  written after it is dropped (Hudi 1.x ``deltaMergeDeleteRecord`` keeps the natural-order delete).
* Deletes of keys never written are no-ops.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

IS_DELETED = "_hoodie_is_deleted"
_NATURAL = object()  # ordering of a tombstone left by a natural-order delete: every later record beats it


class Oracle:
    """Expected table content after a sequence of writes."""

    def __init__(
        self,
        record_key: list[str],
        partition_by: list[str] | None = None,
        ordering_field: str | None = None,
        merge_mode: str = "commit_time",
    ) -> None:
        self.key_fields = list(partition_by or []) + list(record_key)
        self.ordering_field = ordering_field
        self.event_time = merge_mode == "event_time"
        self.columns: list[str] | None = None
        # key -> (ordering value or _NATURAL, row dict or None for a tombstone)
        self.state: dict[tuple[Any, ...], tuple[Any, dict[str, Any] | None]] = {}

    def _key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[f] for f in self.key_fields)

    def _dedupe(self, df: pd.DataFrame) -> list[dict[str, Any]]:
        best: dict[tuple[Any, ...], dict[str, Any]] = {}
        order: list[tuple[Any, ...]] = []
        use_ord = self.ordering_field is not None and self.ordering_field in df.columns
        for row in df.to_dict("records"):
            k = self._key(row)
            if k not in best:
                order.append(k)
                best[k] = row
            elif not use_ord or row[self.ordering_field] >= best[k][self.ordering_field]:
                best[k] = row
        return [best[k] for k in order]

    def _wins(self, k: tuple[Any, ...], ordering: Any) -> bool:
        current = self.state.get(k)
        if current is None or current[0] is _NATURAL or ordering is _NATURAL:
            return True
        return bool(ordering >= current[0])

    def apply(self, operation: str, df: pd.DataFrame) -> None:
        """Apply one write (``upsert``, ``insert`` or ``delete``) of the rows in ``df``."""
        rows = self._dedupe(df)
        if operation == "delete":
            use_ord = self.ordering_field is not None and self.ordering_field in df.columns
            for row in rows:
                k = self._key(row)
                if k not in self.state:
                    continue
                ordering = row[self.ordering_field] if use_ord else _NATURAL
                if not self.event_time:
                    del self.state[k]
                elif self.state[k][0] is _NATURAL:
                    continue
                elif self._wins(k, ordering):
                    self.state[k] = (ordering, None)
            return
        if self.columns is None:
            self.columns = list(df.columns)
        for row in rows:
            k = self._key(row)
            deleted = bool(row.get(IS_DELETED)) if IS_DELETED in row else False
            ordering = row[self.ordering_field] if self.ordering_field else None
            if not self.event_time:
                if deleted:
                    self.state.pop(k, None)
                else:
                    self.state[k] = (ordering, row)
            elif self._wins(k, ordering):
                self.state[k] = (ordering, None if deleted else row)
        if not self.event_time:
            # Commit-time tombstones carry nothing: drop them so that only live rows remain.
            self.state = {k: v for k, v in self.state.items() if v[1] is not None}

    def result(self) -> pd.DataFrame:
        """The live rows, one per key."""
        live = [row for _, row in self.state.values() if row is not None]
        return pd.DataFrame(live, columns=self.columns or None)
