"""Render the demo's story (story/*.json) into wire events.

    python -m memstream.entrypoints.embedded.demo.generate

The output is deterministic (string-seeded random, no wall clock), so the bundled files can
be regenerated and compared byte for byte. Timestamps carry the user's local offset, which
exercises the time-zone handling of the calendar windows.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from memstream.entrypoints.embedded.demo import DEMO_DIR, EVENTS_FILE, QUESTIONS_FILE
from memstream.entrypoints.embedded.demo.story import (
    PERSONA_FILES,
    Exchange,
    Persona,
    Phrases,
    SessionScript,
    load_persona,
    load_phrases,
    part_of_day,
)

ASSISTANT = "Mira"
SEED = "memstream-demo-v1"
MIN_EXCHANGES, MAX_EXCHANGES = 3, 7  # 6 to 14 messages per session
SMALL_TALK_CHANCE = 0.45
# Seconds before a message: people take a while to type, the assistant answers quickly.
# The user minimum puts a session started at 23:58 past midnight within a few exchanges.
USER_DELAY = (30, 180)
ASSISTANT_DELAY = (4, 15)


@dataclass(frozen=True, slots=True)
class Rendered:
    events: list[dict[str, Any]]
    fact_events: dict[str, str]  # fact name -> event_id of the user message stating it


def render_persona(persona: Persona, phrases: Phrases, seed: str = SEED) -> Rendered:
    """All events of one persona in time order, and where each fact was stated."""
    rng = random.Random(f"{seed}:{persona.user_id}")
    small_talk = list(persona.small_talk)
    rng.shuffle(small_talk)
    zone = ZoneInfo(persona.tz)
    events: list[dict[str, Any]] = []
    facts: dict[str, str] = {}
    for number, script in enumerate(persona.sessions, start=1):
        start = datetime.strptime(script.start, "%Y-%m-%d %H:%M").replace(tzinfo=zone)
        exchanges = _session_exchanges(script, start.hour, phrases, small_talk, rng)
        session_id = f"{persona.user_id}-s{number}"
        # Time is advanced in UTC: adding a timedelta to a zoned datetime is wall-clock
        # arithmetic, which would be wrong across a summer-time switch.
        instant = start.astimezone(UTC) + timedelta(seconds=rng.randint(0, 50))
        seq = 0
        for exchange in exchanges:
            for role, speaker, text in (
                ("user", persona.name, exchange.user),
                ("assistant", ASSISTANT, exchange.reply),
            ):
                if seq:
                    low, high = USER_DELAY if role == "user" else ASSISTANT_DELAY
                    instant += timedelta(seconds=rng.randint(low, high))
                event_id = f"{session_id}-{seq}"
                events.append(
                    {
                        "type": "turn.v1",
                        "event_id": event_id,
                        "user_id": persona.user_id,
                        "session_id": session_id,
                        "seq": seq,
                        "speaker": speaker,
                        "role": role,
                        "text": text.format(name=persona.name),
                        "ts": instant.astimezone(zone).isoformat(),
                        "tz": persona.tz,
                    }
                )
                if role == "user" and exchange.fact:
                    if exchange.fact in facts:
                        raise ValueError(f"{persona.user_id}: fact {exchange.fact!r} stated twice")
                    facts[exchange.fact] = event_id
                seq += 1
        if script.ended:
            events.append(
                {
                    "type": "session_end.v1",
                    "user_id": persona.user_id,
                    "session_id": session_id,
                    "ts": instant.astimezone(zone).isoformat(),
                    "tz": persona.tz,
                }
            )
    return Rendered(events, facts)


def _session_exchanges(
    script: SessionScript,
    hour: int,
    phrases: Phrases,
    small_talk: list[Exchange],
    rng: random.Random,
) -> list[Exchange]:
    exchanges = [rng.choice(phrases.greetings[part_of_day(hour)]), *script.exchanges]
    room = MAX_EXCHANGES - len(exchanges) - (1 if script.closing else 0)
    if room > 0 and small_talk and rng.random() < SMALL_TALK_CHANCE:
        exchanges.insert(1, small_talk.pop())
    if script.closing:
        exchanges.append(rng.choice(phrases.closings["day" if 6 <= hour < 21 else "night"]))
    if not MIN_EXCHANGES <= len(exchanges) <= MAX_EXCHANGES:
        raise ValueError(f"session at {script.start} has {len(exchanges)} exchanges")
    return exchanges


def questions_for(persona: Persona, fact_events: dict[str, str]) -> list[dict[str, Any]]:
    """The persona's recall questions with the event ids that hold each answer."""
    missing = {f for q in persona.questions for f in q.facts} - fact_events.keys()
    if missing:
        raise ValueError(f"{persona.user_id}: questions cite unknown facts {sorted(missing)}")
    return [
        {
            "question": q.question,
            "answer": q.answer,
            "evidence": [fact_events[fact] for fact in q.facts],
        }
        for q in persona.questions
    ]


def build(
    personas: Sequence[Persona] | None = None, phrases: Phrases | None = None
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Every persona's events merged in time order, and the questions keyed by user id.

    By default, the bundled story: the personas of PERSONA_FILES and the shared phrases."""
    if personas is None:
        personas = [load_persona(path) for path in PERSONA_FILES]
    phrases = phrases or load_phrases()
    keyed: list[tuple[datetime, str, int, dict[str, Any]]] = []
    questions: dict[str, list[dict[str, Any]]] = {}
    for persona in personas:
        rendered = render_persona(persona, phrases)
        keyed.extend(
            (datetime.fromisoformat(event["ts"]), persona.user_id, index, event)
            for index, event in enumerate(rendered.events)
        )
        questions[persona.user_id] = questions_for(persona, rendered.fact_events)
    keyed.sort(key=lambda item: item[:3])
    return [event for *_, event in keyed], questions


def write(out_dir: Path = DEMO_DIR) -> tuple[Path, Path]:
    """Write the events (JSONL) and the questions (JSON) into `out_dir`."""
    events, questions = build()
    out_dir.mkdir(parents=True, exist_ok=True)
    events_path, questions_path = out_dir / EVENTS_FILE, out_dir / QUESTIONS_FILE
    # newline="\n" keeps the bytes identical on every platform.
    with events_path.open("w", encoding="utf-8", newline="\n") as handle:
        for event in events:
            handle.write(json.dumps(event, ensure_ascii=False) + "\n")
    with questions_path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(json.dumps(questions, ensure_ascii=False, indent=2) + "\n")
    return events_path, questions_path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out-dir", type=Path, default=DEMO_DIR, help="default: the package")
    args = parser.parse_args(argv)
    for path in write(args.out_dir):
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
