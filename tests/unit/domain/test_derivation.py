"""A derivation names everything that shaped a node, the stemmer of its lexical vector too."""

from __future__ import annotations

from memstream.domain.derivation import LIGHT_LEXICON, Derivation
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
