"""The pure write planner (file group / slice / log version per bucket) and the instant allocator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from evt_toolkit.errors import TimelineError, WriteError
from evt_toolkit.format.records import CompactionOperation
from evt_toolkit.write import instants
from evt_toolkit.write.instants import format_instant, new_instant_time, parse_instant, step_instant
from evt_toolkit.write.plan import (
    ExistingSlice,
    PendingCompactionReservation,
    next_log_version,
    plan_file_group_writes,
    reserved_link_versions,
)

B1 = "20250101000000000"
W = "20250105000000000"
C = "20250103000000000"
FID1 = "00000001-aaaa-bbbb-cccc-dddddddddddd-0"
FID2 = "00000002-aaaa-bbbb-cccc-dddddddddddd-0"


def _new_id(bucket: int) -> str:
    return f"{bucket:08d}-new-0"


def _log(fid: str, base: str, v: int, token: str = "0-1-2") -> str:
    return f".{fid}_{base}.log.{v}_{token}"


# -- next_log_version --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "reserved", "expected"),
    [((), (), 1), ((1,), (), 2), ((1, 3, 2), (), 4), ((), (1, 2), 3), ((5,), (2,), 6), ((1,), (4,), 5)],
)
def test_next_log_version(existing: tuple[int, ...], reserved: tuple[int, ...], expected: int) -> None:
    assert next_log_version(existing, reserved) == expected


# -- plan_file_group_writes --------------------------------------------------------------------------------------------


def test_new_bucket_gets_a_log_only_group_keyed_by_the_write_instant() -> None:
    [fg] = plan_file_group_writes(W, [("p=a", 7)], [], [], new_file_id=_new_id)
    assert (fg.partition_path, fg.file_id, fg.bucket) == ("p=a", "00000007-new-0", 7)
    assert (fg.base_instant, fg.base_file, fg.log_version, fg.prev_commit) == (W, None, 1, "null")
    assert fg.existing_log_files == () and fg.is_new_file_group


def test_existing_group_appends_after_the_highest_version_of_its_slice() -> None:
    base = f"{FID1}_0-1-0_{B1}.parquet"
    logs = (_log(FID1, B1, 1), _log(FID1, B1, 3, "1-0-1"), _log(FID1, B1, 2))
    s = ExistingSlice("p=a", FID1, B1, base, logs)
    [fg] = plan_file_group_writes(W, [("p=a", 1)], [s], [], new_file_id=_new_id)
    assert (fg.file_id, fg.base_instant, fg.base_file, fg.log_version, fg.prev_commit) == (FID1, B1, base, 4, B1)
    # FileSlice order: newest first.
    assert fg.existing_log_files == (logs[1], logs[2], logs[0])
    assert not fg.is_new_file_group


def test_log_only_existing_group_keeps_its_base_instant() -> None:
    s = ExistingSlice("", FID2, B1, None, (_log(FID2, B1, 1),))
    [fg] = plan_file_group_writes(W, [("", 2)], [s], [], new_file_id=_new_id)
    assert (fg.base_instant, fg.base_file, fg.log_version, fg.prev_commit) == (B1, None, 2, B1)


def test_pending_compaction_redirects_to_the_compaction_slice_after_reserved_links() -> None:
    # The latest slice is the one the pending compaction opened at C: it already holds link 1 (copied at schedule
    # time) and the plan reserves versions 1..3 for links created at execute time.
    s = ExistingSlice("p=a", FID1, C, None, (_log(FID1, C, 1, "1-0-1"),))
    r = PendingCompactionReservation("p=a", FID1, C, (1, 2, 3))
    [fg] = plan_file_group_writes(W, [("p=a", 1)], [s], [r], new_file_id=_new_id)
    assert (fg.base_instant, fg.base_file, fg.log_version, fg.prev_commit) == (C, None, 4, C)
    assert fg.existing_log_files == (_log(FID1, C, 1, "1-0-1"),)


def test_pending_compaction_without_links_starts_at_version_one() -> None:
    s = ExistingSlice("p=a", FID1, C, None, ())
    [fg] = plan_file_group_writes(W, [("p=a", 1)], [s], [PendingCompactionReservation("p=a", FID1, C)])
    assert (fg.base_instant, fg.log_version) == (C, 1)


def test_pending_compaction_ignores_logs_of_older_slices() -> None:
    s = ExistingSlice("p=a", FID1, C, None, (_log(FID1, B1, 7), _log(FID1, C, 2)))
    [fg] = plan_file_group_writes(W, [("p=a", 1)], [s], [PendingCompactionReservation("p=a", FID1, C)])
    assert fg.log_version == 3


def test_same_bucket_in_another_partition_is_a_different_group() -> None:
    s = ExistingSlice("p=a", FID1, B1, None, (_log(FID1, B1, 1),))
    fgs = plan_file_group_writes(W, [("p=b", 1), ("p=a", 1), ("p=a", 1)], [s], [], new_file_id=_new_id)
    assert [(f.partition_path, f.file_id) for f in fgs] == [("p=a", FID1), ("p=b", "00000001-new-0")]


def test_two_groups_in_one_bucket_are_refused() -> None:
    other = "00000001-ffff-bbbb-cccc-dddddddddddd-0"
    slices = [ExistingSlice("p", FID1, B1, None, ()), ExistingSlice("p", other, B1, None, ())]
    with pytest.raises(WriteError, match="two file groups for bucket 1"):
        plan_file_group_writes(W, [("p", 1)], slices, [])


def test_non_bucket_file_group_is_refused() -> None:
    with pytest.raises(WriteError, match="not a bucket-index file group"):
        plan_file_group_writes(W, [("p", 1)], [ExistingSlice("p", "d0304c53-6fd2-0", B1, None, ())], [])


def test_reserved_link_versions_reads_symlink_names_of_the_group() -> None:
    op = CompactionOperation.from_record(
        {
            "fileId": FID1,
            "symlinkOperations": [
                {"symlink": _log(FID1, C, 1, "1-0-1"), "target": _log(FID1, B1, 3)},
                {"symlink": "p=a/" + _log(FID1, C, 2, "1-0-1"), "target": _log(FID1, B1, 4)},
                {"symlink": _log(FID2, C, 9), "target": "x"},
            ],
        },
        C,
    )
    assert reserved_link_versions(op, C) == (1, 2)
    no_links = CompactionOperation.from_record({"fileId": FID1, "symlinkOperations": None}, C)
    assert reserved_link_versions(no_links, C) == ()


# -- instants ----------------------------------------------------------------------------------------------------------


def test_format_and_parse_round_trip() -> None:
    moment = datetime(2025, 3, 31, 3, 6, 42, 808000)
    assert format_instant(moment) == "20250331030642808"
    assert parse_instant("20250331030642808") == moment
    assert parse_instant("20250331030642") == moment.replace(microsecond=0)
    with pytest.raises(TimelineError):
        parse_instant("2025-03-31")


def test_step_instant_is_the_next_millisecond() -> None:
    assert step_instant("20250331030642808") == "20250331030642809"
    assert step_instant("20251231235959999") == "20260101000000000"
    assert step_instant("20250331030642") == "20250331030642000"
    assert step_instant("00000000000000001") == "19700101000000000"


def test_new_instant_uses_the_clock_in_utc() -> None:
    now = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert new_instant_time([], "UTC", now=now) >= "20300102030405678"


def test_new_instant_local_time_zone() -> None:
    now = datetime(2031, 1, 2, 3, 4, 5, 0, tzinfo=timezone(timedelta(hours=5)))
    got = new_instant_time([], "LOCAL", now=now)
    assert got >= format_instant(now.astimezone())


@pytest.fixture(autouse=True)
def _isolated_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Instants issued here (some far in the future) must not leak into other tests' allocations."""
    monkeypatch.setattr(instants, "_last_issued", {})


