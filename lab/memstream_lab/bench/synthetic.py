"""Synthetic memory trees and queries for the recall benchmarks.

Each user's tree is synthetic but shaped like a real one: 10 L1 per session, 2 sessions a
day, 7 days a week, 4 weeks a month, every node linked to its parent. Texts are sentences
drawn from a small vocabulary by a seeded generator, so runs are comparable.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.bootstrap import Container
from memstream.domain.ids import segment_id, window_node_id
from memstream.domain.models import IndexedMemory, Level, MemoryNode
from memstream.domain.sparse import document_vector

USER = "bench-user"  # the measured user
BACKGROUND_L1 = 250  # L1 per background user, who share the measured user's collection
L1_PER_SESSION = 10
SESSIONS_PER_DAY = 2
DAYS_PER_WEEK = 7
WEEKS_PER_MONTH = 4
WRITE_BATCH = 1_000
START = datetime(2022, 1, 3, 8, 0, tzinfo=UTC)  # a Monday

NAMES = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Farah", "Gus", "Hana"]
TOPICS = """pottery hiking sourdough guitar paris rome dance studio marathon garden painting
chess novel coffee bicycle violin camping sushi yoga museum kayak tennis poetry jazz
photography knitting bakery festival beach mountain recipe podcast puppy kitten concert
theatre chemistry startup internship promotion interview wedding birthday vacation
library volunteer orchestra basketball soccer climbing surfing skiing sculpture ceramics
astronomy telescope gardening tomatoes roses lighthouse harbor train airport""".split()  # noqa: SIM905
VERBS = ["tried", "loved", "planned", "talked about", "finished", "started", "missed", "booked"]
QUESTION_FORMS = [
    "What did {name} say about {a}?",  # simple
    "When did {name} go {a} near the {b}?",  # hybrid
    "Why does {name} like {a} and {b}?",  # complex
    "{a} {b}",  # simple
]


@dataclass(frozen=True)
class Shape:
    """Which ancestor each L1 index belongs to, by integer division."""

    def session(self, i: int) -> int:
        return i // L1_PER_SESSION

    def day(self, i: int) -> int:
        return self.session(i) // SESSIONS_PER_DAY

    def week(self, i: int) -> int:
        return self.day(i) // DAYS_PER_WEEK

    def month(self, i: int) -> int:
        return self.week(i) // WEEKS_PER_MONTH


def sentence(rnd: random.Random) -> str:
    name, other = rnd.choice(NAMES), rnd.choice(NAMES)
    words = " ".join(rnd.sample(TOPICS, 3))
    return f"{name} {rnd.choice(VERBS)} {words} and {other} asked about {rnd.choice(TOPICS)}."


def tree_nodes(user: str, start: int, stop: int, seed: int = 7) -> Iterator[MemoryNode]:
    """L1 nodes [start, stop) of a user's synthetic tree, with every ancestor they need."""
    rnd = random.Random(f"{seed}-{user}-{start}")
    shape = Shape()
    ancestors: dict[str, MemoryNode] = {}
    for i in range(start, stop):
        day_start = START + timedelta(days=shape.day(i))
        session_start = day_start + timedelta(hours=6 * (shape.session(i) % SESSIONS_PER_DAY))
        at = session_start + timedelta(minutes=3 * (i % L1_PER_SESSION))
        week_start = START + timedelta(days=DAYS_PER_WEEK * shape.week(i))
        month_start = START + timedelta(days=DAYS_PER_WEEK * WEEKS_PER_MONTH * shape.month(i))
        windows = [
            (Level.SESSION, session_start, timedelta(hours=1), f"s{shape.session(i)}"),
            (Level.DAY, day_start, timedelta(days=1), None),
            (Level.WEEK, week_start, timedelta(days=DAYS_PER_WEEK), None),
            (Level.MONTH, month_start, timedelta(days=DAYS_PER_WEEK * WEEKS_PER_MONTH), None),
        ]
        ids = [window_node_id(user, lvl, t0, sid) for lvl, t0, _, sid in windows]
        key = f"{user}-{i}"
        yield MemoryNode(
            id=segment_id(user, [key]),
            user_id=user,
            level=Level.SEGMENT,
            t_start=at,
            t_end=at + timedelta(minutes=1),
            text=f"On {at:%d %B %Y}, {sentence(rnd)}",
            parent_id=ids[0],
            source_ids=(key,),
            session_id=f"s{shape.session(i)}",
        )
        for n, (level, t0, span, sid) in enumerate(windows):
            if ids[n] in ancestors:
                continue
            ancestors[ids[n]] = MemoryNode(
                id=ids[n],
                user_id=user,
                level=level,
                t_start=t0,
                t_end=t0 + span,
                text=f"{level.name.title()} of {t0:%d %B %Y}: "
                + " ".join(sentence(rnd) for _ in range(2 + int(level))),
                parent_id=ids[n + 1] if n + 1 < len(ids) else None,
                session_id=sid,
            )
    yield from ancestors.values()


async def write_nodes(container: Container, nodes: Sequence[MemoryNode]) -> None:
    embedder = HashingEmbedder(container.embedder.dim)
    for lo in range(0, len(nodes), WRITE_BATCH):
        batch = nodes[lo : lo + WRITE_BATCH]
        vectors = await embedder.embed([n.text for n in batch])
        await container.index.upsert(
            [
                IndexedMemory(n, v, document_vector(n.text))
                for n, v in zip(batch, vectors, strict=True)
            ]
        )
        await asyncio.gather(*(container.tree.save_node(n, fingerprint="") for n in batch))


def queries(count: int, seed: int = 11) -> list[str]:
    rnd = random.Random(seed)
    return [
        rnd.choice(QUESTION_FORMS).format(
            name=rnd.choice(NAMES), a=rnd.choice(TOPICS), b=rnd.choice(TOPICS)
        )
        for _ in range(count)
    ]
