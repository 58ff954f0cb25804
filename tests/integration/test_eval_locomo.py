"""`memstream eval locomo` end to end on one conversation, through the real pipeline.

The first run ingests the conversation (two write-path deployments: the default segments
and one-message segments), recalls 30 questions with two memstream variants, the flat
baselines and, when installed, mem0, and the token curve at two budgets (the default and
every flat baseline, each within the budget). The second run resumes in the same directory against
a local OpenAI-compatible HTTP server that plays the answerer and the judge: nothing is
ingested again, finished questions are not asked again, and only the method chosen for
answering is recalled again (its records had no answers yet).
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import SecretStr
from rich.console import Console

from memstream.settings import Settings
from memstream_lab.eval.harness import EvalConfig, run_locomo
from memstream_lab.eval.mem0_peer import mem0_missing_reason
from memstream_lab.eval.records import RECORDS_FILE
from memstream_lab.eval.report import PLOT_PNG, RESULTS_JSON, RESULTS_MD
from memstream_lab.locomo import locomo_data_dir

from .chat_api import completion
from .local_server import serving

pytestmark = pytest.mark.integration

QUESTIONS = 30
ANSWERED = "memstream:default"
BUDGETS = (600, 1500)


@dataclass
class ScriptedLLM:
    """Answers every question "Paris"; judges alternately CORRECT and WRONG."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            judging = "grade" in body["messages"][0]["content"]
            judged = sum("grade" in r["messages"][0]["content"] for r in self.requests)
            label = "CORRECT" if judged % 2 else "WRONG"
            content = f'Same thing. {{"label": "{label}"}}' if judging else "Paris"
            return JSONResponse(completion(content, prompt_tokens=10, completion_tokens=2))

        return app


@pytest.fixture
async def llm_url() -> AsyncIterator[tuple[str, ScriptedLLM]]:
    fake = ScriptedLLM()
    async with serving(fake.app()) as base_url:
        yield f"{base_url}/v1", fake


def config(out: Path) -> EvalConfig:
    return EvalConfig(
        data_dir=locomo_data_dir(),
        out_dir=out,
        conversations=1,
        max_questions=QUESTIONS,
        variants=("default", "seg2"),
        answer_methods=(ANSWERED,),
        budgets=BUDGETS,
    )


def records(out: Path) -> list[dict[str, Any]]:
    lines = (out / RECORDS_FILE).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


async def test_end_to_end_then_resume_with_answers(
    tmp_path: Path, llm_url: tuple[str, ScriptedLLM]
) -> None:
    out = tmp_path / "run"
    quiet = Console(file=io.StringIO())

    first = await run_locomo(config(out), Settings(), quiet)

    for name in (RESULTS_JSON, RESULTS_MD, PLOT_PNG):
        assert (out / name).stat().st_size > 0
    results = json.loads((out / RESULTS_JSON).read_text())
    names = {m["name"] for m in results["methods"]}
    assert {"memstream:default", "memstream:seg2", "flat-hybrid@20", "flat-bm25@10"} <= names
    assert ("mem0@20" in names) == (mem0_missing_reason() is None)
    for method in results["methods"]:
        overall = method["categories"]["overall"]
        assert overall["questions"] == QUESTIONS
        assert 0.0 <= overall["evidence_recall"] <= 1.0
        assert 0.0 <= overall["all_evidence_share"] <= 1.0
        assert 0.0 <= overall["answer_coverage"] <= 1.0
        assert overall["tokens_per_query"] > 0
        assert overall["latency_p95_ms"] >= overall["latency_p50_ms"] >= 0
    assert results["answering"]["enabled"] is False
    assert first.meta["run"]["seconds"]["ingest_seg2_s"] > 0
    assert first.meta["run"]["seconds"]["ingest_exchange_s"] > 0
    before = records(out)
    assert len(before) == QUESTIONS * len(names)
    curve = results["token_curve"]
    assert curve["budgets"] == list(BUDGETS)
    kinds = ("dense", "bm25", "hybrid")
    for budget in BUDGETS:
        points = [p for p in curve["points"] if p["budget"] == budget]
        ours = points[0]
        assert ours["method"] == f"memstream:default@{budget}tok"
        at_ceiling = {p["method"] for p in points[1:] if not p["same_tokens_as_memstream"]}
        assert at_ceiling == {f"flat-{kind}@{budget}tok" for kind in kinds}
        spent = [r["tokens"] for r in before if r["method"] in at_ceiling | {ours["method"]}]
        assert len(spent) == 4 * QUESTIONS and max(spent) <= budget
        # Filled to memstream's mean tokens, the flat baselines spend no more than it did.
        matched = [p for p in points if p["same_tokens_as_memstream"]]
        assert len(matched) == len(kinds)
        assert all(p["tokens_per_query"] <= round(ours["tokens_per_query"]) for p in matched)
    assert len(curve["versus_best_flat_same_tokens"]) == len(curve["versus_best_flat"]) > 0
    # Filled to its budget, a flat baseline spends nearly all of it.
    flat_600 = next(p for p in curve["points"] if p["method"] == "flat-hybrid@600tok")
    assert flat_600["tokens_per_query"] > 500
    assert "Token curve" in (out / RESULTS_MD).read_text()

    url, fake = llm_url
    settings = Settings(llm_base_url=url, llm_model="test-model", llm_api_key=SecretStr("test"))
    second = await run_locomo(config(out), settings, quiet)

    seconds = second.meta["run"]["seconds"]
    assert seconds["ingest_seg2_s"] == 0 and seconds["ingest_exchange_s"] == 0
    after = records(out)
    # Only the answered method was recalled again: one new line per question.
    assert len(after) == len(before) + QUESTIONS
    assert {r["method"] for r in after[len(before) :]} == {ANSWERED}
    assert len(fake.requests) == 2 * QUESTIONS  # an answer and a judgement per question
    answered = next(m for m in second.methods if m.name == ANSWERED)
    assert answered.summaries["overall"].judged == QUESTIONS
    assert answered.summaries["overall"].accuracy == pytest.approx(0.5)
    assert "accuracy" in (out / RESULTS_MD).read_text()
