"""Preview latency on synthetic tables: 1k to 1M log files.

Measures, in one run and with repeats: building the model (from the columnar ``SliceSet`` the table's facts come
in, and from a list of ``SliceInfo`` records), the first preview, and the recompute after a threshold change
(:meth:`PreviewModel.set_threshold`, what a slider does). Prints JSON; ``bench.run`` (B2) records it. Timings are
reported, never asserted.

Run: ``python -m bench.bench_preview``
"""

from __future__ import annotations

import gc
import json
import platform
import time
from typing import Any

import numpy as np

from bench.common import MIN_REPEAT, spread
from evt_toolkit.compaction.model import LogFileInfo, SliceInfo
from evt_toolkit.compaction.prefix import select_prefix
from evt_toolkit.compaction.preview import PreviewModel
from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy

DAY_MS = 86_400_000
START_MS = 1_700_000_000_000


def synthetic_slices(num_logs: int, logs_per_slice: int = 10, seed: int = 42) -> list[SliceInfo]:
    """File slices whose logs arrive roughly in event-time order with heavy-tailed lateness, 2% without data."""
    rng = np.random.default_rng(seed)
    slices: list[SliceInfo] = []
    made = 0
    i = 0
    while made < num_logs:
        k = min(logs_per_slice, num_logs - made)
        fid = f"{i:08d}-0000-0000-0000-000000000000-0"
        arrival = START_MS + np.sort(rng.integers(0, 30 * DAY_MS, size=k))
        lateness = rng.pareto(1.5, size=k) * 3_600_000
        logs = tuple(
            LogFileInfo.synthetic(
                fid,
                j + 1,
                size=int(rng.integers(10_000, 5_000_000)),
                min_event_time=int(arrival[j] - lateness[j]),
                max_event_time=int(arrival[j]),
                has_data=bool(rng.random() > 0.02),
                partition_path=f"day={i % 30:02d}",
            )
            for j in range(k)
        )
        slices.append(
            SliceInfo(f"day={i % 30:02d}", fid, "20250101000000000", f"{fid}_0-0-0_1.parquet", 100_000_000, logs)
        )
        made += k
        i += 1
    return slices


def _ms(f: object) -> float:
    started = time.perf_counter()
    f()  # type: ignore[operator]
    return (time.perf_counter() - started) * 1000


def _slice_set(slices: list[SliceInfo]) -> Any:
    """The columnar input the preview is built from (``None`` on a version of the library without one)."""
    from evt_toolkit.compaction import model

    maker = getattr(model, "SliceSet", None)
    return None if maker is None else maker.from_infos(slices)


def _input_kind(columnar: Any, slices: list[SliceInfo]) -> list[tuple[str, Any]]:
    kinds: list[tuple[str, Any]] = []
    if columnar is not None:
        kinds.append(("columnar", columnar))
    kinds.append(("objects", slices))
    return kinds


def run(sizes: tuple[int, ...] = (1_000, 10_000, 100_000), repeats: int = MIN_REPEAT) -> list[dict[str, Any]]:
    """Measure each size and each input form, ``repeats`` times each (median, min, max).

    ``build`` is ``PreviewModel(...)``, ``first`` its first ``preview()``; ``preview`` = build + first, what a user
    waits for. ``recompute`` is ``set_threshold`` at 7 thresholds across the range, in every repeat. Inputs:
    ``columnar`` — the :class:`~evt_toolkit.compaction.model.SliceSet` the table facts arrive in
    (``event_times.slice_set``); ``objects`` — a list of ``SliceInfo`` records (converted inside the build).
    """
    out: list[dict[str, Any]] = []
    # Warm-up: the first Arrow/numpy calls of a process pay one-off initialisation that is not preview latency.
    PreviewModel(synthetic_slices(100), EventTimeBasedCompactionStrategy(threshold=START_MS), now_ms=START_MS).preview()
    for n in sizes:
        slices = synthetic_slices(n)
        columnar = _slice_set(slices)
        thresholds = [int(START_MS + d * DAY_MS) for d in np.linspace(1, 29, 7)]
        for kind, given in _input_kind(columnar, slices):
            builds: list[float] = []
            firsts: list[float] = []
            totals: list[float] = []
            recompute: list[float] = []
            cpu_totals: list[float] = []
            cpu_recompute: list[float] = []
            model: Any = None
            for _ in range(max(1, repeats)):
                strategy = EventTimeBasedCompactionStrategy(threshold=START_MS + 10 * DAY_MS)
                model = None
                gc.collect()
                cpu_start = time.process_time()
                started = time.perf_counter()
                model = PreviewModel(given, strategy, now_ms=START_MS + 60 * DAY_MS)
                built = time.perf_counter()
                model.preview()
                done = time.perf_counter()
                cpu_totals.append(time.process_time() - cpu_start)
                builds.append((built - started) * 1000)
                firsts.append((done - built) * 1000)
                totals.append(done - started)
                for t in thresholds:
                    cpu_start = time.process_time()
                    recompute.append(_ms(lambda m=model, t=t: m.set_threshold(t)))
                    cpu_recompute.append((time.process_time() - cpu_start) * 1000)
            # The scalar rule over Python objects, for the ratio (and a last agreement check).
            t = thresholds[-1]
            started = time.perf_counter()
            scalar = [select_prefix(s.log_files, t) for s in slices]
            scalar_ms = (time.perf_counter() - started) * 1000
            assert model.set_threshold(t).per_slice.column("logs_compacted").to_pylist() == scalar
            pv = spread(totals)
            rc = spread(recompute)
            out.append(
                {
                    "log_files": n,
                    "slices": len(slices),
                    "input": kind,
                    "build_model_ms": round(spread(builds).median, 2),
                    "first_preview_ms": round(spread(firsts).median, 2),
                    "preview_s": round(pv.median, 4),
                    "preview_s_min": round(pv.min, 4),
                    "preview_s_max": round(pv.max, 4),
                    "repeats": len(totals),
                    "threshold_change_ms_median": round(rc.median, 2),
                    "threshold_change_ms_min": round(rc.min, 2),
                    "threshold_change_ms_max": round(rc.max, 2),
                    "scalar_prefix_only_ms": round(scalar_ms, 2),
                    # Process CPU time, for information: the load of other processes moves it far less.
                    "preview_cpu_s": round(spread(cpu_totals).median, 4),
                    "threshold_change_cpu_ms_median": round(spread(cpu_recompute).median, 2),
                }
            )
    return out


def main() -> None:
    print(json.dumps({"python": platform.python_version(), "results": run()}, indent=2))


if __name__ == "__main__":
    main()
