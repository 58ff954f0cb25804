"""The SDK against the real pipeline: produce with it, recall with it, forget with it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from memstream.client import AsyncRecallClient, MemstreamProducer, RecallClient, RecallError
from memstream.client.models import (
    Entities,
    EntityDetail,
    EntitySummary,
    Fact,
    Facts,
    ForgetResult,
    MemoryDetail,
    MemoryPage,
    Profile,
    Recall,
    TurnKey,
)
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.settings import Settings

from .sdk_stack import API_KEY, serving_everything
from .trees import module_settings, served

pytestmark = pytest.mark.integration

USER = "sdk-ann"
TURNS = [
    ("Ann", "user", "I adopted a cat last week, she is called Miso."),
    ("Bot", "assistant", "Congratulations on Miso! How is she settling in?"),
    ("Ann", "user", "She sleeps on my keyboard while I work on the bakery accounts."),
]


async def test_produce_recall_and_forget_through_the_sdk(
    settings: Settings, tmp_path: Path
) -> None:
    async with serving_everything(settings, tmp_path) as stack:
        with MemstreamProducer(
            stack.settings.broker.bootstrap,
            topic_prefix=stack.settings.broker.topic_prefix,
            idempotent=False,  # the embedded broker (Tansu) hands out no producer ids
        ) as producer:
            ids = [
                producer.publish_turn(
                    user_id=USER,
                    session_id="s1",
                    seq=seq,
                    speaker=speaker,
                    role=role,
                    text=text,
                    ts=f"2024-05-01T09:3{seq}:00+02:00",
                ).event_id
                for seq, (speaker, role, text) in enumerate(TURNS)
            ]
            producer.end_session(user_id=USER, session_id="s1", ts="2024-05-01T09:40:00+02:00")
        await wait_caught_up(stack.running.container, [USER], timeout_s=120)

        async with AsyncRecallClient(stack.url, api_key=API_KEY) as memory:
            answer = await memory.recall(USER, "What is the name of Ann's cat?")
            recalled = {s for m in answer.memories if m.level == 1 for s in m.source_ids}
            page = await memory.memories(USER, level=1)
            detail = await memory.memory(USER, page.items[0].id)
            missing = await memory.memory(USER, "no-such-memory")
            profile = await memory.profile(USER)
            forgotten = await memory.forget_user(USER)
            after = await memory.recall(USER, "What is the name of Ann's cat?")

    assert len(set(ids)) == 3 and ids[0] in recalled
    assert "Miso" in answer.as_prompt()
    assert {m.level for m in page.items} == {1} and page.items
    assert detail is not None and detail.ancestors and detail.source_ids
    assert missing is None
    assert profile.profile is not None and profile.profile.level == 5
    assert forgotten.qdrant_points >= 5 and forgotten.forget_event_published
    assert after.memories == []


def test_a_broker_without_producer_ids_is_reported(settings: Settings) -> None:
    with pytest.raises(RuntimeError, match="idempotent=False"):
        MemstreamProducer(settings.broker.bootstrap, topic_prefix=settings.broker.topic_prefix)


async def test_a_wrong_key_fails_at_once_and_a_down_server_is_retried(
    settings: Settings, tmp_path: Path
) -> None:
    async with (
        serving_everything(settings, tmp_path) as stack,
        AsyncRecallClient(stack.url, api_key="wrong", attempts=3) as memory,
    ):
        with pytest.raises(RecallError) as refused:
            await memory.recall(USER, "anything")
    assert refused.value.status == 401

    closed = RecallClient(stack.url, api_key=API_KEY, attempts=3, backoff_s=(0.01, 0.02))
    with closed, pytest.raises(httpx.ConnectError):
        closed.recall(USER, "anything")  # nobody listens any more: three attempts, then raise


def test_client_models_match_the_served_openapi(
    stack_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = module_settings(stack_settings, tmp_path_factory.mktemp("sdk-openapi"))
    with served(settings) as server:
        spec = httpx.get(f"{server.url}/openapi.json").json()
    schemas = spec["components"]["schemas"]
    pairs = {
        "RecallResponse": Recall,
        "ProfileResponse": Profile,
        "MemoryPage": MemoryPage,
        "MemoryDetailResponse": MemoryDetail,
        "ForgetResponse": ForgetResult,
        "TurnKeyResponse": TurnKey,
        "FactsResponse": Facts,
        "Fact": Fact,
        "EntitySummary": EntitySummary,
        "EntityPageResponse": Entities,
        "EntityDetailResponse": EntityDetail,
        "Memory": Recall.model_fields["memories"].annotation.__args__[0],  # type: ignore[union-attr]
    }
    for served_name, model in pairs.items():
        served_schema = schemas[served_name]
        ours = model.model_json_schema()
        assert set(ours["properties"]) == set(served_schema["properties"]), served_name
        assert set(ours.get("required", [])) == set(served_schema.get("required", [])), served_name
        for field, prop in served_schema["properties"].items():
            assert _types(prop) == _types(ours["properties"][field]), (served_name, field)


def _types(prop: dict[str, object]) -> set[str]:
    """The JSON types a property allows (references and formats compared by name)."""
    options = prop.get("anyOf", [prop])
    assert isinstance(options, list)
    found = set()
    for option in options:
        ref = str(option.get("$ref", ""))
        found.add(ref.rsplit("/", 1)[-1] or f"{option.get('type')}:{option.get('format', '')}")
    return found
