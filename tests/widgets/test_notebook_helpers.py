"""The helpers notebook 05 stands on: the event-time field it picks and the freshness statement it prints."""

from __future__ import annotations

from pathlib import Path

import evt_toolkit as evt
from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy, iso_ms
from evt_toolkit.widgets.notebook import choose_event_time_field, freshness_statement
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.widgets import demo_table


@SKIP_NO_SHARED
def test_a_string_ordering_field_is_refused_with_the_reason() -> None:
    t = evt.HudiTable.open(fixture_table_path("mor_v9_mor_8i4u_commit_time"))  # ts is a string
    choice = choose_event_time_field(t)
    assert choice.field is None and choice.problem is not None and "has type string" in choice.problem
    assert "Set EVENT_TIME_FIELD" in choice.text() and choice.blocks.num_rows == 4
    st = freshness_statement(t, choice.field)
    assert st.kind == "no_event_times" and st.promise_ms is None and "no event-time field is set" in st.text


@SKIP_NO_SHARED
def test_the_ordering_field_stands_in_for_a_missing_event_time_field() -> None:
    t = evt.HudiTable.open(fixture_table_path("mor_v6_trips_8i1u"))
    choice = choose_event_time_field(t)
    assert (choice.field, choice.source, choice.problem) == ("ts", "ordering field", None)
    assert "set EVENT_TIME_FIELD if that is wrong" in choice.text()
    assert choose_event_time_field(t, "ts").source == "given"


@SKIP_NO_SHARED
def test_no_promise_without_logs_event_times_or_merge_on_read() -> None:
    cow = evt.HudiTable.open(fixture_table_path("cow_v6_nonpartitioned"))
    assert freshness_statement(cow, None).kind == "copy_on_write"
    empty = evt.HudiTable.open(fixture_table_path("mor_v6_empty"))
    assert freshness_statement(empty, None).kind == "no_logs"
    deletes_only = evt.HudiTable.open(fixture_table_path("mor_v6_trips_8i3d"))  # its one log is a DELETE block
    st = freshness_statement(deletes_only, "ts")
    assert st.kind == "no_event_times" and "delete block" in st.text
    for s in (freshness_statement(cow, None), st):
        assert s.promise_ms is None and "every event ≤" not in s.text.split("\n", 1)[1]


def test_plan_statement_follows_the_preview(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    st = freshness_statement(t, None, "2013-01-01T13:00:00Z")
    want = t.compaction.preview(EventTimeBasedCompactionStrategy(threshold="2013-01-01T13:00:00Z")).summary
    assert st.kind == "plan" and st.logs_compacted == want.logs_compacted > 0
    assert st.promise_ms == want.ro_freshness_ms and f"every event ≤ {iso_ms(want.ro_freshness_ms)}" in st.text
    assert st.now_ms is None and "no compaction has completed" in st.text
    # T before every event: the plan compacts nothing and promises nothing.
    nothing = freshness_statement(t, None, "2000-01-01T00:00:00Z")
    assert nothing.logs_compacted == 0 and nothing.promise_ms is None and "nothing changes" in nothing.text
    # Default T: the middle of the logs' min event times.
    assert freshness_statement(t, None).threshold_ms is not None
