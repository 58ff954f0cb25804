"""The scale benchmark's generators and accounting (no stores): chats drawn from LoCoMo's
statistics, with a fixed seed, and the per-family growth it reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.contracts.codec import decode_input
from memstream.domain.models import SessionEnded, Turn
from memstream_lab.bench.scale_bytes import family, growth
from memstream_lab.bench.scale_chat import locomo_shape, user_chat
from memstream_lab.bench.scale_probe import PROBE_SPAN, ROUNDS, _session


def test_a_chat_has_the_messages_asked_in_order_over_the_span_and_the_same_for_a_seed() -> None:
    shape = locomo_shape()
    events = list(user_chat("u", shape, 500, span_days=365))
    assert events == list(user_chat("u", shape, 500, span_days=365))
    decoded = [decode_input(e) for e in events]
    turns = [e for e in decoded if isinstance(e, Turn)]
    assert len(turns) == 500
    assert sum(isinstance(e, SessionEnded) for e in decoded) == len({t.session_id for t in turns})
    times = [t.ts for t in turns]
    assert times == sorted(times)
    span = (times[-1] - times[0]).days
    assert 200 < span < 500  # the gaps are rescaled to fill the year asked for
    words = sorted(len(t.text.split()) for t in turns)
    assert 5 < words[len(words) // 2] < 60  # LoCoMo's median message is about 20 words


def test_node_keys_are_counted_by_level_and_growth_names_each_family_bound() -> None:
    assert family("node:abc", {"abc": 3}) == "node:L3"
    assert family("children:abc", {}) == "children"
    report = growth(
        [
            {"messages": 100, "bytes": {"seen": 1000, "node:L1": 5000}},
            {"messages": 1000, "bytes": {"seen": 1000, "node:L1": 50000}},
        ]
    )
    assert report["seen"]["growth_vs_messages"] == 0.1
    assert report["node:L1"]["growth_vs_messages"] == 1.0
    assert report["seen"]["bound"].startswith("bounded")
    assert report["node:L1"]["bound"].startswith("unbounded")


def test_a_second_segmenter_probe_on_the_same_stores_steps_after_the_first_anew() -> None:
    after = datetime(2025, 1, 1, tzinfo=UTC)

    def steps(probe: int) -> list[tuple[str, datetime]]:
        sessions = []
        for order, saying in enumerate(("plain", "probe")):
            for number in range(ROUNDS):
                at = after + probe * PROBE_SPAN + timedelta(hours=6 * (order * ROUNDS + number + 1))
                sessions.append(_session("heavy-user", number, at, saying, probe))
        return [(e.event.session_id, e.event.ts) for batch in sessions for e in batch[:-1]]

    first, second = steps(0), steps(1)
    # The dedup markers would skip a step named as one already taken, or placed among them.
    assert not {s for s, _ in first} & {s for s, _ in second}
    assert max(ts for _, ts in first) < min(ts for _, ts in second)
