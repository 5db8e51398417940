"""How a table keyed by one field through Hudi's complex key generator stores its record keys.

Hudi's ``ComplexAvroKeyGenerator`` stores a single-field key as ``field:value`` (``KeyGenUtils.getRecordKey``; on
table version 9 always, before it unless ``hoodie.write.complex.keygen.new.encoding=true``, which stores the bare
value, HUDI-7001). A writer must store the encoding the table's records already carry, or an upsert of a key makes a
second record beside the stored one (the keys differ as strings). As Hudi's
``KeyGenUtils.deduceComplexKeyGenEncodingFromData`` does, the encoding is read off a stored record key: a latest
base file's, else a log data block's; a table without one takes Hudi's canonical ``field:value``. An encoding the
table records (``hoodie.table.complex.keygen.encoding`` or ``hoodie.table.complex.keygenerator.encoding``,
``FIELD_PREFIXED`` or ``VALUE_ONLY``, as newer Hudi writers record it) wins, as it does for them.

Example:
    >>> single_key_field_prefixed(t)  # doctest: +SKIP
    True
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from evt_toolkit.errors import EvtError, StorageError
from evt_toolkit.format.log_content import decode_avro_data_block, decode_parquet_data_block
from evt_toolkit.format.logfile import BlockType, read_block_content, read_log_blocks_bytes

if TYPE_CHECKING:
    from evt_toolkit.table.config import TableConfig
    from evt_toolkit.table.table import Table

__all__ = ["is_single_field_complex_key", "single_key_field_prefixed"]

_KEY = "_hoodie_record_key"
#: Where newer Hudi writers record the encoding (``ComplexKeyGenEncoding``), under either name.
ENCODING_KEYS = ("hoodie.table.complex.keygen.encoding", "hoodie.table.complex.keygenerator.encoding")
_COMPLEX = ("COMPLEX", "COMPLEXKEYGENERATOR", "COMPLEXAVROKEYGENERATOR")


def is_single_field_complex_key(cfg: TableConfig) -> bool:
    """Whether the table is keyed by one field through the complex key generator."""
    keygen = (cfg.key_generator or "").rsplit(".", 1)[-1].upper()
    return len(cfg.record_key_fields) == 1 and keygen in _COMPLEX


def _first_key(keys: pa.ChunkedArray | pa.Array) -> str | None:
    for v in keys.to_pylist():
        if v is not None:
            return str(v)
    return None


def _stored_key(table: Table) -> str | None:
    """A record key the table stores: from a latest base file, else from a latest log data block."""
    storage = table.storage
    for bf in table.view.latest_base_files():
        try:
            with storage.open_input(bf.path) as f:
                pf = pq.ParquetFile(f)
                if pf.metadata.num_row_groups and _KEY in pf.schema_arrow.names:
                    key = _first_key(pf.read_row_group(0, columns=[_KEY])[_KEY])
                    if key is not None:
                        return key
        except (StorageError, pa.ArrowException, OSError):
            continue
    for fs in table.view.latest_file_slices():
        for lf in fs.log_files:
            try:
                data = storage.read_bytes(lf.path)
                src = io.BytesIO(data)
                for block in read_log_blocks_bytes(data, lf.path):
                    if block.block_type is BlockType.AVRO_DATA:
                        decoded = decode_avro_data_block(block, read_block_content(src, block))
                    elif block.block_type is BlockType.PARQUET_DATA:
                        decoded = decode_parquet_data_block(block, read_block_content(src, block))
                    else:
                        continue
                    if _KEY in decoded.column_names:
                        key = _first_key(decoded[_KEY])
                        if key is not None:
                            return key
            except (EvtError, pa.ArrowException, OSError):
                continue
    return None


def single_key_field_prefixed(table: Table) -> bool:
    """Whether the writer stores this table's record keys as ``field:value`` although they have one field.

    ``False`` for every table but one keyed by a single field through the complex key generator; for that one, the
    encoding the table records, else that of a stored key (``field:value`` or the bare value), else
    ``field:value``.
    """
    cfg = table.config
    if not is_single_field_complex_key(cfg):
        return False
    for key in ENCODING_KEYS:
        recorded = (cfg.properties.get(key) or "").strip().upper()
        if recorded in ("FIELD_PREFIXED", "VALUE_ONLY"):
            return recorded == "FIELD_PREFIXED"
    stored = _stored_key(table)
    return stored is None or stored.startswith(cfg.record_key_fields[0] + ":")
