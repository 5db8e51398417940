"""Plan building with ``symlinkOperations`` and its Avro encoding (design §2.3, ``hudi-format.md`` §4)."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from evt_toolkit.compaction.model import LogFileInfo, OperationSelection, SliceInfo
from evt_toolkit.compaction.plan import (
    EXTRA_EVENT_TIME_FIELD,
    EXTRA_LINK_MODE,
    EXTRA_LINK_TIMING,
    EXTRA_STRATEGY,
    EXTRA_THRESHOLD_ISO,
    EXTRA_THRESHOLD_MS,
    allocate_link_names,
    build_plan,
    encode_plan,
    next_write_version_after_links,
    plan_links,
    plan_schema,
)
from evt_toolkit.compaction.strategy import (
    TOTAL_LOG_FILES,
    EventTimeBasedCompactionStrategy,
    LogFileSizeBasedCompactionStrategy,
)
from evt_toolkit.errors import PlanValidationError
from evt_toolkit.format.links import Link
from evt_toolkit.format.metadata import decode_compaction_plan, load_schema
from evt_toolkit.format.records import CompactionPlan

C = "20250105000000000"
B = "20250101000000000"


def log(fid: str, v: int, mn: int | None, token: str = "0-0-0") -> LogFileInfo:
    return LogFileInfo.synthetic(fid, v, min_event_time=mn, write_token=token, partition_path="city=x", size=10 * v)


def slices() -> list[SliceInfo]:
    a = (log("a", 1, 10), log("a", 2, 60, "1-0-1"), log("a", 3, 70, "0-7-9"))
    b = (log("b", 1, 5), log("b", 2, 6))
    c = (log("c", 1, 99),)
    return [
        SliceInfo("city=x", "a", B, f"a_0-0-0_{B}.parquet", 1000, a),
        SliceInfo("city=x", "b", B, None, None, b),
        SliceInfo("city=x", "c", B, f"c_0-0-0_{B}.parquet", 1000, c),
    ]


def event_plan(t: int = 50) -> CompactionPlan:
    s = EventTimeBasedCompactionStrategy(threshold=t, event_time_field="ts")
    plan = build_plan(s.select_operations(slices(), now_ms=10**13), C, s, t, "symlink", "schedule")
    assert plan is not None
    return plan


def test_plan_shape() -> None:
    typed = event_plan()
    assert [(x.mode, x.timing, x.compaction_instant) for x in typed.links] == [("symlink", "schedule", C)] * 2
    plan = typed.to_record()  # the Avro record written to C.compaction.requested
    assert plan["version"] == 2 and plan["strategy"] is None and plan["preserveHoodieMetadata"] is False
    ops = plan["operations"]
    assert isinstance(ops, list)
    assert [op["fileId"] for op in ops] == ["a", "b"]  # c has nothing ≤ T: dropped
    a, b = ops
    assert a["baseInstantTime"] == B
    assert a["deltaFilePaths"] == [f".a_{B}.log.1_0-0-0"]
    assert a["dataFilePath"] == f"a_0-0-0_{B}.parquet"
    assert a["partitionPath"] == "city=x"
    assert a["bootstrapFilePath"] is None
    assert a["metrics"][TOTAL_LOG_FILES] == 1.0
    # Leftovers linked into slice C with versions 1..k in their order, keeping each target's write token.
    assert a["symlinkOperations"] == [
        {"symlink": f".a_{C}.log.1_1-0-1", "target": f".a_{B}.log.2_1-0-1"},
        {"symlink": f".a_{C}.log.2_0-7-9", "target": f".a_{B}.log.3_0-7-9"},
    ]
    assert b["dataFilePath"] is None and b["symlinkOperations"] is None
    extra = plan["extraMetadata"]
    assert isinstance(extra, dict)
    assert extra[EXTRA_STRATEGY].endswith("EventTimeBasedCompactionStrategy")
    assert extra[EXTRA_THRESHOLD_MS] == "50"
    assert extra[EXTRA_THRESHOLD_ISO] == "1970-01-01T00:00:00.050Z"
    assert extra[EXTRA_LINK_MODE] == "symlink" and extra[EXTRA_LINK_TIMING] == "schedule"
    assert extra[EXTRA_EVENT_TIME_FIELD] == "ts"


def test_link_allocation_and_next_version() -> None:
    rem = [log("a", 4, 1, "1-0-1"), log("a", 9, 1, "2-3-4")]
    links = allocate_link_names("a", C, rem)
    assert links == (
        Link("", f".a_{C}.log.1_1-0-1", rem[0].name, C),
        Link("", f".a_{C}.log.2_2-3-4", rem[1].name, C),
    )
    assert next_write_version_after_links(links) == 3
    assert next_write_version_after_links([link.to_avro() for link in links]) == 3
    assert next_write_version_after_links([]) == 1
    assert allocate_link_names("a", C, rem, first_version=5)[0].symlink == f".a_{C}.log.5_1-0-1"
    with pytest.raises(PlanValidationError):
        allocate_link_names("a", C, rem, first_version=0)
    with pytest.raises(PlanValidationError, match="not a log file name"):
        next_write_version_after_links([{"symlink": "x.parquet", "target": "y"}])


def test_empty_plan_is_none_and_hudi_strategy_has_no_links() -> None:
    s = EventTimeBasedCompactionStrategy(threshold=0)
    assert build_plan(s.select_operations(slices(), now_ms=1), C, s, 0) is None
    hudi = LogFileSizeBasedCompactionStrategy()
    plan = build_plan(hudi.select_operations(slices()), C, hudi)
    assert plan is not None
    assert not plan.links and all(op["symlinkOperations"] is None for op in plan.to_record()["operations"])
    assert EXTRA_THRESHOLD_MS not in plan.extra
    assert plan.extra["evt.compaction.strategy.hoodie.compaction.target.io"] == "512000"


def test_plan_validation() -> None:
    s = EventTimeBasedCompactionStrategy(threshold=50)
    sl = slices()[0]
    not_prefix = OperationSelection(sl, sl.log_files[1:2], sl.log_files[:1] + sl.log_files[2:])
    with pytest.raises(PlanValidationError, match="not a prefix"):
        build_plan([not_prefix], C, s, 50)
    ok = OperationSelection(sl, sl.log_files[:1], sl.log_files[1:])
    with pytest.raises(PlanValidationError, match="twice"):
        build_plan([ok, ok], C, s, 50)
    with pytest.raises(PlanValidationError, match="link_mode"):
        build_plan([ok], C, s, 50, link_mode="hardlink")
    with pytest.raises(PlanValidationError, match="link_timing"):
        build_plan([ok], C, s, 50, link_timing="later")
    assert build_plan([OperationSelection(sl, (), sl.log_files)], C, s, 50) is None


def test_extended_schema_is_v6_plus_last_field() -> None:
    ours = json.loads(plan_schema())
    stock = json.loads(load_schema("HoodieCompactionPlan.v6"))
    op_ours = ours["fields"][0]["type"][1]["items"]
    op_stock = stock["fields"][0]["type"][1]["items"]
    assert op_ours["fields"][:-1] == op_stock["fields"]
    last = op_ours["fields"][-1]
    assert last["name"] == "symlinkOperations" and last["default"] is None
    assert [f["name"] for f in ours["fields"]] == [f["name"] for f in stock["fields"]]


def test_encoded_plan_decodes_with_extended_and_stock_schema() -> None:
    plan = event_plan()
    data = encode_plan(plan, sync_marker=b"0123456789abcdef")
    assert data.startswith(b"Obj\x01")
    # Our reader.
    ours: Any = next(iter(fastavro.reader(io.BytesIO(data))))
    assert ours["operations"][0]["symlinkOperations"] == plan.to_record()["operations"][0]["symlinkOperations"]
    # Java's reader schema (stock v6): schema resolution skips the extra field.
    stock = fastavro.parse_schema(json.loads(load_schema("HoodieCompactionPlan.v6")))
    java_view: Any = next(iter(fastavro.reader(io.BytesIO(data), reader_schema=stock)))
    assert "symlinkOperations" not in java_view["operations"][0]
    assert java_view["operations"][0]["deltaFilePaths"] == [f".a_{B}.log.1_0-0-0"]
    assert java_view["version"] == 2
    # The timeline decoder keeps the extension.
    decoded = CompactionPlan.from_record(decode_compaction_plan(data, f".hoodie/{C}.compaction.requested"), C)
    link = plan_links(decoded)[("city=x", "a")][0]
    assert (link.partition_path, link.symlink, link.target) == ("city=x", f".a_{C}.log.1_1-0-1", f".a_{B}.log.2_1-0-1")
    assert decoded.extra == plan.extra and decoded.links == plan.links
    assert decoded.to_record() == plan.to_record()


def test_stock_plan_reads_with_extended_schema() -> None:
    # A plan Hudi wrote (no symlinkOperations) resolves against our schema with the default null.
    plan = event_plan().to_record()
    for op in plan["operations"]:
        op.pop("symlinkOperations")
    from evt_toolkit.format.metadata import encode_avro_container

    data = encode_avro_container(plan, load_schema("HoodieCompactionPlan.v6"))
    ours = fastavro.parse_schema(json.loads(plan_schema()))
    rec: Any = next(iter(fastavro.reader(io.BytesIO(data), reader_schema=ours)))
    assert rec["operations"][0]["symlinkOperations"] is None


def test_encode_rejects_bad_plan() -> None:
    with pytest.raises(PlanValidationError, match="does not match"):
        encode_plan({"operations": [{"fileId": 5}], "version": 2})
