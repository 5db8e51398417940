"""Every real Hudi table under ../shared/fixtures/tables reads exactly as Spark answered.

``gold_data/`` is Spark's ``SELECT *`` snapshot; ``gold_options/manifest.json`` lists projections, a read-optimized
read and incremental windows with Spark's answer for each. Lance base files and HFile blocks may raise
``UnsupportedFeatureError``; nothing else is exempt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR, fixture_names, fixture_table_path
from tests.normalize import assert_same_rows

pytestmark = [SKIP_NO_SHARED, pytest.mark.fixtures]


def _gold(path: Path) -> pa.Table:
    files = sorted(path.glob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]) if files else pa.table({})


def _with_gold_data() -> list[str]:
    return [n for n in fixture_names() if (TABLES_DIR / n / "gold_data").is_dir()]


def _option_cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for n in fixture_names():
        manifest = TABLES_DIR / n / "gold_options" / "manifest.json"
        if manifest.is_file():
            for case in json.loads(manifest.read_text())["cases"]:
                out.append((n, case))
    return out


def _unsupported_ok(name: str) -> bool:
    meta = json.loads((TABLES_DIR / name / "fixture.json").read_text())
    return "lance" in name or "HFILE_DATA" in (meta.get("block_types") or {})


def test_every_fixture_is_covered() -> None:
    assert len(fixture_names()) >= 40
    assert len(_with_gold_data()) >= 35
    assert len(_option_cases()) >= 100


@pytest.mark.parametrize("name", _with_gold_data())
def test_snapshot_equals_spark(name: str) -> None:
    gold = _gold(TABLES_DIR / name / "gold_data")
    table = evt.HudiTable.open(fixture_table_path(name))
    try:
        ours = table.read("snapshot")
    except evt.UnsupportedFeatureError:
        assert _unsupported_ok(name), f"{name} raised UnsupportedFeatureError but is not a Lance/HFile table"
        return
    assert_same_rows(ours, gold, what=f"{name} snapshot")


@pytest.mark.parametrize(("name", "case"), _option_cases(), ids=lambda x: x if isinstance(x, str) else x["name"])
def test_option_case_equals_spark(name: str, case: dict[str, Any]) -> None:
    gold = _gold(TABLES_DIR / name / "gold_options" / case["name"])
    table = evt.HudiTable.open(fixture_table_path(name))
    try:
        if "projection" in case:
            ours = table.read("snapshot", columns=case["projection"])
            assert ours.column_names == case["projection"]
        elif case.get("read_optimized"):
            ours = table.read("read_optimized")
        else:
            ours = table.read("incremental", begin=case["start_timestamp"], end=case["end_timestamp"])
    except evt.UnsupportedFeatureError:
        assert _unsupported_ok(name)
        return
    assert_same_rows(ours, gold, what=f"{name} {case['name']}")
