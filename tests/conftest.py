"""Shared test configuration.

Real Hudi tables live in ``../shared/fixtures`` beside the repository (CI has them). Tests that need them use the
``shared_fixtures`` fixture, which skips with a clear reason when the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.environ.get("EVT_SHARED_DIR", REPO_ROOT.parent / "shared")).resolve()
FIXTURES_DIR = SHARED_DIR / "fixtures"
TABLES_DIR = FIXTURES_DIR / "tables"
LOG_FILES_DIR = FIXTURES_DIR / "log_files"


def shared_available() -> bool:
    return TABLES_DIR.is_dir() and LOG_FILES_DIR.is_dir()


SKIP_NO_SHARED = pytest.mark.skipif(
    not shared_available(),
    reason=f"real Hudi fixtures not found at {FIXTURES_DIR} (set EVT_SHARED_DIR or check out ../shared)",
)


def fixture_names() -> list[str]:
    """Every fixture table directory name under ../shared/fixtures/tables (empty when absent)."""
    if not TABLES_DIR.is_dir():
        return []
    return sorted(p.name for p in TABLES_DIR.iterdir() if (p / "fixture.json").is_file())


def fixture_table_path(name: str) -> Path:
    """Base path of the Hudi table inside fixture ``name``."""
    import json

    meta = json.loads((TABLES_DIR / name / "fixture.json").read_text())
    return TABLES_DIR / name / meta["table_dir"]


# Test files that take about 90 s or more, started first (longest first): the suite's files are spread over its
# worker processes in collection order (pytest-xdist, --dist loadfile), so a long file collected last keeps one
# worker busy while the other has nothing left to do. Paths are relative to the repository; files not collected
# are ignored.
SLOW_FILES_FIRST = (
    "tests/safety/test_spark_retries.py",
    "tests/faults/test_kill9.py",  # no Spark: the two long Spark applications do not start side by side
    "tests/spark/test_catalog.py",
    "tests/hudi1x/test_compaction_1x.py",
    "notebooks/04_partial_compaction_and_queries.ipynb",
    "tests/notebooks/test_notebooks_1x.py",
    "tests/safety/test_interrupts.py",
    "tests/s3/test_s3_tables.py",
    "tests/notebooks/test_notebook05.py",
    "tests/spark/test_datasource_read.py",
    "tests/browser/test_jupyterlab.py",
    "tests/safety/test_type_fidelity.py",
    "tests/safety/test_s3_faults.py",
    "tests/bench/test_bench_smoke.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FILES_FIRST)}

    def key(item: pytest.Item) -> int:
        return rank.get(Path(str(item.path)).resolve().relative_to(REPO_ROOT).as_posix(), len(rank))

    items.sort(key=key)  # stable: the order within a file and among the other files is kept


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    if not shared_available():
        pytest.skip(f"real Hudi fixtures not found at {FIXTURES_DIR} (set EVT_SHARED_DIR or check out ../shared)")
    return FIXTURES_DIR


@pytest.fixture(scope="session")
def _spark_sessions():  # type: ignore[no-untyped-def]
    """The Spark sessions the test session started (one, unless a test stopped it); the last is stopped at the end."""
    started: list[Any] = []
    yield started
    if started:
        started[-1].stop()


@pytest.fixture
def spark(_spark_sessions):  # type: ignore[no-untyped-def]
    """The one Spark session of the test session (local[2], UI off, 2 shuffle partitions).

    Started on first use and shared by every test after it; started again only when a test stopped it (the bench's
    cluster run stops the local session to start its cluster), so no test is handed a stopped session whatever the
    order the tests run in.
    """
    pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
    from pyspark import SparkContext

    from evt_toolkit.spark.session import get_or_create_session

    if not _spark_sessions or SparkContext._active_spark_context is None:
        _spark_sessions.append(get_or_create_session())
    return _spark_sessions[-1]


# -- one S3 API server per test session ------------------------------------------------------------------------
class S3Server:
    """A moto S3 server on 127.0.0.1 started by the tests (a real HTTP server speaking the S3 protocol)."""

    def __init__(self, endpoint: str, proc: object) -> None:
        self.endpoint = endpoint
        self.proc = proc
        self._n = 0

    @property
    def options(self) -> dict[str, str]:
        """Storage options of this server (the dict a user passes as ``storage_options``)."""
        return {
            "aws_endpoint_url": self.endpoint,
            "aws_access_key_id": "evt-test-key-id",
            "aws_secret_access_key": "evt-test-secret-key-4c3d",
            "aws_region": "us-east-1",
            "aws_allow_http": "true",
        }

    def new_bucket(self, prefix: str = "evt") -> str:
        """Create a fresh bucket and return its name."""
        import urllib.request
        import uuid

        self._n += 1
        name = f"{prefix}-{self._n}-{uuid.uuid4().hex[:8]}"
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200, resp.status
        return name


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_s3_server() -> S3Server:
    """Start ``moto.server`` on a free loopback port and wait until it answers."""
    import subprocess
    import sys
    import time
    import urllib.request

    pytest.importorskip("moto", reason="moto[server] is not installed (extra 'test')")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"moto S3 server did not start on {endpoint}") from None
            time.sleep(0.2)
    return S3Server(endpoint, proc)


@pytest.fixture(scope="session")
def s3_server():  # type: ignore[no-untyped-def]
    """The one S3 API server of the test session (moto server mode on 127.0.0.1)."""
    server = start_s3_server()
    yield server
    server.proc.terminate()  # type: ignore[attr-defined]
    try:
        server.proc.wait(timeout=10)  # type: ignore[attr-defined]
    except Exception:
        server.proc.kill()  # type: ignore[attr-defined]


@pytest.fixture()
def s3_bucket(s3_server: S3Server) -> str:
    """A fresh, empty bucket on the session's S3 server."""
    return s3_server.new_bucket()
