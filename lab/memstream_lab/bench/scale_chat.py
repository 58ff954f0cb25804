"""Generated chat for the scale benchmark: users whose sessions look like LoCoMo's.

What is taken from the LoCoMo dev conversations (`../shared/data/locomo`, read at run time,
nothing copied): three empirical distributions, the words per message, the messages per
session and the days between one session and the next. A user's chat is drawn from them
with a seeded generator: session lengths and message lengths are resampled as they are; the
gaps are resampled and then scaled so that the user's sessions fill the span asked for (a
heavy user's 100,000 messages over five years talk far more often than LoCoMo's speakers,
who meet every few weeks). The words are not LoCoMo's: each message is a sentence from a
small fixed vocabulary cut or padded to its drawn length, and about one message in eight
states a fact about the speaker ("I work as a nurse"), so the knowledge hashes fill as they
would. Message `seq` numbers restart at every session, at `SECONDS_PER_MESSAGE` apart, as the
LoCoMo loader dates them. `l1s_of` cuts wire events into the L1s the segmenter writes for
them, for the knowledge benchmarks.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstream.contracts.codec import decode_input
from memstream.domain.models import MemoryNode, SessionEnded, Summary, Turn
from memstream.domain.nodes import segment_node
from memstream.domain.windows import SegmentReady, WindowRules, apply, initial_state
from memstream_lab.bench.synthetic import NAMES, TOPICS, VERBS
from memstream_lab.locomo import SECONDS_PER_MESSAGE, conversation_files, parse_session_datetime

START = datetime(2021, 1, 4, 9, 0, tzinfo=UTC)
FACT_SHARE = 8  # one message in this many states a fact
JOBS = ["nurse", "teacher", "QA engineer", "paralegal", "chef", "pilot", "designer", "barista"]
CITIES = ["Lisbon", "Tokyo", "Oslo", "Denver", "Nairobi", "Lyon", "Austin", "Seoul"]
FACT_FORMS = [
    "I work as a {job} now.",
    "I live in {city} these days.",
    "My favourite hobby is {topic}.",
    "My sister {name} moved to {city}.",
]


@dataclass(frozen=True)
class ChatShape:
    """The distributions a user's chat is drawn from."""

    words_per_message: tuple[int, ...]
    messages_per_session: tuple[int, ...]
    days_between_sessions: tuple[float, ...]

    def summary(self) -> dict[str, Any]:
        def mean(values: tuple[float, ...] | tuple[int, ...]) -> float:
            return round(sum(values) / len(values), 2)

        return {
            "source": "LoCoMo dev conversations, resampled (lengths) and rescaled (gaps)",
            "messages": len(self.words_per_message),
            "sessions": len(self.messages_per_session),
            "mean_words_per_message": mean(self.words_per_message),
            "mean_messages_per_session": mean(self.messages_per_session),
            "mean_days_between_sessions": mean(self.days_between_sessions),
        }


def locomo_shape(data_dir: Path | None = None) -> ChatShape:
    """The three distributions, read from the LoCoMo files (dates as the loader reads them)."""
    words: list[int] = []
    sessions: list[int] = []
    gaps: list[float] = []
    for path in conversation_files(data_dir):
        body = json.loads(path.read_text(encoding="utf-8"))
        body = body.get("conversation", body)
        starts: list[datetime] = []
        n = 1
        while f"session_{n}" in body:
            messages = body[f"session_{n}"]
            sessions.append(len(messages))
            words += [max(1, len(str(m.get("text", "")).split())) for m in messages]
            starts.append(parse_session_datetime(body[f"session_{n}_date_time"]))
            n += 1
        ordered = sorted(starts)
        gaps += [(b - a).total_seconds() / 86_400 for a, b in itertools.pairwise(ordered)]
    if not words or not gaps:
        raise ValueError("no LoCoMo sessions found")
    return ChatShape(tuple(words), tuple(sessions), tuple(g for g in gaps if g > 0) or (1.0,))


def _sentence(rnd: random.Random, words: int) -> str:
    if rnd.randrange(FACT_SHARE) == 0:
        return rnd.choice(FACT_FORMS).format(
            job=rnd.choice(JOBS),
            city=rnd.choice(CITIES),
            topic=rnd.choice(TOPICS),
            name=rnd.choice(NAMES),
        )
    out: list[str] = []
    while len(out) < words:
        out += f"{rnd.choice(NAMES)} {rnd.choice(VERBS)} the {rnd.choice(TOPICS)}".split()
    return " ".join(out[:words]) + "."


def sessions_of(shape: ChatShape, messages: int, rnd: random.Random) -> list[int]:
    """Session lengths adding up to `messages`."""
    lengths: list[int] = []
    while sum(lengths) < messages:
        lengths.append(rnd.choice(shape.messages_per_session))
    lengths[-1] -= sum(lengths) - messages
    return [n for n in lengths if n > 0]


def user_chat(
    user_id: str, shape: ChatShape, messages: int, span_days: float, seed: int = 37
) -> Iterator[dict[str, Any]]:
    """A user's wire events (`turn.v1`, each session closed by `session_end.v1`), in order."""
    rnd = random.Random(f"{seed}-{user_id}")
    lengths = sessions_of(shape, messages, rnd)
    drawn = [rnd.choice(shape.days_between_sessions) for _ in lengths]
    scale = span_days / max(sum(drawn), 1e-9)
    at = START + timedelta(hours=rnd.uniform(0, 10))
    speakers = (f"{user_id}-me", f"{user_id}-friend")
    for number, (length, gap) in enumerate(zip(lengths, drawn, strict=True)):
        session_id = f"{user_id}-s{number}"
        ts = at
        for seq in range(length):
            ts = at + timedelta(seconds=seq * SECONDS_PER_MESSAGE)
            yield {
                "type": "turn.v1",
                "event_id": f"{session_id}-m{seq}",
                "user_id": user_id,
                "session_id": session_id,
                "seq": seq,
                "speaker": speakers[seq % 2],
                "role": "user" if seq % 2 == 0 else "other",
                "text": _sentence(rnd, rnd.choice(shape.words_per_message)),
                "ts": ts.isoformat(),
                "tz": "UTC",
            }
        yield {
            "type": "session_end.v1",
            "user_id": user_id,
            "session_id": session_id,
            "ts": ts.isoformat(),
        }
        # At least the session's own length apart, so sessions never overlap.
        at = ts + max(timedelta(days=gap * scale), timedelta(minutes=5))


def l1s_of(user_id: str, events: Sequence[dict[str, Any]]) -> list[MemoryNode]:
    """The L1s the segmenter writes for these wire events (the window reducer's segments)."""
    rules = WindowRules()
    state = initial_state(user_id, "UTC")
    leaves: list[MemoryNode] = []
    for value in events:
        event = decode_input(value)
        if not isinstance(event, Turn | SessionEnded):
            continue
        state, outputs = apply(state, event, datetime.now(UTC), rules)
        for out in outputs:
            if isinstance(out, SegmentReady):
                text = " ".join(m.text for m in out.messages)
                leaves.append(segment_node(user_id, out, Summary(text)))
    return leaves
