"""Shared test configuration.

Real Hudi tables live in ``../shared/fixtures`` beside the repository (CI has them). Tests that need them use the
``shared_fixtures`` fixture, which skips with a clear reason when the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    if not shared_available():
        pytest.skip(f"real Hudi fixtures not found at {FIXTURES_DIR} (set EVT_SHARED_DIR or check out ../shared)")
    return FIXTURES_DIR


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """The one Spark session of the test session (local[2], UI off, 2 shuffle partitions)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
    from evt_toolkit.spark.session import get_or_create_session

    session = get_or_create_session()
    yield session
    session.stop()
