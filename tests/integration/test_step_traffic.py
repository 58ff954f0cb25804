"""One segmenter step costs a heavy user no more Redis traffic than a light one.

The real segmenter on a real Redis (the embedded stack's), through a client that counts
the replies it reads and their bytes. A user with 500 sessions of history and one with 10
each take the same step (a new session of eight turns); the heavy one's step may read no
more replies and, within a margin for longer ids and its calendar, no more bytes, its window
state included. A read of every node of a level, a whole hash, an uncapped sorted set or a
window state holding every remembered session on the step's path fails this test.

The window state's remembered sessions and closed windows are kept apart from its document
and read only as a step asks (`domain.remembered`): the document holds the open session,
the open windows and the calendar windows of the last two months, so it stops growing
within a few weeks of history (`CALENDAR_MARGIN`).

A fact restated in every session (the user's job) costs a step that restates it again no
more either: the step reads the slot's head kept beside its statements (`domain.fact_heads`),
not its history, and the version it writes keeps the latest few sources and a count. And a
rebuild's chunk reads the range of the job's leaves it handles, not a job listing them all.

Nor does a step convert more dates to and from text: the document's calendar (the windows of
the last two months, about 80 at its bound) is read and written at every step, and its rows
met before are decoded and encoded once (`contracts.codec`), so a user of years pays for it
what one of a few days does.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any

import pytest
from tests.unit.fakes import FakeEmbedder, FakeIndex, FakePublisher, FakeTree

from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.adapters.redis import keys
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.derivation import Derivation
from memstream.domain.forgetting import Tombstone
from memstream.domain.models import InputEvent, RebuildRequested, SessionEnded, Turn
from memstream.domain.windows import WindowRules
from memstream.segmenter.handler import Segmenter, Topics
from memstream.settings import Settings

from .redis_traffic import Traffic, counting_client

pytestmark = pytest.mark.integration

T0 = datetime(2023, 1, 2, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# Each session speaks of people of its own (a name built from its number), so the history
# grows in people and facts, not in restatements of one fact: a fact restated in every
# session is a slot whose own history grows, and reading a slot's history is what a step
# that states it costs (docs/scaling.md, "A fact restated").
SAYINGS = (
    "I had lunch with {name} at the clinic near the harbor.",
    "{name} moved to Lisbon last spring, she told me.",
    "We went hiking with Ben and talked about pottery.",
    "{name} has a dog called Miso, the sweetest thing.",
)
SYLLABLES = ("Ka", "Lo", "Mi", "Ra", "Su", "Te", "Vo", "Ne")
HEAVY_SESSIONS, LIGHT_SESSIONS = 500, 10
# A rebuild's chunk reads a page of the job's leaves: both users have more than a page.
MEDIUM_SESSIONS = 60
NEW_DERIVATION = Derivation("offline", "rules", "traffic-test", "fake")
# The measured step's session: a number neither history used, so its people are new to both
# users (`_name` spells 512 names).
STEP_SESSION = 8**3 - 1
# What a document with a full calendar (62 days, 13 weeks, 6 months remembered:
# `domain.calendar_windows`) reads more than one of ten days: about 100 bytes a window.
CALENDAR_MARGIN = 8 * 1024
# Dates a step with a full calendar may convert more than one of ten days: a window or two
# the step opens or grows (each a start and an end, decoded and encoded).
DATES_MARGIN = 12


def _name(number: int) -> str:
    """A capitalised name of its own for each session number."""
    digits = [SYLLABLES[(number // 8**i) % 8] for i in range(3)]
    return digits[0] + "".join(d.lower() for d in digits[1:])


RESTATED = "I work as a nurse at the clinic."


def _session(
    user: str, number: int, turns: int, start: datetime, *, restate: bool = False
) -> list[Consumed[InputEvent]]:
    """A session of `turns`; with `restate`, its first turn says the user's job again."""
    session = f"{user}-s{number}"
    events: list[InputEvent] = [
        Turn(
            event_id=f"{session}-m{seq}",
            user_id=user,
            session_id=session,
            seq=seq,
            speaker="ana" if seq % 2 == 0 else "ben",
            role="user" if seq % 2 == 0 else "other",
            text=RESTATED
            if restate and seq == 0
            else SAYINGS[(number + seq) % len(SAYINGS)].format(name=_name(number)),
            ts=start + timedelta(seconds=30 * seq),
            tz="UTC",
        )
        for seq in range(turns)
    ]
    events.append(SessionEnded(user_id=user, session_id=session, ts=events[-1].ts))
    return [Consumed(e, RawEvent(b"")) for e in events]


