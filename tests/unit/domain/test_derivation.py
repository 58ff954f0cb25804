"""A derivation names everything that shaped a node, the stemmer of its lexical vector too."""

from __future__ import annotations

from memstream.domain.derivation import (
    FIRST_EXTRACTION,
    LIGHT_LEXICON,
    NO_EXTRACTION,
    RULES_EXTRACTION,
    Derivation,
)
from memstream.domain.lexical import LEXICON

NOW = Derivation("offline", "rules", "p1", "hashing:384")


def test_a_derivation_names_the_current_lexicon_and_reads_back_whole() -> None:
    assert NOW.lexicon == LEXICON
    assert Derivation.from_json(NOW.to_json()) == NOW


def test_a_node_stored_before_the_lexicon_was_recorded_was_stemmed_the_light_way() -> None:
    stored = {k: v for k, v in NOW.to_json().items() if k != "lexicon"}
    before = Derivation.from_json(stored)
    assert before.lexicon == LIGHT_LEXICON != LEXICON
    # So a rebuild finds it out of date and writes its sparse vector again.
    assert before.key() != NOW.key()


def test_a_node_stored_before_the_extraction_was_recorded_reads_as_the_first_rules() -> None:
    assert NOW.extraction == RULES_EXTRACTION != FIRST_EXTRACTION
    stored = {k: v for k, v in NOW.to_json().items() if k != "extraction"}
    before = Derivation.from_json(stored)
    assert before.extraction == FIRST_EXTRACTION == "rules-1"
    # So a rebuild finds it read by older rules and reads its facts again.
    assert before.key() != NOW.key()
    # Another extraction (the write off, or other rules) is another derivation.
    off = Derivation.from_json({**NOW.to_json(), "extraction": NO_EXTRACTION})
    assert off.key() != NOW.key() and off != NOW
