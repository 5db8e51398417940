"""``hoodie.properties``: Java properties codec, checksum, backup fallback and the typed TableConfig."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evt_toolkit.errors import TableConfigError, UnsupportedTableError
from evt_toolkit.format.properties import (
    dump_properties,
    parse_properties,
    table_checksum,
)
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.config import TableConfig, load_table_config, read_table_properties
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR, fixture_names, fixture_table_path

# -- Properties.load semantics ----------------------------------------------------------------------------------------


def test_parse_java_properties_syntax() -> None:
    text = (
        "#Properties saved on 2025-03-31T03:06:42.363296Z\n"
        "#Mon Mar 31 03:06:42 UTC 2025\n"
        "! bang comment \\\n"
        "a=1\n"
        "  b : 2\n"
        "c 3\n"
        "d\t=\t 4 \n"
        "e\\:x=y\\=z\n"
        "f=\\u00e9\\t\\n\\\\\n"
        "g=one \\\n"
        "    two\\\r\n"
        "  three\n"
        "h\n"
        "\n"
        "i=\\ lead\n"
        "j=\\ud83d\\ude00\n"
        "k==v\n"
        "l\\ m=n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4 ",
        "e:x": "y=z",
        "f": "é\t\n\\",
        "g": "one twothree",
        "h": "",
        "i": " lead",
        "j": "😀",
        "k": "=v",
        "l m": "n",
    }


def test_parse_rejects_malformed_unicode_escape() -> None:
    with pytest.raises(ValueError):
        parse_properties("a=\\u12")


def test_dump_escapes_like_properties_store() -> None:
    text = dump_properties({"k:e=y": "a:b=c#d!e", " lead": " v", "u": "é😀", "t": "x\ty"}, "Properties saved on X")
    lines = text.split("\n")
    assert lines[0] == "#Properties saved on X"
    assert lines[1].startswith("#") and lines[1].endswith(" UTC " + lines[1][-4:])
    assert lines[2] == "k\\:e\\=y=a\\:b\\=c\\#d\\!e"
    assert lines[3] == "\\ lead=\\ v"
    assert lines[4] == "u=\\u00E9\\uD83D\\uDE00"
    assert lines[5] == "t=x\\ty"
    assert text.isascii() and text.endswith("\n")


def test_dump_without_comment_writes_only_date_line() -> None:
    lines = dump_properties({"a": "b"}).splitlines()
    assert len(lines) == 2 and lines[0].startswith("#") and lines[1] == "a=b"


_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)


@given(st.dictionaries(_text, _text, max_size=8), st.one_of(st.none(), _text))
def test_dump_then_parse_is_identity(props: dict[str, str], comment: str | None) -> None:
    assert parse_properties(dump_properties(props, comment)) == props


# -- checksum ----------------------------------------------------------------------------------------------------


def test_checksum_vectors_from_format_notes() -> None:
    assert table_checksum("v6_trips_8i1u", "default") == 3843273058
    assert table_checksum("v6_nonpartitioned_rollback", "default") == 1120353670
    assert table_checksum("t", None) == table_checksum("t", "")


@SKIP_NO_SHARED
@pytest.mark.parametrize("fixture", fixture_names())
def test_every_fixture_hoodie_properties_reads(fixture: str) -> None:
    root = fixture_table_path(fixture)
    props = read_table_properties(TableStorage.from_uri(root))
    meta = json.loads((TABLES_DIR / fixture / "fixture.json").read_text())
    assert props["hoodie.table.name"] == meta["name"]
    assert int(props["hoodie.table.checksum"]) == table_checksum(
        props["hoodie.table.name"], props.get("hoodie.database.name")
    )
    # The create schema is stored with \: escapes; parsed, it is plain JSON.
    if "hoodie.table.create.schema" in props:
        assert json.loads(props["hoodie.table.create.schema"])["type"] == "record"
    cfg = load_table_config(TableStorage.from_uri(root))
    assert cfg.version == int(meta["version"])
    assert cfg.timeline_layout == int(meta["layout"])
    assert cfg.table_type == meta["type"]
    assert cfg.timeline_path == (".hoodie" if cfg.version == 6 else ".hoodie/timeline")
    assert ",".join(cfg.partition_fields) == meta["partition_fields"]
    assert ",".join(cfg.record_key_fields) == meta["recordkey"]
    assert cfg.ordering_field == meta["ordering"]
    if meta["merge_mode"]:
        assert cfg.merge_mode == meta["merge_mode"]
    assert cfg.is_mor == (meta["type"] == "MERGE_ON_READ")


@SKIP_NO_SHARED
def test_v6_fixture_checksums_match_doc_vector() -> None:
    props = read_table_properties(TableStorage.from_uri(fixture_table_path("mor_v6_trips_8i1u")))
    assert props["hoodie.table.checksum"] == "3843273058"


# -- error handling and backup fallback --------------------------------------------------------------------------------

_GOOD = {
    "hoodie.table.name": "t1",
    "hoodie.database.name": "db",
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.table.version": "6",
    "hoodie.timeline.layout.version": "1",
    "hoodie.table.precombine.field": "ts",
    "hoodie.table.recordkey.fields": "id",
    "hoodie.table.checksum": str(table_checksum("t1", "db")),
}


def _write_table(tmp_path: Path, props: dict[str, str] | None, *, backup: dict[str, str] | None = None) -> TableStorage:
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir(parents=True, exist_ok=True)
    if props is not None:
        (hoodie / "hoodie.properties").write_text(dump_properties(props, "Properties saved on test"))
    if backup is not None:
        (hoodie / "hoodie.properties.backup").write_text(dump_properties(backup, "Properties saved on test"))
    return TableStorage.from_uri(tmp_path)


def test_missing_file_is_not_a_hudi_table(tmp_path: Path) -> None:
    with pytest.raises(TableConfigError, match=r"hoodie\.properties.*not a Hudi table"):
        read_table_properties(TableStorage.from_uri(tmp_path))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hoodie.table.checksum": None}, "missing hoodie.table.checksum"),
        ({"hoodie.table.checksum": "123"}, "does not match"),
        ({"hoodie.table.checksum": "12x"}, "not a number"),
        ({"hoodie.database.name": "other"}, "does not match"),
    ],
)
def test_bad_checksum_names_the_file(tmp_path: Path, change: dict[str, str | None], message: str) -> None:
    props = {k: v for k, v in {**_GOOD, **change}.items() if v is not None}
    storage = _write_table(tmp_path, props)
    with pytest.raises(TableConfigError, match=message) as info:
        read_table_properties(storage)
    assert str(tmp_path / ".hoodie" / "hoodie.properties") in str(info.value)


def test_corrupt_file_names_the_file(tmp_path: Path) -> None:
    storage = _write_table(tmp_path, None)
    (tmp_path / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=\\u12zz\n")
    with pytest.raises(TableConfigError, match=r"hoodie\.properties"):
        read_table_properties(storage)
    (tmp_path / ".hoodie" / "hoodie.properties").write_bytes(b"\x00\x01garbage")
    with pytest.raises(TableConfigError, match=r"hoodie\.properties"):
        read_table_properties(storage)


def test_backup_used_when_main_invalid_or_missing(tmp_path: Path) -> None:
    bad = {**_GOOD, "hoodie.table.checksum": "1"}
    storage = _write_table(tmp_path, bad, backup=_GOOD)
    assert read_table_properties(storage)["hoodie.table.name"] == "t1"
    (tmp_path / ".hoodie" / "hoodie.properties").unlink()
    assert read_table_properties(storage)["hoodie.table.name"] == "t1"


def test_both_main_and_backup_invalid_reports_main(tmp_path: Path) -> None:
    bad = {**_GOOD, "hoodie.table.checksum": "1"}
    storage = _write_table(tmp_path, bad, backup=bad)
    with pytest.raises(TableConfigError, match=r"hoodie\.properties:"):
        read_table_properties(storage)


@pytest.mark.parametrize(
    "key", ["hoodie.table.name", "hoodie.table.type", "hoodie.table.version", "hoodie.timeline.layout.version"]
)
def test_missing_required_key_names_the_file(tmp_path: Path, key: str) -> None:
    props = {k: v for k, v in _GOOD.items() if k != key}
    if key == "hoodie.table.name":
        with pytest.raises(TableConfigError, match=r"hoodie\.properties"):
            load_table_config(_write_table(tmp_path, props))
        return
    with pytest.raises(TableConfigError, match=rf"hoodie\.properties.*{key}"):
        load_table_config(_write_table(tmp_path, props))


@SKIP_NO_SHARED
def test_copied_real_table_with_damaged_checksum_falls_back_to_backup(tmp_path: Path) -> None:
    src = fixture_table_path("mor_v6_trips_8i1u") / ".hoodie" / "hoodie.properties"
    (tmp_path / ".hoodie").mkdir()
    shutil.copy(src, tmp_path / ".hoodie" / "hoodie.properties.backup")
    text = src.read_text().replace("hoodie.table.checksum=3843273058", "hoodie.table.checksum=3843273059")
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(text)
    assert load_table_config(TableStorage.from_uri(tmp_path)).name == "v6_trips_8i1u"


# -- TableConfig -------------------------------------------------------------------------------------------------


def test_unsupported_versions_and_layouts() -> None:
    with pytest.raises(UnsupportedTableError, match="version 5"):
        TableConfig.from_properties({**_GOOD, "hoodie.table.version": "5"})
    with pytest.raises(UnsupportedTableError, match="layout"):
        TableConfig.from_properties({**_GOOD, "hoodie.timeline.layout.version": "2"})
    with pytest.raises(UnsupportedTableError, match="layout"):
        TableConfig.from_properties({**_GOOD, "hoodie.table.version": "8"})
    with pytest.raises(TableConfigError, match="not an integer"):
        TableConfig.from_properties({**_GOOD, "hoodie.table.version": "six"})


@pytest.mark.parametrize(
    ("extra", "version", "expected"),
    [
        ({"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}, 9, "COMMIT_TIME_ORDERING"),
        (
            {"hoodie.compaction.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"},
            6,
            "COMMIT_TIME_ORDERING",
        ),
        (
            {"hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"},
            6,
            "EVENT_TIME_ORDERING",
        ),
        (
            {"hoodie.compaction.payload.class": "org.apache.hudi.common.model.EventTimeAvroPayload"},
            6,
            "EVENT_TIME_ORDERING",
        ),
        # v6: the payload wins over the (default) strategy id.
        (
            {
                "hoodie.compaction.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
                "hoodie.compaction.record.merger.strategy": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
            },
            6,
            "COMMIT_TIME_ORDERING",
        ),
        # v8: the strategy id wins over the payload.
        (
            {
                "hoodie.compaction.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
                "hoodie.record.merge.strategy.id": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
            },
            8,
            "EVENT_TIME_ORDERING",
        ),
        ({"hoodie.record.merge.strategy.id": "ce9acb64-bde0-424c-9b91-f6ebba25356d"}, 8, "COMMIT_TIME_ORDERING"),
        ({}, 6, "EVENT_TIME_ORDERING"),  # ordering field present
    ],
)
def test_merge_mode_resolution(extra: dict[str, str], version: int, expected: str) -> None:
    props = {**_GOOD, **extra, "hoodie.table.version": str(version)}
    props["hoodie.timeline.layout.version"] = "1" if version == 6 else "2"
    assert TableConfig.from_properties(props).merge_mode == expected


def test_merge_mode_without_ordering_field_is_commit_time() -> None:
    props = {k: v for k, v in _GOOD.items() if k != "hoodie.table.precombine.field"}
    cfg = TableConfig.from_properties(props)
    assert cfg.ordering_field is None and cfg.merge_mode == "COMMIT_TIME_ORDERING"


def test_custom_merge_mode_is_unsupported() -> None:
    with pytest.raises(UnsupportedTableError, match="CUSTOM"):
        TableConfig.from_properties({**_GOOD, "hoodie.record.merge.mode": "CUSTOM"})


def test_config_fields_and_defaults() -> None:
    cfg = TableConfig.from_properties(
        {
            **_GOOD,
            "hoodie.table.version": "9",
            "hoodie.timeline.layout.version": "2",
            "hoodie.timeline.path": "tl",
            "hoodie.table.ordering.fields": "event_ts,seq",
            "hoodie.table.partition.fields": "a, b",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.payload.event.time.field": "event_ts",
            "hoodie.evt.min.event.time.header": "true",
            "hoodie.table.base.file.format": "lance",
        }
    )
    assert cfg.timeline_path == ".hoodie/tl"
    assert cfg.ordering_field == "event_ts"
    assert cfg.partition_fields == ("a", "b")
    assert cfg.hive_style_partitioning and not cfg.url_encode_partitions
    assert cfg.populate_meta_fields and not cfg.drop_partition_columns
    assert cfg.event_time_field == "event_ts" and cfg.min_event_time_header
    assert cfg.base_file_format == "LANCE" and cfg.timezone == "LOCAL"
    with pytest.raises(TypeError):
        cfg.properties["x"] = "y"  # type: ignore[index]
