"""New instant times for writes, as ``HoodieInstantTimeGenerator.createNewInstantTime`` makes them.

An instant is ``yyyyMMddHHmmssSSS`` (17 digits) in UTC when ``hoodie.table.timeline.timezone=UTC``, else in the
machine's local time. Java's generator spins until the clock passes the last instant it issued; we instead step one
millisecond past the largest instant already on the timeline (or already issued by this process), so a timeline
holding an instant from the future (clock skew on another writer) cannot make us wait or go backwards.

Example (a table of its own, ``scope``: what this process issued for other tables does not count):
    >>> from datetime import datetime, UTC
    >>> new_instant_time(["20250101000000000"], "UTC", now=datetime(2024, 1, 1, tzinfo=UTC), scope="file:/doc/t")
    '20250101000000001'
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from evt_toolkit.errors import TimelineError
from evt_toolkit.table.timeline import Instant

__all__ = ["format_instant", "new_instant_time", "parse_instant", "step_instant", "timeline_times"]

_lock = threading.Lock()
#: The last instant issued per table (base URI), as Hudi keeps one ``TimeGenerator`` per base path: another table's
#: instants, even ones far in the future, never move this table's clock.
_last_issued: dict[str, str] = {}


def format_instant(moment: datetime) -> str:
    """Format a moment as a 17-digit instant (``yyyyMMddHHmmssSSS``), in the moment's own time zone.

    Example:
        >>> format_instant(datetime(2025, 3, 31, 3, 6, 42, 808000))
        '20250331030642808'
    """
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


def parse_instant(instant: str) -> datetime:
    """Parse a 14- or 17-digit instant (or the first 17 digits of a longer metadata-table instant) as naive time.

    Raises:
        TimelineError: the text is not an instant.

    Example:
        >>> parse_instant("20250331030642808")
        datetime.datetime(2025, 3, 31, 3, 6, 42, 808000)
    """
    digits = instant[:17]
    if not digits.isdigit() or len(digits) not in (14, 17):
        raise TimelineError(f"{instant!r} is not an instant time (yyyyMMddHHmmss[SSS])")
    try:
        moment = datetime.strptime(digits[:14], "%Y%m%d%H%M%S")
    except ValueError as exc:
        raise TimelineError(f"{instant!r} is not an instant time: {exc}") from None
    return moment + timedelta(milliseconds=int(digits[14:] or 0))


def step_instant(instant: str) -> str:
    """The smallest 17-digit instant strictly greater than ``instant`` (by Hudi's string comparison).

    Hudi's special instants (``00000000000000`` INIT, ``…01``, ``…02`` bootstrap) sort before every real time, so
    any real time is already greater than them.

    Example:
        >>> step_instant("20251231235959999"), step_instant("20250101000000")
        ('20260101000000000', '20250101000000000')
    """
    if len(instant) == 14 and instant.isdigit():
        # "yyyyMMddHHmmss" < "yyyyMMddHHmmss000" as strings, so padding is already strictly greater.
        return instant + "000"
    if instant[:14] == "0" * 14:
        return "19700101000000000"
    return format_instant(parse_instant(instant) + timedelta(milliseconds=1))


def new_instant_time(
    existing: Iterable[str], timezone: str = "LOCAL", *, now: datetime | None = None, scope: str = ""
) -> str:
    """A new instant strictly greater than every instant in ``existing`` and every one this process issued in ``scope``.

    Args:
        existing: instant times already on the timeline (any state, any action).
        timezone: ``hoodie.table.timeline.timezone``: ``UTC`` or ``LOCAL``.
        now: the current time (for tests); defaults to the clock.
        scope: the table the instant is for (its base URI).

    Returns:
        A 17-digit instant.

    Example:
        >>> a = new_instant_time([], "UTC")
        >>> b = new_instant_time([a], "UTC")
        >>> a < b
        True
    """
    if now is None:
        now = datetime.now(UTC)
    if timezone.strip().upper() == "UTC":
        moment = now.astimezone(UTC) if now.tzinfo is not None else now
    else:
        moment = now.astimezone() if now.tzinfo is not None else now
    candidate = format_instant(moment)
    with _lock:
        floor = max([_last_issued.get(scope, ""), *existing], default="")
        if floor and candidate <= floor:
            candidate = step_instant(floor)
        _last_issued[scope] = candidate
    return candidate


def timeline_times(instants: Iterable[Instant]) -> list[str]:
    """Every requested and completion time of ``instants`` (``Instant`` s): a new instant must exceed them all.

    On timeline layout 2 Hudi's ``TimeGenerator`` issues requested and completion times from one clock, so a new
    requested time is later than every completion time too (docs/hudi-1x.md §2).
    """
    out: list[str] = []
    for inst in instants:
        out.append(inst.time)
        if inst.completion_time:
            out.append(inst.completion_time)
    return out
