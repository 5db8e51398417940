"""Compaction preview: no writes, exact agreement with the scalar prefix rule, bytes, links and freshness."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evt_toolkit.compaction.model import LogFileInfo, SliceInfo, SliceSet
from evt_toolkit.compaction.prefix import select_prefix
from evt_toolkit.compaction.preview import PER_LOG_SCHEMA, PER_SLICE_SCHEMA, PreviewModel, preview
from evt_toolkit.compaction.strategy import (
    BoundedIOCompactionStrategy,
    EventTimeBasedCompactionStrategy,
    InvalidThresholdError,
    LogFileSizeBasedCompactionStrategy,
)
from evt_toolkit.errors import PlanValidationError
from tests.conftest import SKIP_NO_SHARED, fixture_table_path

EXAMPLES = int(os.environ.get("EVT_PROPERTY_EXAMPLES", "50"))
NOW = 10**13
MB = 1024 * 1024


def log(fid: str, v: int, mn: int | None, *, size: int = 100, data: bool = True, mx: int | None = None) -> LogFileInfo:
    return LogFileInfo.synthetic(fid, v, size=size, min_event_time=mn, has_data=data, max_event_time=mx)


def example() -> list[SliceInfo]:
    return [
        SliceInfo("p", "a", "1", "a.parquet", 1000, (log("a", 1, 10), log("a", 2, 60, size=200), log("a", 3, 20))),
        SliceInfo("p", "b", "1", None, None, (log("b", 1, 70, size=50),)),
        SliceInfo("p", "c", "1", "c.parquet", 500, ()),
        SliceInfo("p", "d", "1", "d.parquet", 300, (log("d", 1, 1),), pending_compaction="5"),
    ]


def test_example_figures() -> None:
    p = preview(example(), EventTimeBasedCompactionStrategy(threshold=30), now_ms=NOW, link_mode="copy")
    assert p.per_slice.schema == PER_SLICE_SCHEMA
    assert p.per_log.schema == PER_LOG_SCHEMA
    rows = p.per_slice.to_pylist()
    a, b, c, d = rows
    assert (a["logs_compacted"], a["logs_remaining"], a["logs_forced"]) == (3, 0, 1)
    assert a["bytes_read"] == 1000 + 400
    assert a["bytes_written_estimate"] == 1000 + round(400 * 0.35)
    assert a["links"] == 0 and not a["partial"]
    assert (b["selected"], b["links"], b["remaining_log_files"]) == (
        False,
        0,
        [".b_20250101000000000.log.1_0-0-0"],
    )
    assert not c["candidate"] and not d["candidate"] and d["pending_compaction"] == "5"
    assert b["full_bytes_read"] == 50 and b["full_bytes_written_estimate"] == round(50 * 0.35)
    s = p.summary
    assert (s.slices_candidate, s.slices_selected, s.logs_total, s.logs_compacted, s.logs_forced) == (2, 1, 5, 3, 1)
    assert s.full_logs_compacted == 4 and s.full_slices == 2
    # d is held by a pending compaction: its logs ≤ T stay out, so no freshness can be promised.
    assert s.ro_freshness_ms is None and any("pending compaction" in b for b in s.freshness_blockers)
    assert "RO freshness: not promised" in p.summary_text()


def test_partial_slice_links_and_modes() -> None:
    slices = example()[:2]
    copy = preview(slices, EventTimeBasedCompactionStrategy(threshold=15), now_ms=NOW)
    a = copy.per_slice.to_pylist()[0]
    assert (a["logs_compacted"], a["links"], a["link_bytes_copied"], a["partial"]) == (1, 2, 300, True)
    assert a["compacted_log_files"] == [".a_20250101000000000.log.1_0-0-0"]
    assert a["min_event_time_remaining"] == 20
    assert copy.per_log.column("link_version").to_pylist() == [None, 1, 2, None]
    assert copy.summary.ro_freshness_ms == 15
    assert "every event ≤ 1970-01-01T00:00:00.015Z" in copy.summary_text()
    sym = preview(slices, EventTimeBasedCompactionStrategy(threshold=15), now_ms=NOW, link_mode="symlink")
    assert sym.summary.link_bytes_copied == 0 and sym.summary.links == 2
    with pytest.raises(PlanValidationError):
        preview(slices, EventTimeBasedCompactionStrategy(threshold=15), link_mode="hard")


def test_freshness_blockers() -> None:
    unknown = [SliceInfo("p", "a", "1", None, None, (log("a", 1, 5), log("a", 2, None)))]
    p = preview(unknown, EventTimeBasedCompactionStrategy(threshold=10), now_ms=NOW)
    assert p.summary.ro_freshness_ms is None and p.summary.unknown_min_remaining == 1
    p = preview(example()[:2], EventTimeBasedCompactionStrategy(threshold=10), now_ms=NOW, pending_table_services=["7"])
    assert p.summary.ro_freshness_ms is None and "serial" in p.summary.freshness_blockers[0]
    uncommitted = LogFileInfo(
        **{**{f: getattr(log("u", 1, 1), f) for f in LogFileInfo.__slots__}, "uncommitted_blocks": 1}
    )
    p = preview(
        [SliceInfo("p", "u", "1", None, None, (uncommitted,))],
        EventTimeBasedCompactionStrategy(threshold=10),
        now_ms=NOW,
    )
    assert p.summary.ro_freshness_ms is None and "not yet committed" in p.summary.freshness_blockers[0]
    hudi = preview(example(), LogFileSizeBasedCompactionStrategy())
    assert hudi.summary.ro_freshness_ms is None and "does not bound event time" in hudi.summary.freshness_blockers[0]


log_spec = st.tuples(st.booleans(), st.one_of(st.none(), st.integers(0, 100)), st.integers(0, 10**6))
slice_spec = st.tuples(st.lists(log_spec, max_size=6), st.one_of(st.none(), st.integers(0, 10**7)), st.booleans())


def build(spec: list[tuple[list[tuple[bool, int | None, int]], int | None, bool]]) -> list[SliceInfo]:
    out = []
    for i, (logs, base, pending) in enumerate(spec):
        fid = f"f{i}"
        out.append(
            SliceInfo(
                "p",
                fid,
                "1",
                f"{fid}.parquet" if base is not None else None,
                base,
                tuple(log(fid, j + 1, mn, data=d, size=sz) for j, (d, mn, sz) in enumerate(logs)),
                "9" if pending else None,
            )
        )
    return out


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(slice_spec, max_size=10), st.integers(-1, 101), st.sampled_from(["copy", "symlink"]))
def test_preview_agrees_with_scalar_rule(spec: list[Any], t: int, mode: str) -> None:
    slices = build(spec)
    strategy = EventTimeBasedCompactionStrategy(threshold=t)
    p = preview(slices, strategy, now_ms=NOW, link_mode=mode)
    ops = {op.slice.file_id: op for op in strategy.select_operations(slices, now_ms=NOW)}
    for s, row in zip(slices, p.per_slice.to_pylist(), strict=True):
        n = select_prefix(s.log_files, t) if s.pending_compaction is None else 0
        assert row["logs_compacted"] == n
        op = ops.get(s.file_id)
        assert row["selected"] == (op is not None)
        if op is not None:
            assert row["compacted_log_files"] == [lf.name for lf in op.to_compact]
            assert row["remaining_log_files"] == [lf.name for lf in op.to_remain]
            base = s.base_file_size if s.base_file else 0
            assert row["bytes_read"] == (base or 0) + sum(lf.size for lf in op.to_compact)
            assert row["links"] == len(op.to_remain)
            assert row["link_bytes_copied"] == (sum(lf.size for lf in op.to_remain) if mode == "copy" else 0)
        else:
            assert row["bytes_read"] == row["links"] == row["link_bytes_copied"] == 0
        # Freshness invariant: what a plannable slice keeps with data has a min event time > T or is unknown.
        kept = s.log_files[row["logs_compacted"] :] if s.pending_compaction is None else ()
        assert all(lf.min_event_time is None or lf.min_event_time > t for lf in kept if lf.has_data)
    if p.summary.ro_freshness_ms is not None:
        assert p.summary.ro_freshness_ms == t
        assert p.summary.unknown_min_remaining == 0


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(slice_spec, max_size=10), st.lists(st.integers(-1, 101), min_size=1, max_size=4))
def test_model_set_threshold_equals_fresh_preview(spec: list[Any], thresholds: list[int]) -> None:
    slices = build(spec)
    model = PreviewModel(slices, EventTimeBasedCompactionStrategy(threshold=0), now_ms=NOW)
    for t in thresholds:
        live = model.set_threshold(t)
        fresh = preview(slices, EventTimeBasedCompactionStrategy(threshold=t), now_ms=NOW)
        assert live.per_slice.equals(fresh.per_slice)
        assert live.per_log.equals(fresh.per_log)
        assert live.summary == fresh.summary


def test_model_threshold_range_and_out_of_bound_threshold() -> None:
    model = PreviewModel(example(), EventTimeBasedCompactionStrategy(threshold=0), now_ms=50)
    assert model.threshold_range() == (1, 70)
    p = model.set_threshold(60)  # later than now: a schedule would refuse; the preview says so
    assert not p.summary.threshold_within_bound and p.summary.ro_freshness_ms is None
    with pytest.raises(InvalidThresholdError):
        PreviewModel(example(), LogFileSizeBasedCompactionStrategy()).set_threshold(5)


def test_hudi_strategy_preview_matches_select_operations() -> None:
    slices = [
        SliceInfo(
            "p", f"f{i}", "1", f"f{i}.parquet", 100 * MB, tuple(log(f"f{i}", j + 1, 1, size=i * MB) for j in range(i))
        )
        for i in range(6)
    ]
    strategy = BoundedIOCompactionStrategy(target_io_mb=450)
    chosen = {op.slice.file_id for op in strategy.select_operations(slices)}
    p = preview(slices, strategy)
    assert {r["file_id"] for r in p.per_slice.to_pylist() if r["selected"]} == chosen
    assert p.summary.links == 0 and p.summary.logs_forced == 0


def test_allowed_lateness_uses_max_event_time_of_logs() -> None:
    slices = [SliceInfo("p", "a", "1", None, None, (log("a", 1, 10, mx=40), log("a", 2, 35, mx=90)))]
    p = preview(slices, EventTimeBasedCompactionStrategy(allowed_lateness=60), now_ms=NOW)
    assert p.threshold_ms == 30 and p.summary.logs_compacted == 1
    assert p.summary.full_ro_freshness_ms == 90


def test_large_preview_is_consistent() -> None:
    rng = np.random.default_rng(3)
    slices = []
    for i in range(300):
        k = int(rng.integers(0, 40))
        mins = rng.integers(0, 1000, size=k)
        slices.append(
            SliceInfo("p", f"f{i}", "1", None, None, tuple(log(f"f{i}", j + 1, int(m)) for j, m in enumerate(mins)))
        )
    model = PreviewModel(slices, EventTimeBasedCompactionStrategy(threshold=0), now_ms=NOW)
    for t in (100, 500):
        got = model.set_threshold(t).per_slice.column("logs_compacted").to_pylist()
        assert got == [select_prefix(s.log_files, t) for s in slices]


@SKIP_NO_SHARED
def test_real_fixture_min_event_time_from_scan_and_selection() -> None:
    """``mor_v6_trips_8i1u`` (Hudi quickstart, 8 inserts then 1 update): one log file in ``city=san_francisco``.

    Stock Hudi with OverwriteWithLatestAvroPayload records no minEventTime, so the min comes from a scan of ``ts``.
    """
    import evt_toolkit as evt
    from evt_toolkit.compaction.event_times import clear_cache, slice_infos

    clear_cache()
    table = evt.HudiTable.open(fixture_table_path("mor_v6_trips_8i1u"))
    slices = slice_infos(table, "ts")
    logs = [lf for s in slices for lf in s.log_files]
    assert len(logs) == 1
    (lf,) = logs
    assert lf.min_event_time_source == "scan" and lf.has_data and lf.min_event_time is not None
    assert lf.instant is not None and lf.uncommitted_blocks == 0
    assert slice_infos(table, "ts") == slices  # second call served from the cache
    m = lf.min_event_time
    at = preview(slices, EventTimeBasedCompactionStrategy(threshold=m, event_time_field="ts"))
    assert at.summary.logs_compacted == 1 and at.summary.ro_freshness_ms == m
    above = preview(slices, EventTimeBasedCompactionStrategy(threshold=m + 1000))
    assert above.summary.logs_compacted == 1
    below = preview(slices, EventTimeBasedCompactionStrategy(threshold=m - 1))
    assert below.summary.logs_compacted == 0 and below.summary.ro_freshness_ms == m - 1


# -- the columnar input --------------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(slice_spec, max_size=10), st.lists(st.integers(-1, 101), min_size=1, max_size=3))
def test_model_from_slice_set_equals_model_from_records(spec: list[Any], thresholds: list[int]) -> None:
    slices = build(spec)
    columnar = SliceSet.from_infos(slices)
    # A set rebuilt from its two tables alone (no records kept) gives the records back.
    bare = SliceSet(columnar.slices, columnar.log_files)
    assert list(bare) == slices and len(bare) == len(slices)
    strategy = EventTimeBasedCompactionStrategy(threshold=0)
    from_records = PreviewModel(slices, strategy, now_ms=NOW)
    from_columns = PreviewModel(bare, strategy, now_ms=NOW)
    for t in thresholds:
        a, b = from_records.set_threshold(t), from_columns.set_threshold(t)
        assert a.per_slice.equals(b.per_slice) and a.per_log.equals(b.per_log) and a.summary == b.summary
    hudi = LogFileSizeBasedCompactionStrategy()
    assert preview(bare, hudi).per_slice.equals(preview(slices, hudi).per_slice)


def test_slice_set_rejects_tables_that_do_not_index_each_other() -> None:
    good = SliceSet.from_infos(example())
    with pytest.raises(PlanValidationError, match="SLICES_SCHEMA"):
        SliceSet(good.log_files, good.slices)
    with pytest.raises(PlanValidationError, match="log files"):
        SliceSet(good.slices, good.log_files.slice(1))
    shuffled = good.log_files.take([1, 0, 2, 3, 4])
    index = good.log_files.column("slice_index").take([4, 0, 1, 2, 3])
    reordered = shuffled.set_column(0, good.log_files.schema.field(0), index)
    with pytest.raises(PlanValidationError, match="ordered by slice_index"):
        SliceSet(good.slices, reordered)


@SKIP_NO_SHARED
@pytest.mark.parametrize(
    "name",
    [
        "mor_v6_trips_8i1u",
        "mor_table_all_data_types",
        "mor_table_uncommitted_log_v9",
        "mor_table_log_compaction",
        "mor_v8_trips_8i3u1d",
        "mor_v9_txns_simple_meta",
    ],
)
def test_slice_set_of_a_real_table_equals_its_slice_infos(name: str) -> None:
    import evt_toolkit as evt
    from evt_toolkit.compaction.event_times import clear_cache, slice_infos, slice_set

    clear_cache()
    table = evt.HudiTable.open(fixture_table_path(name))
    records = slice_infos(table)
    columnar = slice_set(table)
    assert list(columnar) == records
    assert columnar.log_files.equals(SliceSet.from_infos(records).log_files)


def test_a_misspelt_event_time_field_is_refused_naming_it(tmp_path: Any) -> None:
    """A field the table does not have would give every log an unknown min event time: the preview would show
    nothing to compact without saying why. Preview, schedule and ``evt preview`` refuse it, naming the field and the
    table; the table is left as it was."""
    import subprocess
    import sys

    import pyarrow as pa

    import evt_toolkit as evt
    from evt_toolkit.errors import EventTimeError

    t = evt.HudiTable.create(tmp_path / "t", "t", "id", ordering_field="ts", event_time_field="ev", buckets=1)
    t.write(pa.table({"id": [1, 2], "ts": [1, 1], "ev": [1_700_000_000_000, 1_700_000_001_000]}))
    t.write(pa.table({"id": [1], "ts": [2], "ev": [1_700_000_002_000]}))
    before = sorted((p.relative_to(tmp_path), p.stat().st_size) for p in tmp_path.rglob("*"))
    typo = EventTimeBasedCompactionStrategy(threshold=1_700_000_001_500, event_time_field="evt")
    with pytest.raises(EventTimeError, match=r"'evt' is not a column of .*t \(its columns: id, ts, ev\)"):
        t.compaction.preview(typo)
    with pytest.raises(EventTimeError, match="'evt'"):
        t.compaction.schedule(typo)
    assert sorted((p.relative_to(tmp_path), p.stat().st_size) for p in tmp_path.rglob("*")) == before
    ok = EventTimeBasedCompactionStrategy(threshold=1_700_000_001_500, event_time_field="ev")
    assert t.compaction.preview(ok).summary.logs_compacted == 1
    cli = [sys.executable, "-m", "evt_toolkit.cli", "preview", str(tmp_path / "t"), "--threshold", "1700000001500"]
    proc = subprocess.run([*cli, "--event-time-field", "evt"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "'evt' is not a column" in proc.stderr, proc.stderr[-800:]
    assert subprocess.run([*cli, "--event-time-field", "ev"], capture_output=True, timeout=120).returncode == 0
