"""What every ``evt`` command shares: where output goes, how it looks, and how errors read.

* Text goes to stdout through rich. In a terminal, tables fit its width; anywhere else (a pipe, a file, CI logs)
  they are drawn at their natural width and a cell is never wrapped, so a log file name stays on one line and
  ``grep``/``awk`` see whole names.
* ``--json`` prints one JSON document on stdout (progress and messages go to stderr), numbers unformatted and times
  as epoch milliseconds next to their ISO form.
* Times are ISO-8601 UTC with milliseconds (``2013-01-05T00:00:00.000Z``), the form ``--threshold`` accepts back;
  counts get thousands separators, sizes binary units.
* Errors are one line on stderr in the command line's own words: the toolkit's messages name Python parameters
  where a notebook user calls the API, and :func:`cli_wording` puts the option a shell user types in their place.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import pyarrow as pa
from rich.console import Console
from rich.table import Table

from evt_toolkit.format.text import format_bytes, format_count, format_duration, format_ms

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "Output",
    "cli_wording",
    "count",
    "duration",
    "jsonable",
    "size",
    "when",
]

#: Exit codes: success; an operational error (bad table, refused action, failed check); a usage error (argparse's
#: own code); a reader that closed the pipe early (``evt read ... | head``), as a process killed by SIGPIPE reports.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PIPE = 141
#: Ctrl-C (SIGINT) and SIGTERM: the codes a shell reports for a process those signals ended (128 + the signal).
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

#: Width for tables drawn outside a terminal: wide enough that rich never has to wrap a cell.
_UNBOUNDED_WIDTH = 100_000


# -- formatting ------------------------------------------------------------------------------------------------------


#: The CLI's names for the shared formatters (:mod:`evt_toolkit.format.text`).
when = format_ms
count = format_count
duration = format_duration


def size(n: int | None) -> str:
    """Bytes in binary units (``1.6 MiB``), ``-`` for none."""
    return format_bytes(None if n is None else int(n))


# -- error wording -----------------------------------------------------------------------------------------------------

#: API parameter names (and whole clauses that only make sense to a Python caller) → what a shell user types.
_WORDING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r";?\s*pass max_event_time_ms or use threshold/data_latency"), "; use --threshold or --data-latency"),
    (re.compile(r"\bthreshold/data_latency\b"), "--threshold/--data-latency"),
    (re.compile(r"\ballowed_lateness\b"), "--allowed-lateness"),
    (re.compile(r"\bdata_latency\b"), "--data-latency"),
    (re.compile(r"\bevent_time_field\b"), "--event-time-field"),
    (re.compile(r"\blink_mode\b"), "--link-mode"),
    (re.compile(r"\blink_timing\b"), "--link-timing"),
    (re.compile(r"\bexact_split\b"), "--exact-split"),
    (re.compile(r"\bdry_run=False\b"), "--yes"),
    (re.compile(r"\bas_of\b"), "--as-of"),
    (re.compile(r"\bnow_ms\b"), "the compaction time"),
    (re.compile(r"\bmax_event_time_ms\b"), "the max ingested event time"),
    (re.compile(r"\bthreshold_ms\b"), "--threshold"),
)


def cli_wording(message: str) -> str:
    """A toolkit error message with Python parameter names replaced by the command-line options they stand for.

    Example:
        >>> cli_wording("allowed_lateness needs the max ingested event time; pass max_event_time_ms or use "
        ...             "threshold/data_latency")
        '--allowed-lateness needs the max ingested event time; use --threshold or --data-latency'
    """
    for pattern, replacement in _WORDING:
        message = pattern.sub(replacement, message)
    return message


# -- JSON ------------------------------------------------------------------------------------------------------------


def jsonable(obj: Any) -> Any:
    """Dataclasses, Arrow tables, tuples, sets and bytes as plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, pa.Table):
        return [jsonable(r) for r in obj.to_pylist()]
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [jsonable(v) for v in obj]
    if isinstance(obj, bytes):
        return obj.hex()
    return obj


class _Console(Console):
    """A rich console whose closed pipe ends like every other write to a closed pipe: with ``BrokenPipeError``,
    which ``evt``'s ``main`` turns into exit code 141 (rich's own handling exits with 1, an error code)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


# -- the output object -------------------------------------------------------------------------------------------------


@dataclass
class Output:
    """stdout and stderr of one ``evt`` invocation.

    Attributes:
        console: rich console on stdout (tables never wrap outside a terminal).
        err: rich console on stderr (messages, progress).
        terminal: stdout is a terminal.
    """

    console: Console
    err: Console
    terminal: bool
    stream: TextIO

    @classmethod
    def create(cls, stream: TextIO | None = None, err_stream: TextIO | None = None) -> Output:
        out = stream if stream is not None else sys.stdout
        err = err_stream if err_stream is not None else sys.stderr
        terminal = bool(getattr(out, "isatty", lambda: False)())
        console = (
            _Console(file=out, highlight=False)
            if terminal
            else _Console(file=out, width=_UNBOUNDED_WIDTH, highlight=False, soft_wrap=True, no_color=True)
        )
        err_console = Console(file=err, highlight=False, soft_wrap=True)
        return cls(console, err_console, terminal, out)

    # -- text --------------------------------------------------------------------------------------------------------
    def line(self, text: str = "") -> None:
        """One line of plain text (no rich markup)."""
        self.console.print(text, markup=False, soft_wrap=True)

    def note(self, text: str) -> None:
        """A message on stderr (so that stdout stays data)."""
        self.err.print(text, markup=False)

    def table(
        self,
        title: str | None,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        right: Iterable[str] = (),
    ) -> None:
        """A table; ``right`` names the columns to right-align (numbers)."""
        aligned = set(right)
        table = Table(title=title, title_justify="left", show_lines=False)
        for c in columns:
            table.add_column(
                c,
                justify="right" if c in aligned else "left",
                # Outside a terminal the width is unbounded, so "fold" never folds; rich ignores justify with "ignore".
                no_wrap=not self.terminal,
                overflow="fold",
            )
        for r in rows:
            table.add_row(*["-" if v is None else str(v) for v in r])
        self.console.print(table)

    def fields(self, title: str | None, rows: Sequence[tuple[str, Any]]) -> None:
        """``name  value`` pairs."""
        table = Table(title=title, title_justify="left", show_header=False)
        table.add_column("", style="bold", no_wrap=True)
        table.add_column("", no_wrap=not self.terminal, overflow="fold")
        for name, value in rows:
            table.add_row(name, "-" if value is None else str(value))
        self.console.print(table)

    # -- JSON --------------------------------------------------------------------------------------------------------
    def json(self, data: Any) -> None:
        """One JSON document."""
        json.dump(jsonable(data), self.stream, indent=2, default=str)
        self.stream.write("\n")

    def json_array(self, items: Iterable[Any]) -> int:
        """A JSON array written element by element (a reader can stop early); returns the number written."""
        n = 0
        self.stream.write("[")
        for item in items:
            self.stream.write(",\n  " if n else "\n  ")
            self.stream.write(json.dumps(jsonable(item), default=str))
            n += 1
        self.stream.write("\n]\n" if n else "]\n")
        return n
