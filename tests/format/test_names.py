"""File-name codecs: every real name in the fixtures, round-trip properties and log-file ordering."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evt_toolkit.errors import InvalidNameError
from evt_toolkit.format.names import (
    UNKNOWN_WRITE_TOKEN,
    BaseFileName,
    InstantFileName,
    LogFileName,
    new_write_token,
)
from tests.conftest import SKIP_NO_SHARED, fixture_names, fixture_table_path


def _partition_files(root: Path) -> list[Path]:
    """Files of every partition folder (data table and metadata table), found by their partition marker."""
    return [
        Path(d) / f
        for d, _, files in os.walk(root)
        if any(f.startswith(".hoodie_partition_metadata") for f in files)
        for f in files
    ]


def _is_checksum_or_system(name: str) -> bool:
    return name.endswith(".crc") or name in {".DS_Store", "_SUCCESS"}


# -- real names -----------------------------------------------------------------------------------------------------


@SKIP_NO_SHARED
@pytest.mark.parametrize("fixture", fixture_names())
def test_every_data_file_name_in_fixture_parses_and_round_trips(fixture: str) -> None:
    root = fixture_table_path(fixture)
    base_count = log_count = 0
    for path in _partition_files(root):
        rel = path.relative_to(root).as_posix()
        name = path.name
        if _is_checksum_or_system(name) or name.startswith(".hoodie_partition_metadata"):
            continue
        base = BaseFileName.parse(name)
        log = LogFileName.parse(name)
        assert (base is None) != (log is None), f"{rel}: expected exactly one of base/log, got {base} / {log}"
        if base is not None:
            base_count += 1
            assert base.name == name
            assert BaseFileName.parse(base.name) == base
        if log is not None:
            log_count += 1
            assert log.name == name
            assert LogFileName.parse(log.name) == log
    assert base_count + log_count > 0 or fixture == "mor_v6_empty"


@SKIP_NO_SHARED
@pytest.mark.parametrize("fixture", fixture_names())
def test_every_timeline_file_name_in_fixture_parses_and_round_trips(fixture: str) -> None:
    root = fixture_table_path(fixture)
    timeline_dirs = [root / ".hoodie", root / ".hoodie" / "timeline", root / ".hoodie/metadata/.hoodie/timeline"]
    seen = 0
    for d in timeline_dirs:
        if not d.is_dir():
            continue
        for entry in d.iterdir():
            parsed = InstantFileName.parse(entry.name)
            if entry.is_dir() or entry.name.startswith(".") or entry.name.startswith("hoodie.properties"):
                assert parsed is None, entry
                continue
            assert parsed is not None, entry
            assert parsed.name == entry.name
            seen += 1
    assert seen > 0 or fixture == "mor_v6_empty"


@SKIP_NO_SHARED
def test_real_lance_and_parquet_base_files() -> None:
    names = {p.suffix for p in _partition_files(fixture_table_path("mor_v9_trips_lance")) if BaseFileName.parse(p.name)}
    assert ".lance" in names
    names = {p.suffix for p in _partition_files(fixture_table_path("mor_v6_trips_8i1u")) if BaseFileName.parse(p.name)}
    assert names == {".parquet"}


# -- specific names -------------------------------------------------------------------------------------------------


def test_base_file_name_fields() -> None:
    b = BaseFileName.parse("d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet")
    assert b == BaseFileName("d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0", "0-13-60", "20250331030642808", ".parquet")
    mdt = BaseFileName.parse("files-0000-0_0-5-4_00000000000000010.hfile")
    assert mdt is not None and mdt.file_id == "files-0000-0" and mdt.extension == ".hfile"


@pytest.mark.parametrize(
    "name",
    [
        "part-00000-2b1f-c000.snappy.parquet",
        "_SUCCESS",
        ".hoodie_partition_metadata",
        ".d0304c53-0_0-13-60_20250331030642808.parquet.crc",
        "abc_0-13-60.parquet",
        "abc_x-1-2_2025.parquet",
        "abc_0-1-2_2025x.parquet",
        "abc_0-1-2_2025",
        "",
    ],
)
def test_not_base_file_names(name: str) -> None:
    assert BaseFileName.parse(name) is None


def test_log_file_name_fields() -> None:
    log = LogFileName.parse(".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.2_1-0-1")
    assert log == LogFileName("d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0", "20250331030642808", "log", 2, "1-0-1", "")
    assert LogFileName.parse(".f1_001.log.3") == LogFileName("f1", "001", "log", 3, None, "")
    cdc = LogFileName.parse(".f1_001.log.1_0-1-2.cdc")
    assert cdc is not None and cdc.suffix == ".cdc"
    archive = LogFileName.parse(".commits_.archive.1_1-0-1")
    assert archive == LogFileName("commits", "", "archive", 1, UNKNOWN_WRITE_TOKEN, "")


@pytest.mark.parametrize(
    "name",
    [
        "f1_0-1-2_001.parquet",
        ".f1_001.log.1_0-1-2.crc",  # Hadoop checksum side file: Java never sees it, we must not take it for a log
        "..f1_001.log.1_0-1-2.crc",
        ".f1_001.log.x_0-1-2",
        ".f1_001.txt.1_0-1-2",
        "f1_001.log.1_0-1-2",
    ],
)
def test_not_log_file_names(name: str) -> None:
    assert LogFileName.parse(name) is None


def test_log_file_ordering_follows_log_file_comparator() -> None:
    names = [
        ".f_002.log.1_0-1-1",
        ".f_001.log.2_1-0-1",
        ".f_001.log.1_0-33-43",
        ".f_001.log.3_0-13-9",
        ".f_001.log.1_0-1-10",
        ".f_001.log.1",
        ".f_001.log.1_0-1-10.cdc",
    ]
    parsed = [LogFileName.parse(n) for n in names]
    assert all(p is not None for p in parsed)
    ordered = [p.name for p in sorted((p for p in parsed if p), key=LogFileName.sort_key)]
    assert ordered == [
        ".f_001.log.1",  # missing token first
        ".f_001.log.1_0-1-10",  # tokens compare as strings: "0-1-10" < "0-33-43"
        ".f_001.log.1_0-1-10.cdc",  # same token: suffix breaks the tie
        ".f_001.log.1_0-33-43",
        ".f_001.log.2_1-0-1",
        ".f_001.log.3_0-13-9",
        ".f_002.log.1_0-1-1",  # base instant first
    ]


def test_instant_file_names_both_layouts() -> None:
    p = InstantFileName.parse
    assert p("20250331030642808.deltacommit") == InstantFileName("20250331030642808", "deltacommit", "COMPLETED")
    assert p("20250331030642808.deltacommit.inflight") == InstantFileName(
        "20250331030642808", "deltacommit", "INFLIGHT"
    )
    assert p("20240418173550988.inflight") == InstantFileName("20240418173550988", "commit", "INFLIGHT")
    assert p("20240418173550988.commit.requested") == InstantFileName("20240418173550988", "commit", "REQUESTED")
    assert p("20251220210129235_20251220210129883.commit") == InstantFileName(
        "20251220210129235", "commit", "COMPLETED", "20251220210129883"
    )
    assert p("20260307135709297.clustering.requested") == InstantFileName(
        "20260307135709297", "clustering", "REQUESTED"
    )
    # Commit inflight is always written as the bare ".inflight".
    assert InstantFileName("1", "commit", "INFLIGHT").name == "1.inflight"
    assert p("1.commit.inflight") == InstantFileName("1", "commit", "INFLIGHT")


@pytest.mark.parametrize(
    "name",
    [
        "hoodie.properties",
        "archived",
        ".aux",
        ".temp",
        "timeline",
        ".20260611035339496.deltacommit.inflight.crc",
        "20260611035339496.deltacommit.inflight.crc",
        "20260611035339496.deltacommit.done",
        "1_2.deltacommit.requested",
        "1_2.inflight",
        "abc.commit",
        "1.commit\n",
    ],
)
def test_not_instant_file_names(name: str) -> None:
    assert InstantFileName.parse(name) is None


def test_new_write_token() -> None:
    assert new_write_token(0, 13, 60) == "0-13-60"
    with pytest.raises(InvalidNameError):
        new_write_token(-1, 0, 0)


# -- round-trip properties --------------------------------------------------------------------------------------------

_file_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,40}", fullmatch=True)
_instants = st.from_regex(r"[0-9]{1,20}", fullmatch=True)
_tokens = st.builds(new_write_token, *(st.integers(0, 10**6) for _ in range(3)))
_extensions = st.sampled_from([".parquet", ".lance", ".hfile", ".orc", ".snappy.parquet"])


@given(_file_ids, _tokens, _instants, _extensions)
def test_base_file_name_round_trip(file_id: str, token: str, instant: str, ext: str) -> None:
    x = BaseFileName(file_id, token, instant, ext)
    assert BaseFileName.parse(x.name) == x
    assert LogFileName.parse(x.name) is None


@given(
    _file_ids,
    st.one_of(st.just(""), _instants),
    st.sampled_from(["log", "archive"]),
    st.integers(0, 10**9),
    st.one_of(st.none(), _tokens),
    st.sampled_from(["", ".cdc"]),
)
def test_log_file_name_round_trip(
    file_id: str, base: str, ext: str, version: int, token: str | None, suffix: str
) -> None:
    x = LogFileName(file_id, base, ext, version, token, suffix if token is not None else "")
    assert LogFileName.parse(x.name) == x
    assert BaseFileName.parse(x.name) is None


_actions = st.sampled_from(
    [
        "commit",
        "deltacommit",
        "compaction",
        "logcompaction",
        "replacecommit",
        "clustering",
        "clean",
        "rollback",
        "savepoint",
        "restore",
        "indexing",
        "schemacommit",
    ]
)


@given(
    _instants,
    _actions,
    st.sampled_from(["REQUESTED", "INFLIGHT", "COMPLETED"]),
    st.one_of(st.none(), _instants),
)
def test_instant_file_name_round_trip(time: str, action: str, state: str, completion: str | None) -> None:
    x = InstantFileName(time, action, state, completion if state == "COMPLETED" else None)
    assert InstantFileName.parse(x.name) == x
