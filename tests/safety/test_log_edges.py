"""The log reader at the edges of a log file, as stock Hudi's ``HoodieLogFileReader`` reads them.

Drives, on copies of a stock version-6 table (``logshapes.Shaper``): fewer than six stray bytes after a log's last
block (a crashed append that got no further than part of a magic), and a log file that starts with bytes that are
not a magic. Checks:

* a short tail is the end of the file, as Java's ``hasNext`` (``readMagic`` hitting EOF) says: no corrupt block,
  the snapshot equals the model and hudi-rs, and an event-time compaction over the log is scheduled, run and keeps
  the snapshot (it was refused as a corrupt block);
* a log that does not start with a magic is an error naming the file (Java's ``CorruptedLogFileException``, hudi-rs's
  "Invalid magic"), for the block scan, the snapshot, the preview and the schedule, which write nothing — never a
  partial answer that reads on past the garbage.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.errors import LogFormatError
from evt_toolkit.format.logfile import BlockType, read_log_blocks_bytes
from tests.conftest import SKIP_NO_SHARED
from tests.normalize import assert_same_rows
from tests.safety.logshapes import COLUMNS, FIRST_LOG, PARTITION, Shaper, log_name

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

T0 = 1695046462179  # the event time (ts) of the fixture's one log record
I1 = "20250401000000000"


def _same(got: pa.Table, want: pa.Table, what: str) -> None:
    assert_same_rows(got.select(list(COLUMNS)), want.select(list(COLUMNS)), list(COLUMNS), what)


def _rs(path: Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _commit(s: Shaper, name: str, prefix: bytes = b"") -> None:
    up = s.updates(s.sf_keys()[:2], fare=2.0, ts=T0 - 100)
    s.requested(I1)
    off, size = s.append(name, prefix + s.data_block(I1, up))
    s.complete(I1, [(name, off, size, len(up), 0)], up)


@SKIP_NO_SHARED
@pytest.mark.parametrize("tail", [b"#", b"#HU", b"#HUDI", b"\x00\x00\x00\x00\x00"])
def test_fewer_than_six_trailing_bytes_are_the_end_of_the_log(tmp_path: Path, tail: bytes) -> None:
    s = Shaper.copy(tmp_path)
    _commit(s, FIRST_LOG)
    s.append(FIRST_LOG, tail)
    path = s.root / PARTITION / FIRST_LOG
    blocks = read_log_blocks_bytes(path.read_bytes(), str(path))
    assert all(b.block_type is not BlockType.CORRUPT for b in blocks), [b.corrupt_reason for b in blocks]
    t = evt.HudiTable.open(s.root)
    _same(t.read(), s.model(), "snapshot")
    _same(_rs(s.root), s.model(), "hudi-rs snapshot")
    strategy = EventTimeBasedCompactionStrategy(threshold=T0 + 10**9, event_time_field="ts")
    assert t.compaction.preview(strategy).summary.logs_corrupt_compacted == 0
    c = t.compaction.schedule(strategy)
    assert c is not None
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    _same(t.refresh().read(), s.model(), "snapshot after the compaction")
    _same(_rs(s.root), s.model(), "hudi-rs after the compaction")


def test_a_log_not_starting_with_a_magic_is_an_error_naming_it() -> None:
    from tests.format.test_logfile import command_block

    good = command_block("2", "1")
    for junk in (b"NOTMAGIC", b"#HUDX#", b"\x00" * 6, b"x" * 40):
        with pytest.raises(LogFormatError, match=r"magic") as err:
            read_log_blocks_bytes(junk + good, "junk.log")
        assert err.value.path == "junk.log" and err.value.offset == 0
    with pytest.raises(LogFormatError, match=r"magic"):
        read_log_blocks_bytes(b"garbage that is not a log file at all", "g.log")


@SKIP_NO_SHARED
def test_a_table_log_starting_with_garbage_is_refused_naming_it(tmp_path: Path) -> None:
    s = Shaper.copy(tmp_path)
    name = log_name(2, "0-40-100")
    _commit(s, name, prefix=b"GARBAGE BYTES")
    t = evt.HudiTable.open(s.root)
    before = _files(s.root)
    with pytest.raises(LogFormatError) as err:
        t.read()
    assert name in str(err.value)
    strategy = EventTimeBasedCompactionStrategy(threshold=T0 + 10**9, event_time_field="ts")
    with pytest.raises(LogFormatError) as err:
        t.compaction.preview(strategy)
    assert name in str(err.value)
    with pytest.raises(LogFormatError) as err:
        t.compaction.schedule(strategy)
    assert name in str(err.value)
    assert _files(s.root) == before, "a refused schedule wrote"
