"""Catalog sync: register a Hudi table as ``<name>_ro`` and ``<name>_rt`` in the Spark session catalog (design §2.5).

``<name>_rt`` (snapshot) and ``<name>_ro`` (read-optimized) are catalog *views* that ``SHOW TABLES``, ``DESCRIBE``,
``SHOW TBLPROPERTIES`` and plain SQL see. Their properties carry what an RO reader needs to know:

* ``evt.ro.freshness`` — T as ISO-8601 UTC, or ``none`` when no freshness is published;
* ``evt.ro.freshness.ms`` — T in epoch ms (empty when none), ``evt.ro.freshness.reason`` — why none;
* ``evt.ro.late.records`` — late records (events ≤ T only in logs);
* ``evt.last.compaction`` — the last completed compaction (any strategy), ``evt.last.event_time.compaction``;
* ``evt.table.path``, ``evt.query.type``, ``evt.source`` (the data source behind the view), ``evt.synced.at``.

How the rows get there, and why this way (PySpark 4.3, measured):

* A table ``USING parquet`` over the base files is wrong for MOR: it reads superseded base files and no logs.
* ``CREATE TABLE ... USING <python data source> OPTIONS (path ...)`` is accepted and the metastore keeps the options,
  but Spark hands a catalog table's Python source *no options* when it reads it (the reader sees no ``path``), and
  ``SHOW TBLPROPERTIES`` reports the source's (empty) properties instead of the catalog's. ``SELECT ... FROM
  hudi_evt.`path``` is refused for non-file sources, and a persistent view may not reference a temporary view.
* So each view reads a catalog table ``<name>_<ro|rt>__evt_source`` whose provider is a per-table Python data source
  (``hudi_evt_<ro|rt>_<hash of the path>``): ``hudi_evt`` with the table path and query type built in, since they
  cannot arrive as options. The view holds the properties (views report their own). Data sources are registered
  per session: after restarting on a persistent metastore, call :func:`register_catalog_sources` (or
  :func:`sync_catalog` again) before querying.
* **Table type.** The metastore stores each ``__evt_source`` table as ``EXTERNAL`` with the Hudi table as its
  location, so ``DROP TABLE`` removes the catalog entry and never a file (checked after every sync; a ``MANAGED``
  entry is refused). ``DESCRIBE TABLE EXTENDED`` and ``spark.catalog.listTables`` nevertheless print ``MANAGED``:
  Spark describes a Python-source table through the table object the data source returns, which carries no
  catalog properties (PySpark 4.3). The stored type is in :attr:`CatalogSync.source_table_type` and in the views'
  ``evt.source.table.type`` property.
* **Catalog.** The pip ``pyspark`` ships Hive support (``spark-hive`` and Derby jars under ``pyspark/jars``), so a
  persistent embedded-Derby metastore is available: start the session with :func:`hive_catalog_conf` (the catalog
  implementation is fixed when a session starts, so ``sync_catalog`` uses whatever the given session has). On a
  default session the in-memory catalog holds the entries for the session's life only.

Example:
    >>> from evt_toolkit.spark.session import get_or_create_session  # doctest: +SKIP
    >>> spark = get_or_create_session(extra_conf=hive_catalog_conf("/tmp/evt-warehouse"))  # doctest: +SKIP
    >>> sync_catalog(spark, evt.HudiTable.open("/data/trips"))  # doctest: +SKIP
    >>> spark.sql("SHOW TBLPROPERTIES trips_ro").show()  # doctest: +SKIP
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from evt_toolkit.compaction.freshness import completed_compactions, ro_freshness
from evt_toolkit.errors import EvtError, UnsupportedFeatureError
from evt_toolkit.spark.datasource import HudiEvtDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import DataSourceReader
    from pyspark.sql.types import StructType

    from evt_toolkit.table.table import Table

__all__ = [
    "CATALOG_FORMAT",
    "CatalogSync",
    "HudiEvtCatalogSource",
    "catalog_source",
    "hive_available",
    "hive_catalog_conf",
    "register_catalog_sources",
    "source_name_for",
    "stored_table_type",
    "sync_catalog",
]

CATALOG_FORMAT = "hudi_evt_table"
PROP_FRESHNESS = "evt.ro.freshness"
PROP_FRESHNESS_MS = "evt.ro.freshness.ms"
PROP_FRESHNESS_REASON = "evt.ro.freshness.reason"
PROP_LATE_RECORDS = "evt.ro.late.records"
PROP_LAST_COMPACTION = "evt.last.compaction"
PROP_LAST_EVENT_TIME_COMPACTION = "evt.last.event_time.compaction"
PROP_PATH = "evt.table.path"
PROP_QUERY_TYPE = "evt.query.type"
PROP_SYNCED_AT = "evt.synced.at"
PROP_SOURCE = "evt.source"
PROP_SOURCE_TABLE_TYPE = "evt.source.table.type"
QUERY_TYPE_OPTION = "hoodie.datasource.query.type"
SOURCE_SUFFIX = "__evt_source"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _local_path(path: str) -> str:
    """``file:/x`` and ``file:///x`` (how Spark qualifies local locations) as ``/x``."""
    if path.startswith("file://"):
        return path[len("file://") :] or "/"
    if path.startswith("file:"):
        return path[len("file:") :]
    return path


