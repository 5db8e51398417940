"""A base file whose Parquet footer holds a field name that is not UTF-8 (a flipped byte) makes a read fail with a
ReadError naming the file, in snapshot, read-optimized and projected reads, never a bare UnicodeDecodeError."""

from __future__ import annotations

from pathlib import Path

import pytest

from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import ReadError
from tests.tables import create, rows


@pytest.mark.parametrize("query", ["snapshot", "read_optimized", "projection"])
def test_base_file_with_a_non_utf8_field_name_is_a_read_error(tmp_path: Path, query: str) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1)
    t.write(rows(range(4), 10, 100))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    base = sorted(p for p in (tmp_path / "t").rglob("*.parquet") if ".hoodie" not in p.parts)[0]
    raw = base.read_bytes()
    assert raw.count(b"region") >= 1
    base.write_bytes(raw.replace(b"region", b"re\xb9ion"))  # same length: the footer still parses
    t.refresh()
    with pytest.raises(ReadError, match=base.name):
        if query == "projection":
            t.read(columns=["id", "v"])
        else:
            t.read(query)
