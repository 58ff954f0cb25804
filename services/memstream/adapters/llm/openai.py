"""The LLM backend for any OpenAI-compatible chat-completions endpoint.

Answers are requested as JSON objects (`response_format={"type": "json_object"}`, which
OpenAI-compatible servers widely support), or with their JSON schema enforced when built
with `json_schema=True`, and validated with pydantic. A consolidation is a list of facts,
each citing the message ids it comes from; ids that name no line it was given are dropped,
and an answer left with no fact is invalid. An L1's atomic facts (`read_facts`) come the
same way, each naming its subject, attribute and value, and are keyed and checked as the
offline rules' are (`fact_output`); an empty list is a valid answer. Only transient failures
are retried: rate limits, server errors, timeouts and broken connections. A malformed answer
is not retried here: it raises `InvalidOutput`, and the fallback backend decides what to do.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar, cast

import openai
from pydantic import BaseModel, Field, ValidationError, field_validator
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_random_exponential

from memstream.adapters.llm import prompts
from memstream.adapters.llm.fact_output import facts_of
from memstream.adapters.llm.structured import facts_text, resolve_facts
from memstream.domain.facts import Certainty, FactReading
from memstream.domain.models import (
    Complexity,
    Fact,
    Level,
    MemoryNode,
    Plan,
    Summary,
    Turn,
    Window,
)
from memstream.domain.profile_facts import ProfileKnowledge, knowledge_lines
from memstream.domain.query import Query

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

_Out = TypeVar("_Out", bound=BaseModel)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


class InvalidOutput(ValueError):
    """The model answered, but not with the JSON object it was asked for."""


class UsageHook(Protocol):
    """Called once per HTTP attempt; `error` is None on success, else a short error name."""

    def __call__(
        self,
        operation: str,
        prompt_tokens: int,
        completion_tokens: int,
        seconds: float,
        error: str | None,
    ) -> None: ...


class _Written(BaseModel):
    text: str = Field(min_length=1)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("empty text")
        return value.strip()


# Bounds in the schema let a server that enforces it end a runaway answer early.
class _Fact(BaseModel):
    text: str = Field(min_length=1, max_length=400)
    source_ids: list[Annotated[str, Field(max_length=200)]] = Field(min_length=1, max_length=20)


class _Facts(BaseModel):
    """A consolidation: facts, each citing the ids of the lines it comes from."""

    facts: list[_Fact] = Field(min_length=1, max_length=24)


class _ReadFact(BaseModel):
    """One atomic fact of an L1, as the model reads it (`prompts.facts_prompt`)."""

    subject: str = Field(min_length=1, max_length=120)
    relation_of: str | None = Field(default=None, max_length=120)
    # No enum: past the attributes the prompt offers, a noun names the slot ("medication"),
    # and `fact_output.read_attribute` reads it or drops that fact alone.
    attribute: str = Field(min_length=1, max_length=40)
    value: str = Field(min_length=1, max_length=200)
    negated: bool = False
    since: str | None = Field(default=None, max_length=40)
    certainty: Certainty = "stated"
    source_ids: list[Annotated[str, Field(max_length=200)]] = Field(min_length=1, max_length=10)


class _ReadFacts(BaseModel):
    """An L1's atomic facts: none is a valid answer."""

    facts: list[_ReadFact] = Field(default_factory=list, max_length=30)


class _Planned(BaseModel):
    complexity: Complexity
    keywords: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("complexity", mode="before")
    @classmethod
    def _from_level_number(cls, value: Any) -> Any:
        # Some models answer with the 0/1/2 scale they know from papers; accept it.
        numbered = {0: "simple", 1: "hybrid", 2: "complex"}
        if isinstance(value, int) and value in numbered:
            return numbered[value]
        return value.strip().lower() if isinstance(value, str) else value


class _Gated(BaseModel):
    keep: list[int]


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: the same request may well succeed in a moment."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 429) or exc.status_code >= 500
    return False


def _retry_after(exc: BaseException | None) -> float | None:
    if not isinstance(exc, openai.APIStatusError):
        return None
    try:
        return float(exc.response.headers.get("retry-after", ""))
    except ValueError:
        return None


def _error_name(exc: BaseException) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"http_{exc.status_code}"
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    return type(exc).__name__


