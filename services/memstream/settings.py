"""All configuration, read once from the environment (prefix `MEMSTREAM_`) and passed down.

Settings are grouped (`settings.redis.url`), while each value keeps its one flat variable
(`MEMSTREAM_REDIS_URL`): a group names each field's variable, and `Settings` reads every
variable itself. Keyword arguments, to `Settings(...)` and to `model_copy(update=...)`, are named
like the variables without the prefix (`Settings(redis_url=...)`), so a test writes what an
operator sets; a group's own model is accepted too (`Settings(redis=RedisSettings(...))`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from memstream.settings_groups import (
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
    variables,
)

__all__ = [
    "ApiSettings",
    "BrokerSettings",
    "EmbeddingSettings",
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

PREFIX = "MEMSTREAM_"


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
        return init_settings, _Environment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _group_keywords(cls, data: Any) -> Any:
        return _grouped(cls, data) if isinstance(data, Mapping) else data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update`'s values, named like the constructor's keywords, validated."""
        if not update:
            return super().model_copy(deep=deep)
        current = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self).model_validate({**current, **update})


def documented_groups() -> dict[str, type[BaseModel]]:
    """The groups an operator sets, by attribute name, in the order `Settings` declares them."""
    groups: dict[str, type[BaseModel]] = {}
    for name, field in Settings.model_fields.items():
        kind = field.annotation
        if name != "handoff" and isinstance(kind, type) and issubclass(kind, BaseModel):
            groups[name] = kind
    return groups


def _routes(settings_cls: type[BaseModel]) -> dict[str, tuple[str | None, str]]:
    """Keyword (a variable without the prefix, lower case) -> (group or None, variable)."""
    routes: dict[str, tuple[str | None, str]] = {}
    for name, field in settings_cls.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            for choices in variables(kind).values():
                routes[choices[0].removeprefix(PREFIX).lower()] = (name, choices[0])
        else:
            alias = field.validation_alias
            assert isinstance(alias, str), name
            routes[alias.removeprefix(PREFIX).lower()] = (None, alias)
    return routes


def _grouped(settings_cls: type[BaseModel], data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with keywords moved into their groups, keyed by variable so an error names it.

    The environment's values come keyed by variable already; a keyword beats them."""
    routes = _routes(settings_cls)
    out: dict[str, Any] = {}
    keywords: dict[str, Any] = {}
    for key, value in data.items():
        if key in routes:
            keywords[key] = value
        elif key in settings_cls.model_fields and isinstance(value, Mapping):
            out[key] = _by_variable(settings_cls.model_fields[key].annotation, value)
        else:
            out[key] = value
    for key, value in keywords.items():
        group, variable = routes[key]
        if group is None:
            out[variable] = value
            continue
        existing = out.get(group)
        if isinstance(existing, BaseModel):
            kind = type(existing)
            existing = _by_variable(
                kind, {name: getattr(existing, name) for name in kind.model_fields}
            )
        out[group] = {**(existing or {}), variable: value}
    return out


def _by_variable(group: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """A group's values keyed by variable, a field's name taking precedence over it."""
    if not (isinstance(group, type) and issubclass(group, BaseModel)):
        return dict(values)
    names = variables(group)
    out = {key: value for key, value in values.items() if key not in names}
    for name, choices in names.items():
        if name in values:
            for variable in choices:
                out.pop(variable, None)
            out[choices[0]] = values[name]
    return out


class _Environment(PydanticBaseSettingsSource):
    """The variables of every field that are set, grouped, keyed by variable (the first of a
    field's choices that is set); their case does not matter, as in pydantic-settings."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ reads the variables itself

    def __call__(self) -> dict[str, Any]:
        environ = {key.upper(): value for key, value in os.environ.items()}
        out: dict[str, Any] = {}
        for name, field in self.settings_cls.model_fields.items():
            kind = field.annotation
            if not (isinstance(kind, type) and issubclass(kind, BaseModel)):
                alias = field.validation_alias
                if isinstance(alias, str) and alias in environ:
                    out[alias] = environ[alias]
                continue
            found: dict[str, Any] = {}
            for field_name, choices in variables(kind).items():
                variable = next((v for v in choices if v in environ), None)
                if variable is None:
                    continue
                raw = environ[variable]
                if _is_json(kind.model_fields[field_name].annotation):
                    try:
                        found[choices[0]] = json.loads(raw)
                    except json.JSONDecodeError as bad:
                        raise ValueError(f"{variable} is not valid JSON: {bad}") from bad
                else:
                    found[choices[0]] = raw
            if found:
                out[name] = found
        return out


def _is_json(annotation: Any) -> bool:
    """Lists and mappings are given as JSON, as pydantic-settings reads them."""
    origin = getattr(annotation, "__origin__", None)
    return origin in (list, dict)