class HudiEvtCatalogSource(HudiEvtDataSource):
    """``hudi_evt`` with a built-in table path and query type, for catalog tables (which receive no options).

    Subclasses made by :func:`catalog_source` set :attr:`table_path`, :attr:`query_type` and :attr:`source_name`;
    options given explicitly still win.
    """

    table_path: ClassVar[str] = ""
    query_type: ClassVar[str] = "snapshot"
    source_name: ClassVar[str] = CATALOG_FORMAT

    @classmethod
    def name(cls) -> str:
        return cls.source_name

    def _complete_options(self) -> None:
        path = self.options.get("path") or self.table_path
        if path:
            self.options["path"] = _local_path(str(path))
        if not self.options.get(QUERY_TYPE_OPTION):
            self.options[QUERY_TYPE_OPTION] = self.query_type

    def schema(self) -> StructType:
        self._complete_options()
        return super().schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        self._complete_options()
        return super().reader(schema)


def source_name_for(path: str, query_type: str) -> str:
    """The per-table data source name: ``hudi_evt_<ro|rt>_<12 hex of sha1(path)>``."""
    digest = hashlib.sha1(path.encode("utf-8")).hexdigest()[:12]
    return f"hudi_evt_{'ro' if query_type == 'read_optimized' else 'rt'}_{digest}"


def catalog_source(path: str, query_type: str, spark: SparkSession | None = None) -> type[HudiEvtCatalogSource]:
    """A data source class reading ``path`` with ``query_type`` whatever options it gets.

    Made at run time, so Spark pickles it by value for its Python workers (path and query type included, and the
    session's S3A and file-packing settings when ``spark`` is given).
    """
    from evt_toolkit.spark.session import session_source_attributes

    name = source_name_for(path, query_type)
    attrs: dict[str, Any] = session_source_attributes(spark) if spark is not None else {}
    attrs.update({"table_path": path, "query_type": query_type, "source_name": name, "__module__": __name__})
    return type(f"HudiEvtCatalogSource_{name}", (HudiEvtCatalogSource,), attrs)


def hive_available() -> bool:
    """Whether the installed pyspark ships Hive support (``spark-hive`` jar), i.e. a Derby metastore can be used."""
    try:
        import pyspark
    except ImportError:
        return False
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    return bool(glob.glob(os.path.join(jars, "spark-hive_*.jar")))


