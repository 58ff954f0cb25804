"""The OpenAI backend against a real local HTTP server speaking the chat-completions API.

The server plays a script of answers (JSON content, HTTP errors, slow answers); the real
`AsyncOpenAI` client talks to it over TCP. Nothing is patched.
"""

import asyncio
import json
from collections import Counter, deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openai import AsyncOpenAI

from memstream.adapters.llm.fallback import FallbackLanguageModel, build_language_model
from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.adapters.llm.openai import InvalidOutput, OpenAILanguageModel
from memstream.domain.derivation import RULES_EXTRACTION
from memstream.domain.facts import ENDED
from memstream.domain.models import Level, MemoryNode, SourceMessage, Turn, Window
from memstream.domain.query import parse_query
from memstream.settings import Settings

from .chat_api import completion
from .local_server import serving


@dataclass
class UsageCounter:
    """A `UsageHook` that keeps totals per operation."""

    calls: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    prompt_tokens: Counter[str] = field(default_factory=Counter)
    completion_tokens: Counter[str] = field(default_factory=Counter)

    def __call__(
        self,
        operation: str,
        prompt_tokens: int,
        completion_tokens: int,
        seconds: float,
        error: str | None,
    ) -> None:
        self.calls[operation] += 1
        self.prompt_tokens[operation] += prompt_tokens
        self.completion_tokens[operation] += completion_tokens
        if error is not None:
            self.errors[error] += 1


pytestmark = pytest.mark.integration

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
TURNS = [
    Turn("e1", "u1", "s1", 1, "Caroline", "user", "I went to a support group yesterday.", T0),
    Turn("e2", "u1", "s1", 2, "Melanie", "assistant", "That's great!", T0),
]
CLIENT_TIMEOUT_S = 0.4


@dataclass
class Step:
    """One scripted answer: a status code, JSON content for the message, an optional delay."""

    content: str = '{"text": "ok"}'
    status: int = 200
    delay_s: float = 0.0
    finish_reason: str = "stop"  # "length": cut at the answer's token ceiling


@dataclass
class FakeEndpoint:
    script: deque[Step] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            self.requests.append(await request.json())
            step = self.script.popleft() if self.script else Step()
            await asyncio.sleep(step.delay_s)
            if step.status != 200:
                error = {"error": {"message": "scripted failure", "type": "server_error"}}
                return JSONResponse(error, status_code=step.status, headers={"retry-after": "0"})
            return JSONResponse(completion(step.content, finish_reason=step.finish_reason))

        return app


@dataclass
class Harness:
    fake: FakeEndpoint
    url: str
    clients: list[AsyncOpenAI] = field(default_factory=list)

    def backend(self, usage: UsageCounter, max_retries: int = 2) -> OpenAILanguageModel:
        client = AsyncOpenAI(
            base_url=self.url, api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT_S
        )
        self.clients.append(client)
        return OpenAILanguageModel(
            client,
            "test-model",
            max_retries=max_retries,
            backoff_initial_s=0.01,
            backoff_max_s=0.05,
            on_usage=usage,
        )


@pytest.fixture
async def endpoint() -> AsyncIterator[Harness]:
    fake = FakeEndpoint()
    async with serving(fake.app()) as base_url:
        harness = Harness(fake, f"{base_url}/v1")
        yield harness
        for client in harness.clients:
            await client.close()


async def test_success_parses_text_and_records_usage(endpoint: Harness) -> None:
    fake = endpoint.fake
    fake.script.append(Step(json.dumps({"text": "  Caroline went to a support group.  "})))
    usage = UsageCounter()
    summary = await endpoint.backend(usage).write_segment(TURNS, [])
    assert summary.text == "Caroline went to a support group."
    assert (summary.prompt_tokens, summary.completion_tokens, summary.degraded) == (11, 7, False)
    assert usage.calls["segment"] == 1 and usage.prompt_tokens["segment"] == 11
    (sent,) = fake.requests
    assert sent["model"] == "test-model"
    assert sent["response_format"] == {"type": "json_object"}
    assert "Caroline: I went to a support group yesterday." in sent["messages"][1]["content"]


