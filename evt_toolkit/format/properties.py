"""Java ``.properties`` codec and the ``hoodie.properties`` file of a Hudi table.

``parse_properties`` follows ``java.util.Properties.load`` and ``dump_properties`` follows ``Properties.store``, so a
file written here is read back identically by Hudi's ``HoodieTableConfig`` and vice versa.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

from evt_toolkit.errors import TableConfigError

__all__ = [
    "HOODIE_PROPERTIES",
    "HOODIE_PROPERTIES_BACKUP",
    "dump_properties",
    "parse_properties",
    "table_checksum",
    "validate_checksum",
]

HOODIE_PROPERTIES = ".hoodie/hoodie.properties"
HOODIE_PROPERTIES_BACKUP = ".hoodie/hoodie.properties.backup"
TABLE_CHECKSUM_KEY = "hoodie.table.checksum"

_WHITESPACE = " \t\f"
_ESCAPED_CONTROL = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterator[str]:
    """Yield logical lines as ``Properties.LineReader`` does.

    Comment lines (first non-blank char ``#`` or ``!``) and blank lines are skipped; a line ending in an odd number of
    backslashes continues on the next natural line, whose leading whitespace is dropped. A comment line never
    continues, even when it ends in a backslash.
    """
    buf: list[str] = []
    skip_white = True
    is_comment = False
    is_new_line = True
    appended_line_begin = False
    preceding_backslash = False
    skip_lf = False
    for c in text:
        if skip_lf:
            skip_lf = False
            if c == "\n":
                continue
        if skip_white:
            if c in _WHITESPACE:
                continue
            if not appended_line_begin and c in "\r\n":
                continue
            skip_white = False
            appended_line_begin = False
        if is_new_line:
            is_new_line = False
            if c in "#!":
                is_comment = True
                continue
        if c not in "\r\n":
            buf.append(c)
            preceding_backslash = (not preceding_backslash) if c == "\\" else False
            continue
        # End of a natural line.
        if is_comment or not buf:
            is_comment = False
            is_new_line = True
            skip_white = True
            buf.clear()
            preceding_backslash = False
            continue
        if preceding_backslash:
            buf.pop()
            skip_white = True
            appended_line_begin = True
            preceding_backslash = False
            if c == "\r":
                skip_lf = True
            continue
        yield "".join(buf)
        buf.clear()
        is_new_line = True
        skip_white = True
    if buf and not is_comment:
        if preceding_backslash:
            buf.pop()
        yield "".join(buf)


def _load_convert(s: str, line: str) -> str:
    """Undo ``saveConvert`` escapes (``Properties.loadConvert``)."""
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        if i >= n:
            break  # a dangling backslash escapes nothing
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i : i + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"malformed \\uxxxx encoding in line {line!r}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPED_CONTROL.get(c, c))
    text = "".join(out)
    # \uXXXX escapes are UTF-16 code units: join surrogate pairs into single characters, keep lone ones.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def parse_properties(text: str) -> dict[str, str]:
    """Parse a Java properties document with ``java.util.Properties.load`` semantics.

    Args:
        text: the document (Java reads ``hoodie.properties`` as ISO-8859-1; decode bytes accordingly).

    Returns:
        Keys to values, in file order; a repeated key keeps its last value.

    Raises:
        ValueError: on a malformed ``\\uXXXX`` escape (Java's IllegalArgumentException).

    Example:
        >>> parse_properties("#c\\na\\\\:b = x\\\\:y\\n")
        {'a:b': 'x:y'}
    """
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        limit = len(line)
        key_len = 0
        value_start = limit
        has_sep = False
        preceding_backslash = False
        while key_len < limit:
            c = line[key_len]
            if c in "=:" and not preceding_backslash:
                value_start = key_len + 1
                has_sep = True
                break
            if c in _WHITESPACE and not preceding_backslash:
                value_start = key_len + 1
                break
            preceding_backslash = (not preceding_backslash) if c == "\\" else False
            key_len += 1
        while value_start < limit:
            c = line[value_start]
            if c not in _WHITESPACE:
                if not has_sep and c in "=:":
                    has_sep = True
                else:
                    break
            value_start += 1
        props[_load_convert(line[:key_len], line)] = _load_convert(line[value_start:], line)
    return props


def _to_utf16_units(s: str) -> str:
    """Split non-BMP characters into surrogate pairs, as a Java ``String`` holds them."""
    if all(ord(c) < 0x10000 for c in s):
        return s
    return "".join(c if ord(c) < 0x10000 else _surrogate_pair(c) for c in s)


def _surrogate_pair(c: str) -> str:
    v = ord(c) - 0x10000
    return chr(0xD800 + (v >> 10)) + chr(0xDC00 + (v & 0x3FF))


def _save_convert(s: str, escape_space: bool) -> str:
    """Escape a key or value like ``Properties.saveConvert`` with ``escUnicode=true``."""
    out: list[str] = []
    for x, c in enumerate(_to_utf16_units(s)):
        o = ord(c)
        if 61 < o < 127:
            out.append("\\\\" if c == "\\" else c)
            continue
        if c == " ":
            out.append("\\ " if x == 0 or escape_space else " ")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif c in "=:#!":
            out.append("\\" + c)
        elif o < 0x20 or o > 0x7E:
            out.append(f"\\u{o:04X}")
        else:
            out.append(c)
    return "".join(out)


def _comment_lines(comment: str) -> str:
    """Format a header comment like ``Properties.writeComments``: every line starts with ``#``."""
    out: list[str] = ["#"]
    units = _to_utf16_units(comment)
    i, n = 0, len(units)
    while i < n:
        c = units[i]
        if c in "\r\n":
            if c == "\r" and i + 1 < n and units[i + 1] == "\n":
                i += 1
            out.append("\n")
            if i + 1 >= n or units[i + 1] not in "#!":
                out.append("#")
        elif ord(c) > 0x7E:
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
        i += 1
    return "".join(out) + "\n"


def _java_date(now: datetime) -> str:
    """``java.util.Date.toString()`` in UTC, e.g. ``Mon Mar 31 03:06:42 UTC 2025``."""
    return now.astimezone(UTC).strftime("%a %b %d %H:%M:%S UTC %Y")


def dump_properties(props: Mapping[str, str], header_comment: str | None = None) -> str:
    """Serialize like ``java.util.Properties.store``.

    Args:
        props: keys to values, written in the mapping's order.
        header_comment: written as the first ``#`` line (Hudi uses ``"Properties saved on <instant>"``); ``None``
            writes only the date line.

    Returns:
        The document text, ``\\n`` line endings, ASCII only (non-ASCII is ``\\uXXXX``-escaped).

    Example:
        >>> dump_properties({"a": "x:y"}).splitlines()[1]
        'a=x\\\\:y'
    """
    parts: list[str] = []
    if header_comment is not None:
        parts.append(_comment_lines(header_comment))
    parts.append("#" + _java_date(datetime.now(UTC)) + "\n")
    for key, value in props.items():
        parts.append(f"{_save_convert(key, True)}={_save_convert(value, False)}\n")
    return "".join(parts)


def table_checksum(table_name: str, database: str | None) -> int:
    """``HoodieTableConfig.generateChecksum``: CRC32 of the UTF-8 bytes of ``"<database>.<table>"``.

    Args:
        table_name: ``hoodie.table.name``.
        database: ``hoodie.database.name``, or ``None`` (treated as the empty string).

    Example:
        >>> table_checksum("v6_trips_8i1u", "default")
        3843273058
    """
    return zlib.crc32(f"{database or ''}.{table_name}".encode()) & 0xFFFFFFFF


def validate_checksum(props: Mapping[str, str], source: str) -> None:
    """Check ``hoodie.table.checksum`` as ``HoodieTableConfig.validateChecksum`` does (mandatory, numeric, equal).

    Raises:
        TableConfigError: naming ``source`` when the checksum is missing, not a number or wrong.
    """
    raw = props.get(TABLE_CHECKSUM_KEY)
    if raw is None:
        raise TableConfigError(f"{source}: missing {TABLE_CHECKSUM_KEY}")
    try:
        stored = int(raw.strip())
    except ValueError:
        raise TableConfigError(f"{source}: {TABLE_CHECKSUM_KEY}={raw!r} is not a number") from None
    name = props.get("hoodie.table.name")
    if name is None:
        raise TableConfigError(f"{source}: missing hoodie.table.name")
    expected = table_checksum(name, props.get("hoodie.database.name"))
    if stored != expected:
        raise TableConfigError(
            f"{source}: {TABLE_CHECKSUM_KEY}={stored} does not match the table name (expected {expected})"
        )
