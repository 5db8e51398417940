"""The RFC's compaction metrics (HUDI-6979, design §1.5) and their Prometheus text exposition.

Five figures over the logs that no compaction has merged yet — the *remaining* logs of the latest file slices:

a. the minimum event time over them (what the next event-time compaction could at least reach);
b. how many file slices have any;
c. their total size in bytes;
d. how many log files there are;
e. the RO freshness T (:func:`~evt_toolkit.compaction.freshness.ro_freshness`),

plus the freshness lag (now − T) and the late records (events ≤ T written after the compaction was scheduled,
only in logs).

"Latest file slices" are the merged slices snapshot readers use: during a pending compaction the old slice's logs
are not merged yet and count as remaining; links that a pending plan created at schedule time duplicate their
targets in that merged slice and are counted once. After the compaction completes, its links *are* the remaining
logs of the new slice and count as such.

Example:
    >>> import evt_toolkit as evt
    >>> m = evt.HudiTable.open("/data/trips").metrics()  # doctest: +SKIP
    >>> print(m.to_prometheus())  # doctest: +SKIP
    # HELP evt_hudi_remaining_log_files Log files in the latest file slices not merged by any compaction yet.
    # TYPE evt_hudi_remaining_log_files gauge
    evt_hudi_remaining_log_files{table="trips"} 12
    ...
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from evt_toolkit.compaction.event_times import slice_infos
from evt_toolkit.compaction.freshness import Freshness, completed_compactions, pending_link_targets, ro_freshness
from evt_toolkit.compaction.plan import EXTRA_EVENT_TIME_FIELD

if TYPE_CHECKING:
    from evt_toolkit.table.table import Table

__all__ = ["METRICS_SCHEMA", "TableMetrics", "metrics"]

METRICS_SCHEMA = pa.schema(
    [
        pa.field("table", pa.string()),
        pa.field("path", pa.string()),
        pa.field("computed_at_ms", pa.int64()),
        pa.field("min_remaining_event_time_ms", pa.int64()),
        pa.field("slices_with_remaining_logs", pa.int64()),
        pa.field("remaining_log_bytes", pa.int64()),
        pa.field("remaining_log_files", pa.int64()),
        pa.field("ro_freshness_ms", pa.int64()),
        pa.field("freshness_lag_ms", pa.int64()),
        pa.field("late_records", pa.int64()),
        pa.field("slices_total", pa.int64()),
        pa.field("remaining_logs_unknown_min", pa.int64()),
        pa.field("pending_compactions", pa.int64()),
        pa.field("last_event_time_compaction", pa.string()),
        pa.field("serial_rule_held", pa.bool_()),
        pa.field("freshness_reason", pa.string()),
    ]
)
"""Columns of :meth:`TableMetrics.as_arrow` (one row)."""


@dataclass(frozen=True, slots=True)
class TableMetrics:
    """The RFC's figures for one table at one moment.

    Attributes:
        table: ``hoodie.table.name``.
        path: the base path.
        computed_at_ms: wall clock when taken (epoch ms).
        min_remaining_event_time_ms: (a) min event time over the remaining logs (``None``: none, or none known).
        slices_with_remaining_logs: (b) file slices with at least one remaining log.
        remaining_log_bytes: (c) total bytes of those logs.
        remaining_log_files: (d) number of those logs.
        ro_freshness_ms: (e) RO freshness T (``None`` when not published; see ``freshness_reason``).
        freshness_lag_ms: ``computed_at_ms − T``.
        late_records: records ≤ T written after the compaction was scheduled, still only in logs.
        slices_total: all latest file slices.
        remaining_logs_unknown_min: remaining logs with data but no known min event time (they could hold the
            minimum; (a) covers only known values).
        pending_compactions: requested or inflight compactions.
        last_event_time_compaction: the compaction T comes from.
        serial_rule_held: see :class:`~evt_toolkit.compaction.freshness.Freshness`.
        freshness_reason: why T is not published.
    """

    table: str
    path: str
    computed_at_ms: int
    min_remaining_event_time_ms: int | None
    slices_with_remaining_logs: int
    remaining_log_bytes: int
    remaining_log_files: int
    ro_freshness_ms: int | None
    freshness_lag_ms: int | None
    late_records: int
    slices_total: int
    remaining_logs_unknown_min: int
    pending_compactions: int
    last_event_time_compaction: str | None
    serial_rule_held: bool
    freshness_reason: str | None

    def as_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict (keys as in :data:`METRICS_SCHEMA`).

        Example:
            >>> m.as_dict()["remaining_log_files"]  # doctest: +SKIP
            12
        """
        return asdict(self)

    def as_arrow(self) -> pa.Table:
        """One-row Arrow table (:data:`METRICS_SCHEMA`), handy to append to a history of figures."""
        d = self.as_dict()
        return pa.table({f.name: [d[f.name]] for f in METRICS_SCHEMA}, schema=METRICS_SCHEMA)

    def to_prometheus(self, prefix: str = "evt_hudi_") -> str:
        """The figures in Prometheus' text exposition format (version 0.0.4), one gauge per figure.

        Times are exported in seconds, Prometheus' base unit (``..._seconds``); unknown values are ``NaN`` so
        the series stays present while e.g. no freshness is published. Every sample carries a ``table`` label.

        Args:
            prefix: metric name prefix.

        Example:
            >>> m.to_prometheus().splitlines()[0]  # doctest: +SKIP
            '# HELP evt_hudi_remaining_logs_min_event_time_seconds Minimum event time ...'
        """
        label = '{table="' + _escape_label(self.table) + '"}'
        lines: list[str] = []
        for name, help_text, value in self._samples():
            metric = prefix + name
            lines.append(f"# HELP {metric} {_escape_help(help_text)}")
            lines.append(f"# TYPE {metric} gauge")
            lines.append(f"{metric}{label} {_format_value(value)}")
        return "\n".join(lines) + "\n"

    def write_prometheus(self, path: str | os.PathLike[str], prefix: str = "evt_hudi_") -> None:
        """Write :meth:`to_prometheus` to a local file atomically (temp file + rename).

        A node_exporter textfile collector must never read a half-written file, hence the rename.

        Example:
            >>> m.write_prometheus("/var/lib/node_exporter/textfile/trips.prom")  # doctest: +SKIP
        """
        target = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(target))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".evt-metrics-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(self.to_prometheus(prefix))
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def _samples(self) -> list[tuple[str, str, float | int | None]]:
        def seconds(ms: int | None) -> float | None:
            return None if ms is None else ms / 1000.0

        return [
            (
                "remaining_logs_min_event_time_seconds",
                "Minimum event time (epoch seconds) over the log files not merged by any compaction yet.",
                seconds(self.min_remaining_event_time_ms),
            ),
            (
                "file_slices_with_remaining_logs",
                "Latest file slices that still have log files.",
                self.slices_with_remaining_logs,
            ),
            ("remaining_log_bytes", "Total size in bytes of the remaining log files.", self.remaining_log_bytes),
            (
                "remaining_log_files",
                "Log files in the latest file slices not merged by any compaction yet.",
                self.remaining_log_files,
            ),
            (
                "ro_freshness_seconds",
                "RO freshness T (epoch seconds): the read-optimized view holds every event up to T, except late "
                "records.",
                seconds(self.ro_freshness_ms),
            ),
            ("ro_freshness_lag_seconds", "Now minus the RO freshness T, in seconds.", seconds(self.freshness_lag_ms)),
            (
                "late_records",
                "Records with event time <= T written after the compaction was scheduled (only in logs).",
                self.late_records,
            ),
            ("file_slices", "Latest file slices.", self.slices_total),
            (
                "remaining_logs_unknown_min_event_time",
                "Remaining log files with data but no known minimum event time.",
                self.remaining_logs_unknown_min,
            ),
            ("pending_compactions", "Requested or inflight compactions.", self.pending_compactions),
            (
                "serial_rule_held",
                "1 when the last event-time compaction ran with no other compaction or clustering pending.",
                1 if self.serial_rule_held else 0,
            ),
        ]

    def text(self) -> str:
        """A few lines for the CLI or a notebook."""
        from evt_toolkit.compaction.strategy import iso_ms

        def when(ms: int | None) -> str:
            return "-" if ms is None else iso_ms(ms)

        fresh = when(self.ro_freshness_ms) if self.ro_freshness_ms is not None else f"none ({self.freshness_reason})"
        return "\n".join(
            [
                f"(a) min event time over remaining logs: {when(self.min_remaining_event_time_ms)}"
                + (
                    f" ({self.remaining_logs_unknown_min} log(s) of unknown min)"
                    if self.remaining_logs_unknown_min
                    else ""
                ),
                f"(b) file slices with remaining logs: {self.slices_with_remaining_logs} of {self.slices_total}",
                f"(c) remaining log bytes: {self.remaining_log_bytes}",
                f"(d) remaining log files: {self.remaining_log_files}",
                f"(e) RO freshness: {fresh}",
                f"lag: {'-' if self.freshness_lag_ms is None else f'{self.freshness_lag_ms / 1000:.0f} s'}; "
                f"late records: {self.late_records}",
            ]
        )


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _format_value(value: float | int | None) -> str:
    if value is None:
        return "NaN"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def metrics(table: Table, now_ms: int | None = None, *, freshness: Freshness | None = None) -> TableMetrics:
    """The RFC's five figures, freshness lag and late records of ``table``.

    Args:
        table: the table.
        now_ms: "now" for the lag (default: the wall clock).
        freshness: an already computed :func:`ro_freshness` (saves a second pass over late logs).

    Example:
        >>> m = metrics(t)  # doctest: +SKIP
        >>> m.remaining_log_files, m.ro_freshness_ms  # doctest: +SKIP
        (3, 1735689600000)
    """
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    fresh = freshness if freshness is not None else ro_freshness(table, now_ms=now)
    # The event-time field the last event-time compaction recorded (what its freshness is measured on), else the
    # table's: a stock table carries none in hoodie.properties.
    event_time = [c for c in completed_compactions(table) if c.is_event_time]
    recorded = event_time[-1].extra_metadata.get(EXTRA_EVENT_TIME_FIELD) if event_time else None
    slices = slice_infos(table, recorded or table.config.event_time_field)
    links = pending_link_targets(table)
    min_et: int | None = None
    with_logs = log_bytes = log_files = unknown = 0
    for s in slices:
        own = links.get((s.partition_path, s.file_id), {})
        names = {lf.name for lf in s.log_files}
        logs = [lf for lf in s.log_files if not (lf.name in own and own[lf.name] in names)]
        if not logs:
            continue
        with_logs += 1
        log_files += len(logs)
        log_bytes += sum(lf.size for lf in logs)
        for lf in logs:
            if not lf.has_data:
                continue
            if lf.min_event_time is None:
                unknown += 1
            elif min_et is None or lf.min_event_time < min_et:
                min_et = lf.min_event_time
    t = fresh.threshold_ms
    return TableMetrics(
        table=table.config.name,
        path=table.path,
        computed_at_ms=now,
        min_remaining_event_time_ms=min_et,
        slices_with_remaining_logs=with_logs,
        remaining_log_bytes=log_bytes,
        remaining_log_files=log_files,
        ro_freshness_ms=t,
        freshness_lag_ms=None if t is None else now - t,
        late_records=fresh.late_records,
        slices_total=len(slices),
        remaining_logs_unknown_min=unknown,
        pending_compactions=len(table.timeline.pending_compactions()),
        last_event_time_compaction=fresh.instant,
        serial_rule_held=fresh.serial_rule_held,
        freshness_reason=fresh.reason,
    )
