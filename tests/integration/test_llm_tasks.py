"""A model for the facts alone, through the real broker, Faust workers, Redis and Qdrant.

`MEMSTREAM_LLM_TASKS=facts`: the segmenter asks the endpoint (a real HTTP server speaking the
OpenAI chat API, its answers scripted) for each L1's facts, and writes the L1's text and
everything else offline. The model reads a fact no rule reads ("Summer has us doing tempo
runs": Nadine's coach is Summer); the L1 keeps the messages verbatim; and the endpoint is
asked for facts only, once an L1.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from memstream.adapters.llm.prompts import FACTS_PROMPT_VERSION
from memstream.bootstrap import Container, connect
from memstream.domain.fact_extraction import extract_facts
from memstream.domain.models import Level, SourceMessage
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings

from .chat_api import completion
from .local_server import serving
from .test_knowledge_write import conversation, publish, written

USER = "tasks-nadine"
NADINE = "speaker:nadine"
SAID = datetime(2023, 10, 14, 7, 30, tzinfo=UTC)
LINE = "Summer has us doing tempo runs by heart rate instead of pace."


class FactsOnly:
    """An endpoint that reads Nadine's coach from whatever lines it is given, and keeps
    every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            fact = {"subject": "Nadine", "attribute": "coach", "value": "Summer",
                    "source_ids": ["coach"], "certainty": "implied"}  # fmt: skip
            content = json.dumps({"facts": [fact]})
            return JSONResponse(completion(content))

        return app


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[FactsOnly, str]]:
    fake = FactsOnly()
    async with serving(fake.app()) as base_url:
        yield fake, f"{base_url}/v1"


@pytest.fixture
async def runtime(
    settings: Settings, tmp_path: Path, endpoint: tuple[FactsOnly, str]
) -> AsyncIterator[Container]:
    local = settings.model_copy(
        update={
            "data_dir": tmp_path,
            "clock_grace_s": 0.0,
            "clock_interval_s": 0.5,
            "llm_base_url": endpoint[1],
            "llm_tasks": "facts",
            "llm_max_retries": 0,
        }
    )
    async with connect(local, prioritise_online=True) as rt:
        yield rt


async def test_a_model_for_the_facts_alone_reads_them_and_writes_nothing_else(
    runtime: Container, endpoint: tuple[FactsOnly, str], tmp_path: Path
) -> None:
    fake, _ = endpoint
    # The rules read nothing here: what the model reads is the model's.
    assert not extract_facts([SourceMessage("coach", "Nadine", "user", LINE, SAID)], user_id="u")
    events = conversation(USER, [(SAID, [("coach", LINE)])], speaker="Nadine")
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True):
        await publish(runtime, written(tmp_path / "turns.jsonl", events), user=USER)
        tree = runtime.tree
        [summer] = await tree.facts(USER, NADINE)
        [leaf] = await tree.get_many(USER, await tree.level_ids(USER, Level.SEGMENT))
    assert (summer.attribute, summer.value, summer.source_ids) == ("coach", "Summer", ("coach",))
    # The L1 is the offline one: the messages verbatim with their date, read by the model
    # for its facts only, and the deployment's derivation says so.
    assert LINE in leaf.text and "14 October 2023" in leaf.text
    assert leaf.derivation is not None
    assert leaf.derivation.extraction == FACTS_PROMPT_VERSION
    assert leaf.derivation.prompt_version.endswith("+facts")
    asked = [r["messages"][0]["content"] for r in fake.requests]
    assert asked and all("keep a record of what is true" in system for system in asked)
    assert len(asked) == 1  # one L1, one reading