def test_new_instant_is_strictly_after_every_timeline_instant_even_from_the_future() -> None:
    future = "20991231235959999"
    got = new_instant_time(["20250101000000000", future, "00000000000000"], "UTC")
    assert got == "21000101000000000"


def test_one_tables_future_instant_does_not_move_another_tables_clock() -> None:
    """Hudi keeps one time generator per base path: a table with an instant in 2999 must not push every other
    table's new instants past it (a later compaction there could then never be scheduled at a real time)."""
    now = datetime(2030, 1, 1, tzinfo=UTC)
    assert new_instant_time(["29990101000000000"], "UTC", now=now, scope="s3://a/t") == "29990101000000001"
    assert new_instant_time([], "UTC", now=now, scope="s3://b/t") == "20300101000000000"
    assert new_instant_time([], "UTC", now=now, scope="s3://a/t") == "29990101000000002"


def test_new_instants_are_strictly_increasing_within_a_process() -> None:
    now = datetime(2040, 1, 1, tzinfo=UTC)
    seen = [new_instant_time([], "UTC", now=now) for _ in range(50)]
    assert seen == sorted(seen) and len(set(seen)) == 50


def test_carry_over_plans_reserve_version_one_for_writers() -> None:
    """A pending plan with a carry-over keeps version 1 of its new slices, besides the link versions."""
    from evt_toolkit.write.plan import CARRY_OVER_KEY, reserved_versions

    op = CompactionOperation.from_record(
        {"fileId": "f-0", "symlinkOperations": [{"symlink": ".f-0_C.log.2_1-0-1", "target": ".f-0_B.log.3_0-1-1"}]}, "C"
    )
    bare = CompactionOperation.from_record({"fileId": "f-0"}, "C")
    assert reserved_versions(op, "C", {CARRY_OVER_KEY: "true"}) == (1, 2)
    assert reserved_versions(op, "C", {CARRY_OVER_KEY: "false"}) == (2,)
    assert reserved_versions(bare, "C", None) == ()
    assert next_log_version([], reserved_versions(bare, "C", {CARRY_OVER_KEY: "true"})) == 2
