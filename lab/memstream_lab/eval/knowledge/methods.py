"""What the knowledge-update harness asks: memstream's recall, flat baselines and the facts route.

A method answers one question of one conversation with ranked items, best first, each with
where it came from (for the report's per-question records). A method that cannot run says why
in `missing` instead of answering: the facts route when the knowledge write is off, or when
the API has no such route (`facts_route` looks for it on the app the API builds; nothing is
stood in for it). The facts route is called as a client calls it: the SDK over HTTP, here
to the API's app in this process (httpx's ASGI transport).

Questions about now are asked at the conversation's newest turn, as the LoCoMo harness asks
at its last message; a `past` question at its own `query_time`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import httpx
import numpy as np
from fastapi import FastAPI
from pydantic import SecretStr

from memstream.bootstrap import Container, recall_app
from memstream.client import AsyncRecallClient, Fact
from memstream.domain.ranking import RecalledMemory
from memstream.ports import Embedder
from memstream.recall.pipeline import RecallPipeline, RecallRequest, RecallResult
from memstream.settings import Settings
from memstream.wiring.handlers import build_recall
from memstream_lab.eval.baselines import FlatIndex, FlatMethod
from memstream_lab.knowledge.dataset import Conversation
from memstream_lab.knowledge.score import ReturnedItem

RECALL = "memstream:recall"
FACTS = "facts"
FLAT = FlatMethod("hybrid", 10)
FLAT_NEWEST = f"{FLAT.name}-newest"
EVERY_TURN = "turns-newest"
# Issue #33's route for current facts (`?at=TIME` for what held then).
FACTS_ROUTE = "/v1/users/{user_id}/facts"


@dataclass(frozen=True)
class Ranked:
    """One returned item and where it came from: a memory's level and date, or a turn's id."""

    item: ReturnedItem
    source: str


Answer = Callable[[Conversation, dict[str, Any]], Awaitable[Sequence[Ranked]]]


@dataclass(frozen=True)
class KnowledgeMethod:
    name: str
    kind: str  # "memstream", "facts" or "flat"
    description: str
    answer: Answer | None = None
    missing: str | None = None  # why it cannot run; None when `answer` is set

    def __post_init__(self) -> None:
        if (self.answer is None) == (self.missing is None):
            raise ValueError("a method either answers or says why it cannot")


def asked_at(conversation: Conversation, question: dict[str, Any]) -> datetime:
    """When a question is asked: its `query_time`, else just after the newest turn."""
    query_time = question.get("query_time")
    if query_time:
        return datetime.fromisoformat(query_time)
    turns = (t for s in conversation["sessions"] for t in s["turns"])
    return max(datetime.fromisoformat(t["ts"]) for t in turns)


def nearest_first(rows: Sequence[int], times: Sequence[datetime], at: datetime) -> list[int]:
    """`rows` ordered by how far each one's time lies from `at` (newest first when `at` is
    after them all), as recall orders its memories; ties keep the given order."""
    return sorted(rows, key=lambda r: abs((times[r] - at).total_seconds()))


def recall_method(container: Container) -> KnowledgeMethod:
    """memstream's recall pipeline as the API serves it, called in process."""
    pipeline: RecallPipeline = build_recall(container).pipeline

    async def answer(conversation: Conversation, question: dict[str, Any]) -> list[Ranked]:
        request = RecallRequest(
            user_id=conversation["user_id"],
            query=question["question"],
            query_time=asked_at(conversation, question),
        )
        return recall_items(await pipeline.recall(request))

    description = (
        "recall as served (RecallOptions from settings, default token ceiling): its facts "
        "first, then its memories, each with its validity"
    )
    return KnowledgeMethod(RECALL, "memstream", description, answer)


def recall_items(result: RecallResult) -> list[Ranked]:
    """What recall returned, as the scorer reads it: the facts first, then the memories,
    each with its validity (a memory stating nothing on the asked slots has none)."""
    facts = [
        Ranked(
            ReturnedItem(f.text, f.valid_from, f.valid_to, f.superseded_by),
            f"fact {f.valid_from:%Y-%m-%d}",
        )
        for f in result.facts
    ]
    memories = [
        Ranked(_memory_item(m), f"{m.node.level.label} {m.node.t_end:%Y-%m-%d}")
        for m in result.memories
    ]
    return facts + memories


def _memory_item(memory: RecalledMemory) -> ReturnedItem:
    validity = memory.validity
    if validity is None:
        return ReturnedItem(memory.node.text)
    return ReturnedItem(
        memory.node.text, validity.valid_from, validity.valid_to, validity.superseded_by
    )


@dataclass(frozen=True)
class _Turns:
    """One conversation's raw turns, "Speaker: text", indexed for the flat baselines."""

    times: list[datetime]
    index: FlatIndex

    def ranked(self, row: int) -> Ranked:
        source = f"turn {self.index.ids[row]} {self.times[row]:%Y-%m-%d}"
        return Ranked(ReturnedItem(self.index.texts[row]), source)


