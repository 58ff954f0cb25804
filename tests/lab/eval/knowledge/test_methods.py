"""The harness's methods: when a question is asked, the flat baseline's time order, and the
facts route found on the API and called through it as a client would (or reported missing,
never stood in for)."""

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from tests.integration.knowledge_contract import APR, BERLIN, JAN, MADRID, PORTO, write
from tests.unit.fakes import FakeTree, fake_container

from memstream.domain.facts import make_fact
from memstream.domain.models import Level, MemoryNode
from memstream.domain.ranking import RecalledMemory
from memstream.domain.validity import Validity
from memstream.recall.pipeline import RecallResult
from memstream.settings import Settings
from memstream_lab.eval.knowledge.methods import (
    FACTS,
    KnowledgeMethod,
    api_app,
    asked_at,
    facts_method,
    facts_route,
    get_paths,
    nearest_first,
    recall_items,
)
from memstream_lab.knowledge.dataset import load_all

KU01 = next(c for c in load_all() if c["conversation_id"] == "ku01")


def test_a_past_question_is_asked_at_its_query_time_others_after_the_newest_turn() -> None:
    past = next(q for q in KU01["questions"] if q["kind"] == "past")
    current = next(q for q in KU01["questions"] if q["kind"] == "current")
    assert asked_at(KU01, past) == datetime.fromisoformat(past["query_time"])
    newest = max(datetime.fromisoformat(t["ts"]) for s in KU01["sessions"] for t in s["turns"])
    assert asked_at(KU01, current) == newest


def test_the_newest_turn_is_found_by_time_not_by_publishing_order() -> None:
    def session(order: int, ts: str) -> dict[str, object]:
        return {"published_order": order, "turns": [{"ts": ts}]}

    newer, late = session(1, "2024-05-01T10:00:00+00:00"), session(2, "2023-01-01T10:00:00+00:00")
    late_last = {"sessions": [newer, late]}
    assert asked_at(late_last, {"kind": "current"}) == datetime(2024, 5, 1, 10, tzinfo=UTC)


def test_nearest_first_puts_the_newest_first_when_asked_after_them_all() -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    times = [start + timedelta(days=d) for d in (0, 30, 10, 20)]
    assert nearest_first([0, 1, 2, 3], times, start + timedelta(days=100)) == [1, 3, 2, 0]
    # Asked in the middle: nearest either side first; ties keep the given (score) order.
    assert nearest_first([3, 0, 2, 1], times, start + timedelta(days=15)) == [3, 2, 0, 1]


def test_facts_route_is_found_by_its_path_and_method() -> None:
    with_facts = FastAPI()
    router = APIRouter(prefix="/v1")
    router.get("/users/{user_id}/facts")(lambda user_id: [])
    router.post("/users/{user_id}/recall")(lambda user_id: [])
    with_facts.include_router(router)
    assert facts_route(with_facts) == "/v1/users/{user_id}/facts"
    posted = FastAPI()
    posted.post("/v1/users/{user_id}/facts")(lambda user_id: [])
    assert facts_route(posted) is None
    assert facts_route(FastAPI()) is None


def test_the_recall_apis_routes_are_seen_so_a_missing_facts_route_is_really_missing() -> None:
    paths = get_paths(api_app(Settings()))
    assert {"/v1/users/{user_id}/profile", "/v1/users/{user_id}/memories"} <= set(paths)


def test_facts_is_listed_as_not_available_while_the_knowledge_write_is_off() -> None:
    container = fake_container(Settings(knowledge=False), FakeTree())
    method = facts_method(container)
    assert method.name == FACTS and method.answer is None
    assert method.missing is not None and "knowledge write is off" in method.missing


CONVERSATION: dict[str, Any] = {
    "user_id": "ana",
    "sessions": [{"turns": [{"ts": (APR + timedelta(days=1)).isoformat()}]}],
}


def question(kind: str, subject: str = "Maya", **extra: str) -> dict[str, Any]:
    return {"kind": kind, "question": "Where does Maya live?", "subject": subject, **extra}


async def test_facts_answers_each_kind_of_question_through_the_route() -> None:
    tree = FakeTree()
    await write(tree, PORTO, BERLIN, MADRID)
    method = facts_method(fake_container(Settings(knowledge=True), tree))
    assert method.answer is not None and method.missing is None

    async def ask(q: dict[str, Any]) -> list[tuple[str, bool]]:
        assert method.answer is not None
        ranked = await method.answer(CONVERSATION, q)
        # The route gives every fact of the subject; the conversation also names her sister.
        lived = [r for r in ranked if r.source.startswith("fact lives_in ")]
        return [(r.item.text, r.item.valid_to is None) for r in lived]

    assert await ask(question("current")) == [("Maya lives in Berlin", True)]
    brother = question("other_person", subject="Maya's brother")
    assert await ask(brother) == [("Maya's brother lives in Madrid", True)]
    at_porto = question("past", query_time=(JAN + timedelta(days=5)).isoformat())
    assert await ask(at_porto) == [("Maya lives in Porto", False)]
    # The latest superseded version first, then what holds now.
    assert await ask(question("previous")) == [
        ("Maya lives in Porto", False),
        ("Maya lives in Berlin", True),
    ]
    assert await ask(question("current", subject="Olga")) == []
    first = (await method.answer(CONVERSATION, question("previous")))[0]
    assert first.item.superseded_by is not None and first.source.startswith("fact lives_in ")
    assert dataclasses.asdict(first.item)["valid_to"] == APR


def test_a_method_either_answers_or_says_why_not() -> None:
    with pytest.raises(ValueError, match="either"):
        KnowledgeMethod("x", "flat", "neither")

    async def answer(conversation: object, question: object) -> list[object]:
        return []

    with pytest.raises(ValueError, match="either"):
        KnowledgeMethod("x", "flat", "both", answer=answer, missing="no")  # type: ignore[arg-type]


def test_recall_gives_its_facts_first_then_its_memories_each_with_its_validity() -> None:
    jan, apr = datetime(2023, 1, 14, tzinfo=UTC), datetime(2024, 4, 9, tzinfo=UTC)
    berlin = make_fact(
        user_id="u1",
        subject="speaker:maya",
        subject_name="Maya",
        attribute="lives_in",
        value="Berlin",
        text="Maya lives in Berlin",
        valid_from=apr,
        recorded_at=apr,
        source_ids=("m2",),
    )

    def leaf(node_id: str, text: str) -> MemoryNode:
        return MemoryNode(node_id, "u1", Level.SEGMENT, jan, jan, text, source_ids=(node_id,))

    porto = RecalledMemory(leaf("m1", "our flat in Porto"), 0.5, Validity(jan, apr, "f2"))
    chat = RecalledMemory(leaf("m3", "a train trip"), 0.4)
    result = RecallResult("simple", (), [porto, chat], 20, {}, False, facts=[berlin])
    items = [r.item for r in recall_items(result)]
    assert [i.text for i in items] == ["Maya lives in Berlin", "our flat in Porto", "a train trip"]
    assert (items[0].valid_from, items[0].valid_to) == (apr, None)
    assert (items[1].valid_to, items[1].superseded_by) == (apr, "f2")
    assert items[2].valid_to is None and items[2].superseded_by is None
