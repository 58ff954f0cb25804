"""Recall with facts and validity through the real broker, Faust workers, Redis and Qdrant.

Maya lives in Porto in January and moved to Berlin by April; her brother moved to Madrid.
Recall, built as the API builds it, answers "where does she live now" with Berlin first and
the Porto leaf marked as replaced; asked in February, with Porto; about her brother, with
Madrid and never her own city; and a question about no state gets no fact.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.integration.test_knowledge_write import APR, conversation, publish, written

from memstream.bootstrap import Container, connect
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
