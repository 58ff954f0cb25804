"""Writes docs/configuration.md from the settings' own descriptions, so the two never differ.

    python -m memstream.settings.doc > docs/configuration.md   (make config-doc)

A unit test compares the committed file with what this writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from memstream.settings import Settings, documented_groups
from memstream.settings.groups import variables

HEADER = """\
# Configuration

memstream reads its settings once, from environment variables named `MEMSTREAM_*`, and passes
them down; in code they are grouped (`settings.redis.url` is `MEMSTREAM_REDIS_URL`). Lists and
mappings are given as JSON. Empty URLs mean "start the embedded part instead".

This page is generated from the settings' descriptions (`services/memstream/settings/groups.py`):
edit those, then run `make config-doc`. A test fails when the two differ.
"""


def _default(field: FieldInfo) -> str:
    """A field's default as an operator would write it."""
    value: Any = field.default
    if value is PydanticUndefined and field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value in ("", [], {}):
        return "(empty)"
    if isinstance(value, Path):
        value = value.as_posix()
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(rows: list[tuple[str, FieldInfo, str]]) -> list[str]:
    lines = ["| Variable | Default | Field | Description |", "| --- | --- | --- | --- |"]
    for variable, field, path in rows:
        description = _cell(field.description or "")
        lines.append(f"| `{variable}` | {_default(field)} | `{path}` | {description} |")
    return lines


def _group_rows(name: str, group: type[BaseModel]) -> list[tuple[str, FieldInfo, str]]:
    rows = []
    for field_name, choices in variables(group).items():
        field = group.model_fields[field_name]
        also = f" (also {', '.join(f'`{v}`' for v in choices[1:])})" if choices[1:] else ""
        info = field._copy()
        info.description = (field.description or "") + also
        rows.append((choices[0], info, f"settings.{name}.{field_name}"))
    return rows


def markdown() -> str:
    """docs/configuration.md: every operator's setting, by group."""
    lines = [HEADER]
    top = [
        (str(field.validation_alias), field, f"settings.{name}")
        for name, field in Settings.model_fields.items()
        if isinstance(field.validation_alias, str)
    ]
    lines += ["## General", "", *_table(top), ""]
    for name, group in documented_groups().items():
        title = (group.__doc__ or name).strip().splitlines()[0]
        lines += [f"## {name} (`settings.{name}`)", "", title, ""]
        lines += [*_table(_group_rows(name, group)), ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
