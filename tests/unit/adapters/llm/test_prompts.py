from datetime import UTC, datetime, timedelta

import pytest

from memstream.adapters.llm import prompts
from memstream.adapters.llm.structured import resolve_facts
from memstream.domain.models import Fact, Level, MemoryNode, SourceMessage, Turn, Window

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
CHILD = MemoryNode(
    "c1",
    "u1",
    Level.SEGMENT,
    T0,
    T0,
    'Caroline: "I adopted a cat!"',
    source_ids=("m1",),
    messages=(SourceMessage("m1", "Caroline", "user", "I adopted a cat!", T0),),
)
PAST = MemoryNode("h1", "u1", Level.SESSION, T0, T0, "Session on 1 May 2023: hiking.")


def test_segment_prompt_carries_the_exchange_date_and_history() -> None:
    turn = Turn("e1", "u1", "s1", 1, "Caroline", "user", "I adopted a cat!", T0)
    system, user = prompts.segment_prompt([turn], [PAST])
    assert system["role"] == "system" and "JSON" in system["content"]
    assert "2023-05-08 13:00" in user["content"]
    assert "Caroline: I adopted a cat!" in user["content"]
    assert "hiking" in user["content"]


@pytest.mark.parametrize("level", [Level.SESSION, Level.DAY, Level.WEEK, Level.MONTH])
def test_each_level_has_its_own_instruction(level: Level) -> None:
    window = Window("u1", level, T0, T0 + timedelta(days=1))
    system, user = prompts.consolidation_prompt(level, window, [CHILD], [PAST])
    others = [
        prompts.consolidation_prompt(other, window, [CHILD], [])[0]["content"]
        for other in Level
        if other not in (level, Level.SEGMENT)
    ]
    assert system["content"] not in others
    assert '{"facts"' in system["content"] and "source_ids" in system["content"]
    assert "[m1] 2023-05-08 Caroline: I adopted a cat!" in user["content"]


def test_a_profile_prompt_shows_the_previous_profiles_facts_with_their_ids() -> None:
    window = Window("u1", Level.MONTH, T0, T0 + timedelta(days=31))
    previous = MemoryNode(
        "p0", "u1", Level.MONTH, T0, T0, "Profile", facts=(Fact("Ana hikes.", ("m0",), T0),)
    )
    _, user = prompts.consolidation_prompt(Level.MONTH, window, [CHILD], [previous])
    assert "Previous profile:\n[m0] Ana hikes." in user["content"]


def test_planner_and_gate_prompts_ask_for_json() -> None:
    assert '"complexity"' in prompts.planner_prompt("Why?")[0]["content"]
    system, user = prompts.gate_prompt("cat?", "simple", [CHILD, PAST])
    assert '"keep"' in system["content"]
    assert "1. (level 1," in user["content"] and "2. (level 2," in user["content"]


def test_a_profile_prompt_gives_the_known_facts_and_a_reply_may_cite_them() -> None:
    window = Window("u1", Level.MONTH, T0, T0 + timedelta(days=31))
    previous = MemoryNode(
        "p0",
        "u1",
        Level.MONTH,
        T0,
        T0,
        "Profile",
        facts=(
            Fact("Now: Caroline lives in Porto (since 1 May 2023)", ("m0",), T0),
            Fact("Caroline hikes.", ("m9",), T0),
        ),
    )
    known = (Fact("Changed: Caroline moved from Porto to Oslo (8 May 2023)", ("m0", "m5"), T0),)
    system, user = prompts.consolidation_prompt(Level.MONTH, window, [CHILD], [previous], known)
    assert "never state a replaced value as current" in system["content"]
    assert "[m0, m5] Changed: Caroline moved from Porto to Oslo" in user["content"]
    assert "[m9] Caroline hikes." in user["content"]
    assert "lives in Porto (since" not in user["content"]  # last month's fact line is not carried
    plain, _ = prompts.consolidation_prompt(Level.MONTH, window, [CHILD], [previous])
    assert "replaced value" not in plain["content"]

    class Cited:
        def __init__(self, text: str, source_ids: list[str]) -> None:
            self.text, self.source_ids = text, source_ids

    reply = [Cited("Caroline moved from Porto to Oslo.", ["m5", "m404"])]
    [fact] = resolve_facts(reply, Level.MONTH, [CHILD], [], known)
    assert fact.source_ids == ("m5",)
    assert resolve_facts(reply, Level.MONTH, [CHILD], [], ()) == ()
