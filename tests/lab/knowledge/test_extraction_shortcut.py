"""The extractor passes over sentences without a subject word, tries a pattern only on
sentences holding one of its trigger words, and one opening with a clause head only where
one begins; over every turn of the knowledge-update set none changes a fact, only how long
extraction takes."""

from __future__ import annotations

import re

import pytest

from memstream.domain import fact_extraction
from memstream.domain.fact_triggers import TriggerIndex
from memstream.domain.models import SourceMessage
from memstream_lab.knowledge.dataset import load_all
from memstream_lab.knowledge.reading import messages_of


def messages() -> list[SourceMessage]:
    return [m for conversation in load_all() for m in messages_of(conversation).values()]


def test_skipping_sentences_without_a_subject_word_changes_no_fact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said = messages()
    shortcut = fact_extraction.extract_facts(said, user_id="u")
    monkeypatch.setattr(fact_extraction, "_SUBJECT_WORD", re.compile(""))  # every sentence
    assert fact_extraction.extract_facts(said, user_id="u") == shortcut


def test_reading_a_sentence_with_only_a_name_by_every_named_pattern_changes_no_fact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said = messages()
    shortcut = fact_extraction.extract_facts(said, user_id="u")
    monkeypatch.setattr(fact_extraction, "NAMED_SUBJECT", re.compile(""))  # every sentence
    assert fact_extraction.extract_facts(said, user_id="u") == shortcut
    assert len(shortcut) >= 10  # the set states facts: the comparison is not of nothing


def test_trying_only_patterns_whose_trigger_words_occur_changes_no_fact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said = messages()
    gated = fact_extraction.extract_facts(said, user_id="u")
    monkeypatch.setattr(TriggerIndex, "candidates", lambda self, words: list(self.patterns))
    assert fact_extraction.extract_facts(said, user_id="u") == gated
    assert len({f.attribute for f in gated}) >= 5  # many patterns fired, not one


def test_trying_patterns_only_where_a_clause_head_begins_changes_no_fact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said = messages()
    at_heads = fact_extraction.extract_facts(said, user_id="u")
    monkeypatch.setattr(fact_extraction, "_CLAUSE_HEAD", re.compile(""))  # every position
    assert fact_extraction.extract_facts(said, user_id="u") == at_heads
