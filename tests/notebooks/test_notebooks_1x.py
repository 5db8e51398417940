"""Notebooks 01–04 on a Hudi 1.x (table version 9) demo table.

The demo table is built at version 9 (``EVT_DEMO_TABLE_VERSION=9``, what ``scripts/main.sh`` passes on) into a
temporary folder, and each notebook runs whole in a kernel of its own (nbclient) with ``EVT_DEMO_TABLE`` pointing
there. Stored outputs are the version-6 demo's (nbval checks those), so these runs check what must hold on any
version: no cell fails, the table is the 1.x one, and notebook 04's compaction commits, validates and leaves the
read-optimized view holding exactly the snapshot's events up to the published freshness — which the test checks
again itself, with hudi-rs reading the compacted table.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.demo.build import build_demo_table
from evt_toolkit.demo.locate import DEMO_TABLE_ENV, DEMO_TABLE_VERSION_ENV
from tests.conftest import REPO_ROOT
from tests.normalize import assert_same_rows

pytest.importorskip("nbclient", reason="nbclient is not installed (extra 'notebook')")
hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

pytestmark = [pytest.mark.slow]

CELL_TIMEOUT_S = 300


def _execute(name: str, workdir: Path, env: dict[str, str]) -> str:
    """Run notebook ``name`` in a fresh kernel; the text of every stream output, in order."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    # The kernel's sockets live in a short folder of their own: a socket path has a ~107-byte limit, which a test's
    # temporary folder under a pytest-xdist worker can pass.
    sockets = Path(tempfile.mkdtemp(prefix="evt-kernel-"))
    km = KernelManager(kernel_name="python3", transport="ipc", connection_file=str(sockets / "kernel.json"))
    try:
        NotebookClient(
            nb, km=km, timeout=CELL_TIMEOUT_S, allow_errors=False, resources={"metadata": {"path": str(workdir)}}
        ).execute(env=env)
    finally:
        # nbclient shuts down only the kernels it creates: one handed to it stays up until this process ends (a
        # graceful shutdown, so that the kernel's exit handlers run).
        if km.has_kernel:
            km.shutdown_kernel()
        shutil.rmtree(sockets, ignore_errors=True)
    return "\n".join(
        out["text"] for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs if out.get("text")
    )


@pytest.fixture(scope="module")
def demo_v9(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("demo-v9")
    path = root / "flights"
    build_demo_table(str(path), table_version=9, progress=False)
    env: dict[str, Any] = {**os.environ, DEMO_TABLE_ENV: str(path), DEMO_TABLE_VERSION_ENV: "9"}
    env["EVT_WORK_DIR"] = str(root / "nb04")  # notebook 04 keeps its compacted copy there for the checks below
    return path, env


@pytest.mark.parametrize("name", ["01_inspect_log_headers", "02_event_time_distribution", "03_threshold_what_if"])
def test_read_only_notebooks_run_on_a_v9_table(name: str, demo_v9: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, env = demo_v9
    text = _execute(name, tmp_path, env)
    assert "table version 9" in text
    assert evt.HudiTable.open(path).config.version == 9


def test_compaction_notebook_on_a_v9_table(demo_v9: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = demo_v9
    text = _execute("04_partial_compaction_and_queries", tmp_path, env)
    assert "compaction committed: True" in text
    assert "plan, prefix rule, links and files valid: True ()" in text
    assert "RO view holds every event ≤ T exactly: True" in text
    m = re.search(r"events ≤ T — snapshot: ([\d,]+) \| RO: ([\d,]+)", text)
    assert m is not None and m.group(1) == m.group(2)

    # The compacted copy, checked independently: hudi-rs's snapshot equals ours, and our RO view restricted to the
    # published freshness equals the snapshot restricted the same way.
    t = evt.HudiTable.open(Path(env["EVT_WORK_DIR"]) / "flights_compacted")
    assert t.config.version == 9
    assert t.timeline.completed()[-1].action == "commit"
    ours = t.read()
    theirs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(t.storage.base_path)).build().read())
    data = [c for c in theirs.column_names if c != "_hoodie_file_name"]  # compaction renames files
    assert theirs.num_rows > 0
    assert_same_rows(ours, theirs, data, "snapshot of the compacted v9 demo vs hudi-rs")
    fresh = t.ro_freshness().threshold_ms
    assert fresh is not None
    field = t.config.event_time_field
    ro = t.read(query_type="read_optimized")
    assert field is not None
    assert_same_rows(
        ro.filter(pc.less_equal(ro[field], fresh)), ours.filter(pc.less_equal(ours[field], fresh)), data, "RO ≤ T"
    )
