"""Record keys derived like Hudi's key generators (``KeyGenUtils.getRecordKey``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from evt_toolkit.errors import ReadError
from evt_toolkit.read.keys import derive_record_keys


def test_simple_key_is_the_value() -> None:
    t = pa.table({"id": [7, 8]})
    assert derive_record_keys(t, ["id"], complex_key=False, source="t").to_pylist() == ["7", "8"]


def test_complex_key_lists_fields_with_null_and_empty_markers() -> None:
    t = pa.table({"a": ["x", None, ""], "b": [1, 2, None]})
    keys = derive_record_keys(t, ["a", "b"], complex_key=True, source="t").to_pylist()
    assert keys == ["a:x,b:1", "a:__null__,b:2", "a:__empty__,b:__null__"]


def test_single_field_complex_key_keeps_the_field_name() -> None:
    t = pa.table({"a": ["x"]})
    assert derive_record_keys(t, ["a"], complex_key=True, source="t").to_pylist() == ["a:x"]


def test_missing_key_field_names_the_source() -> None:
    with pytest.raises(ReadError, match=r"part-0\.parquet"):
        derive_record_keys(pa.table({"a": [1]}), ["id"], complex_key=False, source="part-0.parquet")
