"""Options every ``evt`` command spells the same way, and opening the table they name.

Each command is a sub-parser made by :func:`command`: it records the function to call (``func(args, out) -> int``)
and its own parser, so a check made after parsing (two options that do not go together) can end with argparse's
usage message and exit code 2 (:func:`usage_error`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from evt_toolkit import HudiTable
    from evt_toolkit.cli.output import Output

Command = Callable[[argparse.Namespace, "Output"], int]

__all__ = [
    "Command",
    "add_json",
    "add_limit",
    "add_table",
    "command",
    "limited",
    "open_table",
    "positive_or_zero",
    "storage_option",
    "usage_error",
]


def command(sub: Any, name: str, func: Command, help: str, description: str | None = None) -> argparse.ArgumentParser:
    """A sub-command that calls ``func(args, out)``; its help line is ``help``."""
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description or help[:1].upper() + help[1:] + ".",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=func, parser=p)
    return p


def usage_error(args: argparse.Namespace, message: str) -> NoReturn:
    """End with the command's usage line and ``message`` (exit code 2)."""
    parser: argparse.ArgumentParser = args.parser
    parser.error(message)


def positive_or_zero(text: str) -> int:
    """An ``int`` ≥ 0 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def storage_option(text: str) -> tuple[str, str]:
    """``key=value`` (argparse type of ``--storage-option``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text.split('=')[0]!r}")
    return key.strip(), value.strip()


def add_table(p: argparse.ArgumentParser) -> None:
    """The table's base path (local path or URI) and how to reach its store."""
    p.add_argument("table", help="table base path or URI (file://, s3://, s3a://, gs://, abfs://, hdfs://, ...)")
    p.add_argument(
        "--storage-option",
        type=storage_option,
        action="append",
        metavar="KEY=VALUE",
        help="object-store setting, repeatable: aws_endpoint_url, aws_region, aws_access_key_id, "
        "aws_secret_access_key, aws_allow_http, ... (the keys of HudiTable.open's storage_options)",
    )


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def add_limit(p: argparse.ArgumentParser, default: int, what: str) -> None:
    p.add_argument(
        "--limit",
        type=positive_or_zero,
        default=default,
        metavar="N",
        help=f"show at most N {what} (default {default}; 0 for all)",
    )


def limited(total: int, limit: int) -> int:
    """How many of ``total`` rows a ``--limit`` shows (0 = all)."""
    return total if limit == 0 else min(total, limit)


def open_table(args: argparse.Namespace) -> HudiTable:
    """Open ``args.table`` with its ``--storage-option`` settings."""
    from evt_toolkit import HudiTable

    options = dict(getattr(args, "storage_option", None) or [])
    return HudiTable.open(args.table, storage_options=options or None)
