"""Helpers shared by the benchmarks: machine facts, timing with repeats, peak memory, result files.

Timings are wall-clock (``time.perf_counter``); :func:`measure` repeats a call (at least :data:`MIN_REPEAT` times
outside the smoke size) and reports the median, the fastest, the slowest and every run. Verdicts are taken on the
median; min and max are printed beside it so a reader sees how much the machine's load moved a number.

Peak memory of one task is the growth of the process's resident-set high-water mark (``VmHWM``, reset through
``/proc/self/clear_refs`` on Linux) over its resident set at the start of the task, so Arrow buffers count as well
as Python objects; where the reset is unavailable it falls back to ``resource.getrusage``.
"""

from __future__ import annotations

import contextlib
import json
import resource
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.bench_write import machine_info

__all__ = [
    "MIN_REPEAT",
    "SIZES",
    "Measured",
    "PeakMemory",
    "Spread",
    "machine_info",
    "measure",
    "peak_memory",
    "profile",
    "ratio",
    "spread",
    "timed",
    "write_json",
]

T = TypeVar("T")

#: Every benchmark outside the ``tiny`` smoke size is the median of at least this many timed repeats.
MIN_REPEAT = 5

#: Parameters of each ``--size``. ``small`` runs in minutes on a laptop; the others show how cost grows.
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {  # the smoke test
        "b1_logs": 100,
        "b2_logs": (100, 1_000),
        "b3_rows": 4_000,
        "b3_batches": 4,
        "b4_rows": 4_000,
        "cluster_rows": 2_000,
        "repeat": 2,
    },
    "small": {
        "b1_logs": 1_000,
        "b2_logs": (1_000, 10_000, 100_000, 1_000_000),
        "b3_rows": 200_000,
        "b3_batches": 10,
        "b4_rows": 200_000,
        "cluster_rows": 50_000,
        "repeat": MIN_REPEAT,
    },
    "medium": {
        "b1_logs": 10_000,
        "b2_logs": (1_000, 10_000, 100_000, 1_000_000),
        "b3_rows": 1_000_000,
        "b3_batches": 10,
        "b4_rows": 1_000_000,
        "cluster_rows": 200_000,
        "repeat": MIN_REPEAT,
    },
    "large": {
        "b1_logs": 100_000,
        "b2_logs": (1_000, 10_000, 100_000, 1_000_000),
        "b3_rows": 5_000_000,
        "b3_batches": 20,
        "b4_rows": 5_000_000,
        "cluster_rows": 1_000_000,
        "repeat": MIN_REPEAT,
    },
}


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """``(seconds, result)`` of one call."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


@dataclass(frozen=True, slots=True)
class Measured:
    """Repeated timings of one call (seconds) and the result of the last call."""

    median_s: float
    min_s: float
    all_s: tuple[float, ...]
    result: Any = field(default=None, compare=False)
    cpu_s: tuple[float, ...] = ()

    @property
    def max_s(self) -> float:
        return max(self.all_s)

    def to_dict(self) -> dict[str, Any]:
        out = spread(self.all_s).to_dict()
        if self.cpu_s:
            # This process's CPU time (threads included, other processes not): steadier than the wall clock on a
            # shared machine, and the whole cost of work done in-process.
            out["cpu_median_s"] = round(statistics.median(self.cpu_s), 6)
        return out

    @classmethod
    def of(cls, times: Sequence[float], result: Any = None, cpu: Sequence[float] = ()) -> Measured:
        """From timings taken elsewhere (e.g. interleaved repeats of several methods)."""
        return cls(statistics.median(times), min(times), tuple(times), result, tuple(cpu))


@dataclass(frozen=True, slots=True)
class Spread:
    """Median, min and max of repeated values (seconds, or any unit the caller names)."""

    median: float
    min: float
    max: float
    values: tuple[float, ...]

    def to_dict(self, unit: str = "s", digits: int = 6) -> dict[str, Any]:
        return {
            f"median_{unit}": round(self.median, digits),
            f"min_{unit}": round(self.min, digits),
            f"max_{unit}": round(self.max, digits),
            "repeats": len(self.values),
            f"all_{unit}": [round(v, digits) for v in self.values],
        }


def spread(values: Sequence[float]) -> Spread:
    """Median, min and max of ``values`` (not empty)."""
    vals = tuple(float(v) for v in values)
    return Spread(statistics.median(vals), min(vals), max(vals), vals)


def measure(fn: Callable[[], Any], repeat: int = MIN_REPEAT, warmup: int = 1) -> Measured:
    """Call ``fn`` ``warmup`` times untimed, then ``repeat`` times timed."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    cpu: list[float] = []
    out: Any = None
    for _ in range(max(1, repeat)):
        cpu_start = time.process_time()
        seconds, out = timed(fn)
        cpu.append(time.process_time() - cpu_start)
        times.append(seconds)
    return Measured.of(times, out, cpu)


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    """``a / b`` rounded, ``None`` when either is missing or ``b`` is 0."""
    if a is None or b is None or b == 0:
        return None
    return round(a / b, digits)


def _status_kib(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@dataclass(slots=True)
class PeakMemory:
    """Filled in by :func:`peak_memory`: resident set at the start, peak during, and their difference (bytes)."""

    rss_start: int = 0
    rss_peak: int = 0
    method: str = ""

    @property
    def growth(self) -> int:
        return max(0, self.rss_peak - self.rss_start)


@contextlib.contextmanager
def peak_memory() -> Iterator[PeakMemory]:
    """Measure the resident-set peak of the enclosed block (per task when the block is one task)."""
    out = PeakMemory()
    if _reset_hwm():
        out.method = "VmHWM after clear_refs"
        out.rss_start = (_status_kib("VmRSS") or 0) * 1024
        try:
            yield out
        finally:
            out.rss_peak = (_status_kib("VmHWM") or 0) * 1024
    else:  # the process-wide peak cannot be reset: only growth of the all-time peak is seen
        out.method = "ru_maxrss (not resettable)"
        out.rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        try:
            yield out
        finally:
            out.rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


def profile(fn: Callable[[], Any], top: int = 8) -> dict[str, Any]:
    """cProfile one call: total seconds and the ``top`` functions by own time, with their share of the total."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.runcall(fn)
    total = time.perf_counter() - start
    stats = pstats.Stats(prof)
    rows = []
    for (file, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        short = file.split("site-packages/")[-1].split("/main/")[-1]
        rows.append({"function": f"{short}:{line}({func})", "calls": ncalls, "own_s": tottime, "cum_s": cumtime})
    rows.sort(key=lambda r: r["own_s"], reverse=True)
    return {
        "total_s": round(total, 3),
        "top_own_time": [
            {**r, "own_s": round(r["own_s"], 4), "cum_s": round(r["cum_s"], 4), "share": round(r["own_s"] / total, 3)}
            for r in rows[:top]
        ],
    }
