"""``evt`` — the command line of evt-toolkit, for operators who know hudi-cli and Hudi's Spark SQL procedures.

Commands (``evt COMMAND --help`` for each; every one takes ``--json``):

=====================  ==========================================================  ==============================
command                what                                                        hudi-cli / Spark SQL
=====================  ==========================================================  ==============================
``inspect``            settings, timeline, file slices, log-block headers          ``desc``, ``show logfile metadata``
``timeline``           instants newest first                                        ``timeline show active``
``read``               snapshot / read_optimized / incremental rows, time travel    ``select`` in spark-sql
``commits``            commits with their write stats                               ``commits show``
``commit``             one commit's files or partitions                             ``commit showfiles``
``logfile``            records (or blocks) of one log file                          ``show logfile records``
``preview``            what a compaction strategy would plan, no writes             ``compaction schedule`` (dry)
``schedule``           write a compaction plan (and its links)                      ``compaction schedule``
``run``                execute a plan, here or on Spark                              ``compaction run``
``validate``           check a plan, its links and files                            ``compaction validate``
``unschedule``         remove a pending plan (dry run unless --yes)                  ``compaction unschedule``
``repair``             abandoned links, missing plan links, stale records (dry run)  ``compaction repair``
``compactions``        every compaction, pending and completed                       ``compactions show all``
``metrics``            the RFC's metrics and RO freshness, Prometheus text           -
``clean run|show``     clean with Hudi's policies (dry run unless --yes); cleans     ``cleans run``, ``cleans show``
``rollback``           roll back a failed write or an inflight compaction            ``commit rollback``
``metadata show|disable``  the metadata table; disable it as Hudi does (dry run)     ``metadata delete``
``demo build|synthetic``  build the demo tables (a plug-in from evt_toolkit.demo)    -
=====================  ==========================================================  ==============================

Exit codes: 0 ok, 1 operational error, 2 usage error, 141 output pipe closed early (see :mod:`evt_toolkit.cli.app`).
"""

from evt_toolkit.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
