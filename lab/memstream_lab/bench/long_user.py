"""One long user from the LoCoMo conversations replayed a year apart each: the history the
forget and sealing benchmarks build (one benchmark never imports another)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.contracts.codec import parse_ts
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation

USER = "bench-forget"
BASE = datetime(2010, 1, 1, tzinfo=UTC)  # each replay of a conversation gets its own year


def history(messages: int) -> Iterator[dict[str, Any]]:
    """Events of one user: the LoCoMo conversations in turn, each moved to a year of its
    own, ids made unique per replay, until `messages` turns (the last session cut short)."""
    conversations = [
        conversation_events(load_conversation(path), USER) for path in conversation_files()
    ]
    sent = 0
    for slot in range(10_000):
        events = conversations[slot % len(conversations)]
        shift = BASE + timedelta(days=365 * slot) - parse_ts(events[0]["ts"])
        for event in events:
            moved = event | {
                "session_id": f"y{slot}-{event['session_id']}",
                "ts": (parse_ts(event["ts"]) + shift).isoformat(),
            }
            if event["type"] == "turn.v1":
                if sent == messages:
                    continue  # the rest of the session is cut; its end still comes
                moved["event_id"] = f"y{slot}-{event['event_id']}"
                sent += 1
            yield moved
            if sent == messages and event["type"] == "session_end.v1":
                return
