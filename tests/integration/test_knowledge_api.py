"""The facts and entities routes over real HTTP and the embedded stack's Redis, with the SDK.

Two users' knowledge is committed the way the segmenter commits it (`UserCommit.knowledge`
with the L1s): in user Ana's memories Maya lived in Porto, moved to Berlin, and her brother
moved to Madrid; in user Bob's, a Maya of the same name lives in Oslo with her dog Rex.
Each route answers from Redis through the app the API serves; neither user sees the other's
facts or entities; bad input gets a 422; with the knowledge write off the routes say so
(501).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from memstream.client import AsyncRecallClient, RecallClient, RecallError
from memstream.domain.models import MemoryNode
from memstream.edges.http.server import BackgroundServer
from memstream.settings import Settings

from .knowledge_contract import APR, BERLIN, JAN, MADRID, PORTO, leaf, write
from .trees import container_of, module_settings, served

pytestmark = pytest.mark.integration

KEY = "knowledge-api-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
ANA, BOB = "ku-ana", "ku-bob"


@dataclass
class Api:
    server: BackgroundServer
    http: httpx.Client

    def get(self, path: str, status: int = 200, **params: Any) -> Any:
        reply = self.http.get(path, params=params)
        assert reply.status_code == status, reply.text
        return reply.json()

    def facts(self, user: str = ANA, **params: Any) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get(f"/v1/users/{user}/facts", **params)["facts"]
        return found


def as_user(node: MemoryNode, user: str) -> MemoryNode:
    return replace(node, user_id=user)


@pytest.fixture(scope="module")
def api(stack_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    settings = module_settings(
        stack_settings,
        tmp_path_factory.mktemp("knowledge-api"),
        embedder="hashing",
        recall_api_keys=[SecretStr(KEY)],
        knowledge=True,
    )
    bob_leaf = leaf("l1", ("b1", "I live in Oslo with my dog Rex.", APR), user=BOB)
    with served(settings) as server:
        tree = container_of(server).tree
        ana_leaves = [as_user(n, ANA) for n in (PORTO, BERLIN, MADRID)]
        server.call(lambda: write(tree, *ana_leaves, user=ANA))
        server.call(lambda: write(tree, bob_leaf, user=BOB))
        with httpx.Client(base_url=server.url, headers=AUTH, timeout=30) as http:
            yield Api(server, http)


def values(facts: list[dict[str, Any]]) -> list[str]:
    return [f["value"] for f in facts]


def homes(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where they live: the slot these tests follow (Porto's leaf also names Maya's sister)."""
    return [f for f in facts if f["attribute"] == "lives_in"]


def test_current_facts_carry_their_validity_record_time_and_sources(api: Api) -> None:
    facts = api.facts()
    assert [(f["subject"], f["value"]) for f in facts] == [
        ("kin:maya:brother", "Madrid"),
        ("speaker:maya", "Berlin"),
        ("speaker:maya", "Anna"),  # "my sister Anna": by subject, then attribute
    ]
    berlin = facts[1]
    assert berlin["text"] == "Maya lives in Berlin" and berlin["subject_name"] == "Maya"
    assert (berlin["attribute"], berlin["certainty"], berlin["negated"]) == (
        "lives_in",
        "stated",
        False,
    )
    assert berlin["valid_to"] is None and berlin["superseded_by"] is None
    assert berlin["supersedes"] is not None and berlin["source_ids"] == ["m2"]
    assert berlin["valid_from"] <= berlin["recorded_at"]


def test_at_gives_what_held_then_and_history_every_version_linked(api: Api) -> None:
    then = (JAN + timedelta(days=30)).isoformat()
    [porto] = homes(api.facts(subject="Maya", at=then))
    assert porto["value"] == "Porto" and porto["valid_to"] is not None
    assert homes(api.facts(subject="Maya", at=(JAN - timedelta(days=1)).isoformat())) == []

    old, new = homes(api.facts(subject="Maya", history="true"))
    assert values([old, new]) == ["Porto", "Berlin"]
    assert old["superseded_by"] == new["fact_id"] and new["supersedes"] == old["fact_id"]
    assert old["valid_to"] == new["valid_from"]
    assert porto["fact_id"] == old["fact_id"]
    # History up to a time: the versions begun by then, their validity as known today.
    [begun] = homes(api.facts(subject="Maya", history="true", at=then))
    assert begun == old


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Maya", ["Berlin"]),
        ("maya", ["Berlin"]),
        ("speaker:maya", ["Berlin"]),
        ("Maya's brother", ["Madrid"]),
        ("kin:maya:brother", ["Madrid"]),
        ("Berlin", []),  # an entity the user named, with no fact about it
    ],
)
def test_a_subject_is_a_name_an_alias_or_a_key(api: Api, subject: str, expected: list[str]) -> None:
    body = api.get(f"/v1/users/{ANA}/facts", subject=subject)
    assert values(homes(body["facts"])) == expected and body["subject"] == subject


