"""Record keys for tables that do not store ``_hoodie_record_key`` (``hoodie.populate.meta.fields=false``).

Hudi's key generators build the key from the record key fields: the plain value for a single-field simple key, and
``f1:v1,f2:v2`` for complex keys, with ``__null__`` / ``__empty__`` standing for null and empty values
(``KeyGenUtils.getRecordKey``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import ReadError
from evt_toolkit.format.keys import EMPTY_RECORDKEY_PLACEHOLDER, NULL_RECORDKEY_PLACEHOLDER


def _part(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    text = pc.cast(values, pa.string())
    text = pc.if_else(pc.equal(text, ""), pa.scalar(EMPTY_RECORDKEY_PLACEHOLDER), text)
    return pc.fill_null(text, NULL_RECORDKEY_PLACEHOLDER)


def derive_record_keys(table: pa.Table, fields: Sequence[str], complex_key: bool, source: str) -> pa.Array:
    """Build Hudi record keys for every row of ``table`` from its record key fields.

    Raises:
        ReadError: a record key field is missing from the data (names ``source``).
    """
    missing = [f for f in fields if f not in table.column_names]
    if missing or not fields:
        raise ReadError(f"{source} has no record key field(s) {missing or list(fields)} to derive keys from")
    if len(fields) == 1 and not complex_key:
        return pc.cast(table[fields[0]], pa.string()).combine_chunks()
    parts = [pc.binary_join_element_wise(pa.scalar(f"{f}:"), _part(table[f]), "") for f in fields]
    return pc.binary_join_element_wise(*parts, ",").combine_chunks()
