"""The knowledge-update set is well formed, internally consistent and varied in its wording."""

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from memstream_lab.knowledge.dataset import (
    DATA_DIR,
    SCHEMA_PATH,
    SPLITS,
    conversation_text,
    evaluate,
    ids_in,
    load_all,
    question_for_scoring,
    set_size,
    turn_events,
)
from memstream_lab.knowledge.score import KINDS, ReturnedItem, mentions

TURNS_TOPIC = Path(__file__).resolve().parents[3] / "topics" / "memstream.turns.v1.json"
CONVERSATIONS = load_all()
IDS = [c["conversation_id"] for c in CONVERSATIONS]
OPENING_WORDS = 5
# Each split after the first was written without reading the extraction rules, and is held
# against every conversation written before it.
_SPLITS = list(SPLITS)
BLIND_SPLITS = {split: ",".join(_SPLITS[:i]) for i, split in enumerate(_SPLITS) if i}


def _when(ts: str) -> datetime:
    return datetime.fromisoformat(ts)


def _forms(question: dict[str, Any]) -> list[str]:
    return [question["expected"], *question["accepted"]]


def _changes(
    conversation: dict[str, Any], subject: str, attribute: str
) -> list[tuple[datetime, str | None]]:
    """The values one subject's attribute took in event-time order; None where one just ended."""
    facts = [
        f
        for f in conversation["facts"]
        if (f["subject"], f["attribute"]) == (subject, attribute)
        and f["change"] in ("initial", "update", "ended")
    ]
    timeline = sorted((_when(f["valid_from"]), f["change"], f["value"]) for f in facts)
    return [(start, None if change == "ended" else value) for start, change, value in timeline]


def _values(changes: list[tuple[datetime, str | None]]) -> list[str]:
    return [value for _, value in changes if value is not None]


def _held_at(changes: list[tuple[datetime, str | None]], at: datetime) -> str | None:
    held = [value for start, value in changes if start <= at]
    return held[-1] if held else None


def _names_value(forms: list[str], value: str) -> bool:
    return any(mentions(form, value) or mentions(value, form) for form in forms)


def test_the_set_has_at_least_32_conversations_with_4_questions_each() -> None:
    assert len(CONVERSATIONS) >= 32
    assert all(len(c["questions"]) >= 4 for c in CONVERSATIONS)
    kinds = Counter(q["kind"] for c in CONVERSATIONS for q in c["questions"])
    assert min(kinds[k] for k in ("current", "previous", "past", "other_person")) >= 8


@pytest.mark.parametrize(("split", "earlier"), list(BLIND_SPLITS.items()), ids=list(BLIND_SPLITS))
def test_the_split_written_blind_stands_on_its_own(split: str, earlier: str) -> None:
    """Each blind split asks every kind, publishes sessions late, ends values, and asks about
    attributes the conversations before it never use: a score on it is not one pattern's score."""
    blind_ids, earlier_ids = ids_in(split), ids_in(earlier)
    blind = [c for c in CONVERSATIONS if c["conversation_id"] in blind_ids]
    tuned = [c for c in CONVERSATIONS if c["conversation_id"] in earlier_ids]
    assert [c["conversation_id"] for c in blind] == list(blind_ids)
    assert [c["conversation_id"] for c in tuned] == list(earlier_ids)
    kinds = Counter(q["kind"] for c in blind for q in c["questions"])
    assert min(kinds[k] for k in KINDS) >= 8
    changes = Counter(f["change"] for c in blind for f in c["facts"])
    assert changes["late"] >= 3 and changes["ended"] >= 2 and changes["restatement"] >= 10
    asked = {q["attribute"] for c in blind for q in c["questions"]}
    assert len(asked - {q["attribute"] for c in tuned for q in c["questions"]}) >= 5
    # Other people's values are asked about in every conversation but one at most.
    assert sum(any(q["kind"] == "other_person" for q in c["questions"]) for c in blind) >= 9


