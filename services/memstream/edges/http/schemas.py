"""The HTTP API's request and response models (they are also its OpenAPI schema).

The recall request's limits come from settings (`recall_max_query_chars`,
`recall_max_tokens_limit`), so its model is built per app by `recall_request_model`: the
served OpenAPI spec then states the limits this deployment enforces.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    create_model,
)

from memstream.domain.derivation import Derivation
from memstream.domain.models import Complexity, Fact, Level, MemoryNode, RequestedComplexity
from memstream.domain.validity import Validity
from memstream.edges.http.fact_schema import Fact as KnowledgeFact
from memstream.edges.http.trace_schemas import RecallTrace
from memstream.settings import Settings

# The user-id rule of every topic (tests/unit/edges/http/test_user_ids.py holds them equal):
# no whitespace or braces (the id becomes a Redis hash tag), no control characters, no "/"
# and not "." or ".." (the id is a URL path segment), no lone surrogates (they cannot be
# encoded). Spelled with explicit code points rather than `\s`, whose meaning differs between
# regex dialects. Surrogates are refused by the range U+D7FF-U+E000: an ECMA or Rust engine
# cannot even parse a surrogate range, and reads this one as the two characters at its ends
# (given up, with nothing lost) so every dialect accepts the same ids. `(?!\n)`: Python's
# `$` also matches before a final newline, ECMA's does not. The check runs in
# Python's `re`, as the stream's validators do.
USER_ID_PATTERN = (
    r"^(?!\.\.?$)[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f"
    r"\u205f\u3000\ud7ff-\ue000\ufeff{}/]*$(?!\n)"
)
USER_ID_MAX_CHARS = 128
_USER_ID = re.compile(USER_ID_PATTERN)
# RFC 3339 with seconds and an explicit offset, as the turns topic's `ts`.
DATE_TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$"
_DATE_TIME = re.compile(DATE_TIME_PATTERN, re.IGNORECASE)


def valid_user_id(value: str) -> str:
    if not _USER_ID.match(value):
        raise ValueError(
            "a user id has no whitespace, braces, '/', control characters or lone "
            "surrogates, and is not '.' or '..'"
        )
    return value


def encodable(value: str) -> str:
    """`value` if it can be written as UTF-8 (a JSON `\\ud800` escape cannot)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("contains a lone surrogate, which is not a character") from exc
    return value


def rfc3339_text(value: Any) -> Any:
    """Only an RFC 3339 string is a date-time here: pydantic alone would also take a number
    (seconds since 1970) or a bare date, which the spec does not allow."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE_TIME.fullmatch(value):
        raise ValueError("expected an RFC 3339 date-time with an offset, e.g. 2024-05-01T09:00:00Z")
    return value


def json_integer(value: Any) -> Any:
    """An integer as JSON Schema has it, a number with no fraction (5 or 5.0): pydantic alone
    would also take "5" or true."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("expected an integer")
    return value


_FULL_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def iso_date_text(value: Any) -> Any:
    """Only a full date (YYYY-MM-DD) is a date here: pydantic alone would also take a number
    (seconds since 1970, so `0` was 1970-01-01) or a date-time, which the spec does not allow."""
    if isinstance(value, date):
        return value
    if not isinstance(value, str) or not _FULL_DATE.fullmatch(value):
        raise ValueError("expected a date as YYYY-MM-DD, e.g. 2024-05-01")
    return value


# The pattern goes into the spec as it is; the check runs in Python (pydantic's own regex
# engine has no lookahead and reads escapes differently).
UserId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=USER_ID_MAX_CHARS,
        json_schema_extra={"pattern": USER_ID_PATTERN},
    ),
    AfterValidator(valid_user_id),
]
Text = Annotated[str, AfterValidator(encodable)]
DateTime = Annotated[
    AwareDatetime,
    BeforeValidator(rfc3339_text),
    Field(json_schema_extra={"pattern": DATE_TIME_PATTERN}),
]
Date = Annotated[date, BeforeValidator(iso_date_text)]
# Bounds on a JsonInt go inside it, before the check (Annotated[int, Field(ge=...), check]):
# put on the outside, they reach the spec as "ge"/"le", which JSON Schema does not know.
JsonInt = Annotated[int, BeforeValidator(json_integer)]
# Write tokens of publish receipts (`domain.write_token`); what they say is checked by the
# route, which names the field when it refuses one.
MAX_WRITE_TOKENS = 64
WriteToken = Annotated[str, Field(min_length=1, max_length=128)]
WriteTokens = WriteToken | Annotated[list[WriteToken], Field(max_length=MAX_WRITE_TOKENS)]


