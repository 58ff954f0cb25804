"""All configuration, read once from the environment (prefix `MEMSTREAM_`) and passed down.

Settings are grouped (`settings.redis.url`), while each value keeps its one flat variable
(`MEMSTREAM_REDIS_URL`): a group names each field's variable, and `Settings` reads every
variable itself. Keyword arguments, to `Settings(...)` and to `model_copy(update=...)`, are named
like the variables without the prefix (`Settings(redis_url=...)`), so a test writes what an
operator sets; a group's own model is accepted too (`Settings(redis=RedisSettings(...))`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from memstream.contracts.tenant_topics import parse_tenants
from memstream.domain.fair_share import Share
from memstream.settings.environment import Environment, grouped
from memstream.settings.fair_share import FairShareSettings
from memstream.settings.groups import (
    LLM_TASKS,
    ApiSettings,
    BrokerSettings,
    EmbeddingSettings,
    Handoff,
    LifecycleSettings,
    LlmSettings,
    McpSettings,
    ObservabilitySettings,
    QdrantSettings,
    RebuildSettings,
    RecallSettings,
    RedisSettings,
    WorkerSettings,
)

__all__ = [
    "LLM_TASKS",
    "ApiSettings",
    "BrokerSettings",
    "EmbeddingSettings",
    "FairShareSettings",
    "Handoff",
    "LifecycleSettings",
    "LlmSettings",
    "McpSettings",
    "ObservabilitySettings",
    "QdrantSettings",
    "RebuildSettings",
    "RecallSettings",
    "RedisSettings",
    "Settings",
    "WorkerSettings",
]


class Settings(BaseSettings):
    """memstream's settings. Empty URLs mean "start the embedded part instead"."""

    model_config = SettingsConfigDict(extra="forbid", validate_by_name=True)

    data_dir: Path = Field(
        default=Path(".memstream"),
        validation_alias="MEMSTREAM_DATA_DIR",
        description="Files of the embedded Redis and Qdrant (and of exported models).",
    )
    broker: BrokerSettings = Field(default_factory=BrokerSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    qdrant: QdrantSettings = Field(default_factory=QdrantSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    fair_share: FairShareSettings = Field(default_factory=FairShareSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    rebuild: RebuildSettings = Field(default_factory=RebuildSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    # Not an operator's: what a parent process (`serve`, a test's harness) hands its children.
    handoff: Handoff = Field(default_factory=Handoff)

    def __init__(self, **values: Any) -> None:
        # Keywords are named like the variables (`redis_url=`), not like the fields: declared
        # here so type checkers take any keyword and validation names a wrong one.
        super().__init__(**values)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Keywords first, then the flat variables; no .env file and no secrets directory.
        return init_settings, Environment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _group_keywords(cls, data: Any) -> Any:
        return grouped(cls, data) if isinstance(data, Mapping) else data

    @property
    def overflow_share(self) -> Share | None:
        """Each tenant's share of the segmenter when what a tenant sends past it is set aside
        in the overflow topic: a share set, every tenant's turns in the one shared topic
        (docs/fair-share.md); else None."""
        return None if self._tenant_topics else self.fair_share.share

    @property
    def paused_share(self) -> Share | None:
        """Each tenant's share of the segmenter when a tenant past it has its own turns topic
        paused instead (`MEMSTREAM_TURNS_TOPIC_PER_TENANT`); else None."""
        return self.fair_share.share if self._tenant_topics else None

    @property
    def _tenant_topics(self) -> bool:
        return bool(parse_tenants(self.broker.turns_topic_per_tenant))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update`'s values, named like the constructor's keywords, validated."""
        if not update:
            return super().model_copy(deep=deep)
        current = {name: getattr(self, name) for name in type(self).model_fields}
        if deep:
            current = copy.deepcopy(current)
        return type(self).model_validate({**current, **update})


def documented_groups() -> dict[str, type[BaseModel]]:
    """The groups an operator sets, by attribute name, in the order `Settings` declares them."""
    groups: dict[str, type[BaseModel]] = {}
    for name, field in Settings.model_fields.items():
        kind = field.annotation
        if name != "handoff" and isinstance(kind, type) and issubclass(kind, BaseModel):
            groups[name] = kind
    return groups