def _history(user: str, sessions: int, *, restate: bool = False) -> list[Consumed[InputEvent]]:
    return [
        c
        for n in range(sessions)
        for c in _session(user, n, 2, T0 + timedelta(days=2 * n), restate=restate)
    ]


@pytest.fixture
async def tree(stack_settings: Settings) -> AsyncIterator[RedisTree]:
    async with counting_client(stack_settings.redis.url, "traffic") as (client, namespace):
        yield RedisTree(client, namespace, clock=lambda: NOW)


async def _no_forget(user_id: str, tombstone: Tombstone) -> None:
    raise AssertionError("no user is forgotten here")


def _segmenter(tree: RedisTree, **options: Any) -> Segmenter:
    return Segmenter(
        tree=tree,
        index=FakeIndex(FakeTree()),  # type: ignore[arg-type]
        embedder=FakeEmbedder(),
        llm=OfflineLanguageModel(),
        publisher=FakePublisher(),
        topics=Topics(memories="memories", windows="windows"),
        forget=_no_forget,
        rules=WindowRules(),
        clock=lambda: NOW,
        **options,
    )


async def test_a_step_reads_no_more_for_a_user_with_a_long_history(tree: RedisTree) -> None:
    segmenter = _segmenter(tree)
    await segmenter.handle_batch(_history("heavy", HEAVY_SESSIONS))
    await segmenter.handle_batch(_history("light", LIGHT_SESSIONS))
    heavy_l1s = await tree.count("heavy", 1)
    assert heavy_l1s >= HEAVY_SESSIONS // LIGHT_SESSIONS * await tree.count("light", 1) > 0
    # The history states facts (a person of its own in each session), so the knowledge the
    # step writes and the change feed it reads are on the path measured.
    assert await tree._r.zcard(tree._key("heavy", keys.FACT_SLOTS)) >= 100
    # It is remembered: every session (the bound is 512) and a thousand closed windows.
    assert await tree._r.zcard(tree._key("heavy", keys.SESSION_AGES)) == HEAVY_SESSIONS
    assert await tree._r.zcard(tree._key("heavy", keys.CLOSED)) >= 1000

    traffic: dict[str, tuple[int, int]] = {}
    for user in ("heavy", "light"):
        Traffic.replies = Traffic.bytes = 0
        start = T0 + timedelta(days=2 * HEAVY_SESSIONS + 30)
        await segmenter.handle_batch(_session(user, STEP_SESSION, 8, start))
        traffic[user] = (Traffic.replies, Traffic.bytes)

    (heavy_replies, heavy_bytes), (light_replies, light_bytes) = traffic["heavy"], traffic["light"]
    assert heavy_replies <= light_replies
    assert heavy_bytes <= 1.2 * light_bytes + CALENDAR_MARGIN


