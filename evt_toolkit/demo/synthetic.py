"""A seeded synthetic change stream with configurable lateness, for scale work (millions of rows, many file groups).

Batch ``i`` covers the processing-time window ``[start + i·interval, start + (i+1)·interval)``; its events arrive
(``known_at``) uniformly inside it. A fraction ``late_fraction`` of them is late: its event time ``event_ts`` lies
``lateness`` before its arrival, drawn from an exponential or log-normal distribution with mean
``mean_lateness_s``; the others carry ``event_ts == known_at``. Each event touches a uniformly drawn key of
``n_keys``; a fraction ``delete_fraction`` of events are deletes. ``seq`` — the ordering field — is the global
arrival sequence number, so the last arrival of a key wins, as in a CDC feed, whatever its event time.

A key always lives in partition ``key_id % partitions`` (Hudi's simple index needs a key to stay in one partition).
Each batch is drawn from its own generator seeded with ``(seed, batch index)``: batches are reproducible one by one,
and generating batch 1000 does not require generating the 999 before it.

Columns (:data:`SYNTHETIC_SCHEMA`): ``key`` (``k0000042``), ``partition`` (``p007``), ``event_ts`` (epoch ms, the
event-time field), ``seq`` (int64 ordering field), ``known_at`` (epoch ms), ``amount`` (float64), ``category``
(one of eight strings).

Example:
    >>> batches = list(synthetic_batches(1_000, 100, 4, late_fraction=0.2, seed=7))
    >>> [b.num_events for b in batches]
    [250, 250, 250, 250]
    >>> sum(b.upserts.num_rows for b in batches) == 1_000
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.demo.batch import Batch
from evt_toolkit.errors import EvtError

Lateness = Literal["exponential", "lognormal", "none"]

#: Record key, partition, ordering and event-time fields of a synthetic table.
RECORD_KEY: Final = ("key",)
PARTITION_FIELD: Final = "partition"
ORDERING_FIELD: Final = "seq"
EVENT_TIME_FIELD: Final = "event_ts"

#: 2024-01-01T00:00:00Z: the default start of the processing-time axis.
DEFAULT_START_MS: Final = 1_704_067_200_000
#: Shape of the log-normal lateness (sigma of the underlying normal): p99 ≈ 6 × median.
LOGNORMAL_SIGMA: Final = 1.0
_CATEGORIES: Final = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")

SYNTHETIC_SCHEMA: Final = pa.schema(
    [
        pa.field("key", pa.string()),
        pa.field("partition", pa.string()),
        pa.field("event_ts", pa.int64()),
        pa.field("seq", pa.int64()),
        pa.field("known_at", pa.int64()),
        pa.field("amount", pa.float64()),
        pa.field("category", pa.string()),
    ]
)


def _labels(prefix: str, ids: npt.NDArray[np.int64], width: int) -> pa.Array:
    digits = pc.utf8_lpad(pa.array(ids).cast(pa.string()), width=width, padding="0")
    return pc.binary_join_element_wise(prefix, digits, "")


def _draw_lateness_ms(
    rng: np.random.Generator, n: int, lateness: Lateness, mean_s: float, late_fraction: float
) -> npt.NDArray[np.int64]:
    if lateness == "none":
        return np.zeros(n, dtype=np.int64)
    late = rng.random(n) < late_fraction
    if lateness == "exponential":
        seconds = rng.exponential(mean_s, n)
    else:
        # Mean of a log-normal is exp(mu + sigma²/2): pick mu so the mean is mean_s.
        mu = np.log(mean_s) - LOGNORMAL_SIGMA**2 / 2
        seconds = rng.lognormal(mu, LOGNORMAL_SIGMA, n)
    # A late event is at least 1 ms late, so "late" stays measurable as event_ts < known_at.
    ms = np.maximum(np.rint(seconds * 1000), 1).astype(np.int64)
    return np.where(late, ms, 0)


def synthetic_batches(
    n_rows: int,
    n_keys: int,
    n_batches: int,
    *,
    lateness: Lateness = "exponential",
    mean_lateness_s: float = 600.0,
    late_fraction: float = 0.1,
    delete_fraction: float = 0.0,
    partitions: int = 4,
    seed: int = 0,
    start_ms: int = DEFAULT_START_MS,
    batch_interval_s: float = 60.0,
) -> Iterator[Batch]:
    """Yield ``n_batches`` micro-batches holding ``n_rows`` events in total (:data:`SYNTHETIC_SCHEMA`).

    Args:
        n_rows: total number of events (upserts and deletes).
        n_keys: size of the key space; keys are drawn uniformly, so ``n_rows > n_keys`` means updates.
        n_batches: number of micro-batches; rows are split evenly (the first batches take the remainder).
        lateness: distribution of the lateness of late events; ``"none"`` makes every event on time.
        mean_lateness_s: mean lateness of late events, in seconds.
        late_fraction: probability that an event is late (ignored for ``lateness="none"``).
        delete_fraction: probability that an event is a delete.
        partitions: number of partitions (``p000`` ...).
        seed: seed of the generator; equal arguments give equal batches.
        start_ms: processing time (epoch ms) at which batch 0 starts.
        batch_interval_s: processing-time width of a batch, in seconds.

    Raises:
        EvtError: a count is not positive or a fraction is outside ``[0, 1]``.

    Example:
        >>> b = next(synthetic_batches(10, 5, 1, lateness="none", seed=1))
        >>> b.upserts.column("event_ts").equals(b.upserts.column("known_at"))
        True
    """
    if n_rows < 0 or n_keys < 1 or n_batches < 1 or partitions < 1:
        raise EvtError(
            f"need n_rows >= 0 and n_keys, n_batches, partitions >= 1; got {n_rows}, {n_keys}, {n_batches}, "
            f"{partitions}"
        )
    for name, value in (("late_fraction", late_fraction), ("delete_fraction", delete_fraction)):
        if not 0.0 <= value <= 1.0:
            raise EvtError(f"{name} must be within [0, 1], got {value}")
    if lateness not in ("exponential", "lognormal", "none"):
        raise EvtError(f"unknown lateness distribution {lateness!r}; expected exponential, lognormal or none")
    if mean_lateness_s <= 0 or batch_interval_s <= 0:
        raise EvtError("mean_lateness_s and batch_interval_s must be positive")

    interval_ms = round(batch_interval_s * 1000)
    key_width = len(str(n_keys - 1))
    part_width = max(3, len(str(partitions - 1)))
    base, extra = divmod(n_rows, n_batches)
    categories = pa.array(_CATEGORIES)
    first_seq = 0
    for i in range(n_batches):
        n = base + (1 if i < extra else 0)
        rng = np.random.default_rng([seed, i])
        window_start = start_ms + i * interval_ms
        known_at = window_start + np.sort(rng.integers(0, interval_ms, n, dtype=np.int64))
        key_ids = rng.integers(0, n_keys, n, dtype=np.int64)
        event_ts = known_at - _draw_lateness_ms(rng, n, lateness, mean_lateness_s, late_fraction)
        is_delete = rng.random(n) < delete_fraction
        table = pa.table(
            {
                "key": _labels("k", key_ids, key_width),
                "partition": _labels("p", key_ids % partitions, part_width),
                "event_ts": pa.array(event_ts),
                "seq": pa.array(np.arange(first_seq, first_seq + n, dtype=np.int64)),
                "known_at": pa.array(known_at),
                "amount": pa.array(np.round(rng.gamma(2.0, 50.0, n), 2)),
                "category": categories.take(pa.array(rng.integers(0, len(_CATEGORIES), n))),
            },
            schema=SYNTHETIC_SCHEMA,
        )
        first_seq += n
        mask = pa.array(is_delete)
        yield Batch(
            index=i,
            known_until=window_start + interval_ms,
            upserts=table.filter(pc.invert(mask)),
            deletes=table.filter(mask),
        )
