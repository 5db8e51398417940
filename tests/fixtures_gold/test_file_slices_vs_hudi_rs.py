"""``HudiTable.file_slices()`` lists the same latest slices as hudi-rs (``hudi`` on PyPI) on every fixture.

hudi-rs trusts the metadata table on v8+ tables that list ``files`` in ``hoodie.table.metadata.partitions`` and ship
``.hoodie/metadata``; the fixtures that do so describe the same files as storage, so the listings still agree.
"""

from __future__ import annotations

import pytest

import evt_toolkit as evt
from tests.conftest import SKIP_NO_SHARED, fixture_names, fixture_table_path

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

pytestmark = [SKIP_NO_SHARED, pytest.mark.fixtures]


def _hudi_rs_slices(path: str) -> set[tuple[str, str, str, str, tuple[str, ...]]]:
    t = hudi.HudiTableBuilder.from_base_uri(path).build()
    out = set()
    for fs in t.get_file_slices(hudi.HudiReadOptions()):
        out.add(
            (
                fs.partition_path,
                fs.file_id,
                fs.creation_instant_time,
                fs.base_file_name or "",
                tuple(sorted(fs.log_file_names)),
            )
        )
    return out


def _ours(path: str) -> set[tuple[str, str, str, str, tuple[str, ...]]]:
    table = evt.HudiTable.open(path)
    rows = table.file_slices().to_pylist()
    return {
        (r["partition_path"], r["file_id"], r["base_instant"], r["base_file"] or "", tuple(sorted(r["log_files"])))
        for r in rows
    }


@pytest.mark.parametrize("name", fixture_names())
def test_file_slices_equal_hudi_rs(name: str) -> None:
    path = str(fixture_table_path(name).resolve())
    expected = _hudi_rs_slices(path)
    ours = _ours(path)
    assert ours == expected, f"{name}: ours-only {sorted(ours - expected)}; hudi-rs-only {sorted(expected - ours)}"


def test_listing_is_not_trivially_empty() -> None:
    """Guard: the comparison above must cover real slices, with logs, across versions."""
    total = logs = 0
    for name in fixture_names():
        rows = evt.HudiTable.open(fixture_table_path(name)).file_slices().to_pylist()
        total += len(rows)
        logs += sum(len(r["log_files"]) for r in rows)
    assert total >= 80
    assert logs >= 50
