"""The Avro schema of a version-3 delete block payload, exactly as Hudi's Java writer uses it.

Hudi serializes the keys of a delete block (`HoodieDeleteBlock.serializeV3`) as the Avro binary of one
``HoodieDeleteRecordList`` record (``hudi-common/src/main/avro/HoodieDeleteRecordList.avsc``, namespace
``org.apache.hudi.avro.model``). The ordering value of each deleted key is a union whose branches are the *wrapper
records* Hudi defines in ``hudi-common/src/main/avro/HoodieMetadata.avsc`` (column-stats min/max values), not Avro
primitives: the branch index on disk is the position in that list. hudi-rs bundles a variant of this schema with
primitive branches, whose indices do not match what Java writes; this module is the Java one.

Two wrapper records carry no logical type on purpose (``DateWrapper.value`` is a plain ``int`` of epoch days and
``TimestampMicrosWrapper.value`` a plain ``long`` of epoch microseconds): Hudi's own schema comments them out because
of code-generation differences between Avro 1.8.2 and 1.10. ``DecimalWrapper.value`` is ``bytes`` with logical type
``decimal(30, 15)``, and ``TimeMicrosWrapper.value`` is ``long`` with logical type ``time-micros``.

Newer Hudi masters (after 1.1) turned ``orderingVal`` into an array of such unions for multi-field ordering; every
table version this toolkit reads or writes (6, 8, 9) uses the single union below, as real delete blocks confirm.
"""

from __future__ import annotations

from typing import Any, Final

#: Namespace of Hudi's generated Avro model classes.
HUDI_AVRO_MODEL_NAMESPACE: Final = "org.apache.hudi.avro.model"


def _wrapper(name: str, value_type: Any, doc: str) -> dict[str, Any]:
    return {
        "namespace": HUDI_AVRO_MODEL_NAMESPACE,
        "type": "record",
        "name": name,
        "doc": doc,
        "fields": [{"type": value_type, "name": "value"}],
    }


#: The wrapper records of ``HoodieMetadata.avsc``, in the order of the ``orderingVal`` union (after ``null``).
ORDERING_WRAPPER_SCHEMAS: Final[tuple[dict[str, Any], ...]] = (
    _wrapper("BooleanWrapper", "boolean", "A record wrapping boolean type to be able to be used it w/in Avro's Union"),
    _wrapper("IntWrapper", "int", "A record wrapping int type to be able to be used it w/in Avro's Union"),
    _wrapper("LongWrapper", "long", "A record wrapping long type to be able to be used it w/in Avro's Union"),
    _wrapper("FloatWrapper", "float", "A record wrapping float type to be able to be used it w/in Avro's Union"),
    _wrapper("DoubleWrapper", "double", "A record wrapping double type to be able to be used it w/in Avro's Union"),
    _wrapper("BytesWrapper", "bytes", "A record wrapping bytes type to be able to be used it w/in Avro's Union"),
    _wrapper("StringWrapper", "string", "A record wrapping string type to be able to be used it w/in Avro's Union"),
    _wrapper(
        "DateWrapper",
        {"type": "int"},
        "A record wrapping Date logical type to be able to be used it w/in Avro's Union",
    ),
    _wrapper(
        "DecimalWrapper",
        {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
        "A record wrapping Decimal logical type to be able to be used it w/in Avro's Union",
    ),
    _wrapper(
        "TimeMicrosWrapper",
        {"type": "long", "logicalType": "time-micros"},
        "A record wrapping Time-micros logical type to be able to be used it w/in Avro's Union",
    ),
    _wrapper(
        "TimestampMicrosWrapper",
        {"type": "long"},
        "A record wrapping Timestamp-micros logical type to be able to be used it w/in Avro's Union",
    ),
)

#: Short wrapper names in union order; ``ORDERING_WRAPPER_NAMES.index(name) + 1`` is the branch index on disk.
ORDERING_WRAPPER_NAMES: Final[tuple[str, ...]] = tuple(s["name"] for s in ORDERING_WRAPPER_SCHEMAS)

#: Union branch index of ``null`` and of each wrapper in ``HoodieDeleteRecord.orderingVal``.
ORDERING_UNION_INDEX: Final[dict[str, int]] = {
    "null": 0,
    **{name: i + 1 for i, name in enumerate(ORDERING_WRAPPER_NAMES)},
}

#: Precision and scale of ``DecimalWrapper.value`` (Spark's ``DoubleDecimal``).
DECIMAL_WRAPPER_PRECISION: Final = 30
DECIMAL_WRAPPER_SCALE: Final = 15

#: ``HoodieDeleteRecordList`` with the wrapper records defined inline at their first use, so the schema is
#: self-contained (Java resolves them by full name from ``HoodieMetadata.avsc``; the binary encoding is the same).
DELETE_RECORD_LIST_SCHEMA: Final[dict[str, Any]] = {
    "namespace": HUDI_AVRO_MODEL_NAMESPACE,
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "doc": "A list of delete records stored in the delete block in log block version 3",
    "fields": [
        {
            "name": "deleteRecordList",
            "doc": "A list of Hudi records to delete",
            "type": {
                "type": "array",
                "items": {
                    "name": "HoodieDeleteRecord",
                    "type": "record",
                    "doc": "Individual Hudi record to delete",
                    "fields": [
                        {
                            "name": "recordKey",
                            "doc": "Record key in String",
                            "type": ["null", "string"],
                            "default": None,
                        },
                        {
                            "name": "partitionPath",
                            "doc": "Partition path in String",
                            "type": ["null", "string"],
                            "default": None,
                        },
                        {
                            "name": "orderingVal",
                            "doc": "Ordering value determining the order of merging on the same key",
                            "type": ["null", *ORDERING_WRAPPER_SCHEMAS],
                            "default": None,
                        },
                    ],
                },
            },
        }
    ],
}

__all__ = [
    "DECIMAL_WRAPPER_PRECISION",
    "DECIMAL_WRAPPER_SCALE",
    "DELETE_RECORD_LIST_SCHEMA",
    "HUDI_AVRO_MODEL_NAMESPACE",
    "ORDERING_UNION_INDEX",
    "ORDERING_WRAPPER_NAMES",
    "ORDERING_WRAPPER_SCHEMAS",
]
