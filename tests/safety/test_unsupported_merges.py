"""Tables whose merge Hudi configures beyond an ordering field and a merge mode: a custom delete marker
(``hoodie.payload.delete.field``/``.marker``, which Hudi 1.1 keeps in the table config under
``hoodie.record.merge.property.``, e.g. for AWS DMS's ``Op='D'``), a partial-update mode such as
``IGNORE_DEFAULTS``, or on older tables a payload class with such rules (``AWSDmsAvroPayload``, the Debezium
payloads, ``OverwriteNonDefaultsWithLatestAvroPayload``, ``PartialUpdateAvroPayload``).

The toolkit's merge knows ``_hoodie_is_deleted`` and ``IS_PARTIAL`` blocks only: it read a row its table marks
deleted as live (hudi-rs, like Hudi, drops it). Until it merges by those rules, every operation that merges records
refuses such a table, naming it and the setting, and changes nothing; the read-optimized view still reads.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import UnBoundedCompactionStrategy

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

SETTINGS = {
    "v9 custom delete marker": (
        9,
        "hoodie.record.merge.property.hoodie.payload.delete.field=Op\n"
        "hoodie.record.merge.property.hoodie.payload.delete.marker=D\n",
    ),
    "v9 partial update mode": (9, "hoodie.table.partial.update.mode=IGNORE_DEFAULTS\n"),
    "v6 AWS DMS payload": (6, "hoodie.compaction.payload.class=org.apache.hudi.common.model.AWSDmsAvroPayload\n"),
}


def _tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(path.rglob("*"))
    }


def _batch(ids: list[int], ts: int, op: str) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "ts": pa.array([ts] * n, pa.int64()),
            "Op": pa.array([op] * n),
            "v": pa.array([float(i) for i in ids]),
        }
    )


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_merge_the_toolkit_does_not_know_is_refused(tmp_path: Path, setting: str) -> None:
    version, lines = SETTINGS[setting]
    t = evt.HudiTable.create(tmp_path / "t", "m", "id", ordering_field="ts", buckets=1, table_version=version)
    t.write(_batch([1, 2], 1, "I"))
    t.write(_batch([1], 2, "D"))  # AWS DMS's delete of key 1
    props = tmp_path / "t" / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    key = lines.split("=", 1)[0]
    text = "".join(line + "\n" for line in text.splitlines() if not line.startswith(key + "="))
    props.write_text(text + lines)
    t = evt.HudiTable.open(tmp_path / "t")
    if setting == "v9 custom delete marker":  # what Hudi and hudi-rs read
        batches = hudi.HudiTableBuilder.from_base_uri(t.path).build().read()
        assert sorted(pa.Table.from_batches(batches)["id"].to_pylist()) == [2]
    before = _tree(tmp_path)
    for attempt in (
        lambda: t.read(),
        lambda: t.read("incremental", begin="000"),
        lambda: t.write(_batch([3], 3, "I")),
        lambda: t.compaction.schedule(UnBoundedCompactionStrategy()),
    ):
        with pytest.raises(evt.UnsupportedTableError) as err:
            attempt()
        assert str(t.path) in str(err.value) and key.rsplit(".", 1)[-1] in str(err.value), err.value
    assert t.read("read_optimized").num_rows == 0
    assert _tree(tmp_path) == before
