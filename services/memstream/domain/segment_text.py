"""L1 text without a language model: an exchange, dated, in the words of its speakers.

`On 8 May 2023, Caroline said they went to ... Melanie said ...`: every message is kept
whole (so lexical search finds every content word), attributed to its speaker, with first
person as "they" and, between two people, "you" as the other speaker's name. Pure rules,
standard library only; the offline backend (`adapters/llm/offline.py`) serves them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memstream.domain.calendar import spelled_day
from memstream.domain.lexical import tokenize
from memstream.domain.models import Turn

# Where one sentence ends; summaries (`summary_text`) split L1 texts with it too.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD_OR_GAP = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|[^A-Za-z]+")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# First person becomes singular "they": its verbs agree with "I" except am/was.
_FIRST_PERSON = {
    "i": "they",
    "me": "them",
    "my": "their",
    "myself": "themselves",
    "i'm": "they're",
    "i've": "they've",
    "i'll": "they'll",
    "i'd": "they'd",
}
_I_VERBS = {"am": "are", "was": "were"}
# Second person becomes the other speaker's name, with the verb put in the third person.
_YOU_FORMS = {
    "you're": "{} is",
    "you've": "{} has",
    "you'll": "{} will",
    "you'd": "{} would",
    "your": "{}'s",
    "yours": "{}'s",
    "yourself": "{}",
}
_YOU_VERBS = {"are": "is", "were": "was", "have": "has", "do": "does"}
_AUXILIARIES = _words(
    """can could will would should shall may might must did does do to let don't didn't won't
    can't couldn't wouldn't shouldn't"""
)
# Verbs common after "you" in chat; anything else is left as written rather than guessed at.
_CONJUGATE = _words(
    """want like love know think need feel make see look seem mean say enjoy get take hope
    remember work play live plan paint read write run use keep find come try believe
    deserve sound miss wish watch"""
)


def _third_singular(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x")):
        conjugated = verb + "es"
    elif verb.endswith("y") and verb[-2:-1] not in "aeiou":
        conjugated = verb[:-1] + "ies"
    else:
        conjugated = verb + "s"
    # Where the conjugated form would stem apart from the verb ("goes" vs "go"), "does go"
    # keeps the word that lexical search will look for.
    return conjugated if tokenize(conjugated) == tokenize(verb) else f"does {verb}"


def _match_case(original: str, replacement: str) -> str:
    return replacement[0].upper() + replacement[1:] if original[0].isupper() else replacement


def third_person(text: str, addressee: str | None) -> str:
    """Rewrite first person as "they" and, with one addressee, "you" as their name."""
    parts = _WORD_OR_GAP.findall(text.replace("\u2019", "'"))
    words = [i for i, p in enumerate(parts) if p[0].isalpha()]
    out = list(parts)
    for n, i in enumerate(words):
        low = parts[i].lower()
        prev = parts[words[n - 1]].lower() if n > 0 else ""
        nxt = parts[words[n + 1]].lower() if n + 1 < len(words) else ""
        if low in _FIRST_PERSON:
            # "I" is capitalised anywhere; only a sentence start keeps a capital.
            at_start = i == 0 or bool(re.search(r"[.!?]\s*$", parts[i - 1]))
            out[i] = _FIRST_PERSON[low].capitalize() if at_start else _FIRST_PERSON[low]
        elif low in _I_VERBS and "i" in (prev, nxt):
            out[i] = _match_case(parts[i], _I_VERBS[low])
        elif addressee is None:
            continue
        elif low in _YOU_FORMS:
            out[i] = _YOU_FORMS[low].format(addressee)
        elif low == "you":
            out[i] = addressee
            if prev in _YOU_VERBS:  # "are you", "do you": the question inverts the verb
                out[words[n - 1]] = _match_case(parts[words[n - 1]], _YOU_VERBS[prev])
            elif nxt in _YOU_VERBS and nxt != "do" and prev not in _AUXILIARIES:
                out[words[n + 1]] = _YOU_VERBS[nxt]
            elif nxt in _CONJUGATE and prev not in _AUXILIARIES:
                out[words[n + 1]] = _third_singular(nxt)
    return "".join(out)


def _proper_nouns(texts: Sequence[str]) -> set[str]:
    """Capitalised words seen inside a sentence (not first): names, places, titles."""
    found: set[str] = set()
    for text in texts:
        for sentence in SENTENCE_BREAK.split(text):
            found.update(w for w in re.findall(r"[A-Za-z][\w'-]*", sentence)[1:] if w[0].isupper())
    return found


def _after_said(body: str, proper: set[str]) -> str:
    """Lower-case the first letter after "X said", unless it starts a name or an acronym."""
    first = re.match(r"[A-Za-z][\w'-]*", body)
    if first is None or first.group() in proper or first.group().isupper():
        return body
    return body[0].lower() + body[1:]


def _local_time(turn: Turn) -> datetime:
    """The turn's time in the user's zone: "8 May" must be the user's 8 May."""
    if not turn.tz:
        return turn.ts
    try:
        return turn.ts.astimezone(ZoneInfo(turn.tz))
    except (ZoneInfoNotFoundError, ValueError):
        return turn.ts  # the producer's offset is the next best guess


def render_segment(messages: Sequence[Turn]) -> str:
    """`On 8 May 2023, Caroline said they went to ... Melanie said ...`."""
    first = messages[0]
    when = _local_time(first)
    speakers = list(dict.fromkeys(m.speaker for m in messages))
    proper = _proper_nouns([m.text for m in messages]) | {w for s in speakers for w in s.split()}
    sentences: list[str] = []
    for message in messages:
        others = [s for s in speakers if s != message.speaker]
        body = " ".join(message.text.split())
        if body:
            body = _after_said(third_person(body, others[0] if len(others) == 1 else None), proper)
            end = "" if body[-1] in ".!?" else "."
            sentences.append(f"{message.speaker} said {body}{end}")
        # Shared images reach us as captions (e.g. LoCoMo's `blip_caption`); keep what they show.
        caption = message.metadata.get("caption") or message.metadata.get("blip_caption")
        if isinstance(caption, str) and caption.strip():
            sentences.append(f"{message.speaker} shared a photo of {caption.strip().rstrip('.')}.")
    if not sentences:
        sentences.append(f"{first.speaker} sent an empty message.")
    return f"On {spelled_day(when)}, " + " ".join(sentences)
