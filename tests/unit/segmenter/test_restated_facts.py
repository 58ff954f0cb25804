"""A fact restated in every session: one version that counts its statements and keeps the
latest few sources, stepped forward from the slot's head; forgetting any of its messages,
kept among the sources or not, still takes its statement away and re-opens what it closed."""

from __future__ import annotations

from typing import Any

from tests.unit.segmenter.test_forget_messages import USER, Rig, rig
from tests.unit.segmenter.test_knowledge import ANA, ended, said

from memstream.domain.fact_timeline import SOURCES_KEPT
from memstream.domain.facts import AtomicFact
from memstream.domain.models import ForgetRequested

DAY = 24 * 60  # minutes
SESSIONS = SOURCES_KEPT + 4


async def restated(r: Rig, sessions: int = SESSIONS) -> None:
    for n in range(sessions):
        turns = said(f"nurse{n}", n * DAY, "I work as a nurse at the clinic.", f"s{n}")
        await r.send(*turns, ended(f"s{n}", turns[-1]))


async def jobs(r: Rig) -> list[AtomicFact]:
    return await r.tree.fact_history(USER, ANA, "job")


def replayed(r: Rig) -> dict[str, dict[str, Any]]:
    """The versions a consumer of the change feed holds: fact.v1 puts, fact_removed.v1 deletes."""
    held: dict[str, dict[str, Any]] = {}
    for value in (o.value for o in r.publisher.sent):
        if value["type"] == "fact.v1":
            held[value["fact_id"]] = value
        elif value["type"] == "fact_removed.v1":
            for fact_id in value["fact_ids"]:
                held.pop(fact_id, None)
    return held


def agrees(r: Rig, versions: list[AtomicFact]) -> bool:
    held = replayed(r)
    return {f.fact_id for f in versions} <= held.keys() and all(
        (
            held[f.fact_id]["statements"],
            tuple(held[f.fact_id]["source_ids"]),
            held[f.fact_id]["valid_to"],
        )
        == (f.statements, f.source_ids, f.valid_to.isoformat() if f.valid_to else None)
        for f in versions
    )


async def test_a_restated_fact_is_one_version_with_a_count_and_its_latest_sources() -> None:
    r = rig()
    await restated(r)
    [nurse] = await jobs(r)
    assert nurse.value == "nurse" and nurse.statements == SESSIONS
    assert nurse.source_ids == tuple(f"nurse{n}" for n in range(SESSIONS - SOURCES_KEPT, SESSIONS))
    assert (USER, ANA, "job") in r.tree.fact_heads[USER]  # kept beside the statements
    assert agrees(r, [nurse])


async def test_forgetting_a_source_no_longer_kept_takes_its_statement_away() -> None:
    r = rig()
    await restated(r)
    await r.send(ForgetRequested(USER, ("nurse2",)))  # older than the sources kept
    [nurse] = await jobs(r)
    assert nurse.statements == SESSIONS - 1
    assert nurse.source_ids == tuple(f"nurse{n}" for n in range(SESSIONS - SOURCES_KEPT, SESSIONS))
    await r.send(ForgetRequested(USER, ("nurse0",)))  # the first statement: the version's id
    [after] = await jobs(r)
    assert after.statements == SESSIONS - 2 and after.fact_id != nurse.fact_id
    assert agrees(r, [after]) and nurse.fact_id not in replayed(r)
    await restated(r, SESSIONS + 1)  # replayed (the forgotten stay so), and one more
    [last] = await jobs(r)
    assert last.statements == SESSIONS - 1 and last.source_ids[-1] == f"nurse{SESSIONS}"
    assert agrees(r, [last])


async def test_forgetting_what_closed_a_restated_fact_reopens_it_with_every_statement() -> None:
    r = rig()
    await restated(r)
    turns = said("teacher", SESSIONS * DAY, "I work as a teacher now.", "t")
    await r.send(*turns, ended("t", turns[-1]))
    nurse, teacher = await jobs(r)
    assert nurse.superseded_by == teacher.fact_id and nurse.statements == SESSIONS
    assert agrees(r, [nurse, teacher])
    await r.send(ForgetRequested(USER, ("teacher",)))
    [reopened] = await jobs(r)
    assert reopened.fact_id == nurse.fact_id and reopened.is_current
    assert reopened.statements == SESSIONS and reopened.source_ids == nurse.source_ids
    assert agrees(r, [reopened]) and teacher.fact_id not in replayed(r)
    kinds = [o.value["type"] for o in r.publisher.sent]
    assert "fact_superseded.v1" in kinds and "fact_reopened.v1" in kinds
