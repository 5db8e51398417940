"""B6: tables on S3 at an injected per-request latency — requests and wall time, against hudi-rs where it can.

A moto S3 server on 127.0.0.1 sits behind a small TCP proxy on loopback that holds every HTTP request for
``--latency-ms`` (20 ms: a realistic S3 first byte) before forwarding it, and counts requests by method. Measured
in one run, each a median of ``--repeats`` (min and max kept):

- snapshot read of a 30-log, 6-base-file table (``HudiTable.open(...).read()`` vs hudi-rs ``read()``);
- header scan (``inspect.log_blocks``: requests per log file) and the compaction preview of a 10,000-log table
  (``--preview-logs``);
- one upsert (request types: a write makes no CopyObject and no DELETE);
- a schedule with copy links (server-side copies: bytes through the client vs linked bytes) and its run.

``python -m bench.b6_object_store [--size tiny|small] [--latency-ms 20] [--repeats 5] [--out bench/results]``
writes ``b6.json`` and ``b6.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from bench.common import machine_info

SIZES = {"tiny": {"preview_logs": 400, "repeats": 2}, "small": {"preview_logs": 10_000, "repeats": 5}}
METHODS = (b"GET ", b"PUT ", b"HEAD ", b"POST ", b"DELETE ")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2):
                return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("moto server did not start") from None
            time.sleep(0.2)


class DelayProxy:
    """A TCP proxy on 127.0.0.1 that delays every HTTP request by ``latency`` seconds and counts them by method.

    A request is recognised by a client chunk starting with an HTTP method (bodies of PUTs are binary Avro/Parquet
    and never start with one); the delay is applied before forwarding it, like a network round trip.
    """

    def __init__(self, target_port: int, latency: float) -> None:
        self.target_port = target_port
        self.latency = latency
        self.port = _free_port()
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", self.port))
        self._ready.set()
        with contextlib.suppress(Exception):
            self._loop.run_forever()
        server.close()

    async def _handle(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            sr, sw = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            cw.close()
            return

        async def up() -> None:
            try:
                while data := await cr.read(65536):
                    for m in METHODS:
                        if data.startswith(m):
                            with self._lock:
                                key = m.decode().strip()
                                self.counts[key] = self.counts.get(key, 0) + 1
                                target = data.split(b" ", 2)[1] if data.count(b" ") >= 2 else b""
                                if b".log." in target.split(b"?", 1)[0]:
                                    self.counts["log_file"] = self.counts.get("log_file", 0) + 1
                            await asyncio.sleep(self.latency)
                            break
                    sw.write(data)
                    await sw.drain()
            finally:
                with contextlib.suppress(Exception):
                    sw.close()

        async def down() -> None:
            try:
                while data := await sr.read(65536):
                    cw.write(data)
                    await cw.drain()
            finally:
                with contextlib.suppress(Exception):
                    cw.close()

        await asyncio.gather(up(), down(), return_exceptions=True)

    def take(self) -> dict[str, int]:
        with self._lock:
            out = dict(self.counts)
            self.counts.clear()
        out["total"] = sum(v for k, v in out.items() if k != "log_file")
        return out

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)


def _create_bucket(port: int, name: str) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/{name}", method="PUT")
    with urllib.request.urlopen(req, timeout=30):
        pass


def _options(port: int) -> dict[str, str]:
    return {
        "aws_endpoint_url": f"http://127.0.0.1:{port}",
        "aws_access_key_id": "bench",
        "aws_secret_access_key": "bench-secret",
        "aws_region": "us-east-1",
        "aws_allow_http": "true",
    }


def _rows(ids: range | list[int], ts: int, ev_base: int) -> pd.DataFrame:
    ids = list(ids)
    return pd.DataFrame(
        {
            "id": pd.array(ids, dtype="int64"),
            "region": [f"r{i % 2}" for i in ids],
            "ts": pd.array([ts] * len(ids), dtype="int64"),
            "ev": pd.array([ev_base + (i % 50) * 1000 for i in ids], dtype="int64"),
            "v": [float(i + ts) for i in ids],
        }
    )


def _upload(local: Path, uri: str, options: dict[str, str]) -> None:
    from evt_toolkit.storage import TableStorage

    st = TableStorage.from_uri(uri, options)
    files = {p.relative_to(local).as_posix(): p.read_bytes() for p in local.rglob("*") if p.is_file()}
    st.write_many(files, overwrite=True)


def _copy_prefix(src: str, dst: str, options: dict[str, str]) -> None:
    """A fresh copy of a table on S3 (server-side copies, outside the measured window)."""
    from evt_toolkit.storage import TableStorage

    a = TableStorage.from_uri(src, options)
    b = TableStorage.from_uri(dst, options)
    files = a.list_files("")
    # Copy within one bucket: source and destination are both under the bucket root.
    bucket_root = TableStorage.from_uri(src.rsplit("/", 1)[0], options)
    sname, dname = src.rsplit("/", 1)[1], dst.rsplit("/", 1)[1]
    bucket_root.parallel(lambda f: bucket_root.copy_file(f"{sname}/{f.path}", f"{dname}/{f.path}", True), files)
    assert len(b.list_files("")) == len(files)


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _measure(proxy: DelayProxy, repeats: int, setup: Callable[[int], Any], fn: Callable[[Any], Any]) -> dict[str, Any]:
    walls: list[float] = []
    reqs: list[dict[str, int]] = []
    # repeats is recorded per measurement: a slow variant may run fewer times than --repeats.
    extra: list[Any] = []
    for i in range(repeats):
        arg = setup(i)
        proxy.take()
        t0 = time.perf_counter()
        out = fn(arg)
        walls.append(time.perf_counter() - t0)
        reqs.append(proxy.take())
        extra.append(out)
    keys = sorted({k for r in reqs for k in r})
    return {
        "repeats": repeats,
        "wall_s": _stats(walls),
        "requests": {k: statistics.median([r.get(k, 0) for r in reqs]) for k in keys},
        "results": extra,
    }


def run(size: str = "small", latency_ms: float = 20.0, repeats: int | None = None) -> dict[str, Any]:
    import hudi

    import evt_toolkit as evt
    from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
    from evt_toolkit.compaction.executor import run_compaction
    from evt_toolkit.compaction.schedule import schedule_compaction
    from evt_toolkit.demo.build import build_synthetic_table
    from evt_toolkit.storage import count_requests

    cfg = SIZES[size]
    reps = repeats or int(cfg["repeats"])
    moto, port = start_moto()
    proxy = DelayProxy(port, latency_ms / 1000)
    direct = _options(port)
    slow = _options(proxy.port)
    tmp = Path(tempfile.mkdtemp(prefix="b6-"))
    out: dict[str, Any] = {"size": size, "latency_ms": latency_ms, "repeats": reps, "machine": machine_info()}
    try:
        _create_bucket(port, "bench")
        # -- the table: 6 file groups (2 partitions × 3 buckets) compacted into base files, then 5 upserts (30 logs).
        base_uri = "s3a://bench/t0"
        t = evt.HudiTable.create(
            base_uri, "b6", "id", partition_by="region", ordering_field="ts", event_time_field="ev",
            buckets=3, merge_mode="event_time", storage_options=direct,
        )  # fmt: skip
        ev0 = 1_700_000_000_000
        t.write(_rows(range(0, 600), 1, ev0))
        c0 = schedule_compaction(t, UnBoundedCompactionStrategy())
        assert c0 is not None
        run_compaction(t, c0.instant)
        for k in range(5):
            t.write(_rows(range(k * 60, k * 60 + 180 + k * 7), 10 + k, ev0 + (k + 1) * 3_600_000))
        t.refresh()
        fs = t.file_slices()
        n_logs = int(sum(fs["num_log_files"].to_pylist()))
        out["table"] = {"rows": t.read().num_rows, "log_files": n_logs, "base_files": fs.num_rows}
        uri = base_uri

        # -- snapshot read -------------------------------------------------------------------------------------
        ours = _measure(proxy, reps, lambda i: None, lambda _: evt.HudiTable.open(uri, storage_options=slow).read())
        theirs = _measure(
            proxy,
            reps,
            lambda i: None,
            lambda _: (
                hudi.HudiTableBuilder.from_base_uri(uri.replace("s3a://", "s3://"))
                .with_storage_options(slow)
                .build()
                .read()
            ),
        )
        rows_ours = ours.pop("results")[0].num_rows
        rows_theirs = sum(b.num_rows for b in theirs.pop("results")[0])
        out["snapshot"] = {
            "ours": ours,
            "hudi_rs": theirs,
            "rows": [rows_ours, rows_theirs],
            "ratio_wall": ours["wall_s"]["median"] / theirs["wall_s"]["median"],
        }

        # -- header scan -----------------------------------------------------------------------------------------
        scan = _measure(
            proxy,
            reps,
            lambda i: None,
            lambda _: evt.HudiTable.open(uri, storage_options=slow).inspect.log_blocks(event_time_field="ev"),
        )
        scan.pop("results")
        scan["requests_per_log_file"] = scan["requests"]["total"] / n_logs
        scan["log_file_requests_per_log_file"] = scan["requests"].get("log_file", 0) / n_logs
        out["header_scan"] = scan

        # -- upsert ----------------------------------------------------------------------------------------------
        def upsert(i: int) -> None:
            with count_requests() as c:
                evt.HudiTable.open(uri, storage_options=slow).write(
                    _rows(range(i * 86, i * 86 + 86), 100 + i, ev0 + 10 * 3_600_000)
                )
            return c.counts().as_dict()  # type: ignore[return-value]

        up = _measure(proxy, reps, lambda i: i, upsert)
        up["client_counts"] = up.pop("results")[0]
        out["upsert"] = up

        # -- schedule with copy links, then run ------------------------------------------------------------------
        strategy = EventTimeBasedCompactionStrategy(threshold=ev0 + 3 * 3_600_000 + 1)

        def fresh(i: int) -> str:
            dst = f"s3a://bench/sched{i}-{time.monotonic_ns()}"
            _copy_prefix(uri, dst, direct)
            return dst

        def schedule(dst: str) -> dict[str, Any]:
            tt = evt.HudiTable.open(dst, storage_options=slow)
            with count_requests() as c:
                sc = schedule_compaction(tt, strategy, link_mode="copy", link_timing="schedule")
            assert sc is not None
            return {"dst": dst, "instant": sc.instant, "client": c.counts().as_dict()}

        sched = _measure(proxy, reps, fresh, schedule)
        results = sched.pop("results")
        r0 = results[0]
        # The plan's links and their bytes, read after the clock stopped (and not through the delaying proxy).
        t0 = evt.HudiTable.open(r0["dst"], storage_options=direct)
        plan = t0.timeline.compaction_plan(next(x for x in t0.timeline.instants if x.time == r0["instant"]))
        r0["links"] = len(plan.links)
        r0["linked_bytes"] = sum(t0.storage.size(lk.target_path) for lk in plan.links)
        # Link copies move no byte through the client: the bytes the schedule fetched are the log headers it scans.
        sched["links"] = r0["links"]
        sched["linked_bytes"] = r0["linked_bytes"]
        sched["client_counts"] = r0["client"]
        out["schedule_copy_links"] = sched

        def run_it(r: dict[str, Any]) -> None:
            run_compaction(evt.HudiTable.open(r["dst"], storage_options=slow), r["instant"])

        it = iter(results)
        out["run"] = _measure(proxy, reps, lambda i: next(it), run_it)
        out["run"].pop("results")
        # The link copies alone (bytes through the client while copying): create_links on a fresh schedule's plan.
        from evt_toolkit.storage.links import create_links

        dst = fresh(99)
        tt = evt.HudiTable.open(dst, storage_options=slow)
        sc = schedule_compaction(tt, strategy, link_mode="copy", link_timing="execute")
        assert sc is not None
        plan = tt.refresh().timeline.compaction_plan(next(x for x in tt.timeline.instants if x.time == sc.instant))
        links = plan.links
        linked = sum(tt.storage.size(lk.target_path) for lk in links)
        with count_requests() as c:
            create_links(tt.storage, links)
        cc = c.counts()
        out["copy_links"] = {
            "links": len(links),
            "linked_bytes": linked,
            "client_bytes": cc.bytes_read + cc.bytes_written,
            "fraction_through_client": (cc.bytes_read + cc.bytes_written) / linked if linked else 0.0,
            "copy_requests": cc.copy,
        }

        # -- preview of a many-log table ---------------------------------------------------------------------------
        n_prev = int(cfg["preview_logs"])
        buckets, parts = 20, max(1, n_prev // (20 * 20))
        local = tmp / "preview"
        build_synthetic_table(
            str(local), n_rows=n_prev * 4, n_keys=n_prev * 2, n_batches=20, partitions=parts, buckets=buckets,
            progress=False, late_fraction=0.1, delete_fraction=0.0,
        )  # fmt: skip
        shutil.rmtree(local / ".hoodie" / ".temp", ignore_errors=True)
        _upload(local, "s3a://bench/preview", direct)
        pt = evt.HudiTable.open("s3a://bench/preview", storage_options=slow)
        n_prev_logs = int(sum(pt.file_slices()["num_log_files"].to_pylist()))
        field = pt.config.event_time_field
        assert not pt.timeline.pending(), "the preview table has no pending instants (both variants pass none)"
        now_ms = int(time.time() * 1000)  # one compaction time for every repeat: the previews must agree

        def preview(use_write_stats: bool) -> Any:
            from evt_toolkit.compaction import event_times
            from evt_toolkit.compaction.preview import preview as preview_of

            event_times.clear_cache()
            tp = evt.HudiTable.open("s3a://bench/preview", storage_options=slow)
            strategy = EventTimeBasedCompactionStrategy(data_latency=3_600_000)
            if use_write_stats:
                return tp.compaction.preview(strategy, now_ms=now_ms)  # what a user calls
            slices = event_times.slice_set(tp, field, use_write_stats=False)
            return preview_of(slices, strategy, now_ms=now_ms, pending_table_services=())

        def preview_summary(res: Any) -> dict[str, Any]:
            s = res.summary
            return {"slices_selected": s.slices_selected, "logs_compacted": s.logs_compacted}

        def per_log(p: dict[str, Any]) -> None:
            p["log_files"] = n_prev_logs
            p["event_time_field"] = field
            p["requests_per_log_file"] = p["requests"]["total"] / n_prev_logs
            p["log_file_requests_per_log_file"] = p["requests"].get("log_file", 0) / n_prev_logs

        # Block facts from the commits' write stats (one GET per commit), as the preview does by default ...
        prev = _measure(proxy, reps, lambda i: True, preview)
        fast = prev.pop("results")
        per_log(prev)
        out["preview"] = prev
        # ... and from every log's headers (one GET per log): fewer repeats, each takes half a minute at 20 ms.
        scan = _measure(proxy, max(1, min(reps, 3)), lambda i: False, preview)
        slow_res = scan.pop("results")
        per_log(scan)
        # Same preview either way (the slice and log tables; only where a value was read from may differ).
        a, b = fast[0], slow_res[0]
        assert a.per_slice.equals(b.per_slice) and a.summary == b.summary, "the two previews differ"
        assert a.per_log.drop_columns(["min_event_time_source"]).equals(
            b.per_log.drop_columns(["min_event_time_source"])
        ), "the two previews' log tables differ"
        prev["summary"] = preview_summary(a)
        out["preview_header_scan"] = scan
    finally:
        proxy.stop()
        moto.terminate()
        shutil.rmtree(tmp, ignore_errors=True)
    out["targets"] = _targets(out)
    return out


def _targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    up = r["upsert"]["requests"]
    cc = r["upsert"]["client_counts"]
    return [
        {
            "target": "snapshot read / hudi-rs wall time",
            "goal": "<= 1.0x",
            "measured": f"{r['snapshot']['ratio_wall']:.2f}x",
            "met": r["snapshot"]["ratio_wall"] <= 1.0,
        },
        {
            "target": "header scan: requests per log file (on log files; all requests incl. open)",
            "goal": "<= 1",
            "measured": f"{r['header_scan']['log_file_requests_per_log_file']:.2f}; "
            f"{r['header_scan']['requests_per_log_file']:.2f}",
            "met": r["header_scan"]["log_file_requests_per_log_file"] <= 1.0,
        },
        {
            "target": f"preview of {r['preview']['log_files']} logs",
            "goal": "<= 10 s",
            "measured": f"{r['preview']['wall_s']['median']:.2f} s",
            "met": r["preview"]["wall_s"]["median"] <= 10.0,
        },
        {
            "target": "upsert CopyObject / DELETE requests",
            "goal": "0 / 0",
            "measured": f"{cc['copy']} / {cc['delete']} (proxy: DELETE {up.get('DELETE', 0)})",
            "met": cc["copy"] == 0 and cc["delete"] == 0 and up.get("DELETE", 0) == 0,
        },
        {
            "target": "copy links: bytes through the client / linked bytes",
            "goal": "<= 5 %",
            "measured": f"{100 * r['copy_links']['fraction_through_client']:.1f} %",
            "met": r["copy_links"]["fraction_through_client"] <= 0.05,
        },
    ]


def to_markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [
        f"# B6: tables on S3 at {r['latency_ms']:.0f} ms per request",
        "",
        f"Machine: {m.get('cores')} cores, {m.get('memory_gib')} GiB; Python {m.get('python')}, "
        f"hudi-rs {m.get('hudi')}. moto S3 server behind a delaying proxy on 127.0.0.1; medians of "
        f"{r['repeats']} repeats (min–max). Table: {r['table']['rows']} rows, {r['table']['base_files']} file "
        f"groups with base files, {r['table']['log_files']} log files.",
        "",
        "| operation | wall s (median, min–max) | requests (median, by method) |",
        "|---|---|---|",
    ]

    def row(name: str, x: dict[str, Any]) -> None:
        w = x["wall_s"]
        reqs = ", ".join(f"{k} {v:g}" for k, v in x["requests"].items() if k not in ("total", "log_file"))
        lines.append(
            f"| {name} | {w['median']:.3f} ({w['min']:.3f}–{w['max']:.3f}) | {x['requests'].get('total', 0):g}: "
            f"{reqs} |"
        )

    row("snapshot read, evt_toolkit", r["snapshot"]["ours"])
    row("snapshot read, hudi-rs", r["snapshot"]["hudi_rs"])
    row("header scan (inspect.log_blocks)", r["header_scan"])
    row("upsert (86 rows)", r["upsert"])
    row("schedule with copy links", r["schedule_copy_links"])
    row("run (4 file groups)", r["run"])
    row(f"preview of {r['preview']['log_files']} logs", r["preview"])
    row(f"preview of {r['preview']['log_files']} logs, every log read", r["preview_header_scan"])
    lines += ["", "## Targets", "", "| target | goal | measured | met |", "|---|---|---|---|"]
    for t in r["targets"]:
        lines.append(f"| {t['target']} | {t['goal']} | {t['measured']} | {'yes' if t['met'] else 'no'} |")
    cl = r["copy_links"]
    lines += [
        "",
        f"Copy links: {cl['links']} links, {cl['linked_bytes']} linked bytes, {cl['copy_requests']} CopyObject "
        f"requests, {cl['client_bytes']} bytes through the client. Header scan: "
        f"{r['header_scan']['log_file_requests_per_log_file']:.2f} requests per log file on log files "
        f"({r['header_scan']['requests_per_log_file']:.2f} counting opening the table); preview: "
        f"{r['preview']['log_file_requests_per_log_file']:.2f} on log files "
        f"({r['preview']['requests_per_log_file']:.2f} in all); the preview reading every log instead: "
        f"{r['preview_header_scan']['log_file_requests_per_log_file']:.2f} on log files "
        f"({r['preview_header_scan']['requests_per_log_file']:.2f} in all), median of "
        f"{r['preview_header_scan']['repeats']} repeats.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.b6_object_store", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args(argv)
    r = run(args.size, args.latency_ms, args.repeats)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "b6.json").write_text(json.dumps(r, indent=2, sort_keys=True, default=str))
    (out / "b6.md").write_text(to_markdown(r))
    print(to_markdown(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
