"""`memstream eval knowledge` end to end on two conversations, through the real pipeline.

The first run publishes two conversations of the set (a late session among them) on the
embedded stack, waits until they are consolidated, asks their first questions through
recall, the facts route (the suite runs with the knowledge write on) and the flat
baselines. The second run in
the same directory ingests nothing again and gives the same verdicts.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from memstream.settings import Settings
from memstream_lab.eval.knowledge.harness import KnowledgeConfig, run_knowledge, select
from memstream_lab.eval.knowledge.methods import EVERY_TURN, FACTS, FLAT, FLAT_NEWEST, RECALL
from memstream_lab.eval.knowledge.report import RESULTS_JSON, RESULTS_MD
from memstream_lab.knowledge.dataset import load_all
from memstream_lab.knowledge.score import KINDS

pytestmark = pytest.mark.integration

CONVERSATIONS = 2
QUESTIONS = 4  # per conversation: current, previous, past and other_person in ku01


async def test_two_conversations_end_to_end_then_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = KnowledgeConfig(out_dir=out, conversations=CONVERSATIONS, max_questions=QUESTIONS)
    quiet = Console(file=io.StringIO())

    first = await run_knowledge(config, Settings(), quiet)

    asked = select(load_all(), CONVERSATIONS, QUESTIONS)
    per_kind: dict[str, int] = {}
    for question in (q for c in asked for q in c["questions"]):
        per_kind[question["kind"]] = per_kind.get(question["kind"], 0) + 1
    results = json.loads((out / RESULTS_JSON).read_text())
    assert results["dataset"]["conversation_ids"] == ["ku01", "ku02"]
    assert results["dataset"]["conversations"] == CONVERSATIONS
    assert results["dataset"]["questions"] == CONVERSATIONS * QUESTIONS
    methods = {m["name"]: m for m in results["methods"]}
    assert set(methods) == {RECALL, FACTS, FLAT.name, FLAT_NEWEST, EVERY_TURN}
    for name in (RECALL, FACTS, FLAT.name, FLAT_NEWEST, EVERY_TURN):
        method = methods[name]
        assert method["available"] is True
        assert set(method["shares"]) == {*per_kind, "all"} and set(per_kind) <= set(KINDS)
        assert all(0.0 <= share <= 1.0 for share in method["shares"].values())
        assert {k: c["questions"] for k, c in method["counts"].items()} == {
            **per_kind,
            "all": CONVERSATIONS * QUESTIONS,
        }
        for kind, share in method["shares"].items():
            tally = method["counts"][kind]
            assert share == pytest.approx(tally["passed"] / tally["questions"])
    records = results["questions"]
    assert len(records) == 5 * CONVERSATIONS * QUESTIONS
    recalled = [r for r in records if r["method"] == RECALL]
    # Recall found memories for every question, from the user's own tree.
    assert all(r["returned"] > 0 and r["first_items"] for r in recalled)
    assert all(r["verdict"] == "pass" or r["verdict"].startswith("fail: ") for r in records)
    flat = [r for r in records if r["method"] == FLAT.name]
    assert all(
        item["source"].startswith(f"turn {r['conversation']}-")
        for r in flat
        for item in r["first_items"]
    )
    assert "| memstream:recall |" in (out / RESULTS_MD).read_text()
    assert first.meta["run"]["seconds"]["ingest_s"] > 0

    second = await run_knowledge(config, Settings(), quiet)

    assert second.meta["run"]["seconds"]["ingest_s"] == 0
    again = json.loads((out / RESULTS_JSON).read_text())
    assert [r["verdict"] for r in again["questions"]] == [r["verdict"] for r in records]


async def test_with_the_gold_reader_the_facts_route_answers_every_question(tmp_path: Path) -> None:
    """The set's own facts through the LLM backend's output path and the real write path:
    a medication replaced, a wife's, a father's. Whatever reads the facts, what follows the
    reading (keys, supersession, the route) must then answer them all."""
    config = KnowledgeConfig(
        out_dir=tmp_path / "gold", only=("ku36",), baselines=False, reader="gold"
    )
    report = await run_knowledge(config, Settings(), Console(file=io.StringIO()))
    assert report.meta["run"]["fact_reader"] == "gold"
    results = json.loads((tmp_path / "gold" / RESULTS_JSON).read_text())
    facts = next(m for m in results["methods"] if m["name"] == FACTS)
    assert facts["counts"]["all"]["questions"] == 5
    assert facts["shares"]["all"] == 1.0