def hive_catalog_conf(warehouse_dir: str | os.PathLike[str]) -> dict[str, str]:
    """Spark settings for a Hive session catalog on an embedded Derby metastore under ``warehouse_dir``.

    Pass them to :func:`evt_toolkit.spark.session.get_or_create_session` (``extra_conf``) before any session
    exists; the catalog implementation cannot change on a running session.

    Raises:
        UnsupportedFeatureError: this pyspark has no Hive support.

    Example:
        >>> hive_catalog_conf("/tmp/wh")["spark.sql.catalogImplementation"]  # doctest: +SKIP
        'hive'
    """
    if not hive_available():
        raise UnsupportedFeatureError("this pyspark has no Hive support (no spark-hive jar); use the in-memory catalog")
    root = os.path.abspath(os.fspath(warehouse_dir))
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": os.path.join(root, "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={os.path.join(root, 'metastore_db')};create=true"
        ),
        # Derby writes derby.log into the working directory unless told otherwise.
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={root}",
    }


@dataclass(frozen=True, slots=True)
class CatalogSync:
    """What :func:`sync_catalog` registered.

    Attributes:
        ro_table: qualified name of the read-optimized view.
        rt_table: qualified name of the snapshot view.
        properties: the properties set on both (``evt.query.type`` differs).
        catalog: ``hive`` or ``in-memory``.
        source_table_type: how the metastore stores the ``__evt_source`` tables (``EXTERNAL``), ``None`` where the
            session cannot tell (Spark Connect).
    """

    ro_table: str
    rt_table: str
    properties: dict[str, str]
    catalog: str
    source_table_type: str | None = None


def stored_table_type(spark: SparkSession, qualified: str) -> str | None:
    """``EXTERNAL``/``MANAGED`` as the session catalog stores ``database.table`` (not as ``DESCRIBE`` prints it for
    Python-source tables); ``None`` when the session has no JVM catalog to ask (Spark Connect)."""
    database, _, table = qualified.rpartition(".")
    try:
        jvm: Any = spark._jvm
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(table, jvm.scala.Option.apply(database or None))
        meta = spark._jsparkSession.sessionState().catalog().getTableMetadata(ident)
        return str(meta.tableType().name())
    except Exception:  # no py4j gateway (Spark Connect) or no such entry: the caller decides
        return None


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _props_sql(props: dict[str, str]) -> str:
    return ", ".join(f"{_sql_string(k)}={_sql_string(v)}" for k, v in props.items())


def _properties(table: Table) -> dict[str, str]:
    fresh = ro_freshness(table)
    history = completed_compactions(table)
    return {
        PROP_FRESHNESS: fresh.threshold_iso or "none",
        PROP_FRESHNESS_MS: "" if fresh.threshold_ms is None else str(fresh.threshold_ms),
        PROP_FRESHNESS_REASON: fresh.reason or "",
        PROP_LATE_RECORDS: str(fresh.late_records),
        PROP_LAST_COMPACTION: history[-1].instant if history else "",
        PROP_LAST_EVENT_TIME_COMPACTION: fresh.instant or "",
        PROP_PATH: table.path,
        PROP_SYNCED_AT: str(int(time.time() * 1000)),
    }


def _view_props(spark: SparkSession, qualified: str) -> dict[str, str] | None:
    """The properties of a catalog *view*, ``None`` when there is none; raises if a table has that name."""
    if not spark.catalog.tableExists(qualified):
        return None
    info = spark.catalog.getTable(qualified)
    if info.tableType != "VIEW" or info.isTemporary:
        raise EvtError(f"catalog object {qualified} exists and is a {info.tableType.lower()}, not a view of ours")
    rows = spark.sql(f"SHOW TBLPROPERTIES {_quoted(qualified)}").collect()
    return {r["key"]: r["value"] for r in rows}


def _quoted(qualified: str) -> str:
    return ".".join(f"`{part}`" for part in qualified.split("."))


