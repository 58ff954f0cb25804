"""The model does the tasks a deployment names, the offline backend the rest."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from memstream.adapters.llm.by_task import ByTaskLanguageModel
from memstream.adapters.llm.fallback import FallbackLanguageModel, build_language_model
from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.domain.facts import FactReading
from memstream.domain.models import (
    Complexity,
    Level,
    MemoryNode,
    Plan,
    SourceMessage,
    Summary,
    Turn,
    Window,
)
from memstream.domain.query import Query, parse_query
from memstream.settings import LLM_TASKS, Settings

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
TURNS = [Turn("e1", "u1", "s1", 1, "Maya", "user", "We moved to Berlin last month!", T0)]
LEAF = MemoryNode(
    "n1",
    "u1",
    Level.SEGMENT,
    T0,
    T0,
    "Maya said they moved to Berlin.",
    messages=(SourceMessage("e1", "Maya", "user", "We moved to Berlin last month!", T0),),
)
WINDOW = Window("u1", Level.SESSION, T0, T0 + timedelta(hours=1), "s1")


class Recording:
    """A model that answers every task with a mark of its own and records which it did."""

    def __init__(self) -> None:
        self.done: list[str] = []

    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary:
        self.done.append("segment")
        return Summary(text="by the model")

    async def read_facts(self, leaf: MemoryNode) -> FactReading:
        self.done.append("facts")
        return FactReading((), "model")

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: object = None,
    ) -> Summary:
        self.done.append("consolidate")
        return Summary(text="by the model")

    async def plan(self, query: Query) -> Plan:
        self.done.append("plan")
        return Plan(complexity="complex", keywords=("model",))

    async def gate(
        self, query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        self.done.append("gate")
        return []


async def every_task(llm: ByTaskLanguageModel) -> None:
    query = parse_query("Where does Maya live?")
    await llm.write_segment(TURNS, [])
    await llm.read_facts(LEAF)
    await llm.consolidate(Level.SESSION, WINDOW, [LEAF], [])
    await llm.plan(query)
    await llm.gate(query, "simple", [LEAF])


@pytest.mark.parametrize(
    "tasks", [("facts",), ("facts", "consolidate"), ("plan", "gate"), ("segment",), LLM_TASKS]
)
async def test_each_task_goes_to_the_model_only_when_named(tasks: tuple[str, ...]) -> None:
    model = Recording()
    llm = ByTaskLanguageModel(model, OfflineLanguageModel(), tasks)
    await every_task(llm)
    assert model.done == [t for t in LLM_TASKS if t in tasks]


async def test_a_task_not_named_is_answered_as_the_offline_backend_answers_it() -> None:
    offline = OfflineLanguageModel()
    llm = ByTaskLanguageModel(Recording(), offline, ("plan", "gate"))
    assert await llm.write_segment(TURNS, []) == await offline.write_segment(TURNS, [])
    assert await llm.read_facts(LEAF) == await offline.read_facts(LEAF)
    assert (await llm.read_facts(LEAF)).facts  # the rules read the move


def test_the_settings_name_known_tasks_in_one_order_and_refuse_others() -> None:
    assert Settings(llm_tasks=" gate ,facts").llm.tasks == "facts,gate"
    with pytest.raises(ValidationError, match="unknown LLM task"):
        Settings(llm_tasks="facts,summaries")
    with pytest.raises(ValidationError, match="no LLM task"):
        Settings(llm_tasks=" , ")
    with pytest.raises(ValueError, match="unknown LLM task"):
        Settings().llm.does("summaries")


def test_without_an_endpoint_the_model_does_nothing_whatever_the_tasks() -> None:
    assert not any(Settings(llm_tasks="facts").llm.does(task) for task in LLM_TASKS)
    online = Settings(llm_base_url="http://127.0.0.1:9/v1", llm_tasks="facts").llm
    assert [task for task in LLM_TASKS if online.does(task)] == ["facts"]
    assert isinstance(build_language_model(Settings(llm_tasks="facts")), OfflineLanguageModel)


def test_the_deployment_routes_by_task_only_when_some_task_is_left_offline() -> None:
    url = "http://127.0.0.1:9/v1"
    assert isinstance(build_language_model(Settings(llm_base_url=url)), FallbackLanguageModel)
    routed = build_language_model(Settings(llm_base_url=url, llm_tasks="facts"))
    assert isinstance(routed, ByTaskLanguageModel)
