"""A fact as the API gives it, in recall answers and in the knowledge routes alike."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from memstream.domain.facts import AtomicFact, Status, status_at


class Fact(BaseModel):
    fact_id: str
    text: str = Field(description='A readable sentence: "Maya lives in Berlin".')
    subject: str = Field(description='Who or what it is about, as a key: "speaker:maya".')
    subject_name: str = Field(description='The subject for display: "Maya", "Maya\'s brother".')
    attribute: str = Field(description="lives_in, works_at, likes, ...")
    value: str
    certainty: Literal["stated", "implied"]
    negated: bool = Field(description="True: the value stopped holding at valid_from.")
    valid_from: datetime = Field(description="When it began to hold (event time).")
    valid_to: datetime | None = Field(
        description="When it stopped holding (the next version's valid_from); null while it holds."
    )
    supersedes: str | None = Field(description="The fact_id of the version it replaced.")
    superseded_by: str | None = Field(description="The fact_id of the version that replaced it.")
    recorded_at: datetime = Field(description="When memstream learned it (record time).")
    source_ids: list[str] = Field(
        description="The message ids of its latest statements (at most 8); `statements` "
        "counts them all."
    )
    statements: int = Field(
        default=1, description="How many statements (messages' claims) this version merges."
    )
    status: Status | None = Field(
        default=None,
        description="As of recall's query_time, else the time of the request: `holds`, "
        "`planned` (told to begin later: valid_from is ahead; the version it will close holds "
        "until then) or `ended`.",
    )

    @classmethod
    def of(cls, fact: AtomicFact, as_of: datetime | None = None) -> Fact:
        return cls(
            fact_id=fact.fact_id,
            text=fact.text,
            subject=fact.subject,
            subject_name=fact.subject_name,
            attribute=fact.attribute,
            value=fact.value,
            certainty=fact.certainty,
            negated=fact.negated,
            valid_from=fact.valid_from,
            valid_to=fact.valid_to,
            supersedes=fact.supersedes,
            superseded_by=fact.superseded_by,
            recorded_at=fact.recorded_at,
            source_ids=list(fact.source_ids),
            statements=fact.statements,
            status=status_at(fact, as_of) if as_of is not None else None,
        )