class OpenAILanguageModel:
    """`LanguageModel` over `AsyncOpenAI`. Build the client with `max_retries=0`: retries
    happen here, where transient errors are told apart and usage is recorded per attempt."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        temperature: float = 0.2,
        max_retries: int = 3,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 8.0,
        timeout_s: float | None = None,
        on_usage: UsageHook | None = None,
        json_schema: bool = False,
        max_tokens: int | None = None,
    ) -> None:
        self._client = client
        self._model = model
        self._temperature = temperature
        self._max_retries = max_retries
        self._backoff = wait_random_exponential(multiplier=backoff_initial_s, max=backoff_max_s)
        self._backoff_max_s = backoff_max_s
        self._timeout_s = timeout_s
        self._on_usage = on_usage
        # Ask the server to enforce each answer's JSON schema (llama.cpp, vLLM and OpenAI do);
        # otherwise only "a JSON object", which more servers support.
        self._json_schema = json_schema
        # A ceiling on each answer: a small model held to a schema may pad it with spaces.
        self._max_tokens = max_tokens

    def _wait(self, state: RetryCallState) -> float:
        # Honour the server's Retry-After when it asks for longer than our own backoff.
        exc = state.outcome.exception() if state.outcome is not None else None
        hint = _retry_after(exc) or 0.0
        return min(max(self._backoff(state), hint), self._backoff_max_s)

    def _report(self, operation: str, p: int, c: int, started: float, error: str | None) -> None:
        if self._on_usage is not None:
            self._on_usage(operation, p, c, time.perf_counter() - started, error)

    async def _attempt(
        self, operation: str, messages: list[dict[str, str]], schema: type[_Out]
    ) -> tuple[_Out, int, int]:
        started = time.perf_counter()
        try:
            response = await self._client.chat.completions.create(
                model=self._model,
                messages=cast("list[ChatCompletionMessageParam]", messages),
                response_format=self._response_format(schema),
                temperature=self._temperature,
                # Omitted, not null, without a ceiling: some servers refuse a null one. (The
                # client's own "not given" marker, whose type name changed across versions.)
                max_tokens=self._max_tokens
                if self._max_tokens is not None
                else cast("Any", openai.NOT_GIVEN),
                timeout=self._timeout_s if self._timeout_s is not None else openai.NOT_GIVEN,
            )
        except Exception as exc:
            self._report(operation, 0, 0, started, _error_name(exc))
            raise
        usage = response.usage
        p = usage.prompt_tokens if usage is not None else 0
        c = usage.completion_tokens if usage is not None else 0
        content = response.choices[0].message.content if response.choices else None
        try:
            # Some compatible servers wrap JSON in a Markdown fence despite json_object mode.
            parsed = schema.model_validate_json(_FENCE.sub("", content or ""))
        except ValidationError as exc:
            # An answer cut at its token ceiling is told apart: the cure is a higher ceiling
            # (or a model that does not pad its JSON), not another prompt.
            if response.choices and response.choices[0].finish_reason == "length":
                self._report(operation, p, c, started, "truncated")
                raise InvalidOutput(
                    f"{operation}: the answer was cut at its token ceiling"
                ) from exc
            self._report(operation, p, c, started, "invalid_output")
            raise InvalidOutput(f"{operation}: {exc.error_count()} validation errors") from exc
        self._report(operation, p, c, started, None)
        return parsed, p, c

    def _response_format(self, schema: type[BaseModel]) -> Any:
        if not self._json_schema:
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {
                "name": schema.__name__.strip("_").lower(),
                "schema": schema.model_json_schema(),
            },
        }

    async def _complete(
        self, operation: str, messages: list[dict[str, str]], schema: type[_Out]
    ) -> tuple[_Out, int, int]:
        retrying = AsyncRetrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self._max_retries + 1),
            wait=self._wait,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._attempt(operation, messages, schema)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary:
        out, p, c = await self._complete(
            "segment", prompts.segment_prompt(messages, history), _Written
        )
        return Summary(text=out.text, prompt_tokens=p, completion_tokens=c)

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: ProfileKnowledge | None = None,
    ) -> Summary:
        operation = f"consolidate_l{int(level)}"
        known: tuple[Fact, ...] = ()
        if level is Level.MONTH and knowledge is not None:
            known = knowledge_lines(knowledge, window, prompts.KNOWN_FACT_TOKENS)
        messages = prompts.consolidation_prompt(level, window, children, history, known)
        out, p, c = await self._complete(operation, messages, _Facts)
        facts = resolve_facts(out.facts, level, children, history, known)
        if not facts:
            raise InvalidOutput(f"{operation}: no fact cites a line it was given")
        return Summary(
            text=facts_text(level, window, facts),
            facts=facts,
            prompt_tokens=p,
            completion_tokens=c,
        )

    async def read_facts(self, leaf: MemoryNode) -> FactReading:
        if not leaf.messages:
            return FactReading((), prompts.FACTS_PROMPT_VERSION)
        out, _, _ = await self._complete("facts", prompts.facts_prompt(leaf.messages), _ReadFacts)
        return FactReading(facts_of(out.facts, leaf), prompts.FACTS_PROMPT_VERSION)

    async def plan(self, query: Query) -> Plan:
        out, _, _ = await self._complete("plan", prompts.planner_prompt(query.text), _Planned)
        keywords = tuple(dict.fromkeys(k.strip() for k in out.keywords if k.strip()))
        return Plan(complexity=out.complexity, keywords=keywords)

    async def gate(
        self, query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        if not candidates:
            return []
        out, _, _ = await self._complete(
            "gate", prompts.gate_prompt(query.text, complexity, candidates), _Gated
        )
        # The prompt numbers candidates from 1; numbers outside that range are ignored.
        picked = dict.fromkeys(n for n in out.keep if 1 <= n <= len(candidates))
        return [candidates[n - 1].id for n in picked]
