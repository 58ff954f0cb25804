"""The building blocks of the demo conversations: scripted exchanges and reusable templates.

Each persona's life is scripted session by session (the facts must stay consistent so that
recall questions have one right answer); greetings, closings and small talk come from the
templates below and are picked by a seeded random generator for variety.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    sessions: tuple[SessionScript, ...]
    small_talk: tuple[Exchange, ...]
    questions: tuple[Question, ...]


# Greetings by part of the local day; {name} is the user's name.
GREETINGS: dict[str, tuple[Exchange, ...]] = {
    "morning": (
        Exchange("Morning, Mira!", "Good morning, {name}! How did you sleep?"),
        Exchange("Hi Mira, quick one before work.", "Morning, {name}. Go ahead, I'm listening."),
        Exchange("Good morning! Coffee is brewing.", "Good morning, {name}! Enjoy that first cup."),
    ),
    "afternoon": (
        Exchange("Hey Mira, got a minute?", "Always, {name}. What's up this afternoon?"),
        Exchange("Hi Mira!", "Hi {name}! Nice to hear from you. How's the day going?"),
        Exchange("Afternoon break, finally.", "You earned it, {name}. What's on your mind?"),
    ),
    "evening": (
        Exchange("Good evening, Mira.", "Good evening, {name}! How was your day?"),
        Exchange("Hey Mira, long day.", "Sounds like it, {name}. Want to tell me about it?"),
        Exchange("Hi Mira, I'm home.", "Welcome back, {name}. What happened today?"),
    ),
    "late": (
        Exchange("Still up, Mira?", "Always here, {name}. It's getting late for you, though."),
        Exchange("Can't sleep.", "Sorry to hear that, {name}. Want to talk for a bit?"),
    ),
}

CLOSINGS: dict[str, tuple[Exchange, ...]] = {
    "day": (
        Exchange("Thanks, Mira. Talk later!", "Anytime, {name}. Have a good rest of the day!"),
        Exchange("OK, back to it. Thanks!", "Good luck, {name}. I'll be here."),
        Exchange("That helps, thank you.", "Glad to help, {name}. See you soon."),
    ),
    "night": (
        Exchange("I should get some sleep. Night, Mira.", "Goodnight, {name}. Sleep well."),
        Exchange("OK, logging off. Thanks for listening.", "Anytime, {name}. Rest well."),
        Exchange("That's all for today. Bye!", "Bye, {name}! Talk tomorrow, maybe."),
    ),
}


def part_of_day(hour: int) -> str:
    """The greeting register for a local hour."""
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 18:
        return "afternoon"
    if 18 <= hour < 22:
        return "evening"
    return "late"
