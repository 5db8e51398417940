"""An independent model of a Hudi Merge-On-Read table's answers, per key, in plain Python (no Arrow, no files).

Hudi reads a key as *merge its log records among themselves, then merge the winner with the base row*
(``HoodieMergedLogRecordScanner`` + the record merger's final merge). With commit-time ordering the latest record
wins everywhere; with event-time ordering a newer record wins the log merge when its ordering value is ``>=`` the
current one, a delete without an ordering value (commit-time delete) always wins, a data record after it wins over
it and a delete after it is dropped,
and the base row survives the final merge only when its ordering value is strictly greater (and the log winner is
no commit-time delete). Because the base row takes part only at the end, *where* a record sits (base or log)
matters, so the model keeps, per file group, the base rows and the ordered list of log units (one per log file the
table holds for the group's latest slice).

A compaction is applied when the table says it completed: per file group, the first ``n`` units (the plan's
compacted logs) go; per key the model accepts either form the toolkit may choose — *compacted* (the base row
becomes the merge of base and prefix; a winning tombstone or commit-time delete is carried in a leading unit) or
*kept* (the base row stays; the prefix's winner is carried) — and learns which from the table's read-optimized view,
failing when the RO row is neither. The state machine then checks that the snapshot did not change and that later
writes follow.

Example:
    >>> m = Model(event_time=True)
    >>> m.write("g", [Rec("k", "data", 5, {"v": 1})])
    >>> m.write("g", [Rec("k", "data", 3, {"v": 2})])
    >>> m.snapshot()["k"]["v"]
    1
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Model", "Rec"]


@dataclass(frozen=True)
class Rec:
    """One record of a log: ``data`` (``row`` may be soft-deleted), ``del`` (a delete with an ordering value) or
    ``ct`` (a delete without one)."""

    key: str
    kind: str
    ts: int | None
    row: dict[str, Any] | None = None

    @property
    def live(self) -> bool:
        """A data record that is not soft-deleted."""
        return self.kind == "data" and self.row is not None and not self.row.get("_hoodie_is_deleted")

    @property
    def tombstone(self) -> bool:
        """A delete that keeps its ordering value (a ``del`` record or a soft-deleted data row)."""
        return self.kind == "del" or (self.kind == "data" and not self.live)


@dataclass
class Group:
    """One file group: base rows by key, and the log units of its latest slice in replay order."""

    base: dict[str, Rec] = field(default_factory=dict)
    units: list[list[Rec]] = field(default_factory=list)


class Model:
    """Expected answers of a table, per file group and key."""

    def __init__(self, event_time: bool) -> None:
        self.event_time = event_time
        self.groups: dict[str, Group] = {}

    # -- merge rules ---------------------------------------------------------------------------------------------
    def log_merge(self, records: list[Rec]) -> Rec | None:
        """The winner of a key's log records in replay order."""
        state: Rec | None = None
        for r in records:
            if self.event_time and state is not None and state.kind == "ct" and r.kind == "del":
                continue  # Hudi keeps a commit-time delete when a delete arrives on it (deltaMergeDeleteRecord)
            if (
                not self.event_time
                or r.kind == "ct"
                or state is None
                or state.kind == "ct"
                or (r.ts is not None and state.ts is not None and r.ts >= state.ts)
                or (r.ts is not None and state.ts is None)
            ):
                state = r
        return state

    def final_merge(self, base: Rec | None, winner: Rec | None) -> Rec | None:
        """The row a key reads as: its base row merged with its log winner (``None``: absent)."""
        if winner is None:
            return base if base is not None and base.live else None
        if base is None:
            return winner if winner.live else None
        base_wins = self.event_time and winner.kind != "ct" and base.ts is not None and winner.ts is not None
        if base_wins and base.ts > winner.ts:  # type: ignore[operator]
            return base
        return winner if winner.live else None

    # -- history -------------------------------------------------------------------------------------------------
    def write(self, group: str, records: list[Rec]) -> None:
        """One log file of ``group`` written by a completed deltacommit."""
        if records:
            self.groups.setdefault(group, Group()).units.append(list(records))

    def read(self, group: str, key: str) -> Rec | None:
        g = self.groups.get(group)
        if g is None:
            return None
        return self.final_merge(g.base.get(key), self.log_merge([r for u in g.units for r in u if r.key == key]))

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """``key -> row`` of every live key."""
        out: dict[str, dict[str, Any]] = {}
        for name, g in self.groups.items():
            keys = set(g.base) | {r.key for u in g.units for r in u}
            for k in keys:
                rec = self.read(name, k)
                if rec is not None and rec.row is not None:
                    out[k] = rec.row
        return out

    def ro(self) -> dict[str, dict[str, Any]]:
        """``key -> row`` of the read-optimized view (base rows only)."""
        return {k: row for g in self.groups.values() for k, r in g.base.items() if (row := _row(r)) is not None}

    # -- compaction ----------------------------------------------------------------------------------------------
    def compact(
        self,
        group: str,
        n: int,
        ro_rows: dict[str, dict[str, Any] | None],
    ) -> tuple[list[str], bool]:
        """Apply a completed compaction of ``group``'s first ``n`` units.

        Returns:
            ``(problems, carried)``: what is inconsistent (empty when all is well), and whether the model expects a
            carry-over log at the head of the group's new slice.

        Args:
            group: the file group.
            n: the plan's number of compacted logs for it.
            ro_rows: the table's RO row (or ``None``) of every key of the group after the compaction.
        """
        g = self.groups.setdefault(group, Group())
        if n > len(g.units):
            return [f"group {group}: the plan compacted {n} logs, the model knows {len(g.units)}"], False
        prefix, rest = g.units[:n], g.units[n:]
        carry: list[Rec] = []
        problems: list[str] = []
        keys = {r.key for u in prefix for r in u}
        for k in sorted(keys):
            m = self.log_merge([r for u in prefix for r in u if r.key == k])
            assert m is not None
            b = g.base.get(k)
            compacted = self.final_merge(b, m)
            seen = ro_rows.get(k)
            same_as_b = _row(b) == seen
            same_as_compacted = _row(compacted) == seen
            if same_as_compacted and (not same_as_b or _row(b) == _row(compacted)):
                if compacted is None:
                    g.base.pop(k, None)
                else:
                    g.base[k] = compacted
                replaced = b is None or _row(compacted) != _row(b) or compacted is None
                if self.event_time and ((m.tombstone and replaced) or m.kind == "ct"):
                    # A commit-time delete drops the deletes after it: a later one, landed or still to come, must
                    # meet it.
                    carry.append(m)
            elif same_as_b:
                carry.append(m)  # kept form: the base row stays, the prefix's winner is carried
            else:
                problems.append(
                    f"group {group}, key {k}: RO row {seen} is neither the old base row {_row(b)} nor the compacted "
                    f"row {_row(compacted)}"
                )
        g.units = ([carry] if carry else []) + rest
        return problems, bool(carry)


def _row(rec: Rec | None) -> dict[str, Any] | None:
    """The row a reader shows (the soft-delete flag is not part of it)."""
    if rec is None or not rec.live or rec.row is None:
        return None
    return {k: v for k, v in rec.row.items() if k != "_hoodie_is_deleted"}