class _FlatSearch:
    """Flat hybrid search over raw turns, each conversation embedded once."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._turns: dict[str, _Turns] = {}

    async def search(
        self, conversation: Conversation, question: dict[str, Any]
    ) -> tuple[_Turns, list[int]]:
        turns = await self.turns(conversation)
        [vector] = await self._embedder.embed([question["question"]])
        query = np.asarray(vector, dtype=np.float32)
        return turns, turns.index.search(FLAT, question["question"], query)

    async def turns(self, conversation: Conversation) -> _Turns:
        key = conversation["conversation_id"]
        if key not in self._turns:
            turns = [(s, t) for s in conversation["sessions"] for t in s["turns"]]
            ids = [f"{s['session_id']}-{t['seq']}" for s, t in turns]  # the turns' event ids
            texts = [f"{t['speaker']}: {t['text']}" for _, t in turns]
            vectors = np.asarray(await self._embedder.embed(texts), dtype=np.float32)
            times = [datetime.fromisoformat(t["ts"]) for _, t in turns]
            self._turns[key] = _Turns(times, FlatIndex(ids, texts, vectors))
        return self._turns[key]


def flat_methods(embedder: Embedder) -> list[KnowledgeMethod]:
    """Raw turns by the LoCoMo harness's flat hybrid score, the same turns newest first, and
    every turn newest first (recency alone, no retrieval)."""
    search = _FlatSearch(embedder)

    async def by_score(conversation: Conversation, question: dict[str, Any]) -> list[Ranked]:
        turns, rows = await search.search(conversation, question)
        return [turns.ranked(r) for r in rows]

    async def by_time(conversation: Conversation, question: dict[str, Any]) -> list[Ranked]:
        turns, rows = await search.search(conversation, question)
        at = asked_at(conversation, question)
        return [turns.ranked(r) for r in nearest_first(rows, turns.times, at)]

    async def every_turn(conversation: Conversation, question: dict[str, Any]) -> list[Ranked]:
        turns = await search.turns(conversation)
        at = asked_at(conversation, question)
        rows = nearest_first(range(len(turns.times)), turns.times, at)
        return [turns.ranked(r) for r in rows]

    scored = f"raw turns, the top {FLAT.top_k} by flat hybrid score (as in eval locomo)"
    dated = f"the same {FLAT.top_k} turns, nearest the asked time first (newest first for now)"
    return [
        KnowledgeMethod(FLAT.name, "flat", scored, by_score),
        KnowledgeMethod(FLAT_NEWEST, "flat", dated, by_time),
        KnowledgeMethod(EVERY_TURN, "flat", "every turn, nearest the asked time first", every_turn),
    ]


def get_paths(app: FastAPI) -> list[str]:
    """The paths the app serves to GET, from its OpenAPI schema (which the issue requires of
    every route; `app.routes` lists included routers unexpanded in some FastAPI versions)."""
    return [path for path, verbs in app.openapi()["paths"].items() if "get" in verbs]


def facts_route(app: FastAPI) -> str | None:
    """The path of the app's GET route for a user's facts, if it has one."""
    found = [p for p in get_paths(app) if p.startswith("/v1/users/") and p.endswith("/facts")]
    return found[0] if found else None


def api_app(settings: Settings) -> FastAPI:
    """The recall API's app, built only to be inspected: building it connects nothing (that
    happens at its start-up); the key is there because the API refuses to be built without."""
    return recall_app(settings.model_copy(update={"recall_api_keys": [SecretStr("harness")]}))


HARNESS_KEY = "harness"


def api_client(container: Container) -> AsyncRecallClient:
    """The SDK's client of the recall API served over `container`, in this process."""
    keyed = container.settings.model_copy(update={"recall_api_keys": [SecretStr(HARNESS_KEY)]})
    app = recall_app(replace(container, settings=keyed))
    # The container is open already and closed by the harness: the app's start-up would only
    # hand its parts over, and an ASGI transport runs no start-up, so they are handed here.
    app.state.parts = build_recall(container)
    transport = httpx.ASGITransport(app=app)
    return AsyncRecallClient("http://memstream", api_key=HARNESS_KEY, transport=transport)


def fact_items(kind: str, facts: Sequence[Fact]) -> list[Fact]:
    """The facts in the order a reader of the route takes them: for a `previous` question the
    most recently superseded version first (then the rest as given), else as given."""
    if kind != "previous":
        return list(facts)
    closed = [f for f in facts if f.valid_to is not None]
    closed.sort(key=lambda f: f.valid_to or f.valid_from, reverse=True)
    return closed + [f for f in facts if f.valid_to is None]


def facts_answerer(client: AsyncRecallClient) -> Answer:
    """Questions through the facts route: `subject=` the question's subject; `past` ones
    `at=` their time; `previous` ones `history=true`, the latest superseded version first."""

    async def answer(conversation: Conversation, question: dict[str, Any]) -> list[Ranked]:
        kind = question["kind"]
        found = await client.facts(
            conversation["user_id"],
            subject=question["subject"],
            at=asked_at(conversation, question) if kind == "past" else None,
            history=kind == "previous",
        )
        return [
            Ranked(
                ReturnedItem(f.text, f.valid_from, f.valid_to, f.superseded_by),
                f"fact {f.attribute} {f.valid_from:%Y-%m-%d}",
            )
            for f in fact_items(kind, found.facts if found is not None else [])
        ]

    return answer


def facts_method(container: Container) -> KnowledgeMethod:
    """The facts route of issue #33, called through the API; why not when it cannot be."""
    description = (
        f"facts with validity (GET {FACTS_ROUTE}?subject=; ?at= for past questions, "
        "?history=true for previous ones)"
    )
    if facts_route(api_app(container.settings)) is None:
        reason = f"not available: the recall API has no facts route (GET {FACTS_ROUTE})"
        return KnowledgeMethod(FACTS, "facts", description, missing=reason)
    if not container.settings.lifecycle.knowledge:
        reason = "not available: the knowledge write is off (MEMSTREAM_KNOWLEDGE=false)"
        return KnowledgeMethod(FACTS, "facts", description, missing=reason)
    return KnowledgeMethod(FACTS, "facts", description, facts_answerer(api_client(container)))


def default_methods(container: Container, *, baselines: bool = True) -> list[KnowledgeMethod]:
    """Recall, the facts route (or why not) and, with `baselines`, the three flat references."""
    methods = [recall_method(container), facts_method(container)]
    if baselines:
        methods.extend(flat_methods(container.embedder))
    return methods
