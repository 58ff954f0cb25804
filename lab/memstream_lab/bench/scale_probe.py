"""The scale benchmark's timed probes: one segmenter step of a user with a given history, the
window state's cost and the knowledge derivation (the lifecycle's probes: `scale_lifecycle`).

The segmenter step is the real handler (`Segmenter.handle_batch`) on the container's
stores, LLM and publisher, with the hashing embedder in place of the model: the model's
cost per message does not depend on the user's history, and it would hide what does. A
step is one new session of `STEP_TURNS` turns dated after the user's last message; its
figure is the CPU time of the whole process (`process_time`, the embedded stores' threads
included) per message, the least and the median of `ROUNDS` steps, which another process on
the shared cores moves far less than a wall-clock time. The users compared take their steps
in turns, round by round, each round in another order: a user whose steps all came first
(they did, the empty one's) was measured in another state of the process and of the
machine than the others, which moved the ratios by more than what separates the users.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.adapters.redis import keys
from memstream.bootstrap import Container
from memstream.contracts.codec import decode_input, decode_state, encode_state
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.models import SessionEnded, Turn
from memstream.domain.windows import MAX_REMEMBERED_SESSIONS, WindowRules, apply, initial_state
from memstream.wiring.handlers import build_segmenter

STEP_TURNS = 16
ROUNDS = 5
# What a probe step's messages say: a fact the user states again in every step (the slot's
# history is read and its version, which lists every statement's source, written again), or
# no fact at all (the step's own cost).
SAYINGS = {
    "probe": "I work as a nurse and I went hiking near the harbor, part {seq}.",
    "plain": "We went hiking near the harbor and talked a while, part {seq}.",
}
# What one probe's steps span after the history (two sayings, `ROUNDS` steps each, six hours
# apart). Another probe on the same stores dates its steps after the last one's and names its
# sessions anew: the same sessions again would be skipped as replays by the dedup markers, and
# a step would read about ten times too cheap.
PROBE_SPAN = timedelta(hours=6 * (2 * ROUNDS + 1))
PROBE_MESSAGES = 2 * ROUNDS * STEP_TURNS  # what one probe adds to each user's history


def _session(
    user_id: str, number: int, start: datetime, saying: str = "probe", probe: int = 0
) -> list[Consumed[Any]]:
    session_id = f"{user_id}-{saying}{number}" + (f"-probe{probe}" if probe else "")
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
                "text": SAYINGS[saying].format(seq=seq),
                "ts": (start + timedelta(seconds=30 * seq)).isoformat(),
                "tz": "UTC",
            }
        )
    events.append({"type": "session_end.v1", "user_id": user_id, "session_id": session_id})
    events[-1]["ts"] = events[-2]["ts"]
    return [Consumed(decode_input(e), RawEvent(json.dumps(e).encode())) for e in events]


async def segmenter_cpu(
    c: Container, users: Sequence[str], after: datetime, probe: int = 0
) -> dict[str, dict[str, Any]]:
    """CPU per message of one segmenter step for each user, after the history: steps that
    state no fact first, then steps that restate one (the figures at the top level). In
    every round each user takes one step, the same session dated alike, the users' order
    turned by one each round. `probe` counts the probes taken before on these stores."""
    segmenter = build_segmenter(c, embedder=HashingEmbedder(c.embedder.dim), bare=True)
    spent: dict[tuple[str, str], list[float]] = {}
    for order, saying in enumerate(("plain", "probe")):
        for number in range(ROUNDS):
            at = after + probe * PROBE_SPAN + timedelta(hours=6 * (order * ROUNDS + number + 1))
            turn = number % len(users)
            for user_id in [*users[turn:], *users[:turn]]:
                batch = _session(user_id, number, at, saying, probe)
                began = time.process_time()
                await segmenter.handle_batch(batch)
                took = time.process_time() - began
                spent.setdefault((user_id, saying), []).append(1000 * took / STEP_TURNS)
    return {
        user_id: {
            **_figures(spent[user_id, "probe"]),
            "stating_no_fact": _figures(spent[user_id, "plain"]),
            "turns_per_step": STEP_TURNS,
            "rounds": ROUNDS,
        }
        for user_id in users
    }


def _figures(per_message: list[float]) -> dict[str, Any]:
    return {
        "cpu_ms_per_msg_least": round(min(per_message), 3),
        "cpu_ms_per_msg_median": round(statistics.median(per_message), 3),
        "cpu_ms_per_msg_steps": [round(ms, 3) for ms in per_message],
    }


def _least_ms(work: Callable[[], object], repeats: int = 20) -> float:
    spent = []
    for _ in range(repeats):
        began = time.process_time()
        work()
        spent.append(time.process_time() - began)
    return round(1000 * min(spent), 3)


def state_cost(raw: bytes) -> dict[str, Any]:
    """What a step pays for a window state of this size: decoded at its load, encoded at its
    commit (CPU, least of 20)."""
    state = decode_state(json.loads(raw))
    return {
        "bytes": len(raw),
        "sessions_remembered": len(state.sessions),
        "closed_remembered": len(state.closed),
        "decode_ms": _least_ms(lambda: decode_state(json.loads(raw))),
        "encode_ms": _least_ms(lambda: json.dumps(encode_state(state))),
    }


def saturated_state() -> bytes:
    """A window state at its bound: more sessions than it remembers, one a day."""
    rules, state = WindowRules(), initial_state("bound", "UTC")
    start = datetime(2020, 1, 1, 9, tzinfo=UTC)
    for n in range(MAX_REMEMBERED_SESSIONS + 200):
        at = start + timedelta(days=n)
        turn = Turn(f"m{n}", "bound", f"s{n}", 0, "ana", "user", "hello there", at, "UTC")
        state, _ = apply(state, turn, at, rules)
        state, _ = apply(state, SessionEnded("bound", f"s{n}", at), at, rules)
    return json.dumps(encode_state(state)).encode()


async def user_state_cost(c: Container, user_id: str) -> dict[str, Any]:
    """The document a step reads whole, and what is remembered apart from it (read by id or
    key only when a step asks: `domain.remembered`)."""
    prefix = keys.user_prefix(user_id, c.settings.redis.namespace)
    raw = await c.tree._r.get(prefix + keys.STATE)
    if not raw:
        return {}
    return {
        **state_cost(raw),
        "sessions_apart": await c.tree._r.zcard(prefix + keys.SESSION_AGES),
        "closed_apart": await c.tree._r.zcard(prefix + keys.CLOSED),
    }


async def knowledge_derive(c: Container, user_id: str) -> dict[str, Any]:
    """What the first recall after a write pays for the user's knowledge: both hashes read
    whole and derived again (what the revision cache holds until the next write)."""
    c.tree.knowledge_cache.drop(user_id)
    began, cpu = time.perf_counter(), time.process_time()
    index = await c.tree.entity_index(user_id)
    versions = await c.tree.fact_versions(user_id)
    return {
        "ms": round(1000 * (time.perf_counter() - began), 2),
        "cpu_ms": round(1000 * (time.process_time() - cpu), 2),
        "leaves_with_entities": len(index.leaves),
        "fact_versions": len(versions),
    }
