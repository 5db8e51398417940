"""Timeline metadata codecs: commit metadata, compaction plans, clean and rollback plans/metadata.

Pure functions, bytes in and dicts out. Hudi writes plans and (on layout 2) commit metadata as single-record Avro
object container files (``TimelineMetadataUtils.serializeAvroMetadata``) and, on layout 1, commit metadata as
Jackson-pretty-printed JSON (``HoodieCommitMetadata.toJsonString``). Every decoding error is a
:class:`~evt_toolkit.errors.MetadataDecodeError` naming the file.
"""

from __future__ import annotations

import io
import json
import math
import os
import posixpath
import re
from collections.abc import Mapping
from decimal import Decimal
from importlib import resources
from typing import Any

import fastavro

from evt_toolkit.errors import MetadataDecodeError
from evt_toolkit.format.avro_binary import avro_bytes, zigzag_long

__all__ = [
    "AVRO_MAGIC",
    "decode_clean_metadata",
    "decode_clean_plan",
    "decode_commit_metadata",
    "decode_compaction_plan",
    "decode_replace_requested",
    "decode_rollback_metadata",
    "decode_rollback_plan",
    "empty_commit_metadata",
    "encode_avro_container",
    "encode_commit_metadata_json",
    "load_schema",
    "read_avro_container",
]

AVRO_MAGIC = b"Obj\x01"
#: ``CompactionUtils.LATEST_COMPACTION_METADATA_VERSION``.
LATEST_COMPACTION_PLAN_VERSION = 2

_COMMIT_KEYS = ("partitionToWriteStats", "compacted", "extraMetadata", "operationType")


def read_avro_container(data: bytes, path: str) -> dict[str, Any]:
    """Decode a single-record Avro object container file as Hudi's ``TimelineMetadataUtils`` writes it.

    The embedded writer schema is used as is: field names are Hudi's Avro field names.

    Args:
        data: the file content.
        path: the file, for error messages.

    Returns:
        The record.

    Raises:
        MetadataDecodeError: not an Avro container, truncated/corrupt, or not exactly one record.
    """
    if not data.startswith(AVRO_MAGIC):
        raise MetadataDecodeError(f"{path}: not an Avro object container (bad magic {data[:4]!r})")
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as exc:  # fastavro raises many unrelated types on corrupt input
        raise MetadataDecodeError(f"{path}: corrupt Avro container: {type(exc).__name__}: {exc}") from exc
    if len(records) != 1:
        raise MetadataDecodeError(f"{path}: expected one Avro record, found {len(records)}")
    record = records[0]
    if not isinstance(record, dict):
        raise MetadataDecodeError(f"{path}: the Avro record is not a record but {type(record).__name__}")
    return record


def empty_commit_metadata() -> dict[str, Any]:
    """What an empty commit file deserializes to (``HoodieCommitMetadata()``)."""
    return {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "operationType": "UNKNOWN"}


def _normalize_commit(raw: Mapping[str, Any], path: str, from_avro: bool) -> dict[str, Any]:
    """Bring JSON and Avro commit metadata to the JSON (``HoodieCommitMetadata`` POJO) shape."""
    stats_raw = raw.get("partitionToWriteStats") or {}
    if not isinstance(stats_raw, dict):
        raise MetadataDecodeError(f"{path}: partitionToWriteStats is not a map")
    stats: dict[str, list[dict[str, Any]]] = {}
    for partition, entries in stats_raw.items():
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise MetadataDecodeError(f"{path}: write stats of partition {partition!r} are not a list of records")
        stats[str(partition)] = [dict(e) for e in entries]
    extra = raw.get("extraMetadata") or {}
    if not isinstance(extra, dict):
        raise MetadataDecodeError(f"{path}: extraMetadata is not a map")
    out: dict[str, Any] = {
        "partitionToWriteStats": stats,
        "compacted": bool(raw.get("compacted") or False),
        "extraMetadata": dict(extra),
        # HoodieCommitMetadata initialises operationType to UNKNOWN.
        "operationType": raw.get("operationType") or "UNKNOWN",
    }
    replaced = raw.get("partitionToReplaceFileIds")
    if replaced is not None:
        if not isinstance(replaced, dict):
            raise MetadataDecodeError(f"{path}: partitionToReplaceFileIds is not a map")
        out["partitionToReplaceFileIds"] = {str(p): list(ids or []) for p, ids in replaced.items()}
    for key, value in raw.items():
        # The Avro schema's own "version" field has no counterpart in the JSON/POJO shape.
        if key in out or key in _COMMIT_KEYS or (from_avro and key == "version"):
            continue
        out[key] = value
    return out


