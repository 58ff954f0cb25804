"""The demo's story: scripted exchanges per persona and reusable phrases, read from JSON.

Each persona's life is scripted session by session in `story/<user>.json` (the facts must
stay consistent so that recall questions have one right answer); greetings, closings and
small talk come from `story/phrases.json` and the persona's file, and are picked by a seeded
random generator for variety (`generate.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

STORY_DIR = Path(__file__).with_name("story")
PHRASES_FILE = STORY_DIR / "phrases.json"
PERSONA_FILES = (STORY_DIR / "ana.json", STORY_DIR / "kenji.json")


@dataclass(frozen=True, slots=True)
class Exchange:
    """A user message and Mira's reply; `fact` names what the user message states."""

    user: str
    reply: str
    fact: str | None = None


@dataclass(frozen=True, slots=True)
class SessionScript:
    """One chat session. `start` is local wall-clock time, "YYYY-MM-DD HH:MM"."""

    start: str
    exchanges: tuple[Exchange, ...]
    closing: bool = True  # False when the script ends the conversation itself
    ended: bool = True  # False: no session_end event, the idle timeout has to close it


@dataclass(frozen=True, slots=True)
class Question:
    """A recall question answered by the user messages that state `facts`."""

    question: str
    answer: str
    facts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Persona:
    user_id: str
    name: str
    tz: str
    about: str  # who the persona is, and what of the calendar their sessions exercise
    sessions: tuple[SessionScript, ...]
    small_talk: tuple[Exchange, ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True, slots=True)
class Phrases:
    """Greetings by part of the local day, closings by "day" or "night"; {name} is the user's."""

    about: str
    greetings: dict[str, tuple[Exchange, ...]]
    closings: dict[str, tuple[Exchange, ...]]


# Built once: a TypeAdapter compiles its validator from the dataclasses' fields.
_PERSONA = TypeAdapter(Persona)
_PHRASES = TypeAdapter(Phrases)


def load_persona(path: Path) -> Persona:
    """A persona's script from its JSON file, checked against the dataclasses' fields."""
    return _PERSONA.validate_json(path.read_bytes(), strict=False)


def load_phrases(path: Path = PHRASES_FILE) -> Phrases:
    """The shared greetings and closings."""
    return _PHRASES.validate_json(path.read_bytes(), strict=False)


def part_of_day(hour: int) -> str:
    """The greeting register for a local hour."""
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 18:
        return "afternoon"
    if 18 <= hour < 22:
        return "evening"
    return "late"