class RecallRequestBase(BaseModel):
    # Numbers and booleans are JSON's own (JsonInt, StrictBool): pydantic alone would take
    # "5" or true as an integer and "yes" or 1 as a boolean, which the spec refuses.
    model_config = ConfigDict(extra="forbid")

    user_id: UserId
    query: Text
    query_time: DateTime | None = Field(
        default=None,
        description="When the question is asked (RFC 3339 with offset); now if absent.",
    )
    complexity: RequestedComplexity = Field(
        default="auto", description="Force the recall scope instead of letting the planner choose."
    )
    max_tokens: JsonInt | None = Field(
        default=None,
        description="Most tokens the recalled memories may take (a server default if absent). "
        "A question after a single fact spends only a share of it.",
    )
    with_derivation: StrictBool = Field(
        default=False, description="Give each memory's derivation (what wrote it)."
    )
    explain: StrictBool = Field(
        default=False,
        description="Give the answer a `trace`: what each stage saw, kept and left out "
        "(docs/recall-explained.md).",
    )
    after: WriteTokens | None = Field(
        default=None,
        description="Write token(s) of publish receipts: answer once the segmenter has "
        "committed past them, waiting at most `wait_ms` (docs/read-your-writes.md).",
    )
    wait_ms: JsonInt = Field(
        default=0,
        description="Most milliseconds to wait for `after` (bounded by the deployment); "
        "past it the answer has what is stored and `pending: true`.",
    )


def recall_request_model(settings: Settings) -> type[RecallRequestBase]:
    """The recall request with this deployment's limits on `query` and `max_tokens`."""
    return create_model(
        "RecallRequestBody",
        __base__=RecallRequestBase,
        query=(Text, Field(min_length=1, max_length=settings.recall.max_query_chars)),
        max_tokens=(
            Annotated[
                int,
                Field(ge=1, le=settings.recall.max_tokens_limit),
                BeforeValidator(json_integer),
            ]
            | None,
            Field(default=None),
        ),
        wait_ms=(
            Annotated[int, Field(ge=0, le=settings.api.max_wait_ms), BeforeValidator(json_integer)],
            Field(default=0),
        ),
    )


class MemoryDerivation(BaseModel):
    backend: str = Field(description="offline (deterministic rules) or openai (an endpoint).")
    model: str
    prompt_version: str
    embedder: str = Field(description="What made the dense vector, with its size.")
    lexicon: str = Field(description="What stemmed the words of the lexical (sparse) vector.")
    extraction: str = Field(
        description="What read the leaf's facts: rules-N (the offline rules, by version), "
        "llm-facts-N (the LLM backend's facts prompt, by version), or none (the knowledge "
        "write was off)."
    )

    @classmethod
    def of(cls, derivation: Derivation | None) -> MemoryDerivation | None:
        return cls(**derivation.to_json()) if derivation is not None else None


class MemoryFact(BaseModel):
    text: str = Field(description="One sentence or bullet of the memory's text.")
    source_ids: list[str] = Field(description="The message ids this fact comes from.")


class Memory(BaseModel):
    id: str
    user_id: str
    level: int = Field(ge=1, le=5)
    level_name: str
    t_start: datetime
    t_end: datetime
    text: str
    source_ids: list[str]
    parent_id: str | None
    session_id: str | None
    version: int
    degraded: bool
    score: float | None = Field(default=None, description="Recall score; absent outside recall.")
    facts: list[MemoryFact] = Field(
        default_factory=list, description="L2-L5: each fact of the text with its sources."
    )
    derivation: MemoryDerivation | None = Field(
        default=None,
        description="What wrote it (backend, model, prompt version, embedder): in a memory's "
        "detail, and in recall when asked (`with_derivation`); null otherwise, or when it was "
        "written before derivations were kept.",
    )
    # In recall (knowledge on), from the facts the memory's messages state; null otherwise.
    valid_from: datetime | None = Field(
        default=None, description="From when what it says held; null when it states no fact."
    )
    valid_to: datetime | None = Field(
        default=None, description="Until when it held; null while it holds."
    )
    superseded_by: str | None = Field(
        default=None, description="The fact_id of the fact that replaced what it says."
    )
    end_basis: Literal["stated", "inferred"] | None = Field(
        default=None,
        description="How its end was known: `stated`, a fact it states was replaced; "
        "`inferred`, a change said after it (or a replaced value it names) while no fact it "
        "states ended, so it may be about something that still holds; null while it holds.",
    )
    excerpt: bool = Field(
        default=False,
        description="In recall: the text is an excerpt of a leaf too long for the token "
        "budget, around what matched the query (cuts marked with \u2026).",
    )
    full_tokens: int | None = Field(
        default=None, ge=0, description="The whole leaf's size in tokens, for an excerpt."
    )

    @classmethod
    def of(
        cls,
        node: MemoryNode,
        score: float | None = None,
        *,
        with_derivation: bool = False,
        validity: Validity | None = None,
        full_tokens: int | None = None,
    ) -> Memory:
        valid = validity or Validity()
        return cls(
            id=node.id,
            user_id=node.user_id,
            level=int(node.level),
            level_name=node.level.noun,
            t_start=node.t_start,
            t_end=node.t_end,
            text=node.text,
            source_ids=list(node.source_ids),
            parent_id=node.parent_id,
            session_id=node.session_id,
            version=node.version,
            degraded=node.degraded,
            score=score,
            facts=[MemoryFact(text=f.text, source_ids=list(f.source_ids)) for f in node.facts],
            derivation=MemoryDerivation.of(node.derivation) if with_derivation else None,
            valid_from=valid.valid_from,
            valid_to=valid.valid_to,
            superseded_by=valid.superseded_by,
            end_basis=valid.end_basis,
            excerpt=full_tokens is not None,
            full_tokens=full_tokens,
        )

    def to_node(self) -> MemoryNode:
        """Back to a domain node (for clients such as `memstream recall --url`)."""
        return MemoryNode(
            id=self.id,
            user_id=self.user_id,
            level=Level(self.level),
            t_start=self.t_start,
            t_end=self.t_end,
            text=self.text,
            parent_id=self.parent_id,
            source_ids=tuple(self.source_ids),
            version=self.version,
            degraded=self.degraded,
            session_id=self.session_id,
            facts=tuple(Fact(f.text, tuple(f.source_ids)) for f in self.facts),
        )


