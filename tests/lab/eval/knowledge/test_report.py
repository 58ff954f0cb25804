"""The knowledge harness's asking and report: an answer function in, records and shares out."""

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from memstream_lab.eval.knowledge.harness import ask, select, session_events
from memstream_lab.eval.knowledge.methods import KnowledgeMethod, Ranked
from memstream_lab.eval.knowledge.report import (
    RESULTS_JSON,
    RESULTS_MD,
    SHOWN_CHARS,
    SHOWN_ITEMS,
    KnowledgeReport,
    counts,
    markdown,
    write_report,
)
from memstream_lab.knowledge.dataset import load_all, turn_events
from memstream_lab.knowledge.score import KINDS, ReturnedItem

CONVERSATIONS = select(load_all(), 3, None)
ASKED = sum(len(c["questions"]) for c in CONVERSATIONS)


def quiet() -> Progress:
    return Progress(console=Console(file=io.StringIO()))


async def expected_only(conversation: dict[str, Any], question: dict[str, Any]) -> list[Ranked]:
    """The expected value alone: true at any asked time, so every question passes."""
    return [Ranked(ReturnedItem(f"It is {question['expected']}."), "oracle")]


async def stale_first(conversation: dict[str, Any], question: dict[str, Any]) -> list[Ranked]:
    """Every superseded value first, then the expected one, then filler past what is kept."""
    stale = [Ranked(ReturnedItem(f"It is {v}."), "stale") for v in question["superseded"]]
    filler = [Ranked(ReturnedItem("x " * SHOWN_CHARS), "filler") for _ in range(SHOWN_ITEMS)]
    return [*stale, *(await expected_only(conversation, question)), *filler]


def test_select_takes_the_first_conversations_and_questions() -> None:
    chosen = select(load_all(), 2, 3)
    assert [c["conversation_id"] for c in chosen] == ["ku01", "ku02"]
    assert [len(c["questions"]) for c in chosen] == [3, 3]
    assert len(load_all()[0]["questions"]) > 3  # the set itself is left whole


async def test_an_answer_with_the_expected_value_alone_passes_every_question() -> None:
    method = KnowledgeMethod("oracle", "flat", "the expected value", expected_only)
    with quiet() as progress:
        outcome = await ask(method, CONVERSATIONS, progress)
    assert len(outcome.records) == ASKED
    assert all(r.verdict == "pass" for r in outcome.records)
    asked_kinds = {q["kind"] for c in CONVERSATIONS for q in c["questions"]}
    assert outcome.shares == dict.fromkeys([*asked_kinds, "all"], 1.0)


async def test_records_and_shares_agree_and_failures_say_why() -> None:
    method = KnowledgeMethod("stale", "flat", "stale values first", stale_first)
    with quiet() as progress:
        outcome = await ask(method, CONVERSATIONS, progress)
    tally = counts(outcome.records)
    assert tally["all"]["questions"] == ASKED
    for kind, entry in tally.items():
        assert outcome.shares[kind] == entry["passed"] / entry["questions"]
    stale_shown = sum(bool(q["superseded"]) for c in CONVERSATIONS for q in c["questions"])
    assert tally["all"]["not_first"] == stale_shown == ASKED - tally["all"]["passed"]
    assert tally["all"]["stale_as_current"] == tally.get("current", {}).get("not_first", 0) + (
        tally.get("other_person", {}).get("not_first", 0)
    )
    with_stale = [r for r in outcome.records if not r.passed]
    assert with_stale, "every question with a superseded value should fail"
    for r in with_stale:
        assert r.verdict.startswith("fail: the value true then is not the first value shown")
        assert r.first_items[0][0] == "stale"
        assert len(r.first_items) == SHOWN_ITEMS and r.returned > SHOWN_ITEMS
    current = [r for r in with_stale if r.kind == "current"]
    assert current and all("superseded value is shown as current" in r.verdict for r in current)
    assert all(len(text) <= SHOWN_CHARS for r in outcome.records for _, text in r.first_items)


