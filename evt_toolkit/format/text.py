"""Times, counts, sizes and durations as people read them — one set of formatters for the CLI, the widgets and
the preview's summary text. Pure functions.

Example:
    >>> format_ms(1357344000000), format_count(1234567), format_bytes(1536), format_duration(12_000_000)
    ('2013-01-05T00:00:00.000Z', '1,234,567', '1.5 KiB', '3 h 20 min')
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["format_bytes", "format_count", "format_duration", "format_ms", "iso_ms"]


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as an ISO-8601 UTC string (``...Z``)."""
    dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_ms(ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC (``2013-01-01T05:00:00.000Z``), ``-`` for ``None``.

    Example:
        >>> format_ms(1357016400000)
        '2013-01-01T05:00:00.000Z'
    """
    return "-" if ms is None else iso_ms(int(ms))


def format_count(n: int | None) -> str:
    """A count with thousands separators, ``-`` for ``None``.

    Example:
        >>> format_count(4890083)
        '4,890,083'
    """
    return "-" if n is None else f"{int(n):,}"


def format_duration(ms: int | float | None) -> str:
    """A duration the way a person says it: ``45 s``, ``12 min``, ``3 h 20 min``, ``5 d 4 h``, ``13.9 years``.

    Example:
        >>> format_duration(438_254_421_000), format_duration(12_000_000)
        ('13.9 years', '3 h 20 min')
    """
    if ms is None:
        return "-"
    sign = "-" if ms < 0 else ""
    s = abs(float(ms)) / 1000
    if s < 1:
        return f"{sign}{abs(float(ms)):.0f} ms"
    if s < 60:
        return f"{sign}{s:.0f} s"
    minutes, hours, days = s / 60, s / 3600, s / 86400
    if minutes < 60:
        return f"{sign}{minutes:.0f} min"
    if hours < 24:
        h, m = divmod(round(minutes), 60)
        return f"{sign}{h} h" + (f" {m} min" if m else "")
    if days < 365:
        d, h = divmod(round(hours), 24)
        return f"{sign}{d} d" + (f" {h} h" if h else "")
    return f"{sign}{days / 365.25:.1f} years"


def format_bytes(n: int | None) -> str:
    """Bytes in binary units (``1.5 MiB``); ``-`` for unknown.

    Example:
        >>> format_bytes(1536)
        '1.5 KiB'
    """
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