def decode_commit_metadata(data: bytes, path: str) -> dict[str, Any]:
    """Decode commit, deltacommit or replacecommit metadata (completed or inflight workload file).

    Layout 1 writes JSON, layout 2 an Avro container (detected by its magic); both come back in the JSON shape:
    ``partitionToWriteStats`` (partition → list of write-stat dicts keyed by Hudi's field names), ``compacted``,
    ``extraMetadata``, ``operationType`` and, for replace commits, ``partitionToReplaceFileIds``. An empty file is
    empty metadata, as in Java.

    Args:
        data: the file content.
        path: the file, for error messages.

    Raises:
        MetadataDecodeError: malformed JSON or Avro.

    Example:
        >>> decode_commit_metadata(b"", "x.deltacommit")["operationType"]
        'UNKNOWN'
    """
    if not data.strip():
        return empty_commit_metadata()
    if data.startswith(AVRO_MAGIC):
        return _normalize_commit(read_avro_container(data, path), path, from_avro=True)
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetadataDecodeError(f"{path}: invalid commit metadata JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise MetadataDecodeError(f"{path}: commit metadata JSON is not an object")
    return _normalize_commit(raw, path, from_avro=False)


def _file_name(p: str | None) -> str | None:
    # Hadoop Path.getName(): the last path segment, for bare names as well as full URIs.
    if p is None:
        return None
    return posixpath.basename(p.rstrip("/")) if "/" in p else p


def decode_compaction_plan(data: bytes, path: str) -> dict[str, Any]:
    """Decode a ``HoodieCompactionPlan`` (``.compaction.requested`` / ``.logcompaction.requested``).

    Version-1 plans hold full paths; like ``CompactionPlanMigrator`` (``CompactionV2MigrationHandler.upgradeFrom``)
    they are brought to version 2, where ``deltaFilePaths`` and ``dataFilePath`` are bare file names. A null
    ``operations`` becomes ``[]``. Any other field (``strategy``, ``missingSchedulePartitions``,
    ``symlinkOperations``, ...) is kept as is.

    Args:
        data: the file content.
        path: the file, for error messages.

    Raises:
        MetadataDecodeError: the file is not a valid plan.
    """
    plan = read_avro_container(data, path)
    operations = plan.get("operations") or []
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise MetadataDecodeError(f"{path}: compaction plan operations are not a list of records")
    version = plan.get("version")
    version = 1 if version is None else int(version)
    ops: list[dict[str, Any]] = []
    for op in operations:
        op = dict(op)
        deltas = op.get("deltaFilePaths")
        if version < LATEST_COMPACTION_PLAN_VERSION:
            op["deltaFilePaths"] = [_file_name(p) for p in deltas or []]
            op["dataFilePath"] = _file_name(op.get("dataFilePath"))
        elif deltas is None:
            op["deltaFilePaths"] = []
        ops.append(op)
    out = dict(plan)
    out["operations"] = ops
    if version < LATEST_COMPACTION_PLAN_VERSION:
        out["version"] = LATEST_COMPACTION_PLAN_VERSION
    return out


def _decode_record(data: bytes, path: str, kind: str, expected_field: str) -> dict[str, Any]:
    if not data:
        raise MetadataDecodeError(f"{path}: empty {kind} file")
    record = read_avro_container(data, path)
    if expected_field not in record:
        raise MetadataDecodeError(f"{path}: not a {kind} (no field {expected_field})")
    return record


def decode_clean_plan(data: bytes, path: str) -> dict[str, Any]:
    """Decode a ``HoodieCleanerPlan`` (``.clean.requested`` / ``.clean.inflight``)."""
    return _decode_record(data, path, "HoodieCleanerPlan", "policy")


def decode_clean_metadata(data: bytes, path: str) -> dict[str, Any]:
    """Decode ``HoodieCleanMetadata`` (a completed ``.clean``)."""
    return _decode_record(data, path, "HoodieCleanMetadata", "partitionMetadata")


def decode_rollback_plan(data: bytes, path: str) -> dict[str, Any]:
    """Decode a ``HoodieRollbackPlan`` (``.rollback.requested``)."""
    return _decode_record(data, path, "HoodieRollbackPlan", "instantToRollback")


def decode_rollback_metadata(data: bytes, path: str) -> dict[str, Any]:
    """Decode ``HoodieRollbackMetadata`` (a completed ``.rollback``)."""
    return _decode_record(data, path, "HoodieRollbackMetadata", "commitsRollback")


def decode_replace_requested(data: bytes, path: str) -> dict[str, Any]:
    """Decode ``HoodieRequestedReplaceMetadata`` (``.replacecommit.requested`` / ``.clustering.requested``).

    An empty file (insert-overwrite writers of some versions write one) is ``{}``, as
    ``ClusteringUtils.getRequestedReplaceMetadata`` returns an empty option for it.
    """
    if not data:
        return {}
    return _decode_record(data, path, "HoodieRequestedReplaceMetadata", "operationType")


# -- schemas ---------------------------------------------------------------------------------------------------------


def load_schema(name: str) -> str:
    """The exact Avro schema string Hudi embeds for ``name``, from ``evt_toolkit/format/schemas/<name>.avsc``.

    Available: ``HoodieCommitMetadata``, ``HoodieReplaceCommitMetadata``, ``HoodieRequestedReplaceMetadata``,
    ``HoodieCompactionPlan`` (1.x, with ``missingSchedulePartitions``), ``HoodieCompactionPlan.v6`` (0.14/0.15),
    ``HoodieRollbackPlan`` and ``HoodieRollbackMetadata``. All but ``HoodieCompactionPlan.v6`` are copied verbatim
    from files real Hudi wrote; the v6 plan is the 1.x string without its last (1.x-only) field.

    Raises:
        FileNotFoundError: no such schema.
    """
    resource = resources.files("evt_toolkit.format").joinpath("schemas", f"{name}.avsc")
    return resource.read_text(encoding="utf-8")


# -- writing ---------------------------------------------------------------------------------------------------------


def encode_avro_container(record: Mapping[str, Any], schema_json: str, *, sync_marker: bytes | None = None) -> bytes:
    """Write a single-record Avro object container like Java's ``DataFileWriter`` (one ``append``, null codec).

    Built by hand so that the header map holds exactly ``avro.schema`` with the given schema string (byte-for-byte
    what Hudi embeds) and no ``avro.codec`` entry.

    Args:
        record: the record, keyed by Avro field names.
        schema_json: the exact schema string to embed (see ``evt_toolkit/format/schemas``).
        sync_marker: 16 bytes; random by default (as in Java).

    Returns:
        The container bytes.

    Raises:
        ValueError: the record does not match the schema, or a bad sync marker.
    """
    marker = os.urandom(16) if sync_marker is None else sync_marker
    if len(marker) != 16:
        raise ValueError("an Avro sync marker is 16 bytes")
    schema = fastavro.parse_schema(json.loads(schema_json))
    body = io.BytesIO()
    fastavro.schemaless_writer(body, schema, dict(record))
    payload = body.getvalue()
    header = (
        AVRO_MAGIC
        + zigzag_long(1)
        + avro_bytes(b"avro.schema")
        + avro_bytes(schema_json.encode("utf-8"))
        + zigzag_long(0)
        + marker
    )
    return header + zigzag_long(1) + zigzag_long(len(payload)) + payload + marker


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f]')