async def test_malformed_json_falls_back_without_retrying(
    endpoint: Harness,
) -> None:
    fake = endpoint.fake
    fake.script.append(Step('{"text": "unterminated'))
    usage = UsageCounter()
    offline = OfflineLanguageModel()
    llm = FallbackLanguageModel(endpoint.backend(usage), offline)
    summary = await llm.write_segment(TURNS, [])
    assert summary.degraded
    assert summary.text == (await offline.write_segment(TURNS, [])).text
    assert len(fake.requests) == 1
    assert usage.errors == {"invalid_output": 1}


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_transient_errors_are_retried_to_success(endpoint: Harness, status: int) -> None:
    fake = endpoint.fake
    answer = {"facts": [{"text": "Caroline went to a group.", "source_ids": ["m1", "m404"]}]}
    fake.script.extend([Step(status=status), Step(json.dumps(answer))])
    usage = UsageCounter()
    llm = FallbackLanguageModel(endpoint.backend(usage), OfflineLanguageModel())
    child = MemoryNode("n1", "u1", Level.SEGMENT, T0, T0, "Caroline: ...", source_ids=("m1",))

    window = Window("u1", Level.SESSION, T0, T0, "s1")
    summary = await llm.consolidate(Level.SESSION, window, [child], [])
    assert summary.text.endswith(": Caroline went to a group.") and not summary.degraded
    # An id naming no line the model was shown is dropped from the fact's provenance.
    assert [f.source_ids for f in summary.facts] == [("m1",)]
    assert len(fake.requests) == 2
    assert usage.errors == {f"http_{status}": 1}
    assert usage.calls["consolidate_l2"] == 2


async def test_client_errors_are_not_retried(endpoint: Harness) -> None:
    fake = endpoint.fake
    fake.script.append(Step(status=400))
    llm = FallbackLanguageModel(endpoint.backend(UsageCounter()), OfflineLanguageModel())
    assert await llm.gate(parse_query("support group?"), "simple", []) == []  # nothing to ask about
    child = MemoryNode("n1", "u1", Level.SEGMENT, T0, T0, "Caroline went to a group.")
    assert await llm.gate(parse_query("support group?"), "simple", [child]) is None
    assert len(fake.requests) == 1


async def test_timeouts_exhaust_retries_then_fall_back(
    endpoint: Harness,
) -> None:
    fake = endpoint.fake
    slow = Step('{"text": "too late"}', delay_s=CLIENT_TIMEOUT_S + 0.3)
    fake.script.extend([slow, slow])
    usage = UsageCounter()
    llm = FallbackLanguageModel(endpoint.backend(usage, max_retries=1), OfflineLanguageModel())
    summary = await llm.write_segment(TURNS, [])
    assert summary.degraded
    assert summary.text.startswith('8 May 2023, Caroline: "I went to a support group')
    assert usage.errors == {"timeout": 2}


async def test_plan_and_gate_parse_structured_answers(
    endpoint: Harness,
) -> None:
    fake = endpoint.fake
    fake.script.extend(
        [
            Step(json.dumps({"complexity": 2, "keywords": ["career", "writing", "career"]})),
            Step(json.dumps({"keep": [2, 9, 2]})),
        ]
    )
    llm = endpoint.backend(UsageCounter())
    plan = await llm.plan(parse_query("Would Caroline pursue writing as a career?"))
    assert (plan.complexity, plan.keywords, plan.degraded) == (
        "complex",
        ("career", "writing"),
        False,
    )
    nodes = [MemoryNode(f"n{i}", "u1", Level.SEGMENT, T0, T0, f"memory {i}") for i in range(1, 4)]
    assert await llm.gate(parse_query("career?"), "complex", nodes) == ["n2"]


MOVED = SourceMessage("m1", "Maya", "user", "We moved to Berlin last month!", T0)
MOVED_LEAF = MemoryNode(
    "l1", "u1", Level.SEGMENT, T0, T0, "...", source_ids=("m1",), messages=(MOVED,)
)


async def test_facts_are_read_through_their_schema_and_keyed_as_the_rules_key_them(
    endpoint: Harness,
) -> None:
    fake = endpoint.fake
    answer = {
        "facts": [
            {
                "subject": "Maya",
                "attribute": "Lives In",  # normalised to the fixed list's spelling
                "value": "Berlin",
                "since": "2023-04-01",
                "source_ids": ["m1", "m404"],
            },
            # An ending told without its attribute, spelled as a model may spell it.
            {"subject": "Maya", "attribute": "Ended", "value": "Porto", "source_ids": ["m1"]},
        ]
    }
    fake.script.extend([Step(json.dumps(answer)), Step(json.dumps({"facts": []}))])
    usage = UsageCounter()
    client = AsyncOpenAI(base_url=endpoint.url, api_key="test", max_retries=0)
    endpoint.clients.append(client)
    llm = OpenAILanguageModel(client, "test-model", on_usage=usage, json_schema=True)
    reading = await llm.read_facts(MOVED_LEAF)
    [fact, ending] = reading.facts
    assert (ending.attribute, ending.value, ending.negated) == (ENDED, "Porto", True)
    assert reading.extraction == "llm-facts-3"
    assert (fact.subject, fact.attribute, fact.value, fact.source_ids) == (
        "speaker:maya",
        "lives_in",
        "Berlin",
        ("m1",),
    )
    assert fact.valid_from == datetime(2023, 4, 1, tzinfo=UTC)
    assert (await llm.read_facts(MOVED_LEAF)).facts == ()  # nothing stated is an answer too
    sent = fake.requests[0]
    schema = sent["response_format"]["json_schema"]["schema"]
    # No enum: past the offered attributes a noun names the slot ("medication").
    attribute = schema["$defs"]["_ReadFact"]["properties"]["attribute"]
    assert "enum" not in attribute and attribute["maxLength"] == 40
    assert "[m1] 2023-05-08 Maya (user): We moved to Berlin last month!" in str(sent["messages"])
    assert usage.calls["facts"] == 2 and not usage.errors
    assert (await llm.read_facts(replace(MOVED_LEAF, messages=()))).facts == ()
    assert len(fake.requests) == 2  # a leaf without messages asks nothing


