"""One person, one subject: what others say about a speaker by name joins what the speaker
says about themself.

A fact is keyed as its message reads it (`fact_extraction`, `adapters.llm.fact_output`): "I
moved to Curitiba" said by Ana is about `speaker:ana`, "Ana moved to Curitiba" said by Mateus
about `ana`, since one message cannot tell whether the Ana it names ever speaks. Kept apart,
the two keys make two timelines of one slot, and a city Ana names herself never closes the
one Mateus told before it. So on read, a subject keyed by a name that is also a speaker's
is that speaker (`as_speakers`): the set of speakers comes from the facts themselves, so
the result depends only on what was said, and the facts keep their ids. The write path's
change feed still reads each message's own key. Pure, standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from memstream.domain.facts import SPEAKER_PREFIX, AtomicFact


def speakers_of(facts: Iterable[AtomicFact]) -> frozenset[str]:
    """The speaker keys among the facts' subjects ("speaker:ana")."""
    return frozenset(f.subject for f in facts if f.subject.startswith(SPEAKER_PREFIX))


def as_speakers(
    facts: Iterable[AtomicFact], speakers: frozenset[str] | None = None
) -> tuple[AtomicFact, ...]:
    """The facts, each about a name that is a speaker's (of `speakers`, by default those
    among the facts) keyed as that speaker, with the speaker's own display name."""
    chosen = tuple(facts)
    known = speakers_of(chosen) if speakers is None else speakers
    if not known:
        return chosen
    shown = {f.subject: f.subject_name for f in chosen if f.subject in known}
    return tuple(_as_speaker(f, known, shown) for f in chosen)


def _as_speaker(fact: AtomicFact, speakers: frozenset[str], shown: dict[str, str]) -> AtomicFact:
    key = SPEAKER_PREFIX + fact.subject
    if key not in speakers:
        return fact
    return dataclasses.replace(fact, subject=key, subject_name=shown.get(key, fact.subject_name))
