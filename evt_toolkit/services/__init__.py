"""Table services: clean, rollback and metadata-table repair, aware of partial compaction's links
(HUDI-6979 RFC §1.4 and §1.5) and of which instant owns which file (``docs/data-safety.md``).

* :mod:`~evt_toolkit.services.clean_planner` / :mod:`~evt_toolkit.services.clean` — Hudi's cleaner policies, never
  deleting a file a surviving link or a pending compaction needs; ``HudiTable.clean``.
* :mod:`~evt_toolkit.services.rollback_planner` / :mod:`~evt_toolkit.services.rollback` — failed deltacommits and
  inflight compactions; ``HudiTable.rollback``.
* :mod:`~evt_toolkit.services.metadata_table` — the metadata table disabled as Hudi does;
  ``HudiTable.metadata_table.disable``.

Planners decide and never touch storage; executors gather facts, write the Hudi instants and do the I/O.
"""
