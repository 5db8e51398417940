"""Notebook 05 ("your own table") on the real Hudi tables of ``../shared/fixtures`` and on the demo.

By default one table of each shape the notebook branches on (``REPRESENTATIVE``); ``EVT_NOTEBOOK05_ALL=1`` runs it
on every fixture table.

Each run executes the whole notebook in a kernel of its own (nbclient, as papermill does), with ``EVT_TABLE_PATH``
pointing at a private copy of the table. A run passes when every cell completes — no traceback anywhere — and the
freshness statement it shows agrees with the table: the freshness it reports now is ``t.ro_freshness()``, and what it
says a compaction at T would promise is exactly what ``t.compaction.preview`` says (nothing, when the plan would
compact nothing). The statement's figures are read back from the data the notebook attaches to its text
(:data:`evt_toolkit.widgets.notebook.FRESHNESS_MIME`), and the text is checked to say the same.

Shared work: the fixture tables are copied once, and the notebooks run two at a time in the background from the
start of the module (most of a run is a kernel starting and importing plotly), each test waiting for its own run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy, iso_ms
from evt_toolkit.widgets.notebook import COPY_COMPACTION_MIME, FRESHNESS_MIME
from tests.conftest import REPO_ROOT, TABLES_DIR, fixture_names, fixture_table_path, shared_available

pytest.importorskip("nbclient", reason="nbclient is not installed (extra 'notebook')")

NOTEBOOK = REPO_ROOT / "notebooks" / "05_your_own_table.ipynb"
DEMO = "demo"
#: Kernels run at once: the machine has two cores, and a run is mostly one kernel's imports.
WORKERS = int(os.environ.get("EVT_NOTEBOOK_WORKERS", "2"))
#: Every fixture table with ``EVT_NOTEBOOK05_ALL=1``; by default one table of each shape the notebook branches on:
#: copy-on-write and merge-on-read of every table version, no logs at all, logs without event times, a string
#: ordering field, a metadata table, stock version-9 tables whose copy compacts, and the demo.
ALL = os.environ.get("EVT_NOTEBOOK05_ALL") == "1"
REPRESENTATIVE = (
    "cow_v6_nonpartitioned",
    "cow_v8_simplekeygen_nonhivestyle",
    "cow_v9_txns_simple_nometa",
    "mor_v6_empty",
    "mor_v6_trips_8i1u",
    "mor_v8_mor_boundary_windows",
    "mor_v9_mor_8i4u_commit_time",
    "mor_v9_mor_compacted_incremental",
    "mor_v9_txns_simple_meta",
    "mor_table_evo_add_col",
    "mor_table_delete_ord_int",
    "mor_table_log_only",
    "mor_table_event_time_stale",
)
CELL_TIMEOUT_S = 300

pytestmark = [pytest.mark.slow]


def _cases() -> list[str]:
    names = fixture_names()
    return [*(n for n in names if ALL or n in REPRESENTATIVE), DEMO]


def _execute(table_path: Path, workdir: Path) -> dict[str, Any]:
    """Run the notebook on ``table_path`` in a fresh kernel; the executed notebook as a dict."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = {**os.environ, "EVT_TABLE_PATH": str(table_path)}
    env.pop("EVT_EVENT_TIME_FIELD", None)
    env.pop("EVT_THRESHOLD", None)
    from jupyter_client.manager import KernelManager

    # Local sockets, not TCP: no port to pick, and no warning about unencrypted TCP per kernel. They live in a short
    # folder of their own: a socket path has a ~107-byte limit, which a temporary folder under pytest-xdist can pass.
    sockets = Path(tempfile.mkdtemp(prefix="evt-kernel-"))
    km = KernelManager(kernel_name="python3", transport="ipc", connection_file=str(sockets / "kernel.json"))
    client = NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT_S,
        allow_errors=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    try:
        client.execute(env=env)
    finally:
        # nbclient shuts down only the kernels it creates: one handed to it stays up until this process ends (a
        # graceful shutdown, so that the kernel's exit handlers run).
        if km.has_kernel:
            km.shutdown_kernel()
        shutil.rmtree(sockets, ignore_errors=True)
    return dict(nb)


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[dict[str, tuple[Path, Future[dict[str, Any]]]]]:
    """Every selected table copied once, every run started in the background; ``name -> (table copy, run)``."""
    wanted = {
        item.callspec.params["name"]
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_notebook05_runs_and_its_freshness_agrees"
    }
    root = tmp_path_factory.mktemp("nb05")
    paths: dict[str, Path] = {}
    if shared_available():
        for name in (n for n in fixture_names() if n in wanted):
            dest = root / name / fixture_table_path(name).name
            shutil.copytree(fixture_table_path(name), dest, symlinks=True)
            paths[name] = dest
    from evt_toolkit.demo.build import build_demo_table
    from evt_toolkit.demo.locate import demo_table_path

    if DEMO in wanted:
        paths[DEMO] = Path(build_demo_table(demo_table_path(), progress=False).path.removeprefix("file://"))
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="nb05")
    started = {}
    for name, path in paths.items():
        (root / f"work-{name}").mkdir(exist_ok=True)
        started[name] = (path, pool.submit(_execute, path, root / f"work-{name}"))
    try:
        yield started
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _outputs(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for cell in nb["cells"] if cell["cell_type"] == "code" for o in cell.get("outputs", [])]