def test_an_unknown_subject_or_entity_is_a_404(api: Api) -> None:
    api.get(f"/v1/users/{ANA}/facts", 404, subject="Olga")
    api.get(f"/v1/users/{ANA}/entities/Olga", 404)


def test_entities_most_mentioned_first_bounded_by_limit(api: Api) -> None:
    page = api.get(f"/v1/users/{ANA}/entities")
    keys = [e["key"] for e in page["entities"]]
    assert page["total"] == len(keys) and {"maya", "anna", "berlin", "porto"} <= set(keys)
    maya = page["entities"][0]
    assert maya["key"] == "maya" and maya["kind"] == "person" and maya["leaves"] == 3
    assert maya["mentions"] == max(e["mentions"] for e in page["entities"])
    assert maya["first_seen"] < maya["last_seen"]
    anna = next(e for e in page["entities"] if e["key"] == "anna")
    assert "maya's sister" in anna["aliases"]
    assert [e["key"] for e in api.get(f"/v1/users/{ANA}/entities", limit=1)["entities"]] == ["maya"]


def test_an_entity_has_its_facts_as_a_timeline_and_the_leaves_naming_it(api: Api) -> None:
    body = api.get(f"/v1/users/{ANA}/entities/Maya")
    assert body["entity"]["key"] == "maya"
    assert [(f["value"], f["valid_to"] is None) for f in homes(body["timeline"])] == [
        ("Porto", False),
        ("Berlin", True),
    ]
    assert [m["id"] for m in body["memories"]] == ["l3", "l2", "l1"]  # latest said first
    assert all(m["level"] == 1 and m["user_id"] == ANA for m in body["memories"])
    assert len(api.get(f"/v1/users/{ANA}/entities/Maya", limit=1)["memories"]) == 1
    sister = api.get(f"/v1/users/{ANA}/entities/Maya's sister")
    assert sister["entity"]["key"] == "anna" and sister["timeline"] == []


def test_neither_user_sees_the_others_facts_or_entities(api: Api) -> None:
    # One name in both users' memories, two people: each user's Maya is their own.
    assert values(api.facts(BOB, subject="Maya")) == ["Oslo", "dog named Rex"]
    assert values(homes(api.facts(ANA, subject="Maya", history="true"))) == ["Porto", "Berlin"]
    bob_keys = {e["key"] for e in api.get(f"/v1/users/{BOB}/entities")["entities"]}
    ana_keys = {e["key"] for e in api.get(f"/v1/users/{ANA}/entities")["entities"]}
    assert {"oslo", "rex"} <= bob_keys and not {"berlin", "porto", "anna"} & bob_keys
    assert not {"oslo", "rex"} & ana_keys
    api.get(f"/v1/users/{BOB}/entities/Berlin", 404)
    api.get(f"/v1/users/{ANA}/entities/Oslo", 404)
    api.get(f"/v1/users/{BOB}/facts", 404, subject="Maya's brother")
    # Bob's leaf l1 is not Ana's l1: an entity's memories are its own user's.
    [memory] = api.get(f"/v1/users/{BOB}/entities/Maya")["memories"]
    assert memory["user_id"] == BOB and memory["source_ids"] == ["b1"]