async def test_restating_a_fact_reads_no_more_for_a_user_who_said_it_every_session(
    tree: RedisTree,
) -> None:
    segmenter = _segmenter(tree)
    await segmenter.handle_batch(_history("heavy", HEAVY_SESSIONS, restate=True))
    await segmenter.handle_batch(_history("light", LIGHT_SESSIONS, restate=True))
    [job] = [v for v in await tree.fact_versions("heavy") if v.attribute == "job"]
    assert job.statements == HEAVY_SESSIONS  # one version, every restatement counted
    assert len(job.source_ids) <= 8

    traffic: dict[str, tuple[int, int]] = {}
    for user in ("heavy", "light"):
        Traffic.replies = Traffic.bytes = 0
        start = T0 + timedelta(days=2 * HEAVY_SESSIONS + 30)
        await segmenter.handle_batch(_session(user, STEP_SESSION, 8, start, restate=True))
        traffic[user] = (Traffic.replies, Traffic.bytes)
    [job] = [v for v in await tree.fact_versions("heavy") if v.attribute == "job"]
    assert job.statements == HEAVY_SESSIONS + 1

    (heavy_replies, heavy_bytes), (light_replies, light_bytes) = traffic["heavy"], traffic["light"]
    assert heavy_replies <= light_replies
    assert heavy_bytes <= 1.2 * light_bytes + CALENDAR_MARGIN


async def test_a_rebuild_chunk_reads_no_more_for_a_user_with_a_long_history(
    tree: RedisTree,
) -> None:
    await _segmenter(tree).handle_batch(_history("heavy", HEAVY_SESSIONS))
    await _segmenter(tree).handle_batch(_history("medium", MEDIUM_SESSIONS))
    # Another prompt version: every leaf is derived again, four a chunk.
    rebuilding = _segmenter(tree, derivation=NEW_DERIVATION, rebuild_chunk_leaves=4)
    traffic: dict[str, list[tuple[int, int]]] = {}
    for user in ("heavy", "medium"):
        record = [Consumed(RebuildRequested(user, f"rb-{user}"), RawEvent(b""))]
        await rebuilding.handle_batch(record)  # plans it
        job = await tree.rebuild_job(user)
        assert job is not None and job.leaf_count >= MEDIUM_SESSIONS and job.done == 0
        traffic[user] = []
        for _ in range(3):
            Traffic.replies = Traffic.bytes = 0
            await rebuilding.handle_batch(record)
            traffic[user].append((Traffic.replies, Traffic.bytes))
        job = await tree.rebuild_job(user)
        assert job is not None and job.rewritten == 12 and not job.finished
        document = await tree._r.get(tree._key(user, keys.REBUILD))
        assert len(document) < 1024  # a few counters, whatever the history

    for (heavy_replies, heavy_bytes), (medium_replies, medium_bytes) in zip(
        traffic["heavy"], traffic["medium"], strict=True
    ):
        assert heavy_replies <= medium_replies
        # Ids of the same length, leaves of the same size: the same bytes but for the calendar.
        assert heavy_bytes <= 1.05 * medium_bytes + 1024


@contextmanager
def _dates_converted() -> Iterator[list[int]]:
    """Counts the conversions of dates to and from ISO text this thread makes."""
    count = [0]

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") in ("isoformat", "fromisoformat"):
            count[0] += 1

    sys.setprofile(hook)
    try:
        yield count
    finally:
        sys.setprofile(None)


async def test_a_step_converts_no_more_dates_for_a_user_with_a_long_history(
    tree: RedisTree,
) -> None:
    segmenter = _segmenter(tree)
    await segmenter.handle_batch(_history("heavy", HEAVY_SESSIONS))
    await segmenter.handle_batch(_history("light", LIGHT_SESSIONS))
    converted: dict[str, int] = {}
    for user in ("heavy", "light"):
        start = T0 + timedelta(days=2 * HEAVY_SESSIONS + 30)
        with _dates_converted() as count:
            await segmenter.handle_batch(_session(user, STEP_SESSION, 8, start))
        converted[user] = count[0]
    document = await tree.load_state("heavy")
    assert document is not None and len(document["calendar"]) >= 62 + 13 + 6 - 3
    assert 0 < converted["heavy"] <= converted["light"] + DATES_MARGIN