async def test_the_report_gives_shares_counts_reasons_and_every_question(tmp_path: Path) -> None:
    with quiet() as progress:
        ran = await ask(KnowledgeMethod("stale", "flat", "d", stale_first), CONVERSATIONS, progress)
        facts = KnowledgeMethod("facts", "facts", "d", missing="not available: no")
        missing = await ask(facts, CONVERSATIONS, progress)
    report = KnowledgeReport([ran, missing], {"dataset": {"questions": ASKED}}, ["a note"])
    write_report(report, tmp_path)

    results = json.loads((tmp_path / RESULTS_JSON).read_text())
    assert results["dataset"] == {"questions": ASKED}
    by_name = {m["name"]: m for m in results["methods"]}
    assert by_name["facts"]["available"] is False
    assert by_name["facts"]["reason_not_run"] == "not available: no"
    assert by_name["stale"]["counts"]["all"]["questions"] == ASKED
    assert set(by_name["stale"]["shares"]) <= {*KINDS, "all"}
    assert len(results["questions"]) == ASKED
    assert {"question", "first_items", "verdict", "passed"} <= set(results["questions"][0])
    text = (tmp_path / RESULTS_MD).read_text()
    assert text == markdown(report)
    assert "| stale |" in text and "Not available: no." in text and "a note" in text
    assert sum(line.startswith("| ku0") for line in text.splitlines()) == ASKED
    assert "## Questions" not in markdown(report, questions=False)


def test_each_session_is_closed_after_its_last_turn_in_publishing_order() -> None:
    conversation = load_all()[0]
    events = list(session_events(conversation))
    ends = [i for i, e in enumerate(events) if e["type"] == "session_end.v1"]
    published = sorted(conversation["sessions"], key=lambda s: s["published_order"])
    assert [events[i]["session_id"] for i in ends] == [s["session_id"] for s in published]
    for i in ends:
        last_turn = events[i - 1]
        assert last_turn["type"] == "turn.v1"
        assert events[i]["session_id"] == last_turn["session_id"]
        assert events[i]["ts"] == last_turn["ts"]
        assert events[i]["user_id"] == conversation["user_id"]
    assert [e for e in events if e["type"] == "turn.v1"] == list(turn_events(conversation))


async def test_a_run_over_several_splits_is_reported_by_split_too(tmp_path: Path) -> None:
    """The tuned split and each blind one apart: the spread between them is the point."""
    by_id = {c["conversation_id"]: c for c in load_all()}
    chosen = [by_id[i] for i in ("ku01", "ku02", "ku35", "ku45")]
    with quiet() as progress:
        ran = await ask(KnowledgeMethod("oracle", "flat", "d", expected_only), chosen, progress)
    report = KnowledgeReport([ran], {})
    write_report(report, tmp_path)
    split = json.loads((tmp_path / RESULTS_JSON).read_text())["methods"][0]["counts_by_split"]
    members = {"ku01-ku34": ("ku01", "ku02"), "ku35-ku44": ("ku35",), "ku45-ku54": ("ku45",)}
    asked = {s: sum(len(by_id[i]["questions"]) for i in ids) for s, ids in members.items()}
    assert {s: t["all"]["questions"] for s, t in split.items()} == asked
    assert all(t["all"]["passed"] == t["all"]["questions"] for t in split.values())
    rows = [line for line in markdown(report).splitlines() if line.startswith("| ku")]
    assert [row.split(" (")[0] for row in rows[:3]] == ["| ku01-ku34", "| ku35-ku44", "| ku45-ku54"]
    # One split alone has no such table.
    with quiet() as progress:
        alone = await ask(
            KnowledgeMethod("oracle", "flat", "d", expected_only), chosen[:2], progress
        )
    assert "By split" not in markdown(KnowledgeReport([alone], {}))
