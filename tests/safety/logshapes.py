"""Log-file shapes stock Hudi writers leave, built on copies of stock version-6 tables (helpers, no tests here).

Hudi 0.x on storage with append (HDFS) appends the blocks of several deltacommits to one log file of a slice and
rolls over to the next version at ``hoodie.logfile.max.size`` or when the write token changes (a retried task); its
rollback of a failed write appends a ``ROLLBACK`` command block targeting the failed instant; a crashed append leaves
a torn block that later appends follow. :class:`Shaper` writes these shapes byte for byte with the toolkit's block
encoders (``HoodieLogFormatWriter`` framing) and the timeline files Hudi writes with them, and keeps a plain-Python
model of what the committed blocks say (commit-time ordering: within a file group the later block wins, a delete
removes the key).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from evt_toolkit.format.log_writer import (
    encode_avro_data_block,
    encode_block,
    encode_delete_block,
    encode_rollback_command_block,
)
from evt_toolkit.format.logfile import HeaderKey, read_log_blocks_bytes, scan_log_blocks
from tests.conftest import fixture_table_path

#: The stock table the shapes are built on: three partitions, one base file each, one Avro data log.
FIXTURE = "mor_v6_trips_8i1u"
PARTITION = "city=san_francisco"
FILE_ID = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
BASE_INSTANT = "20250331030642808"
FIRST_LOG = f".{FILE_ID}_{BASE_INSTANT}.log.1_0-26-85"
COLUMNS = ("ts", "uuid", "rider", "driver", "fare", "city")


def log_name(version: int, token: str, base: str = BASE_INSTANT) -> str:
    return f".{FILE_ID}_{base}.log.{version}_{token}"


@dataclass
class Shaper:
    """A copy of :data:`FIXTURE` whose san_francisco file group gets stock-shaped log files.

    ``rows`` is the model: record key -> row (every column of :data:`COLUMNS`) of the committed state.
    """

    root: Path
    schema_text: str = ""
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    seq: int = 0
    fixture: str = FIXTURE
    partition: str = PARTITION
    file_id: str = FILE_ID
    base_instant: str = BASE_INSTANT
    first_log: str = FIRST_LOG
    template: str = "20250331030645735"
    key_field: str = "uuid"
    columns: tuple[str, ...] = COLUMNS

    def log(self, version: int, token: str, base: str | None = None) -> str:
        return f".{self.file_id}_{base or self.base_instant}.log.{version}_{token}"

    @classmethod
    def copy(cls, tmp_path: Path, **facts: Any) -> Shaper:
        """A copy of the fixture (``facts`` name another one: ``fixture``, ``partition``, ``file_id``, ...)."""
        import evt_toolkit as evt

        s = cls(tmp_path, **facts)
        s.root = tmp_path / s.fixture
        shutil.copytree(fixture_table_path(s.fixture), s.root, symlinks=True)
        first = s.root / s.partition / s.first_log
        with first.open("rb") as f:
            blocks = list(scan_log_blocks(f, first.stat().st_size, str(first)))
        s.schema_text = blocks[0].schema_json or ""
        for r in evt.HudiTable.open(s.root).read().to_pylist():
            s.rows[r[s.key_field]] = {c: r[c] for c in s.columns}
        return s

    # -- the model ------------------------------------------------------------------------------------------------

    def sf_keys(self) -> list[str]:
        return sorted(k for k, r in self.rows.items() if self.partition in ("", f"city={r.get('city')}"))

    def model(self) -> pa.Table:
        rows = sorted(self.rows.values(), key=lambda r: r[self.key_field])
        return pa.Table.from_pylist(rows).select(list(self.columns)) if rows else pa.table({})

    # -- blocks ---------------------------------------------------------------------------------------------------

    def _records(self, instant: str, updates: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for i, (key, row) in enumerate(sorted(updates.items())):
            out.append(
                {
                    "_hoodie_commit_time": instant,
                    "_hoodie_commit_seqno": f"{instant}_0_{i + 1}",
                    "_hoodie_record_key": key,
                    "_hoodie_partition_path": self.partition,
                    "_hoodie_file_name": self.file_id,
                    **row,
                }
            )
        return out

    def updates(self, keys: list[str], *, fare: float, ts: int) -> dict[str, dict[str, Any]]:
        return {k: {**self.rows[k], "fare": fare, "ts": ts} for k in keys}

    def data_block(self, instant: str, updates: dict[str, dict[str, Any]]) -> bytes:
        return encode_avro_data_block(self._records(instant, updates), self.schema_text, instant)

    def delete_block(self, instant: str, keys: list[str], ordering: list[int] | None) -> bytes:
        return encode_delete_block(
            [(k, self.partition) for k in sorted(keys)], ordering, instant, self.schema_text, ordering_type=pa.int64()
        )

    @staticmethod
    def with_block_id(block: bytes, attempt: int, seq: int) -> bytes:
        """``block`` with the ``BLOCK_IDENTIFIER`` header Hudi 0.14's ``HoodieAppendHandle`` adds:
        ``"<task attempt number>,<block sequence number>"``."""
        [b] = read_log_blocks_bytes(block, "block")
        header = {int(k): v for k, v in b.header.items()}
        header[int(HeaderKey.BLOCK_IDENTIFIER)] = f"{attempt},{seq}"
        return encode_block(int(b.block_type), header, block[b.content_offset : b.content_offset + b.content_length])

    @staticmethod
    def rollback_block(instant: str, target: str) -> bytes:
        return encode_rollback_command_block(instant, target)

    def append(self, name: str, *blocks: bytes) -> tuple[int, int]:
        """Append ``blocks`` to log ``name`` of the file group (created when missing); ``(offset, size)`` written."""
        path = self.root / self.partition / name
        offset = path.stat().st_size if path.exists() else 0
        data = b"".join(blocks)
        with path.open("ab") as f:
            f.write(data)
        return offset, len(data)

    # -- timeline -------------------------------------------------------------------------------------------------

    def _hoodie(self) -> Path:
        return self.root / ".hoodie"

    def requested(self, instant: str) -> None:
        """``requested`` and ``inflight`` files; the inflight one holds the workload profile 0.x writes (the file
        group it updates, with the slice's base instant as ``prevCommit``), which listing-based rollback reads."""
        (self._hoodie() / f"{instant}.deltacommit.requested").write_bytes(b"")
        template = json.loads((self._hoodie() / f"{self.template}.deltacommit.inflight").read_text())
        template["extraMetadata"] = {}
        (self._hoodie() / f"{instant}.deltacommit.inflight").write_text(json.dumps(template))

    def complete(
        self,
        instant: str,
        writes: list[tuple[str, int, int, int, int]],
        updates: dict[str, dict[str, Any]] | None = None,
        deleted: list[str] | None = None,
    ) -> None:
        """``instant.deltacommit`` with one write stat per ``(log name, offset, size, records, deletes)``, as
        ``HoodieAppendHandle`` reports an append (``logOffset``, the bytes written); the model takes the change."""
        template = json.loads((self._hoodie() / f"{self.template}.deltacommit").read_text())
        stat0 = template["partitionToWriteStats"][self.partition][0]
        stats = []
        for name, offset, size, records, deletes in writes:
            st = dict(stat0)
            st.update(
                path=f"{self.partition}/{name}" if self.partition else name,
                logOffset=offset,
                totalWriteBytes=size,
                fileSizeInBytes=size,
                numWrites=records,
                numUpdateWrites=records,
                numDeletes=deletes,
                logVersion=int(name.split(".log.")[1].split("_")[0]),
                logFiles=[name],
            )
            stats.append(st)
        template["partitionToWriteStats"] = {self.partition: stats}
        (self._hoodie() / f"{instant}.deltacommit").write_text(json.dumps(template))
        for k, row in (updates or {}).items():
            self.rows[k] = row
        for k in deleted or []:
            self.rows.pop(k, None)

    def forget(self, instant: str) -> None:
        """What a completed rollback leaves of ``instant`` on the timeline: nothing."""
        for p in self._hoodie().glob(f"{instant}.deltacommit*"):
            p.unlink()

    def rollback_instant(self, instant: str, target: str) -> None:
        """``instant.rollback`` (requested, inflight, completed) for ``target``, the way the toolkit writes one."""
        from evt_toolkit.format.records import RollbackMetadata

        meta = RollbackMetadata(instant, target, "deltacommit", 1, {})
        (self._hoodie() / f"{instant}.rollback.requested").write_bytes(b"")
        (self._hoodie() / f"{instant}.rollback.inflight").write_bytes(b"")
        (self._hoodie() / f"{instant}.rollback").write_bytes(meta.encode())

    def archive(self, *instants: str) -> None:
        """Move the timeline files of ``instants`` out of the active timeline, as Hudi's archiver does."""
        arch = self._hoodie() / "archived" / "moved"
        arch.mkdir(parents=True, exist_ok=True)
        for inst in instants:
            for p in self._hoodie().glob(f"{inst}.*"):
                p.rename(arch / p.name)