def _json_escape(match: re.Match[str]) -> str:
    c = match.group()
    short = _JSON_ESCAPES.get(c)
    return short if short is not None else f"\\u{ord(c):04X}"


def _json_string(s: str) -> str:
    # Jackson's escaping: quote, backslash and control characters; non-ASCII is written as is (UTF-8).
    return '"' + _NEEDS_ESCAPE.sub(_json_escape, s) + '"'


def _java_double(x: float) -> str:
    """Approximate ``Double.toString``: ``1.0``, ``0.5``, ``1.0E10``, ``NaN``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "." in text else text + ".0"
    # Shortest round-trip digits (as Java's FloatingDecimal), in Java's "d.dddE<n>" notation.
    dec = Decimal(repr(x)).normalize()
    sign, digits, _ = dec.as_tuple()
    text = "".join(str(d) for d in digits)
    mantissa = text[0] + "." + (text[1:] or "0")
    return f"{'-' if sign else ''}{mantissa}E{dec.adjusted()}"


def _jackson(value: Any, nesting: int, out: list[str]) -> None:
    """Jackson ``DefaultPrettyPrinter``: objects indent two spaces per level, arrays stay inline ``[ a, b ]``."""
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_java_double(value))
    elif isinstance(value, str):
        out.append(_json_string(value))
    elif isinstance(value, Mapping):
        if not value:
            out.append("{ }")
            return
        out.append("{")
        first = True
        for key, item in value.items():
            out.append("\n" if first else ",\n")
            first = False
            out.append("  " * (nesting + 1))
            out.append(_json_string(str(key)))
            out.append(" : ")
            _jackson(item, nesting + 1, out)
        out.append("\n" + "  " * nesting + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _jackson(item, nesting, out)
        out.append(" ]")
    else:
        raise TypeError(f"cannot serialize {type(value).__name__} as commit metadata JSON")


#: ``HoodieWriteStat``'s JSON fields in Jackson's (declaration) order, with the values Hudi writes when unset.
WRITE_STAT_DEFAULTS: Mapping[str, Any] = {
    "fileId": None,
    "path": None,
    "cdcStats": None,
    "prevCommit": None,
    "numWrites": 0,
    "numDeletes": 0,
    "numUpdateWrites": 0,
    "numInserts": 0,
    "totalWriteBytes": 0,
    "totalWriteErrors": 0,
    "tempPath": None,
    "partitionPath": None,
    "totalLogRecords": 0,
    "totalLogFilesCompacted": 0,
    "totalLogSizeCompacted": 0,
    "totalUpdatedRecordsCompacted": 0,
    "totalLogBlocks": 0,
    "totalCorruptLogBlock": 0,
    "totalRollbackBlocks": 0,
    "fileSizeInBytes": 0,
    "minEventTime": None,
    "maxEventTime": None,
    "runtimeStats": None,
}


def write_stat(**fields: Any) -> dict[str, Any]:
    """A ``HoodieWriteStat`` dict in Jackson's field order: the defaults, overridden by ``fields``.

    Fields ``HoodieWriteStat`` does not declare (``HoodieDeltaWriteStat``'s ``logVersion``, ``logOffset``, ...) follow
    in the order given, as Jackson writes a subclass's fields after its parent's.

    Example:
        >>> list(write_stat(fileId="f-0", logVersion=2))[:2], write_stat(logVersion=2)["logVersion"]
        (['fileId', 'path'], 2)
    """
    out = dict(WRITE_STAT_DEFAULTS)
    out.update(fields)
    return out


def encode_commit_metadata_json(meta: Mapping[str, Any]) -> bytes:
    """Serialize commit metadata like ``HoodieCommitMetadata.toJsonString`` (Jackson default pretty printer).

    Keys are written in the order given, so pass them in Hudi's field declaration order (§3 of the format notes)
    to get byte-identical files. No trailing newline, as Jackson writes none.

    Args:
        meta: the metadata in the JSON shape.

    Returns:
        UTF-8 bytes.

    Example:
        >>> encode_commit_metadata_json({"compacted": False, "extraMetadata": {}}).decode()
        '{\\n  "compacted" : false,\\n  "extraMetadata" : { }\\n}'
    """
    out: list[str] = []
    _jackson(meta, 0, out)
    return "".join(out).encode("utf-8")


# -- layout 2 (table versions 8 and 9): Avro commit metadata -----------------------------------------------------------

#: ``HoodieWriteStat`` fields of the 1.x Avro schema (``HoodieCommitMetadata.avsc``) that Java's POJO holds as
#: primitive ``long`` (so they serialize as ``0`` when unset); every other field defaults to ``null``. Checked
#: against the deltacommit, commit and inflight files of the v8/v9 fixtures, which carry exactly these values.
_AVRO_STAT_ZERO_FIELDS = frozenset(
    {
        "numWrites",
        "numDeletes",
        "numUpdateWrites",
        "totalWriteBytes",
        "totalWriteErrors",
        "totalLogRecords",
        "totalUpdatedRecordsCompacted",
        "numInserts",
        "totalLogBlocks",
        "totalCorruptLogBlock",
        "totalRollbackBlocks",
        "fileSizeInBytes",
        "totalLogFilesCompacted",
        "totalLogReadTimeMs",
        "totalLogSizeCompacted",
        "numUpdates",
    }
)
_RUNTIME_STATS_FIELDS = ("totalScanTime", "totalCreateTime", "totalUpsertTime")


def _avro_stat_fields(schema: Mapping[str, Any]) -> list[str]:
    stats_map = next(f for f in schema["fields"] if f["name"] == "partitionToWriteStats")["type"][1]
    return [f["name"] for f in stats_map["values"]["items"]["fields"]]


def _avro_write_stat(stat: Mapping[str, Any], fields: list[str]) -> dict[str, Any]:
    """One JSON-shaped write stat as the Avro ``HoodieWriteStat`` record (unknown keys such as ``recordsStats``,
    which the Avro schema does not have, are dropped as Java's conversion drops them)."""
    out: dict[str, Any] = {}
    for name in fields:
        value = stat.get(name)
        if value is None and name in _AVRO_STAT_ZERO_FIELDS:
            value = 0
        if name == "runtimeStats" and value is not None:
            value = {k: value.get(k) for k in _RUNTIME_STATS_FIELDS}
        if name == "logFiles" and value is not None:
            value = list(value)
        out[name] = value
    return out


def commit_metadata_to_avro(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Commit metadata in the JSON (POJO) shape → the ``HoodieCommitMetadata`` Avro record of timeline layout 2.

    Mirrors ``MetadataConversionUtils.convertCommitMetadata``: the same fields, ``version`` left null (as in every
    1.x file the fixtures hold), missing counters ``0`` and everything else ``null``.

    Example:
        >>> rec = commit_metadata_to_avro({"partitionToWriteStats": {"p": [{"fileId": "f-0", "numWrites": 2}]},
        ...                                "compacted": False, "extraMetadata": {}, "operationType": "UPSERT"})
        >>> rec["partitionToWriteStats"]["p"][0]["numInserts"], rec["version"]
        (0, None)
    """
    schema = json.loads(load_schema("HoodieCommitMetadata"))
    fields = _avro_stat_fields(schema)
    stats = {
        str(p): [_avro_write_stat(s, fields) for s in entries]
        for p, entries in (meta.get("partitionToWriteStats") or {}).items()
    }
    return {
        "partitionToWriteStats": stats,
        "compacted": bool(meta.get("compacted") or False),
        "extraMetadata": {str(k): str(v) for k, v in (meta.get("extraMetadata") or {}).items()},
        "version": None,
        "operationType": meta.get("operationType") or "UNKNOWN",
    }


def encode_commit_metadata_avro(meta: Mapping[str, Any], *, sync_marker: bytes | None = None) -> bytes:
    """Serialize commit metadata as timeline layout 2 stores it (``CommitMetadataSerDeV2.serialize``).

    A single-record Avro object container whose embedded schema is byte for byte the one real 1.x writers embed
    (``schemas/HoodieCommitMetadata.avsc``). Used for completed commits/deltacommits and for the inflight workload
    profile alike.

    Args:
        meta: the metadata in the JSON shape (see :func:`encode_commit_metadata_json`).
        sync_marker: 16 bytes; random by default.

    Example:
        >>> data = encode_commit_metadata_avro({"partitionToWriteStats": {}, "compacted": False,
        ...                                     "extraMetadata": {}, "operationType": "UPSERT"})
        >>> decode_commit_metadata(data, "x.deltacommit")["operationType"]
        'UPSERT'
    """
    return encode_avro_container(
        commit_metadata_to_avro(meta), load_schema("HoodieCommitMetadata"), sync_marker=sync_marker
    )
