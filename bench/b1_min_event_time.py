"""B1 — min event time of every log file: block headers vs commit write stats vs decoding the data.

One synthetic table (``build_synthetic_table`` with ``min_event_time_header=True``) with about ``--logs`` log files
in its latest slices. Three ways to get each log file's minimum event time, each timed (median of repeats) with
the bytes it reads:

* **header**: ``scan_log_blocks`` reads each block's magic, sizes and headers and seeks past the content; the
  ``MIN_EVENT_TIME`` header holds the answer;
* **write_stats**: the ``minEventTime`` of each log file's ``HoodieWriteStat`` in the completed deltacommits
  (reads the commit files on the timeline, not the logs);
* **decode**: read every data block's content, decode it to Arrow and take the minimum of the event-time column.

The three answers are compared log file by log file (``agree``). Run: ``python -m bench.b1_min_event_time``.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow.compute as pc

from bench.common import measure, ratio, timed
from evt_toolkit.api import HudiTable
from evt_toolkit.demo import synthetic as syn
from evt_toolkit.demo.build import build_synthetic_table
from evt_toolkit.format.log_content import read_block_records
from evt_toolkit.format.logfile import BlockType, scan_log_blocks
from evt_toolkit.format.metadata import decode_commit_metadata

Method = Callable[[HudiTable], tuple[dict[str, int | None], int]]


class CountingReader:
    """A seekable reader that counts the bytes handed out."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.bytes_read = 0

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.bytes_read += len(data)
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._f.seek(pos, whence)

    def tell(self) -> int:
        return self._f.tell()


def layout_for(logs: int) -> dict[str, int]:
    """Partitions, buckets and micro-batches giving about ``logs`` log files (two deltacommits per batch)."""
    if logs <= 200:
        partitions, buckets = 2, 2
    elif logs <= 2_000:
        partitions, buckets = 8, 4
    elif logs <= 20_000:
        partitions, buckets = 16, 8
    else:
        partitions, buckets = 32, 16
    groups = partitions * buckets
    batches = max(1, round(logs / groups / 2))
    return {"partitions": partitions, "buckets": buckets, "n_batches": batches, "n_rows": max(1_000, logs * 50)}


def build(path: Path, logs: int) -> dict[str, Any]:
    lay = layout_for(logs)
    seconds, s = timed(
        lambda: build_synthetic_table(
            str(path),
            n_rows=lay["n_rows"],
            n_keys=max(100, lay["n_rows"] // 4),
            n_batches=lay["n_batches"],
            partitions=lay["partitions"],
            buckets=lay["buckets"],
            min_event_time_header=True,
            progress=False,
            overwrite=True,
        )
    )
    return {**lay, "log_files": s.log_files, "file_groups": s.file_groups, "bytes": s.bytes, "build_s": seconds}


def _latest_logs(t: HudiTable) -> list[Any]:
    return [lf for g in t.view.file_groups() for lf in g.slices[0].log_files]


def by_header(t: HudiTable) -> tuple[dict[str, int | None], int]:
    out: dict[str, int | None] = {}
    read = 0
    for lf in _latest_logs(t):
        with t.storage.open_input(lf.path) as raw:
            f = CountingReader(raw)
            mins = [
                b.min_event_time_header
                for b in scan_log_blocks(f, lf.size, lf.path)  # type: ignore[arg-type]
                if b.is_data and b.min_event_time_header is not None
            ]
            read += f.bytes_read
        out[lf.name] = min(mins) if mins else None
    return out, read


def by_write_stats(t: HudiTable) -> tuple[dict[str, int | None], int]:
    wanted = {lf.name for lf in _latest_logs(t)}
    out: dict[str, int | None] = dict.fromkeys(wanted)
    read = 0
    for inst in t.timeline.completed_commits():
        raw = t.timeline.read_bytes(inst)  # uncached: the timeline caches decoded metadata
        read += len(raw)
        meta = decode_commit_metadata(raw, inst.time)
        for stats in (meta.get("partitionToWriteStats") or {}).values():
            for st in stats or []:
                name = (st.get("path") or "").rsplit("/", 1)[-1]
                v = st.get("minEventTime")
                if name in wanted and v is not None:
                    cur = out[name]
                    out[name] = int(v) if cur is None else min(cur, int(v))
    return out, read


def by_decode(t: HudiTable) -> tuple[dict[str, int | None], int]:
    field = t.config.event_time_field or syn.EVENT_TIME_FIELD
    out: dict[str, int | None] = {}
    read = 0
    for lf in _latest_logs(t):
        with t.storage.open_input(lf.path) as raw:
            f = CountingReader(raw)
            mins: list[int] = []
            for b in list(scan_log_blocks(f, lf.size, lf.path)):  # type: ignore[arg-type]
                if not b.is_data or b.block_type == BlockType.CDC_DATA:
                    continue
                records = read_block_records(f, b)  # type: ignore[arg-type]
                m = pc.min(records[field]).as_py()
                if m is not None:
                    mins.append(int(m.timestamp() * 1000) if hasattr(m, "timestamp") else int(m))
            read += f.bytes_read
        out[lf.name] = min(mins) if mins else None
    return out, read


METHODS: dict[str, Method] = {"header": by_header, "write_stats": by_write_stats, "decode": by_decode}


def run(workdir: Path, logs: int = 1_000, repeat: int = 3) -> dict[str, Any]:
    """Build the table in ``workdir`` and time the three methods."""
    table_info = build(workdir / "b1", logs)
    t = HudiTable.open(workdir / "b1")
    methods: dict[str, Any] = {}
    answers: dict[str, dict[str, int | None]] = {}
    for name, fn in METHODS.items():
        m = measure(functools.partial(fn, t), repeat=repeat, warmup=1)
        answers[name], read = m.result
        methods[name] = {
            **m.to_dict(),
            "bytes_read": read,
            "log_files_answered": sum(v is not None for v in answers[name].values()),
        }
    agree = answers["header"] == answers["decode"] == answers["write_stats"]
    dec = methods["decode"]["median_s"]
    return {
        "table": table_info,
        "log_files": len(answers["header"]),
        "methods": methods,
        "agree": agree,
        "ratios": {
            "decode_s / header_s": ratio(dec, methods["header"]["median_s"], 1),
            "decode_s / write_stats_s": ratio(dec, methods["write_stats"]["median_s"], 1),
            "decode_bytes / header_bytes": ratio(methods["decode"]["bytes_read"], methods["header"]["bytes_read"], 1),
        },
        "target": {"header_speedup_vs_decode_min": 20.0},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.b1_min_event_time", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--logs", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="evt-b1-"))
    try:
        print(json.dumps(run(work, args.logs, args.repeat), indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