def _text(nb: dict[str, Any]) -> str:
    parts = []
    for o in _outputs(nb):
        if "text" in o:
            parts.append(o["text"] if isinstance(o["text"], str) else "".join(o["text"]))
        plain = o.get("data", {}).get("text/plain")
        if plain:
            parts.append(plain if isinstance(plain, str) else "".join(plain))
    return "\n".join(parts)


@pytest.mark.parametrize("name", _cases())
def test_notebook05_runs_and_its_freshness_agrees(
    name: str, runs: dict[str, tuple[Path, Future[dict[str, Any]]]]
) -> None:
    if name not in runs:
        pytest.skip(f"real Hudi fixtures not found at {TABLES_DIR}")
    path, future = runs[name]
    nb = future.result(timeout=CELL_TIMEOUT_S * 4)  # a failed cell raises here with its traceback
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    statements = [o["data"][FRESHNESS_MIME] for o in outputs if FRESHNESS_MIME in o.get("data", {})]
    assert len(statements) == 1, "the notebook shows one freshness statement"
    st = statements[0]
    if isinstance(st, str):
        st = json.loads(st)
    text = _text(nb)
    assert st["text"] in text or st["text"].replace("\n", " ") in text.replace("\n", " ")

    t = evt.HudiTable.open(path)
    fresh = t.ro_freshness()
    assert st["now_ms"] == fresh.threshold_ms and st["now_reason"] == fresh.reason
    after = st["text"].split("\n", 1)[1]

    if t.config.table_type != "MERGE_ON_READ":
        assert st["kind"] == "copy_on_write" and "MERGE_ON_READ" in after
    elif sum(t.file_slices().column("num_log_files").to_pylist()) == 0:
        assert st["kind"] == "no_logs"
    else:
        field = st["event_time_field"]
        probe = t.compaction.preview(EventTimeBasedCompactionStrategy(data_latency=0, event_time_field=field))
        log = probe.per_log
        known = log.filter(pc.and_(log["has_data"], pc.is_valid(log["min_event_time"])))
        if known.num_rows == 0:
            assert st["kind"] == "no_event_times"
        else:
            assert st["kind"] == "plan" and st["threshold_ms"] is not None
            s = t.compaction.preview(
                EventTimeBasedCompactionStrategy(threshold=st["threshold_ms"], event_time_field=field)
            ).summary
            assert st["logs_compacted"] == s.logs_compacted
            assert st["promise_ms"] == (s.ro_freshness_ms if s.logs_compacted else None)
            if st["promise_ms"] is not None:
                assert f"every event ≤ {iso_ms(st['promise_ms'])}" in after
    if st["promise_ms"] is None:
        assert "every event ≤" not in after, after  # no promise the preview does not make

    # The last section compacts a private copy: where it ran, the snapshot kept every record and RO did not shrink;
    # where it did not, it says why; the table itself was not written (its freshness is still the one read above).
    copies = [o["data"][COPY_COMPACTION_MIME] for o in outputs if COPY_COMPACTION_MIME in o.get("data", {})]
    assert len(copies) == 1, "the notebook compacts one copy"
    cp = copies[0] if not isinstance(copies[0], str) else json.loads(copies[0])
    if cp["done"]:
        assert cp["snapshot_unchanged"] is True and cp["ro_rows_after"] >= cp["ro_rows_before"], cp
        assert st["kind"] == "plan" and st["logs_compacted"] > 0, (st, cp)
    else:
        assert cp["reason"], cp
    assert t.refresh().ro_freshness().threshold_ms == fresh.threshold_ms
    if name.startswith("mor_v9_mor_compacted") or name == "mor_table_evo_add_col":
        assert cp["done"], cp  # stock version-9 tables compact a copy

    # A string ordering field is explained, not a traceback.
    if name == "mor_v9_mor_8i4u_commit_time":
        assert "Set EVENT_TIME_FIELD" in text and "has type string" in text
    # Stored outputs must not carry the path of the machine that ran them: the notebook never prints it.
    assert str(path) not in text
