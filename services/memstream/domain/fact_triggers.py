"""Which fact patterns a sentence may fire, looked up by its words: each pattern lists
trigger words one of which every sentence it matches holds (`fact_patterns`), so a sentence
is tried only by the patterns of the trigger words it holds, in their order. The lookup
costs one probe a word of the sentence, not one test a pattern. Pure, standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memstream.domain.fact_patterns import Pattern


@dataclass(frozen=True, slots=True)
class TriggerIndex:
    """Patterns in the order they are tried, and by trigger word the places of theirs."""

    patterns: tuple[Pattern, ...]
    by_word: Mapping[str, tuple[int, ...]]
    vocabulary: frozenset[str]  # every trigger word

    def candidates(self, words: Iterable[str]) -> list[Pattern]:
        """The patterns, in their order, with a trigger word among `words` (lower case): a
        pattern with none cannot match the sentence."""
        places: set[int] = set()
        for word in self.vocabulary.intersection(words):
            places.update(self.by_word[word])
        return [self.patterns[i] for i in sorted(places)]


def trigger_index(patterns: Sequence[Pattern]) -> TriggerIndex:
    by_word: dict[str, list[int]] = {}
    for place, pattern in enumerate(patterns):
        for word in pattern.triggers:
            by_word.setdefault(word, []).append(place)
    return TriggerIndex(
        tuple(patterns), {w: tuple(p) for w, p in by_word.items()}, frozenset(by_word)
    )
