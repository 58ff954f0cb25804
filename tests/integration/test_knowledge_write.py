"""Facts and entities written online through the real broker, Faust workers, Redis and Qdrant.

Maya says she lives in Porto in January and that they moved to Berlin in April; the
segmenter commits what each L1 says with the L1. Read back through the adapter, Berlin is
current and Porto closed by it; the same input again changes nothing; forgetting the Berlin
message (a forget.v1 on the turns topic) makes Porto current again and Berlin no entity.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstream.bootstrap import Container, connect
from memstream.contracts.codec import encode_forget
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, RunningProcess, run_parts
from memstream.settings import Settings

USER = "knowledge-maya"
MAYA = "speaker:maya"
JAN = datetime(2024, 1, 10, 19, 0, tzinfo=UTC)
APR = datetime(2024, 4, 12, 20, 0, tzinfo=UTC)
SESSIONS = [
    (JAN, [("porto", "We live in Porto, in a little flat by the river.")]),
    (
        APR,
        [
            ("berlin", "Big news: we moved to Berlin last month!"),
            ("brother", "My brother moved to Madrid too."),
        ],
    ),
]


Sessions = list[tuple[datetime, list[tuple[str, str]]]]


def conversation(
    user: str = USER, sessions: Sessions = SESSIONS, speaker: str = "Maya"
) -> list[dict[str, Any]]:
    """Each session's lines said by `speaker`, each answered by the assistant, then ended."""
    events: list[dict[str, Any]] = []
    for n, (start, said) in enumerate(sessions):
        session = f"s{n}"
        for i, (event_id, text) in enumerate(said):
            for j, (who, role, words) in enumerate(
                ((speaker, "user", text), ("Bot", "assistant", "Tell me more about that."))
            ):
                events.append(
                    {
                        "type": "turn.v1",
                        "event_id": event_id if j == 0 else f"{event_id}-re",
                        "user_id": user,
                        "session_id": session,
                        "seq": 2 * i + j,
                        "speaker": who,
                        "role": role,
                        "text": words,
                        "ts": (start + timedelta(minutes=2 * i + j)).isoformat(),
                    }
                )
        end = start + timedelta(minutes=30)
        events.append(
            {
                "type": "session_end.v1",
                "user_id": user,
                "session_id": session,
                "ts": end.isoformat(),
            }
        )
    return events


@pytest.fixture
async def runtime(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    local = settings.model_copy(
        update={"data_dir": tmp_path, "clock_grace_s": 0.0, "clock_interval_s": 0.5}
    )
    async with connect(local, prioritise_online=True) as rt:
        yield rt


@pytest.fixture
async def pipeline(runtime: Container) -> AsyncIterator[RunningProcess]:
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True) as running:
        yield running


def written(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


async def publish(runtime: Container, path: Path, user: str = USER) -> None:
    await publish_file(
        path,
        catalog=runtime.catalog,
        bootstrap=runtime.settings.broker.bootstrap,
        show_progress=False,
    )
    await wait_caught_up(runtime, [user], timeout_s=120)


async def test_a_changed_fact_is_current_with_its_predecessor_closed_until_forgotten(
    runtime: Container, pipeline: RunningProcess, tmp_path: Path
) -> None:
    await publish(runtime, written(tmp_path / "conversation.jsonl", conversation()))
    tree = runtime.tree
    [berlin] = await tree.facts(USER, MAYA)
    assert (berlin.value, berlin.source_ids, berlin.valid_to) == ("Berlin", ("berlin",), None)
    assert berlin.valid_from == datetime(2024, 3, 1, tzinfo=UTC)  # "last month", said in April
    porto, current = await tree.fact_history(USER, MAYA, "lives_in")
    assert current == berlin
    assert (porto.value, porto.source_ids) == ("Porto", ("porto",))
    assert (porto.valid_to, porto.superseded_by) == (berlin.valid_from, berlin.fact_id)
    assert berlin.supersedes == porto.fact_id
    [madrid] = await tree.facts(USER, "kin:maya:brother")  # not Maya's: her brother's
    assert madrid.value == "Madrid"
    places = {e.key for e in await tree.entities(USER) if e.kind == "place"}
    assert {"porto", "berlin", "madrid"} <= places

    # The same input again (a replay) writes the same knowledge.
    facts, entities = await tree.facts(USER), await tree.entities(USER)
    await publish(runtime, written(tmp_path / "again.jsonl", conversation()))
    assert (await tree.facts(USER), await tree.entities(USER)) == (facts, entities)

    forget = [encode_forget(USER, ["berlin"])]
    await publish(runtime, written(tmp_path / "forget.jsonl", forget))
    [porto_again] = await tree.facts(USER, MAYA)
    assert (porto_again.value, porto_again.valid_to, porto_again.superseded_by) == (
        "Porto",
        None,
        None,
    )
    assert [f.value for f in await tree.fact_history(USER, MAYA, "lives_in")] == ["Porto"]
    assert await tree.entity(USER, "Berlin") is None
    assert [f.value for f in await tree.facts(USER, "kin:maya:brother")] == ["Madrid"]
