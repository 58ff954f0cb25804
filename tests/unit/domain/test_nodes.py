"""Node building: L1 from messages, L2-L5 from a window and its children, fingerprints."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from memstream.domain.ids import segment_id
from memstream.domain.models import Level, MemoryNode, StoredNode, Summary, Turn, Window
from memstream.domain.models import WindowClosed as Closed
from memstream.domain.nodes import (
    EMBEDDED_SUMMARY_WORDS,
    changes,
    embedding_head,
    fingerprint,
    is_current,
    mean_direction,
    next_version,
    segment_node,
    union_sources,
    window_node,
)
from memstream.domain.windows import SegmentReady

T0 = datetime(2024, 5, 6, 22, 0, tzinfo=UTC)
PLUS_TWO = timezone(timedelta(hours=2))


def turn(event_id: str, ts: datetime, speaker: str = "Ana", session: str = "s1") -> Turn:
    return Turn(event_id, "u1", session, 0, speaker, "user", f"text of {event_id}", ts)


def child(node_id: str, start: datetime, end: datetime, **changes: object) -> MemoryNode:
    node = MemoryNode(
        id=node_id,
        user_id="u1",
        level=Level.SEGMENT,
        t_start=start,
        t_end=end,
        text=f"memory {node_id}",
        parent_id="session",
        source_ids=(f"m-{node_id}",),
        speakers=("Ana",),
    )
    return replace(node, **changes)  # type: ignore[arg-type]


def session_closure(start: datetime = T0, end: datetime = T0 + timedelta(hours=1)) -> Closed:
    return Closed(Window("u1", Level.SESSION, start, end, "s1"), "session_end", "session", "day")


def test_an_l1_spans_its_messages_in_utc_and_keeps_them_verbatim() -> None:
    # 23:30 at +02:00 is 21:30 UTC: earlier than 22:00 UTC although its wall clock is later.
    early = turn("e2", datetime(2024, 5, 6, 23, 30, tzinfo=PLUS_TWO), speaker="Mira")
    late = turn("e1", T0, speaker="Ana")
    segment = SegmentReady((late, early), parent_id="session")
    node = segment_node("u1", segment, Summary("On 6 May, Ana asked ...", degraded=True))
    assert node.id == segment_id("u1", ["e1", "e2"])
    assert (node.t_start, node.t_end) == (early.ts, late.ts)
    assert node.source_ids == ("e1", "e2")
    assert node.speakers == ("Ana", "Mira")
    assert (node.level, node.parent_id, node.session_id) == (Level.SEGMENT, "session", "s1")
    assert (node.text, node.degraded, node.version) == ("On 6 May, Ana asked ...", True, 1)


def test_a_window_node_grows_to_cover_children_that_overrun_it() -> None:
    closure = session_closure()
    before = child("a", T0 - timedelta(minutes=5), T0 + timedelta(minutes=1))
    # Ends at 01:30+02:00 = 23:30 UTC, after the window's end at 23:00 UTC.
    after = child("b", T0, datetime(2024, 5, 7, 1, 30, tzinfo=PLUS_TWO), speakers=("Mira", "Ana"))
    node = window_node(closure, [before, after], Summary("a session"), version=3)
    assert node.t_start == before.t_start
    assert node.t_end == after.t_end
    assert node.children == ("a", "b")
    assert node.source_ids == ("m-a", "m-b")
    assert node.speakers == ("Ana", "Mira")
    assert (node.id, node.parent_id, node.session_id) == ("session", "day", "s1")
    assert (node.level, node.version, node.text) == (Level.SESSION, 3, "a session")


def test_a_window_node_grows_in_utc_across_a_change_of_offset_in_one_zone() -> None:
    paris = ZoneInfo("Europe/Paris")
    # On 27 October 2024 Paris goes from +02:00 back to +01:00 at 03:00: 02:10 happens twice.
    start = datetime(2024, 10, 27, 0, 0, tzinfo=paris)
    end = datetime(2024, 10, 27, 2, 30, tzinfo=paris)  # the first 02:30 (+02:00): 00:30 UTC
    second_pass = datetime(2024, 10, 27, 2, 10, fold=1, tzinfo=paris)  # +01:00: 01:10 UTC
    closure = session_closure(start, end)
    node = window_node(closure, [child("a", start, second_pass)], Summary("x"), version=1)
    assert node.t_end == second_pass  # by wall clock, 02:10 would look earlier than 02:30


def test_a_window_node_keeps_its_window_when_the_children_fit() -> None:
    closure = session_closure()
    inside = child("a", T0 + timedelta(minutes=5), T0 + timedelta(minutes=6))
    node = window_node(closure, [inside], Summary("x"), version=1)
    assert (node.t_start, node.t_end) == (closure.window.start, closure.window.end)


def test_sources_are_unioned_once_each_in_children_order() -> None:
    a = child("a", T0, T0, source_ids=("m1", "m2"))
    b = child("b", T0, T0, source_ids=("m2", "m3"))
    assert union_sources([a, b]) == ("m1", "m2", "m3")
    assert union_sources([]) == ()


def test_a_fingerprint_names_the_children_ids_versions_and_degraded_flags() -> None:
    a, b = child("a", T0, T0), child("b", T0, T0)
    assert fingerprint([a, b]) == fingerprint([b, a])  # the order of reading does not matter
    assert fingerprint([a, b]) != fingerprint([a])
    assert fingerprint([a, b]) != fingerprint([a, replace(b, version=2)])
    assert fingerprint([a, b]) != fingerprint([a, replace(b, degraded=True)])
    assert fingerprint([a, b]) == fingerprint([a, replace(b, text="other words")])


def test_only_a_model_written_node_with_the_same_fingerprint_is_current() -> None:
    node = window_node(session_closure(), [child("a", T0, T0)], Summary("x"), version=1)
    assert is_current(StoredNode(node, "fp"), "fp")
    assert not is_current(StoredNode(node, "fp"), "other")
    assert not is_current(StoredNode(replace(node, degraded=True), "fp"), "fp")
    assert not is_current(None, "fp")
    assert next_version(None) == 1
    assert next_version(StoredNode(replace(node, version=4), "fp")) == 5


def test_a_rewrite_changes_the_tree_only_when_its_inputs_or_its_content_changed() -> None:
    stored = window_node(session_closure(), [child("a", T0, T0)], Summary("x", True), version=2)
    existing = StoredNode(stored, "fp")
    same = replace(stored, version=3)
    assert not changes(existing, same, "fp")  # a replay while the model is still down
    assert changes(existing, replace(same, text="y", degraded=False), "fp")  # the model is back
    assert changes(existing, same, "new children")
    assert changes(None, same, "fp")


def test_the_embedding_head_is_the_first_words() -> None:
    words = [f"w{i}" for i in range(EMBEDDED_SUMMARY_WORDS + 10)]
    assert embedding_head("  ".join(words)) == " ".join(words[:EMBEDDED_SUMMARY_WORDS])
    assert embedding_head("short  text\n") == "short text"


def test_the_mean_direction_is_a_unit_vector_between_its_inputs() -> None:
    mean = mean_direction([[1.0, 0.0], [0.0, 1.0]])
    assert mean == pytest.approx([math.sqrt(0.5), math.sqrt(0.5)])
    assert mean_direction([[0.6, 0.8]]) == [0.6, 0.8]
    assert mean_direction([[1.0, 0.0], [-1.0, 0.0]]) == [0.0, 0.0]  # opposites: no direction
