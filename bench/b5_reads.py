"""B5 — snapshot reads of one Merge-On-Read table: our Spark data source and pure-Python reader vs hudi-rs.

Each reader materializes every row of the snapshot as Arrow (median of repeats):

* ``python``: ``HudiTable.read()``;
* ``spark``: ``spark.read.format("hudi_evt").load(path).toArrow()`` on the session passed in (``local[2]``);
* ``hudi_rs``: ``hudi.HudiTableBuilder.from_base_uri(path).build().read()``.

The answers are compared on the user columns after sorting by key (``equal``). Run: ``python -m bench.b5_reads``
(builds the B3 source table first).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

import evt_toolkit as evt
from bench.common import measure, ratio

USER_COLUMNS = ["id", "region", "ts", "ev", "v", "name"]


def _plain(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _norm(t: pa.Table) -> pa.Table:
    """User columns, dictionaries decoded, sorted by key: the form in which readers are compared."""
    cols = [c for c in USER_COLUMNS if c in t.column_names]
    out = t.select(cols)
    out = out.cast(pa.schema([pa.field(c, _plain(out.schema.field(c).type)) for c in cols]))
    return out.combine_chunks().sort_by("id")


def readers(path: Path, spark: Any) -> dict[str, Callable[[], pa.Table]]:
    uri = str(path.resolve())
    out: dict[str, Callable[[], pa.Table]] = {"python": lambda: evt.HudiTable.open(uri).read()}
    if spark is not None:
        out["spark"] = lambda: spark.read.format("hudi_evt").load(uri).toArrow()
    try:
        import hudi

        out["hudi_rs"] = lambda: pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(uri).build().read())
    except ImportError:
        pass
    return out


def run(path: Path, spark: Any = None, repeat: int = 3) -> dict[str, Any]:
    """Time the readers on the table at ``path``."""
    results: dict[str, Any] = {}
    answers: dict[str, pa.Table] = {}
    for name, fn in readers(path, spark).items():
        try:
            m = measure(fn, repeat=repeat, warmup=1)
        except Exception as exc:  # a reader that fails is reported, the others still run
            results[name] = {"status": "failed", "note": f"{type(exc).__name__}: {str(exc)[:300]}"}
            continue
        answers[name] = _norm(m.result)
        results[name] = {"status": "ok", **m.to_dict(), "rows": m.result.num_rows}
    ref = answers.get("hudi_rs") or answers.get("python")
    equal = {name: bool(ref is not None and a.equals(ref)) for name, a in answers.items()}
    rs = results.get("hudi_rs", {}).get("median_s")
    return {
        "readers": results,
        "equal_to_hudi_rs": equal,
        "ratios": {
            "python_s / hudi_rs_s": ratio(results.get("python", {}).get("median_s"), rs),
            "spark_s / hudi_rs_s": ratio(results.get("spark", {}).get("median_s"), rs),
        },
        # Both read in this process, so their CPU times compare (Spark works in other processes: not comparable).
        "cpu_ratios": {
            "python_cpu_s / hudi_rs_cpu_s": ratio(
                results.get("python", {}).get("cpu_median_s"), results.get("hudi_rs", {}).get("cpu_median_s")
            ),
        },
        "target": {"max_ratio_to_hudi_rs": 2.0},
    }


def main(argv: list[str] | None = None) -> int:
    from bench.bench_compaction import _batches, _build
    from evt_toolkit.spark.session import get_or_create_session

    ap = argparse.ArgumentParser(prog="python -m bench.b5_reads", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="evt-b5-"))
    try:
        _build(work / "src", _batches(args.rows, 10, keys=max(1000, args.rows // 4)))
        spark = None if args.no_spark else get_or_create_session()
        print(json.dumps(run(work / "src", spark, args.repeat), indent=2))
        if spark is not None:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
