"""The table schema readers merge into: the latest writer schema with Hudi's meta fields in front."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from evt_toolkit.errors import TimelineError
from evt_toolkit.format.avro_arrow import avro_to_arrow_schema
from evt_toolkit.format.log_writer import META_FIELDS
from evt_toolkit.table.config import TableConfig
from evt_toolkit.table.timeline import Timeline


def latest_avro_schema(config: TableConfig, timeline: Timeline) -> dict[str, Any] | None:
    """Latest writer schema, as Hudi's ``getLastCommitMetadataWithValidSchema`` finds it.

    The newest completed commit whose ``extraMetadata.schema`` is non-empty wins; a table with no such commit falls
    back to ``hoodie.table.create.schema``.
    """
    for inst in reversed(timeline.completed_commits()):
        try:
            meta = timeline.commit_metadata(inst)
        except TimelineError:
            continue
        text = meta.extra.get("schema")
        if text:
            return dict(json.loads(text))
    text = config.properties.get("hoodie.table.create.schema")
    return dict(json.loads(text)) if text else None


def with_meta_fields(schema: dict[str, Any]) -> dict[str, Any]:
    """Prepend Hudi's meta fields (``["null","string"]``, doc "", default null) unless already present."""
    names = {f["name"] for f in schema.get("fields", [])}
    meta = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELDS if n not in names]
    out = dict(schema)
    out["fields"] = meta + list(schema.get("fields", []))
    return out


def arrow_schema_for(avro_schema: dict[str, Any] | None) -> pa.Schema | None:
    return avro_to_arrow_schema(avro_schema) if avro_schema is not None else None
