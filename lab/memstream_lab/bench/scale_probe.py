"""The scale benchmark's timed probes: one segmenter step of a user with a given history, and
forgetting a user.

The segmenter step is the real handler (`Segmenter.handle_batch`) on the container's
stores, LLM and publisher, with the hashing embedder in place of the model: the model's
cost per message does not depend on the user's history, and it would hide what does. A
step is one new session of `STEP_TURNS` turns dated after the user's last message; its
figure is the CPU time of the whole process (`process_time`, the embedded stores' threads
included) per message, the least of `ROUNDS` steps, which another process on the shared
cores moves far less than a wall-clock time.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from typing import Any

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.bootstrap import Container
from memstream.contracts.codec import decode_input
from memstream.contracts.records import Consumed, RawEvent
from memstream.segmenter.handler import Segmenter, Topics
from memstream.wiring.handlers import derivation, window_rules

STEP_TURNS = 16
ROUNDS = 5


def _segmenter(c: Container) -> Segmenter:
    return Segmenter(
        tree=c.tree,
        index=c.index,
        embedder=HashingEmbedder(c.embedder.dim),
        llm=c.llm,
        publisher=c.publisher,
        topics=Topics(memories=c.catalog.memories.name, windows=c.catalog.windows.name),
        forget=c.forget_user,
        rules=window_rules(c.settings),
        history_window=c.settings.lifecycle.history_window,
        derivation=derivation(c.settings),
        knowledge=c.settings.lifecycle.knowledge,
    )


def _session(user_id: str, number: int, start: datetime) -> list[Consumed[Any]]:
    session_id = f"{user_id}-probe{number}"
    events: list[dict[str, Any]] = []
    for seq in range(STEP_TURNS):
        events.append(
            {
                "type": "turn.v1",
                "event_id": f"{session_id}-m{seq}",
                "user_id": user_id,
                "session_id": session_id,
                "seq": seq,
                "speaker": f"{user_id}-me" if seq % 2 == 0 else f"{user_id}-friend",
                "role": "user" if seq % 2 == 0 else "other",
                "text": f"I work as a nurse and I went hiking near the harbor, part {seq}.",
                "ts": (start + timedelta(seconds=30 * seq)).isoformat(),
                "tz": "UTC",
            }
        )
    events.append({"type": "session_end.v1", "user_id": user_id, "session_id": session_id})
    events[-1]["ts"] = events[-2]["ts"]
    return [Consumed(decode_input(e), RawEvent(json.dumps(e).encode())) for e in events]


async def segmenter_cpu(c: Container, user_id: str, after: datetime) -> dict[str, Any]:
    """CPU per message of one segmenter step for the user, after its history."""
    segmenter = _segmenter(c)
    spent: list[float] = []
    for number in range(ROUNDS):
        batch = _session(user_id, number, after + timedelta(hours=6 * (number + 1)))
        began = time.process_time()
        await segmenter.handle_batch(batch)
        spent.append(time.process_time() - began)
    per_message = [1000 * s / STEP_TURNS for s in spent]
    return {
        "cpu_ms_per_msg_least": round(min(per_message), 3),
        "cpu_ms_per_msg_median": round(sorted(per_message)[len(per_message) // 2], 3),
        "turns_per_step": STEP_TURNS,
        "rounds": ROUNDS,
    }


async def forget_time(c: Container, user_id: str) -> dict[str, Any]:
    """Wall time and CPU of forgetting the user in both stores (the API's forget)."""
    began, cpu = time.perf_counter(), time.process_time()
    removed = await c.forget_user(user_id)
    return {
        "seconds": round(time.perf_counter() - began, 3),
        "cpu_seconds": round(time.process_time() - cpu, 3),
        **removed,
    }
