"""A user who travels Lisbon -> Tokyo -> Lisbon across the night the clocks go back, through
the real broker, workers, Redis and Qdrant: one day, week and month node per local date,
titled on the local calendar, the profile with what was said in both zones, and the same
tree, node by node, when the same turns are sent again to a fresh stack namespace."""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstream.adapters.kafka.admin import ensure_topics
from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import encode_turn
from memstream.domain.calendar import to_utc
from memstream.domain.models import Level, MemoryNode, Turn
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings

pytestmark = pytest.mark.integration

USER = "traveller"
LISBON, TOKYO = "Europe/Lisbon", "Asia/Tokyo"

# (UTC time, zone, what the user says). Lisbon's clocks go back at 02:00 on 26 October 2025.
JOURNEY = [
    ("2025-10-24T18:00", LISBON, "I love hiking in the mountains."),
    ("2025-10-25T23:40", LISBON, "My sister Ana is visiting me next week."),  # 00:40 BST, 26th
    ("2025-10-26T23:30", LISBON, "I went to a pottery class yesterday."),  # 23:30 GMT, 26th
    ("2025-10-28T01:00", TOKYO, "I started a new job as a nurse in Tokyo."),
    ("2025-10-31T14:00", TOKYO, "I adopted a cat named Miso."),
    ("2025-11-01T03:00", TOKYO, "We are planning a trip to Kyoto."),
    ("2025-11-02T01:00", TOKYO, "My flight home leaves tonight."),  # 10:00 JST, 2 November
    ("2025-11-02T20:00", LISBON, "I am back home in Lisbon and tired."),  # 20:00 GMT, 2 Nov
    ("2025-11-03T09:00", None, "My favorite food is grilled sardines."),  # still in Lisbon
]

DAYS = [
    "Day of 24 October 2025 (Fri):",
    "Day of 26 October 2025 (Sun):",
    "Day of 28 October 2025 (Tue):",
    "Day of 31 October 2025 (Fri):",
    "Day of 1 November 2025 (Sat):",
    "Day of 2 November 2025 (Sun):",
    "Day of 3 November 2025 (Mon):",
]
WEEKS = ["Week of 20 October 2025:", "Week of 27 October 2025:", "Week of 3 November 2025:"]
MONTHS = ["Profile as of October 2025", "Profile as of November 2025"]


def journey_file(path: Path) -> Path:
    lines: list[str] = []
    for n, (utc, tz, text) in enumerate(JOURNEY):
        ts = datetime.fromisoformat(utc).replace(tzinfo=UTC)
        session = f"trip-{n}"
        turn = Turn(f"trip-{n}-0", USER, session, 0, "Sam", "user", text, ts, tz)
        lines.append(json.dumps(encode_turn(turn)))
        end = {"type": "session_end.v1", "user_id": USER, "session_id": session}
        lines.append(json.dumps(end | {"ts": ts.isoformat()}))
    path.write_text("\n".join(lines) + "\n")
    return path


async def travelled_tree(settings: Settings, data_dir: Path) -> list[MemoryNode]:
    local = settings.model_copy(
        update={"data_dir": data_dir, "clock_grace_s": 0.0, "clock_interval_s": 0.5}
    )
    async with run_parts(local, WRITE_PATH, fast_rebalance=True) as running:
        rt = running.container
        await publish_file(
            journey_file(data_dir / "journey.jsonl"),
            catalog=rt.catalog,
            bootstrap=local.broker.bootstrap,
            show_progress=False,
        )
        await wait_caught_up(rt, [USER], timeout_s=120)
        nodes: list[MemoryNode] = []
        for level in Level:
            nodes += await rt.tree.get_many(USER, await rt.tree.level_ids(USER, level, 1_000))
    return nodes


def headers(nodes: list[MemoryNode], level: Level) -> list[str]:
    found = sorted((n for n in nodes if n.level == level), key=lambda n: to_utc(n.t_start))
    return [n.text.split("\n")[0] for n in found]


async def test_a_trip_across_zones_and_a_clock_change_gives_one_node_per_local_date(
    settings: Settings, tmp_path: Path
) -> None:
    nodes = await travelled_tree(settings, tmp_path)

    assert [h[: len(d)] for h, d in zip(headers(nodes, Level.DAY), DAYS, strict=False)] == DAYS
    assert len(headers(nodes, Level.DAY)) == len(DAYS)
    assert [h[: len(w)] for h, w in zip(headers(nodes, Level.WEEK), WEEKS, strict=False)] == WEEKS
    assert len(headers(nodes, Level.WEEK)) == len(WEEKS)
    assert [
        h[: len(m)] for h, m in zip(headers(nodes, Level.MONTH), MONTHS, strict=False)
    ] == MONTHS
    assert len(headers(nodes, Level.MONTH)) == len(MONTHS)

    by_id = {n.id: n for n in nodes}
    sessions = {n.source_ids[0]: n for n in nodes if n.level == Level.SESSION}
    # The session at 00:40 on the night the clocks went back is of the 26th, and so is the
    # one at 23:30 that night, 25 hours after the day began; its "yesterday" is the 25th.
    assert sessions["trip-1-0"].text.startswith("Session on 26 October 2025 (Sun):")
    assert "(yesterday: 25 October 2025)" in sessions["trip-2-0"].text
    assert by_id[sessions["trip-1-0"].parent_id] is by_id[sessions["trip-2-0"].parent_id]
    # Tokyo's 2 November and Lisbon's are one day (a flight west), under one week.
    assert sessions["trip-6-0"].parent_id == sessions["trip-7-0"].parent_id

    # October's profile has what was said in Lisbon and in Tokyo; November's refines it.
    profiles = {n.text.split(" (")[0]: n.text for n in nodes if n.level == Level.MONTH}
    october, november = profiles[MONTHS[0]], profiles[MONTHS[1]]
    for said in ("hiking", "pottery", "nurse", "Miso", "Kyoto"):
        assert said in october, (said, october)
    for said in ("hiking", "has a cat", "sardines"):  # Lisbon, Tokyo, Lisbon
        assert said in november, (said, november)

    # Days and weeks are disjoint (a node grows past its window only to cover a child, and
    # no session here crosses midnight). Months are not: the week of 27 October belongs to
    # October, as every week belongs to the month of its Monday, and runs into November.
    for level in (Level.DAY, Level.WEEK):
        spans = sorted((to_utc(n.t_start), to_utc(n.t_end)) for n in nodes if n.level == level)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), level

    # Sent again to a fresh namespace: the same tree, node by node.
    (tmp_path / "again").mkdir()
    again = await travelled_tree(await _fresh(settings), tmp_path / "again")
    assert _shape(again) == _shape(nodes)


def _shape(nodes: list[MemoryNode]) -> dict[str, tuple[object, ...]]:
    return {
        n.id: (n.level, n.parent_id, to_utc(n.t_start), to_utc(n.t_end), n.source_ids, n.text)
        for n in nodes
    }


async def _fresh(settings: Settings) -> Settings:
    """Settings like the fixture's, on topics, a group, a collection and keys of their own."""
    uid = uuid.uuid4().hex[:12]
    fresh = settings.model_copy(
        update={
            "topic_prefix": f"test-{uid}.",
            "consumer_group": f"memstream-test-{uid}",
            "qdrant_collection": f"memstream_test_{uid}",
            "redis_namespace": f"test-{uid}",
        }
    )
    await ensure_topics(fresh.broker.bootstrap, load_catalog(fresh.broker.topic_prefix).topics)
    return fresh
