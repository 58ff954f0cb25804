"""How `Settings` reads its variables and keywords: each named like a flat variable, each put
into its group, keyed by variable so a validation error names the variable."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_settings import PydanticBaseSettingsSource

from memstream.settings.groups import variables

PREFIX = "MEMSTREAM_"


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


def grouped(settings_cls: type[BaseModel], data: Mapping[str, Any]) -> dict[str, Any]:
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


class Environment(PydanticBaseSettingsSource):
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