def test_the_splits_hold_every_conversation_once() -> None:
    assert sorted(i for split in SPLITS for i in ids_in(split)) == sorted(IDS)


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=IDS)
def test_each_file_validates_against_the_schema(conversation: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    validator.validate(conversation)


def test_every_file_in_the_folder_is_a_conversation_or_the_schema() -> None:
    names = {p.name for p in DATA_DIR.glob("*.json")}
    assert names == {f"{i}.json" for i in IDS} | {"schema.json"}


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=IDS)
def test_turns_become_valid_turn_events_in_published_order(conversation: dict[str, Any]) -> None:
    topic = json.loads(TURNS_TOPIC.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(topic["values"]["turn.v1"])
    events = list(turn_events(conversation))
    for event in events:
        validator.validate(event)
    assert len({e["event_id"] for e in events}) == len(events)
    published = sorted(s["published_order"] for s in conversation["sessions"])
    assert published == list(range(1, len(published) + 1))
    for session in conversation["sessions"]:
        times = [_when(t["ts"]) for t in session["turns"]]
        assert [t["seq"] for t in session["turns"]] == list(range(len(times)))
        assert times == sorted(times) and times[0] >= _when(session["date"])


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=IDS)
def test_facts_point_at_the_turn_that_states_them(conversation: dict[str, Any]) -> None:
    turns = {
        (s["session_id"], t["seq"]): t["text"] for s in conversation["sessions"] for t in s["turns"]
    }
    for fact in conversation["facts"]:
        text = turns[(fact["session_id"], fact["seq"])]
        assert fact["evidence"] in text
        if fact["stated"] == "explicit":
            assert mentions(text, fact["value"]), fact
    assert any(f["change"] == "update" for f in conversation["facts"])


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=IDS)
def test_answers_appear_in_the_conversation_and_cannot_be_confused(
    conversation: dict[str, Any],
) -> None:
    text = conversation_text(conversation)
    for question in conversation["questions"]:
        assert mentions(text, question["expected"]), question["question_id"]
        for other in (*question["superseded"], *question.get("distractors", ())):
            assert mentions(text, other), (question["question_id"], other)
            # A form naming another value (or the reverse) would make the scorer ambiguous.
            assert not _names_value(_forms(question), other), (question["question_id"], other)
        question_for_scoring(question)


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=IDS)
def test_expected_values_follow_from_the_fact_timeline(conversation: dict[str, Any]) -> None:
    user = conversation["participants"][0]
    for question in conversation["questions"]:
        changes = _changes(conversation, question["subject"], question["attribute"])
        qid = question["question_id"]
        if question["kind"] == "past":
            asked = _when(question["query_time"])
            held = _held_at(changes, asked)
            assert held is not None and _names_value(_forms(question), held), qid
            assert _when(conversation["sessions"][0]["date"]) < asked
        elif question["kind"] == "previous":
            values = _values(changes)
            assert len(values) >= 2 and _names_value(_forms(question), values[-2]), qid
        else:
            current = changes[-1][1] if changes else None
            assert current is not None and _names_value(_forms(question), current), qid
        # Superseded values start with one the subject really held (the rest may be its forms).
        held_ever = [
            f["value"] for f in conversation["facts"] if f["subject"] == question["subject"]
        ]
        for stale in question["superseded"][:1]:
            assert any(_names_value([value], stale) for value in held_ever), (qid, stale)
        if question["kind"] == "other_person":
            assert question["subject"] != user


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=IDS)
def test_restatements_and_late_messages_agree_with_the_timeline(
    conversation: dict[str, Any],
) -> None:
    """A re-statement repeats the value then current; a late message the value held at its date."""
    for fact in conversation["facts"]:
        if fact["change"] in ("restatement", "late"):
            changes = _changes(conversation, fact["subject"], fact["attribute"])
            held = _held_at(changes, _when(fact["valid_from"]))
            assert held is not None and _names_value([held], fact["value"]), fact


def test_set_size_counts_what_the_files_hold() -> None:
    size = set_size(CONVERSATIONS)
    assert size["conversations"] == len(CONVERSATIONS)
    assert size["turns"] == sum(len(list(turn_events(c))) for c in CONVERSATIONS)
    assert size["questions"] == sum(
        size[f"questions_{k}"] for k in ("current", "previous", "past", "other_person")
    )
    assert size["fact_changes"] >= len(CONVERSATIONS)