async def test_an_answer_outside_the_schema_falls_back_to_the_rules(endpoint: Harness) -> None:
    fake = endpoint.fake
    # A fact without its value is outside the schema.
    wrong = {"facts": [{"subject": "Maya", "attribute": "lives_in", "source_ids": ["m1"]}]}
    fake.script.append(Step(json.dumps(wrong)))
    usage, failed = UsageCounter(), []
    llm = FallbackLanguageModel(
        endpoint.backend(usage),
        OfflineLanguageModel(),
        on_fallback=lambda operation, exc: failed.append(operation),
    )
    reading = await llm.read_facts(MOVED_LEAF)
    assert reading == await OfflineLanguageModel().read_facts(MOVED_LEAF)
    assert [f.value for f in reading.facts] == ["Berlin"]
    assert reading.extraction == RULES_EXTRACTION  # what the leaf records: the rules read it
    assert failed == ["facts"] and usage.errors == {"invalid_output": 1}


async def test_settings_choose_the_schema_and_the_answer_ceiling(endpoint: Harness) -> None:
    fake = endpoint.fake
    url = endpoint.url
    held = build_language_model(Settings(llm_base_url=url, llm_json_schema=True, llm_max_tokens=64))
    loose = build_language_model(Settings(llm_base_url=url))
    assert isinstance(held, FallbackLanguageModel) and isinstance(loose, FallbackLanguageModel)

    await held.write_segment(TURNS, [])
    await loose.write_segment(TURNS, [])

    enforced, plain = fake.requests
    assert enforced["response_format"]["type"] == "json_schema"
    assert enforced["response_format"]["json_schema"]["schema"]["required"] == ["text"]
    assert enforced["max_tokens"] == 64
    # The defaults: any JSON object, and the endpoint's own ceiling.
    assert plain["response_format"] == {"type": "json_object"}
    assert "max_tokens" not in plain  # not sent as null: some servers refuse a null ceiling


async def test_an_answer_cut_at_its_token_ceiling_is_counted_as_truncated(
    endpoint: Harness,
) -> None:
    fake = endpoint.fake
    fake.script.append(Step('{"text": "Ana adopt', finish_reason="length"))
    usage = UsageCounter()
    client = AsyncOpenAI(base_url=endpoint.url, api_key="test", max_retries=0)
    endpoint.clients.append(client)
    held = OpenAILanguageModel(client, "test-model", on_usage=usage, max_tokens=8)
    with pytest.raises(InvalidOutput, match="cut at its token ceiling"):
        await held.write_segment(TURNS, [])
    assert usage.errors == {"truncated": 1}
    assert fake.requests[0]["max_tokens"] == 8


async def test_only_the_tasks_a_deployment_names_reach_the_endpoint(endpoint: Harness) -> None:
    """`MEMSTREAM_LLM_TASKS=facts,consolidate`: the model reads facts and writes summaries;
    an L1's text and recall's plan and gate are the offline backend's, and ask nothing."""
    fake = endpoint.fake
    told = {"facts": [{"text": "Maya moved to Berlin.", "source_ids": ["m1"]}]}
    fake.script.extend([Step(json.dumps({"facts": []})), Step(json.dumps(told))])
    usage = UsageCounter()
    settings = Settings(llm_base_url=endpoint.url, llm_tasks="facts,consolidate")
    llm = build_language_model(settings, on_usage=usage)
    offline = OfflineLanguageModel()
    query = parse_query("Where does Maya live now?")
    window = Window("u1", Level.SESSION, T0, T0, "s1")

    assert await llm.write_segment(TURNS, []) == await offline.write_segment(TURNS, [])
    assert (await llm.read_facts(MOVED_LEAF)).extraction == "llm-facts-3"
    summary = await llm.consolidate(Level.SESSION, window, [MOVED_LEAF], [])
    assert await llm.plan(query) == await offline.plan(query)
    assert await llm.gate(query, "simple", [MOVED_LEAF]) == await offline.gate(
        query, "simple", [MOVED_LEAF]
    )

    assert len(fake.requests) == 2
    assert set(usage.calls) == {"facts", "consolidate_l2"} and not usage.errors
    assert summary.text.endswith(": Maya moved to Berlin.") and not summary.degraded
