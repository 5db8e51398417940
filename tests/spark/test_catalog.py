"""Catalog sync: ``<name>_ro`` / ``<name>_rt`` answer SQL like the table and carry the RO freshness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy, iso_ms
from evt_toolkit.errors import EvtError
from evt_toolkit.spark.catalog import hive_available, hive_catalog_conf, sync_catalog
from tests.tables import BASE
from tests.tables import event_rows as _rows

pytestmark = pytest.mark.spark


def _props(spark: Any, name: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


def test_sync_registers_views_with_freshness(tmp_path: Path, spark: Any) -> None:
    t = evt.HudiTable.create(
        tmp_path / "trips", "trips", "id", partition_by="region", ordering_field="ts", event_time_field="ev", buckets=2
    )
    t.write(_rows(range(0, 20), 100))
    t.write(_rows(range(10, 30), 500))
    threshold = BASE + 200
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=threshold))
    assert c is not None
    t.compaction.run(c)

    sync = sync_catalog(spark, t, name="cat_trips")
    assert (sync.ro_table, sync.rt_table) == ("default.cat_trips_ro", "default.cat_trips_rt")
    ro_props = _props(spark, "cat_trips_ro")
    # Keys 10-19 moved from event time 100 to 500 in the leftover log: their RO rows at 100 are stale, so the RO
    # view is exactly fresh up to just below them (the plan's threshold was 200).
    fresh = BASE + 99
    assert t.ro_freshness().planned_threshold_ms == threshold
    assert ro_props["evt.ro.freshness"] == iso_ms(fresh)
    assert ro_props["evt.ro.freshness.ms"] == str(fresh)
    assert ro_props["evt.last.compaction"] == c.instant
    assert ro_props["evt.query.type"] == "read_optimized"
    assert spark.sql("SELECT count(*) FROM cat_trips_rt").first()[0] == t.read().num_rows == 30
    assert spark.sql("SELECT count(*) FROM cat_trips_ro").first()[0] == t.read("read_optimized").num_rows == 20

    # A later write and a re-sync: the views follow the table and the properties are refreshed.
    t.write(_rows(range(30, 35), 50))
    sync_catalog(spark, t.refresh(), name="cat_trips")
    assert spark.sql("SELECT count(*) FROM cat_trips_rt").first()[0] == 35
    assert _props(spark, "cat_trips_rt")["evt.ro.late.records"] == "5"

    # The name of another table is refused, not taken over.
    other = evt.HudiTable.create(tmp_path / "other", "other", "id", ordering_field="ts", event_time_field="ev")
    with pytest.raises(EvtError, match="registered for"):
        sync_catalog(spark, other, name="cat_trips")


def test_hive_conf_uses_embedded_derby(tmp_path: Path) -> None:
    if not hive_available():
        pytest.skip("this pyspark ships no Hive support")
    conf = hive_catalog_conf(tmp_path)
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"].startswith("jdbc:derby:;databaseName=")
    assert conf["spark.sql.warehouse.dir"].startswith(str(tmp_path))


_HIVE_SCRIPT = """
import json, sys
import evt_toolkit as evt
from evt_toolkit.spark.catalog import hive_catalog_conf, register_catalog_sources, sync_catalog
from evt_toolkit.spark.session import get_or_create_session

warehouse, path, mode = sys.argv[1:4]
spark = get_or_create_session(extra_conf=hive_catalog_conf(warehouse))
if mode == "sync":
    sync_catalog(spark, evt.HudiTable.open(path), name="hive_trips")
else:
    register_catalog_sources(spark)
props = {r["key"]: r["value"] for r in spark.sql("SHOW TBLPROPERTIES hive_trips_ro").collect()}
out = {
    "catalog": spark.conf.get("spark.sql.catalogImplementation"),
    "rt": spark.sql("SELECT count(*) FROM hive_trips_rt").first()[0],
    "freshness": props.get("evt.ro.freshness"),
}
spark.stop()
print("RESULT " + json.dumps(out))
"""


def _run_hive(tmp_path: Path, table_path: str, mode: str) -> dict[str, Any]:
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, "-c", _HIVE_SCRIPT, str(tmp_path / "hive"), table_path, mode],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
        cwd=tmp_path,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


@pytest.mark.slow
def test_hive_metastore_keeps_the_views_across_sessions(tmp_path: Path) -> None:
    """Two separate Spark applications share the embedded Derby metastore: sync in one, query in the next."""
    if not hive_available():
        pytest.skip("this pyspark ships no Hive support")
    t = evt.HudiTable.create(tmp_path / "trips", "trips", "id", ordering_field="ts", event_time_field="ev")
    t.write(_rows(range(0, 12), 100))
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 200))
    assert c is not None
    t.compaction.run(c)

    first = _run_hive(tmp_path, t.path, "sync")
    assert first == {"catalog": "hive", "rt": 12, "freshness": iso_ms(BASE + 200)}
    second = _run_hive(tmp_path, t.path, "reopen")
    assert second == first