def test_a_user_with_no_memories_has_no_facts_and_no_entities(api: Api) -> None:
    assert api.facts("nobody-here") == []
    assert api.get("/v1/users/nobody-here/entities") == {
        "user_id": "nobody-here",
        "total": 0,
        "entities": [],
        "pending": False,
        "pending_reason": None,
        "held_messages": [],
    }


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("facts", {"at": "yesterday"}, "at"),
        ("facts", {"at": "2024-03-04T10:00:00"}, "at"),  # no offset
        ("facts", {"at": "1710000000"}, "at"),
        ("facts", {"history": "1"}, "history"),
        ("facts", {"subject": "x" * 10_000}, "subject"),
        ("facts", {"subject": "Maya\x00"}, "subject"),
        ("facts", {"subject": "Ma\nya"}, "subject"),
        ("facts", {"subject": ""}, "subject"),
        ("facts", {"subjet": "Maya"}, "subjet"),
        ("entities", {"limit": "0"}, "limit"),
        ("entities", {"limit": "501"}, "limit"),
        ("entities/Maya", {"limit": "201"}, "limit"),
        ("entities/" + "x" * 10_000, {}, "entity"),
        ("entities/Ma%00ya", {}, "entity"),
        ("entities/Ma%0Aya", {}, "entity"),
    ],
)
def test_bad_input_gets_a_422_naming_the_field(
    api: Api, path: str, params: dict[str, str], field: str
) -> None:
    body = api.get(f"/v1/users/{ANA}/{path}", 422, **params)
    assert field in [e["loc"][-1] for e in body["detail"]]
    assert "x" * 100 not in str(body)  # the bad value is not echoed back


def test_markup_in_a_name_is_read_as_its_words(api: Api) -> None:
    # The resolver reads a name's words (`domain.entities.clean_text`): tags are not words.
    api.get(f"/v1/users/{ANA}/entities/<script>alert(1)</script>", 404)
    assert values(homes(api.facts(subject="<b>Maya</b>"))) == ["Berlin"]


def test_recall_answers_carry_facts_and_each_memorys_validity(api: Api) -> None:
    reply = api.http.post("/v1/recall", json={"user_id": ANA, "query": "Where does Maya live?"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert isinstance(body["facts"], list)
    for memory in body["memories"]:
        assert {"valid_from", "valid_to", "superseded_by"} <= set(memory)


def test_the_sdk_reads_facts_and_entities(api: Api) -> None:
    with RecallClient(api.server.url, api_key=KEY) as memory:
        now = memory.facts(ANA, subject="Maya")
        then = memory.facts(ANA, subject="Maya", at=JAN + timedelta(days=1))
        every = memory.facts(ANA, subject="Maya", history=True)
        unknown = memory.facts(ANA, subject="Olga")
        entities = memory.entities(ANA, limit=2)
        maya = memory.entity(ANA, "Maya")
        nobody = memory.entity(ANA, "Olga")
    assert now is not None and [f.value for f in now.facts] == ["Berlin", "Anna"]
    assert now.facts[0].holds
    assert then is not None
    assert [(f.value, f.holds) for f in then.facts] == [("Porto", False), ("Anna", True)]
    assert every is not None and [f.value for f in every.facts] == ["Porto", "Berlin", "Anna"]
    assert unknown is None and nobody is None
    assert entities.total >= 4 and len(entities.entities) == 2
    assert maya is not None and [f.value for f in maya.timeline] == ["Anna", "Porto", "Berlin"]
    assert maya.memories[0].id == "l3"


async def test_the_async_sdk_reads_the_same(api: Api) -> None:
    async with AsyncRecallClient(api.server.url, api_key=KEY) as memory:
        now = await memory.facts(BOB)
        entities = await memory.entities(BOB)
        rex = await memory.entity(BOB, "Rex")
        gone = await memory.entity(BOB, "Berlin")
    assert now is not None and [f.text for f in now.facts] == [
        "Maya lives in Oslo",
        "Maya has a dog named Rex",
    ]
    assert "oslo" in {e.key for e in entities.entities}
    assert rex is not None and rex.entity.name == "Rex"
    assert gone is None


def test_with_the_knowledge_write_off_the_routes_say_so(
    stack_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = module_settings(
        stack_settings,
        tmp_path_factory.mktemp("knowledge-off"),
        embedder="hashing",
        recall_api_keys=[SecretStr(KEY)],
        knowledge=False,
    )
    with served(settings) as server, httpx.Client(base_url=server.url, headers=AUTH) as http:
        for path in ("facts", "entities", "entities/Maya"):
            reply = http.get(f"/v1/users/{ANA}/{path}")
            assert reply.status_code == 501
            assert "knowledge write is off" in reply.json()["detail"]
        with RecallClient(server.url, api_key=KEY) as memory, pytest.raises(RecallError) as off:
            memory.facts(ANA)
    assert off.value.status == 501