def test_late_sessions_are_published_after_newer_ones() -> None:
    conversation = next(c for c in CONVERSATIONS if c["conversation_id"] == "ku01")
    dates = [_when(e["ts"]) for e in turn_events(conversation)]
    assert dates != sorted(dates)
    assert [e["seq"] for e in turn_events(conversation)][:2] == [0, 1]


def test_some_conversations_publish_a_session_late() -> None:
    def has_late_session(conversation: dict[str, Any]) -> bool:
        sessions = sorted(conversation["sessions"], key=lambda s: s["published_order"])
        return any(
            _when(later["date"]) < _when(earlier["date"])
            for i, earlier in enumerate(sessions)
            for later in sessions[i + 1 :]
        )

    late = [c for c in CONVERSATIONS if has_late_session(c)]
    assert len(late) >= 5
    for conversation in late:
        assert any(f["change"] == "late" for f in conversation["facts"])


def _opening(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"[\w']+", text.casefold())[:OPENING_WORDS])


def test_no_two_fact_sentences_share_an_opening_or_a_shape() -> None:
    """Varied wording: fact-bearing turns start differently; no evidence repeats a shape."""
    openings: Counter[tuple[str, ...]] = Counter()
    shapes: Counter[str] = Counter()
    for conversation in CONVERSATIONS:
        turns = {
            (s["session_id"], t["seq"]): t["text"]
            for s in conversation["sessions"]
            for t in s["turns"]
        }
        stating_turns = {(f["session_id"], f["seq"]) for f in conversation["facts"]}
        openings.update(_opening(turns[key]) for key in stating_turns)
        for fact in conversation["facts"]:
            shape = re.sub(re.escape(fact["value"]), "<value>", fact["evidence"], flags=re.I)
            shapes[re.sub(r"[A-Z][\w']*", "<name>", shape)] += 1
    assert [o for o, n in openings.items() if n > 1] == []
    assert [s for s, n in shapes.items() if n > 1] == []


def _fact_items(conversation: dict[str, Any], question: dict[str, Any]) -> list[ReturnedItem]:
    """The subject's timeline as a facts route would return it: each value with its validity."""
    changes = _changes(conversation, question["subject"], question["attribute"])
    items = []
    for i, (start, value) in enumerate(changes):
        if value is None:
            continue
        end = changes[i + 1][0] if i + 1 < len(changes) else None
        text = f"{question['subject']}, {question['attribute']}: {value}"
        items.append(ReturnedItem(text, valid_from=start, valid_to=end))
    return items


def _ideal_route(conversation: dict[str, Any], question: dict[str, Any]) -> list[ReturnedItem]:
    """The answer first (the value held at the asked time, or the one before now), then the rest."""
    items = _fact_items(conversation, question)
    if question["kind"] == "previous":
        first = items[-2]
    elif question["kind"] == "past":
        asked = _when(question["query_time"])
        first = next(
            i
            for i in items
            if i.valid_from is not None
            and i.valid_from <= asked
            and (i.valid_to is None or asked < i.valid_to)
        )
    else:
        first = items[-1]
    return [first, *(i for i in items if i is not first)]


def _undated_newest_first(
    conversation: dict[str, Any], question: dict[str, Any]
) -> list[ReturnedItem]:
    """The same facts without validity, newest first: a store without supersession."""
    return [ReturnedItem(i.text) for i in reversed(_fact_items(conversation, question))]


def test_a_facts_route_with_validity_passes_every_question() -> None:
    assert evaluate(CONVERSATIONS, _ideal_route) == {
        "current": 1.0,
        "previous": 1.0,
        "past": 1.0,
        "other_person": 1.0,
        "all": 1.0,
    }


def test_the_same_facts_without_validity_fail_current_questions_with_history() -> None:
    shares = evaluate(CONVERSATIONS, _undated_newest_first)
    assert shares["current"] == 0.0
    assert shares["previous"] == 0.0
