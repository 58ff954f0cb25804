"""The recall answer carries the pipeline's facts and each memory's validity, and the SDK's
`as_prompt()` never shows a replaced value as current (in-memory stores, the real app)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from tests.unit.fakes import FakeTree, fake_container, sample_tree

from memstream.bootstrap import recall_app
from memstream.client import AsyncRecallClient
from memstream.client.models import Fact, Memory, Recall
from memstream.domain.facts import make_fact
from memstream.domain.ranking import RecalledMemory
from memstream.domain.validity import Validity
from memstream.edges.http.fact_schema import Fact as ServedFact
from memstream.recall.pipeline import RecallRequest, RecallResult
from memstream.settings import Settings

KEY = "k"
JAN = datetime(2024, 1, 10, 9, tzinfo=UTC)
APR = datetime(2024, 4, 2, 18, tzinfo=UTC)
MAYA = "speaker:maya"


def lives_in(value: str, at: datetime, message: str) -> Any:
    return make_fact(
        user_id="u1",
        subject=MAYA,
        subject_name="Maya",
        attribute="lives_in",
        value=value,
        text=f"Maya lives in {value}",
        valid_from=at,
        recorded_at=at,
        source_ids=(message,),
    )


PORTO_OPEN, BERLIN_OPEN = lives_in("Porto", JAN, "m1"), lives_in("Berlin", APR, "m2")
PORTO = dataclasses.replace(PORTO_OPEN, valid_to=APR, superseded_by=BERLIN_OPEN.fact_id)
BERLIN = dataclasses.replace(BERLIN_OPEN, supersedes=PORTO.fact_id)


class KnowingPipeline:
    """The recall pipeline's answer as the recall side gives it with the knowledge write on:
    the current fact first, the one it replaced after, and each memory's validity."""

    def __init__(self, nodes: list[Any]) -> None:
        self._leaf = next(n for n in nodes if n.level == 1)

    async def recall(self, request: RecallRequest) -> RecallResult:
        replaced = Validity(JAN, APR, BERLIN.fact_id)
        return RecallResult(
            complexity="simple",
            keywords=("live",),
            memories=[RecalledMemory(self._leaf, 0.9, replaced), RecalledMemory(self._leaf, 0.5)],
            tokens=10,
            timings_ms={"total": 1.0},
            degraded=False,
            facts=[BERLIN, PORTO],
        )


@asynccontextmanager
async def client() -> AsyncIterator[AsyncRecallClient]:
    nodes = sample_tree("u1")
    container = fake_container(Settings(recall_api_keys=[SecretStr(KEY)]), FakeTree(nodes))
    app = recall_app(container)
    async with app.router.lifespan_context(app):
        parts = app.state.parts
        app.state.parts = dataclasses.replace(parts, pipeline=KnowingPipeline(nodes))
        transport = httpx.ASGITransport(app=app)
        async with AsyncRecallClient("http://test", api_key=KEY, transport=transport) as sdk:
            yield sdk


async def test_recall_gives_facts_and_each_memorys_validity() -> None:
    async with client() as sdk:
        answer = await sdk.recall("u1", "Where does Maya live now?")
    berlin, porto = answer.facts
    assert (berlin.value, berlin.holds, berlin.supersedes) == ("Berlin", True, porto.fact_id)
    assert (porto.valid_to, porto.superseded_by, porto.holds) == (APR, berlin.fact_id, False)
    assert porto.source_ids == ["m1"] and porto.recorded_at == JAN
    replaced, plain = answer.memories
    assert (replaced.valid_from, replaced.valid_to) == (JAN, APR)
    assert replaced.superseded_by == berlin.fact_id
    assert (plain.valid_from, plain.valid_to, plain.superseded_by) == (None, None, None)


async def test_as_prompt_says_since_when_and_what_was_replaced_never_the_old_as_current() -> None:
    async with client() as sdk:
        prompt = (await sdk.recall("u1", "Where does Maya live now?")).as_prompt()
    lines = prompt.splitlines()
    assert lines[1] == "- Maya lives in Berlin (since Apr 2024; before: Porto)"
    assert lines[2] == "- No longer true (Jan 2024 to Apr 2024): Maya lives in Porto"
    assert lines[3].endswith("(no longer true since Apr 2024)")
    assert "no longer" not in lines[4] and "since" not in lines[4]
    # Porto appears only where it is said to be over.
    assert all(
        "no longer" in line.lower() or "before: Porto" in line for line in lines if "Porto" in line
    )


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ([BERLIN], "- Maya lives in Berlin (since Apr 2024)"),
        ([PORTO], "- No longer true (Jan 2024 to Apr 2024): Maya lives in Porto"),
    ],
)
def test_a_fact_alone_is_rendered_with_its_own_validity(facts: list[Any], expected: str) -> None:
    answer = Recall(
        user_id="u1",
        complexity="simple",
        keywords=[],
        memories=[],
        facts=[Fact.model_validate(ServedFact.of(f).model_dump()) for f in facts],
        tokens=0,
        timings_ms={},
        degraded=False,
    )
    assert answer.as_prompt().splitlines()[1:] == [expected]


@pytest.mark.parametrize(
    ("validity", "note"),
    [
        ({"valid_from": JAN}, " (true since Jan 2024)"),
        ({"valid_from": JAN, "valid_to": APR}, " (no longer true since Apr 2024)"),
        (
            {"valid_to": APR, "end_basis": "inferred"},
            " (may be out of date: a change was told in Apr 2024)",
        ),
        ({"superseded_by": "f2"}, " (no longer true: replaced)"),
        ({}, ""),
    ],
)
def test_a_memory_says_whether_what_it_says_still_holds(
    validity: dict[str, Any], note: str
) -> None:
    memory = Memory(
        id="l1",
        user_id="u1",
        level=1,
        level_name="exchange",
        t_start=JAN,
        t_end=JAN,
        text="We live in Porto.",
        source_ids=["m1"],
        parent_id=None,
        session_id=None,
        version=1,
        degraded=False,
        **validity,
    )
    answer = Recall(
        user_id="u1",
        complexity="simple",
        keywords=[],
        memories=[memory],
        tokens=0,
        timings_ms={},
        degraded=False,
    )
    assert answer.as_prompt().splitlines()[1] == f"- [exchange, 2024-01-10] We live in Porto.{note}"