class WritesSeen(BaseModel):
    """What an answer to a read with `after` may be missing (docs/read-your-writes.md)."""

    pending: bool = Field(
        default=False,
        description="True when a write named in `after` may be missing from the answer.",
    )
    pending_reason: (
        Literal["not_yet_processed", "awaiting_reply", "awaiting_earlier_seq"] | None
    ) = Field(
        default=None,
        description="`not_yet_processed`: the segmenter had not committed past it by "
        "`wait_ms`; `awaiting_reply`: a user's message is held for its reply (publish it "
        "with `flush`), its event id in `held_messages`; `awaiting_earlier_seq`: a turn is "
        "held until its session's turn with an earlier `seq` arrives (docs/producers.md).",
    )
    held_messages: list[str] = Field(
        default_factory=list, description="Event ids the window state holds back."
    )


class RecallResponse(WritesSeen):
    user_id: str
    complexity: Complexity
    keywords: list[str]
    memories: list[Memory]
    facts: list[KnowledgeFact] = Field(
        default_factory=list,
        description="The fact versions the query asks about (knowledge on), the one true at "
        "the asked time first, each with its validity.",
    )
    tokens: int = Field(ge=0)
    omitted_for_budget: int = Field(
        default=0,
        ge=0,
        description="How many memories judged relevant the token budget left out (neither "
        "whole nor as an excerpt): a larger `max_tokens` would return them.",
    )
    timings_ms: dict[str, float]
    degraded: bool = Field(description="True when an LLM step failed and a fallback answered.")
    trace: RecallTrace | None = Field(default=None, description="With `explain`; else null.")


class ProfileResponse(WritesSeen):
    user_id: str
    profile: Memory | None


class MemoryPage(WritesSeen):
    user_id: str
    items: list[Memory]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null at the end."
    )


class MemoryDetailResponse(WritesSeen):
    memory: Memory
    children: list[Memory]
    ancestors: list[Memory] = Field(description="Parent first, up to the monthly profile.")
    source_ids: list[str] = Field(description="The message ids this memory derives from.")


class ForgetResponse(BaseModel):
    user_id: str
    qdrant_points: int
    redis_keys: int
    forget_event_published: bool


MessageId = Annotated[str, Field(min_length=1, max_length=200)]
MAX_FORGET_MESSAGES = 100  # as forget.v1's `message_ids` allows


class ForgetMessagesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_ids: list[MessageId] = Field(min_length=1, max_length=MAX_FORGET_MESSAGES)


class MessageForgetResponse(BaseModel):
    user_id: str
    message_ids: list[str]
    status: Literal["pending", "done"]
    handles: list[str] = Field(description="One URL per message: GET it for the status.")


class MessageForgetStatus(BaseModel):
    user_id: str
    message_id: str
    status: Literal["pending", "done"] = Field(
        description="done: the message is tombstoned and no memory of the user cites it."
    )


class RebuildRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    from_date: Date | None = Field(
        default=None,
        alias="from",
        description="Only memories ending on or after this date (UTC); absent: all history.",
    )
    levels: list[Annotated[int, Field(ge=1, le=5), BeforeValidator(json_integer)]] | None = Field(
        default=None,
        min_length=1,
        max_length=5,
        description="Levels to re-derive (1-5); absent: all. The windows above a re-derived "
        "memory are consolidated again whatever their level.",
    )


class RebuildResponse(BaseModel):
    user_id: str
    rebuild_id: str
    status: Literal["pending", "done"]
    handle: str = Field(description="GET it for the rebuild's progress.")


class RebuildStatus(BaseModel):
    user_id: str
    rebuild_id: str
    status: Literal["pending", "done", "nothing_to_do"] = Field(
        description="done: every leaf re-derived and every window above consolidated again; "
        "nothing_to_do: the user has no memory and no rebuild job (an unknown id, or a lost "
        "tree: repair it), so no rebuild will start."
    )
    leaves: int = Field(description="Leaves in the rebuild (0 until the workers plan it).")
    leaves_done: int
    leaves_rewritten: int = Field(description="Of those done, written again (others current).")
    windows: int
    windows_pending: int


class Problem(BaseModel):
    detail: str


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, bool]
    reasons: dict[str, str] = Field(
        default_factory=dict, description="Why each failing check failed, when it said."
    )
