"""L1 text without a language model: an exchange, dated, in the words of its speakers.

`8 May 2023, Caroline: "I went to a support group yesterday." Melanie: "..."`: every
message is quoted whole and as written (no rewriting of "I" or "you", which cannot be done
reliably by rules), attributed to its speaker under the date it was said. A shared image's
caption is metadata, not speech, so it is marked as such: `[photo: a dog on a beach]`.
Pure rules, standard library only; the offline backend (`adapters/llm/offline.py`) serves
them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memstream.domain.calendar import spelled_day
from memstream.domain.models import Turn

# Where one sentence ends; summaries (`summary_text`) split messages with it too. Chinese
# and Japanese full stops and marks need no space after them; the Arabic question mark and
# the Devanagari danda end sentences too.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f\u061f\u0964])\s*|\n+")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# Keys under which producers put what a shared image shows (LoCoMo: `blip_caption`).
CAPTION_KEYS = ("caption", "blip_caption")


def caption_of(turn: Turn) -> str | None:
    """The caption of an image the turn shared, if any."""
    for key in CAPTION_KEYS:
        found = turn.metadata.get(key)
        if isinstance(found, str) and found.strip():
            return " ".join(found.split()).rstrip(".")
    return None


def local_time(instant: datetime, tz: str | None) -> datetime:
    """The instant in the user's zone: "8 May" must be the user's 8 May."""
    if not tz:
        return instant
    try:
        return instant.astimezone(ZoneInfo(tz))
    except (ZoneInfoNotFoundError, ValueError):
        return instant  # the producer's offset is the next best guess


def dated(instant: datetime, *, year: bool = True) -> str:
    """`8 May 2023 (Mon)`: the weekday answers "the Sunday before" questions at 3 tokens."""
    return f"{spelled_day(instant, year=year)} ({WEEKDAYS[instant.weekday()]})"


def quoted(speaker: str, text: str, caption: str | None) -> str:
    """`Caroline: "words" [photo: caption]`, whitespace collapsed."""
    body = " ".join(text.split())
    parts = [f'{speaker}: "{body}"' if body else f"{speaker}:"]
    if caption:
        parts.append(f"[photo: {caption}]")
    return " ".join(parts)


def render_segment(messages: Sequence[Turn]) -> str:
    """`8 May 2023, Caroline: "..." Melanie: "..."`."""
    first = messages[0]
    lines = [quoted(m.speaker, m.text, caption_of(m)) for m in messages]
    # No weekday here (summary headers carry it): recall pays for every leaf's prefix, and
    # three tokens more per leaf cost about 0.01 evidence recall at the same budget.
    return f"{spelled_day(local_time(first.ts, first.tz))}, " + " ".join(lines)