def sync_catalog(spark: SparkSession, table: Table, name: str | None = None, database: str = "default") -> CatalogSync:
    """Register (or refresh) the views ``<name>_ro`` and ``<name>_rt`` with the RO freshness as table properties.

    Re-running it updates the properties and picks up schema changes. An existing view of that name that was
    registered for another table path, or a table of that name, is never replaced.

    Args:
        spark: the session (its catalog is used; see :func:`hive_catalog_conf`).
        table: the Hudi table.
        name: the base name (default: ``hoodie.table.name``).
        database: the database, created when missing.

    Returns:
        The names and properties registered.

    Raises:
        EvtError: a name is not a plain identifier, or the name is taken by something else.

    Example:
        >>> s = sync_catalog(spark, t, name="trips")  # doctest: +SKIP
        >>> spark.sql("SELECT count(*) FROM trips_rt").first()[0] == t.read().num_rows  # doctest: +SKIP
        True
    """
    base = name or table.config.name
    for ident in (base, database):
        if not _IDENT.match(ident):
            raise EvtError(f"catalog name {ident!r} is not a plain identifier (letters, digits, underscore)")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    props = _properties(table)
    catalog = str(spark.conf.get("spark.sql.catalogImplementation", "in-memory"))
    names: dict[str, str] = {}
    types: list[str | None] = []
    for suffix, query_type in (("ro", "read_optimized"), ("rt", "snapshot")):
        view = f"{database}.{base}_{suffix}"
        existing = _view_props(spark, view)
        if existing is not None and existing.get(PROP_PATH) != table.path:
            raise EvtError(
                f"view {view} exists and is registered for {existing.get(PROP_PATH)!r}, not {table.path}; "
                "drop it or choose another name"
            )
        source = catalog_source(table.path, query_type, spark)
        spark.dataSource.register(source)
        data_table = f"{view}{SOURCE_SUFFIX}"
        # Re-created on every sync so that the stored schema follows the Hudi table's schema. Its location is the
        # Hudi table, which makes it EXTERNAL: dropping it removes the catalog entry only, never a file.
        spark.sql(f"DROP TABLE IF EXISTS {_quoted(data_table)}")
        spark.sql(f"CREATE TABLE {_quoted(data_table)} USING {source.source_name} LOCATION {_sql_string(table.path)}")
        table_type = stored_table_type(spark, data_table)
        if table_type == "MANAGED":
            spark.sql(f"DROP TABLE IF EXISTS {_quoted(data_table)}")  # nothing under a managed location is ours yet
            raise EvtError(
                f"the catalog stored {data_table} as MANAGED: dropping it could delete {table.path}; "
                "refusing to keep it (expected EXTERNAL)"
            )
        types.append(table_type)
        view_props = {
            **props,
            PROP_QUERY_TYPE: query_type,
            PROP_SOURCE: source.source_name,
            PROP_SOURCE_TABLE_TYPE: table_type or "unknown",
        }
        spark.sql(
            f"CREATE OR REPLACE VIEW {_quoted(view)} TBLPROPERTIES ({_props_sql(view_props)}) "
            f"AS SELECT * FROM {_quoted(data_table)}"
        )
        names[suffix] = view
    return CatalogSync(names["ro"], names["rt"], props, catalog, types[0] if len(set(types)) == 1 else None)


def register_catalog_sources(spark: SparkSession, database: str = "default") -> list[str]:
    """Register the per-table data sources behind the synced views of ``database`` in this session.

    Needed after a restart on a persistent (Hive) metastore: data sources live in the session, views in the
    metastore.

    Returns:
        The views whose sources were registered.

    Example:
        >>> register_catalog_sources(spark)  # doctest: +SKIP
        ['default.trips_ro', 'default.trips_rt']
    """
    done: list[str] = []
    for t in spark.catalog.listTables(database):
        if t.tableType != "VIEW" or t.isTemporary:
            continue
        qualified = f"{database}.{t.name}"
        props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {_quoted(qualified)}").collect()}
        path, query_type = props.get(PROP_PATH), props.get(PROP_QUERY_TYPE)
        if path and query_type:
            spark.dataSource.register(catalog_source(path, query_type, spark))
            done.append(qualified)
    return sorted(done)
