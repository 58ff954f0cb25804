"""A rebuild keeps each window in the zone it was opened in: a user who went from Lisbon to
Tokyo and back, across the night Lisbon's clocks go back, has the same tree node by node
after a rebuild under a new prompt version (versions and derivations aside), titles, dates
and "yesterday" included; through the real segmenter and consolidator handlers, with the
offline backend, over the fakes."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from tests.unit.segmenter.session_rig import HandlerRig, handler_rig
from tests.unit.segmenter.test_session_order import differences

from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.domain.derivation import Derivation
from memstream.domain.models import (
    ForgetRequested,
    InputEvent,
    Level,
    MemoryNode,
    RebuildRequested,
    SessionEnded,
    Turn,
)
from memstream.domain.windows import WindowRules

USER = "traveller"
LISBON, TOKYO = "Europe/Lisbon", "Asia/Tokyo"
FIRST = Derivation("offline", "rules", "1", "fake:8")
SECOND = Derivation("offline", "rules", "2", "fake:8")
# (UTC time, zone, what the user says). Lisbon's clocks go back at 02:00 on 26 October 2025.
TRIP = [
    ("2025-10-24T18:00", LISBON, "I love hiking in the mountains."),
    ("2025-10-25T23:40", LISBON, "My sister Ana is visiting me next week."),  # 00:40 BST, 26th
    ("2025-10-26T23:30", LISBON, "I went to a pottery class yesterday."),  # 23:30 GMT, 26th
    ("2025-10-28T01:00", TOKYO, "I started a new job as a nurse in Tokyo."),
    ("2025-11-02T01:00", TOKYO, "My flight home leaves tonight."),  # 10:00 JST, 2 November
    ("2025-11-02T20:00", LISBON, "I am back home in Lisbon and tired."),
    ("2025-11-03T09:00", None, "My favorite food is grilled sardines."),  # still in Lisbon
]


def trip_events() -> list[InputEvent]:
    events: list[InputEvent] = []
    for n, (utc, tz, text) in enumerate(TRIP):
        ts = datetime.fromisoformat(f"{utc}+00:00")
        session = f"trip-{n}"
        events.append(Turn(f"trip-{n}-0", USER, session, 0, "Sam", "user", text, ts, tz))
        reply = f"Noted: {text.lower()}"
        at = ts + timedelta(minutes=1)
        events.append(Turn(f"trip-{n}-1", USER, session, 1, "Bot", "assistant", reply, at, tz))
        events.append(SessionEnded(USER, session, at))
    return events


async def travelled(derivation: Derivation) -> HandlerRig:
    rig = handler_rig(WindowRules(), llm=OfflineLanguageModel(), derivation=derivation)
    await rig.send_in_batches(trip_events(), [3])
    return rig


async def rebuilt(rig: HandlerRig, request: RebuildRequested) -> HandlerRig:
    """`request` run to its end by workers with the next prompt version on the same stores
    (each command, the plan then a chunk, is what the scheduler would send)."""
    upgraded = handler_rig(WindowRules(), llm=OfflineLanguageModel(), derivation=SECOND, stores=rig)
    for _ in range(20):
        await upgraded.send(request)
        job = await upgraded.tree.rebuild_job(USER)
        if job is not None and job.finished:
            return upgraded
    raise AssertionError("the rebuild does not end")


def as_written(nodes: dict[str, MemoryNode]) -> dict[str, MemoryNode]:
    """The nodes with what a rebuild is meant to change set aside."""
    return {i: replace(n, version=1, derivation=None) for i, n in nodes.items()}


async def test_a_rebuild_after_a_journey_across_zones_gives_the_same_tree() -> None:
    rig = await travelled(FIRST)
    before = rig.nodes(USER)
    assert {n.level for n in before.values()} == set(Level)
    sessions = {n.source_ids[0]: n for n in before.values() if n.level == Level.SESSION}
    assert sessions["trip-1-0"].text.startswith("Session on 26 October 2025 (Sun):")
    assert "(yesterday: 25 October 2025)" in sessions["trip-2-0"].text

    after = (await rebuilt(rig, RebuildRequested(USER, "r1"))).nodes(USER)

    assert {n.version for n in after.values()} == {2}  # every node written again
    assert differences(as_written(after), as_written(before)) == []


def calendar_texts(nodes: dict[str, MemoryNode]) -> dict[str, str]:
    return {i: n.text for i, n in nodes.items() if n.level >= Level.DAY}


async def test_a_forget_re_consolidates_each_window_in_its_own_zone() -> None:
    """Forgetting the assistant's reply (which no summary quotes) of the session at 23:30 on
    the night the clocks went back re-closes the windows above it from the stored nodes:
    each is written again on the calendar it was opened in, so says what it said."""
    rig = await travelled(FIRST)
    before = rig.nodes(USER)
    await rig.send(ForgetRequested(USER, ("trip-2-1",)))
    after = rig.nodes(USER)
    rewritten = {i for i, n in after.items() if n.version > before[i].version}
    assert {after[i].level for i in rewritten} == set(Level)
    assert calendar_texts(after) == calendar_texts(before)
