"""Recall with facts and validity through the real broker, Faust workers, Redis and Qdrant.

Maya lives in Porto in January and moved to Berlin by April; her brother moved to Madrid.
Recall, built as the API builds it, answers "where does she live now" with Berlin first and
the Porto leaf marked as replaced; asked in February, with Porto; about her brother, with
Madrid and never her own city; and a question about no state gets no fact. Sam tells his
change of team in words no fact is read from: the leaf said before it is dated as replaced by
it, and asked what came before, recall puts that leaf first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.integration.test_knowledge_write import (
    APR,
    Sessions,
    conversation,
    publish,
    written,
)

from memstream.bootstrap import Container, connect
from memstream.domain.models import Level
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.recall.pipeline import RecallPipeline, RecallRequest, RecallResult
from memstream.settings import Settings
from memstream.wiring.handlers import build_recall

USER = "knowledge-maya"  # the user of the conversation imported


@pytest.fixture
async def runtime(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    local = settings.model_copy(
        update={"data_dir": tmp_path, "clock_grace_s": 0.0, "clock_interval_s": 0.5}
    )
    async with connect(local, prioritise_online=True) as rt:
        yield rt


@pytest.fixture
async def written_pipeline(runtime: Container, tmp_path: Path) -> AsyncIterator[RecallPipeline]:
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True):
        await publish(runtime, written(tmp_path / "conversation.jsonl", conversation()))
    yield build_recall(runtime).pipeline


def ask(query: str, at: datetime = APR + timedelta(days=1)) -> RecallRequest:
    return RecallRequest(USER, query, query_time=at)


async def test_recall_puts_what_holds_first_and_dates_what_it_replaced(
    written_pipeline: RecallPipeline,
) -> None:
    now = await written_pipeline.recall(ask("Where does Maya live these days?"))
    assert [(f.value, f.valid_to) for f in now.facts] == [("Berlin", None)]
    validity = {m.node.id: m.validity for m in now.memories if m.validity is not None}
    porto = [v for m, v in validity.items() if "Porto" in _text(now, m)]
    assert porto and all(v.valid_to == now.facts[0].valid_from for v in porto)
    assert porto[0].superseded_by == now.facts[0].fact_id

    then = await written_pipeline.recall(
        ask("Where does Maya live?", datetime(2024, 2, 1, tzinfo=UTC))
    )
    assert [f.value for f in then.facts] == ["Porto"]

    brother = await written_pipeline.recall(ask("Which city does Maya's brother live in?"))
    assert [f.value for f in brother.facts] == ["Madrid"]

    assert (await written_pipeline.recall(ask("What did Maya say about the river?"))).facts == []


def _text(result: RecallResult, node_id: str) -> str:
    return next(m.node.text for m in result.memories if m.node.id == node_id)


SAM = "knowledge-sam"
TEAMS: Sessions = [
    (datetime(2023, 3, 5, 18, 0, tzinfo=UTC), [("hawks", "The Harbour Hawks lost again today.")]),
    (
        datetime(2023, 9, 3, 18, 0, tzinfo=UTC),
        [("kites", "Preseason started with the Coastal Kites, the drills are brutal.")],
    ),
]


async def test_a_change_told_in_words_dates_what_was_said_before_it(
    runtime: Container, tmp_path: Path
) -> None:
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True):
        events = conversation(SAM, TEAMS, speaker="Sam")
        await publish(runtime, written(tmp_path / "teams.jsonl", events), SAM)
    pipeline = build_recall(runtime).pipeline
    at = datetime(2023, 12, 1, tzinfo=UTC)

    now = await pipeline.recall(RecallRequest(SAM, "Which team does Sam play for?", query_time=at))
    leaves = [m for m in now.memories if m.node.level is Level.SEGMENT]
    [kites] = [m for m in leaves if "Coastal Kites" in m.node.text]
    [hawks] = [m for m in leaves if "Harbour Hawks" in m.node.text]
    assert now.facts == []  # no fact was read: the told change alone dates the Hawks
    assert kites.validity is None
    assert hawks.validity is not None and hawks.validity.valid_to == kites.node.t_start
    assert leaves.index(kites) < leaves.index(hawks)

    question = "Which team did Sam play for before the Coastal Kites?"
    before = await pipeline.recall(RecallRequest(SAM, question, query_time=at))
    first = next(m for m in before.memories if m.node.level is Level.SEGMENT)
    assert "Harbour Hawks" in first.node.text
