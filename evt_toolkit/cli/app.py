"""The ``evt`` parser and ``main``: sub-commands, ``--version``, exit codes and quiet pipes.

Exit codes: 0 success; 1 an operational error (not a Hudi table, a refused action, a failed validation — one line on
stderr, in the command line's own words); 2 a usage error (argparse's usage message); 141 when the reader of stdout
went away (``evt read t | head``: no traceback, the code a SIGPIPE-killed process reports); 130 on Ctrl-C; 143 on
``SIGTERM`` (``kill``, a scheduler stopping the job), which stops the command the way Ctrl-C does — ``except`` and
``finally`` run and the calls it started on other threads or Spark have stopped before it exits — instead of ending
the process where it stands.

Commands come from the modules of this package and from the ``evt_toolkit.commands`` entry-point group: each entry
point names a function ``register(subparsers)`` that adds its commands. The demo builders (``evt demo``) plug in
that way from :mod:`evt_toolkit.demo.cli`, so the demo and the command line, sibling layers, never import each
other (the same way hudi-cli finds its command classes by scanning, not by a list in its main).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from importlib.metadata import entry_points
from types import FrameType

from evt_toolkit.cli.commits import register as _register_commits
from evt_toolkit.cli.compaction import register as _register_compaction
from evt_toolkit.cli.logfile import register as _register_logfile
from evt_toolkit.cli.output import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Output,
    cli_wording,
)
from evt_toolkit.cli.read import register as _register_read
from evt_toolkit.cli.services import register as _register_services
from evt_toolkit.cli.tables import register as _register_tables
from evt_toolkit.errors import EvtError

__all__ = ["ENTRY_POINT_GROUP", "build_parser", "main"]

#: Entry-point group of command plug-ins: ``name = "module:register"`` with ``register(subparsers) -> None``.
ENTRY_POINT_GROUP = "evt_toolkit.commands"

_EPILOG = """\
exit codes: 0 ok, 1 operational error (message on stderr), 2 usage error, 141 output pipe closed early

examples:
  evt inspect /data/trips --limit 20              timeline, file slices and the first 20 log blocks
  evt commits /data/trips                         commits, newest first, with their write stats
  evt preview /data/trips --threshold 2025-01-01T00:00:00Z
  evt read /data/trips --query-type read_optimized --limit 5
"""


#: What to do next, by error class name.
_HINTS = {
    "EventTimeError": " (--event-time-field names a field holding epoch numbers, timestamps or dates)",
    "PendingTableServiceError": " (evt compactions lists pending plans; evt timeline shows inflight writes)",
}


def _version() -> str:
    from evt_toolkit import __version__

    return (
        f"evt {__version__} (evt-toolkit; reads Hudi table versions 6, 8 and 9, writes version 6) "
        f"on Python {platform.python_version()}"
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``evt`` parser with every command, plug-ins included."""
    p = argparse.ArgumentParser(
        prog="evt",
        description="Event-time compaction for Apache Hudi Merge-On-Read tables: inspect, preview, schedule, run, "
        "validate, clean and roll back.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for register in (
        _register_tables,
        _register_read,
        _register_commits,
        _register_logfile,
        _register_compaction,
        _register_services,
    ):
        register(sub)
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        ep.load()(sub)
    return p


def _quiet_broken_pipe() -> None:
    """The reader went away: point stdout at /dev/null so the interpreter's final flush cannot fail loudly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout replaced by something without a descriptor (tests)
        pass


class Terminated(KeyboardInterrupt):
    """``SIGTERM`` raised in the main thread as Ctrl-C is: what handles an interrupt (waiting for started calls,
    the runner's bookkeeping) handles it too."""


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While a command runs, ``SIGTERM`` raises :class:`Terminated` in the main thread (Python's default lets the
    signal end the process at once: an operation then stops as under ``kill -9``, its threads with it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``evt`` with ``argv`` (default: the process arguments) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    if getattr(args, "func", None) is None:
        parser.print_usage(sys.stderr)
        sys.stderr.write("evt: error: a command is required (evt --help lists them)\n")
        return EXIT_USAGE
    out = Output.create()
    with _sigterm_as_interrupt():
        return _run_command(args, out)


def _run_command(args: argparse.Namespace, out: Output) -> int:
    try:
        code = int(args.func(args, out))
        out.stream.flush()
        return code
    except SystemExit as exc:  # usage_error() after parsing
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    except BrokenPipeError:
        _quiet_broken_pipe()
        return EXIT_PIPE
    except Terminated:
        sys.stderr.write("terminated\n")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except EvtError as exc:
        try:
            out.stream.flush()
        except BrokenPipeError:
            _quiet_broken_pipe()
        kind = type(exc).__name__
        hint = _HINTS.get(kind, "")
        sys.stderr.write(f"evt {args.command}: error: {kind}: {cli_wording(str(exc))}{hint}\n")
        return EXIT_ERROR


def run() -> None:
    """The console-script entry point."""
    raise SystemExit(main())
