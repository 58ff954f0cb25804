"""Rebuilding over HTTP with in-memory stores: what is published, the progress, derivations."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.edges.http.test_forget_messages_api import serving
from tests.unit.fakes import FakePublisher, FakeTree, sample_tree

from memstream.contracts.catalog import load_catalog
from memstream.domain.derivation import Derivation
from memstream.domain.models import Level
from memstream.domain.rebuild import RebuildJob, RebuildPlan
from memstream.ports import UserCommit

DERIVED = Derivation("offline", "rules", "7", "hashing:384")


async def test_post_publishes_rebuild_and_answers_202_with_a_handle() -> None:
    publisher = FakePublisher()
    async with serving(FakeTree(sample_tree("u1")), publisher) as client:
        whole = await client.post("/v1/users/u1/rebuild")
        narrow = await client.post(
            "/v1/users/u1/rebuild", json={"from": "2024-03-01", "levels": [1, 2]}
        )
    assert whole.status_code == 202 and narrow.status_code == 202
    body = whole.json()
    assert body["status"] == "pending"
    assert body["handle"] == f"/v1/users/u1/rebuilds/{body['rebuild_id']}"
    first, second = publisher.commands
    assert first.key == "u1"
    assert first.value == {"type": "rebuild.v1", "user_id": "u1", "rebuild_id": body["rebuild_id"]}
    assert second.value["from"] == "2024-03-01" and second.value["levels"] == [1, 2]
    for event in publisher.commands:  # what the API publishes is what the workers accept
        assert load_catalog().validate("memstream.turns.v1", event.value) == []


async def test_a_user_without_memories_gets_404_at_once_and_nothing_is_published() -> None:
    publisher = FakePublisher()
    async with serving(FakeTree(sample_tree("u1")), publisher) as client:
        reply = await client.post("/v1/users/never-seen/rebuild")
    assert reply.status_code == 404
    assert "nothing to rebuild" in reply.json()["detail"]
    assert publisher.commands == []


async def test_the_status_of_a_rebuild_of_a_user_without_memories_is_nothing_to_do() -> None:
    # A rebuild.v1 published another way (the SDK's rebuild_event) for a user the segmenter
    # holds nothing for is passed over: its status says so at once instead of "pending".
    tree = FakeTree(sample_tree("u1"))
    async with serving(tree, FakePublisher()) as client:
        unknown = await client.get("/v1/users/never-seen/rebuilds/r1")
        known = await client.get("/v1/users/u1/rebuilds/r1")
    assert unknown.status_code == 200 and unknown.json()["status"] == "nothing_to_do"
    assert known.json()["status"] == "pending"  # its command may still wait in the topic


async def test_bad_bodies_are_refused() -> None:
    publisher = FakePublisher()
    async with serving(FakeTree(), publisher) as client:
        for body in (
            {"levels": [6]},
            {"levels": []},
            {"from": "2024-02-30"},
            {"to": 1},
            {"from": 0},  # pydantic alone read a number as seconds since 1970
            {"from": "1700000000"},
            {"from": "2024-03-01T00:00:00Z"},
            {"levels": ["1"]},
            {"levels": [True]},
        ):
            reply = await client.post("/v1/users/u1/rebuild", json=body)
            assert reply.status_code == 422, body
    assert publisher.commands == []


async def test_progress_is_pending_until_the_job_is_finished_and_its_windows_current() -> None:
    tree = FakeTree(sample_tree("u1"))
    async with serving(tree, FakePublisher()) as client:

        async def progress() -> dict[str, object]:
            reply = await client.get("/v1/users/u1/rebuilds/r1")
            assert reply.status_code == 200
            return dict(reply.json())

        assert (await progress())["status"] == "pending"  # the command not handled yet
        plan = RebuildPlan(("l1", "l2"), ("w1", "w2"))
        job = RebuildJob("r1", DERIVED, None, tuple(Level), 2, 2, done=1, plan=plan)
        await tree.commit_user(
            UserCommit("u1", state={}, seen={}, nodes=[], outbox=[], due=None, rebuild=job)
        )
        assert await progress() == {
            "user_id": "u1",
            "rebuild_id": "r1",
            "status": "pending",
            "leaves": 2,
            "leaves_done": 1,
            "leaves_rewritten": 0,
            "windows": 2,
            "windows_pending": 2,
        }
        finished = replace(
            job, done=2, finished=True, window_count=0, plan=RebuildPlan(("l1", "l2"), ())
        )
        await tree.commit_user(
            UserCommit("u1", state={}, seen={}, nodes=[], outbox=[], due=None, rebuild=finished)
        )
        assert (await progress())["status"] == "done"
        assert (await client.get("/v1/users/u1/rebuilds/r2")).json()["status"] == "pending"


async def test_a_memory_shows_its_derivation_and_recall_on_request() -> None:
    nodes = [replace(n, derivation=DERIVED) for n in sample_tree("u1")]
    leaf = next(n for n in nodes if n.level == Level.SEGMENT)
    async with serving(FakeTree(nodes), FakePublisher()) as client:
        detail = await client.get(f"/v1/memories/{leaf.id}", params={"user_id": "u1"})
        plain = await client.post("/v1/recall", json={"user_id": "u1", "query": "hiking"})
        asked = await client.post(
            "/v1/recall", json={"user_id": "u1", "query": "hiking", "with_derivation": True}
        )
    shown = DERIVED.to_json()
    assert detail.json()["memory"]["derivation"] == shown
    assert plain.json()["memories"], "the sample tree answers this query"
    assert all(m["derivation"] is None for m in plain.json()["memories"])
    assert all(m["derivation"] == shown for m in asked.json()["memories"])
