"""Settings and their documentation: one variable per field, one field per documented variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError
from typer.testing import CliRunner

from memstream.entrypoints.cli import app
from memstream.settings import Settings, documented_groups
from memstream.settings.doc import markdown
from memstream.settings.groups import Handoff, variables

ROOT = Path(__file__).parents[2]
CONFIGURATION = ROOT / "docs" / "configuration.md"
VARIABLE = re.compile(r"\bMEMSTREAM_[A-Z0-9_]*[A-Z0-9]")


def _operator_variables() -> set[str]:
    found = {str(f.validation_alias) for f in Settings.model_fields.values() if f.validation_alias}
    for group in documented_groups().values():
        found |= {choices[0] for choices in variables(group).values()}
    return found


def _handoff_variables() -> set[str]:
    return {choices[0] for choices in variables(Handoff).values()}


def _documents() -> list[Path]:
    paths = [ROOT / "README.md", ROOT / "docker-compose.yml"]
    for folder in ("docs", "k8s", "deploy"):
        paths += [p for p in (ROOT / folder).rglob("*") if p.is_file()]
    return [p for p in paths if p.suffix not in (".png", ".svg", ".json")]


def _manifests() -> list[Path]:
    paths = [ROOT / "docker-compose.yml", *(ROOT / "deploy").rglob("Dockerfile*")]
    return paths + sorted((ROOT / "k8s").glob("*.yaml"))


def test_the_committed_configuration_page_is_what_the_generator_writes() -> None:
    # On a difference: `make config-doc` and commit docs/configuration.md.
    assert CONFIGURATION.read_text() == markdown()


def test_every_setting_is_documented() -> None:
    page = CONFIGURATION.read_text()
    missing = [v for v in sorted(_operator_variables()) if f"`{v}`" not in page]
    assert missing == []


def test_what_a_parent_hands_its_children_is_not_an_operators_setting() -> None:
    page = CONFIGURATION.read_text()
    assert "handoff" not in documented_groups()
    assert [v for v in sorted(_handoff_variables()) if v in page] == []
    for manifest in _manifests():
        assert set(VARIABLE.findall(manifest.read_text())) & _handoff_variables() == set()


def test_every_documented_variable_is_a_setting() -> None:
    known = _operator_variables() | _handoff_variables()
    unknown = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in _documents()
        for name in VARIABLE.findall(path.read_text(errors="ignore"))
        if name not in known
    }
    assert unknown == set()


@pytest.mark.parametrize(
    ("variable", "value", "path", "expected"),
    [
        ("MEMSTREAM_REDIS_URL", "redis://r:6379", "redis.url", "redis://r:6379"),
        ("MEMSTREAM_TOPIC_PREFIX", "t.", "broker.topic_prefix", "t."),
        ("MEMSTREAM_EMBEDDER", "hashing", "embedding.backend", "hashing"),
        ("MEMSTREAM_RECALL_AUTH_DISABLED", "true", "api.auth_disabled", True),
        ("MEMSTREAM_API_PORT", "9090", "api.port", 9090),
        ("MEMSTREAM_REBUILD_CHUNK_LEAVES", "4", "rebuild.chunk_leaves", 4),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://c:4318",
            "observability.otlp_traces_endpoint",
            "http://c:4318",
        ),
        ("memstream_log_level", "debug", "observability.log_level", "DEBUG"),
        ("MEMSTREAM_FAULT_POINT", "commit:2", "handoff.fault_point", "commit:2"),
    ],
)
def test_a_variable_sets_its_field(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, path: str, expected: object
) -> None:
    monkeypatch.setenv(variable, value)
    found: object = Settings()
    for part in path.split("."):
        found = getattr(found, part)
    assert found == expected


def test_every_field_has_a_description_and_a_variable() -> None:
    groups: dict[str, type[BaseModel]] = {**documented_groups(), "handoff": Handoff}
    for group in groups.values():
        for name, field in group.model_fields.items():
            assert field.description, name
            assert all(v.isupper() for v in variables(group)[name]), name


def test_keywords_are_named_like_the_variables_and_beat_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMSTREAM_REDIS_URL", "redis://from-env")
    monkeypatch.setenv("MEMSTREAM_REDIS_NAMESPACE", "env")
    monkeypatch.setenv("MEMSTREAM_DATA_DIR", "/from-env")
    settings = Settings(redis_url="redis://from-keyword", embed_threads=2, data_dir=Path("/kw"))
    assert settings.data_dir == Path("/kw")
    assert settings.redis.url == "redis://from-keyword"
    assert settings.redis.namespace == "env"  # the group's other values still come from it
    assert settings.embedding.threads == 2
    copied = settings.model_copy(update={"api_port": 0, "embed_server": Path("/s")})
    assert (copied.api.port, copied.handoff.embed_server) == (0, Path("/s"))
    assert copied.redis.url == "redis://from-keyword"
    with pytest.raises(ValidationError, match="MEMSTREAM_API_PORT"):
        settings.model_copy(update={"api_port": -1})  # a copy is validated like a start
    with pytest.raises(ValidationError, match="redis_ulr"):
        Settings(redis_ulr="redis://typo")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MEMSTREAM_EMBEDDER", "bert"),
        ("MEMSTREAM_EMBED_RUNTIME", "onnx"),
        ("MEMSTREAM_SEGMENT_BY", "words"),
        ("MEMSTREAM_LOG_LEVEL", "loud"),
    ],
)
def test_a_value_outside_a_closed_set_fails_at_start_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError, match=variable) as refused:
        Settings()
    assert "Input should be" in str(refused.value)


def test_a_worker_with_a_bad_value_stops_before_connecting_and_names_the_variable() -> None:
    env = {"MEMSTREAM_SEGMENT_BY": "words", "MEMSTREAM_KAFKA_BOOTSTRAP": "127.0.0.1:9"}
    result = CliRunner().invoke(app, ["worker"], env=env)
    assert result.exit_code != 0
    assert isinstance(result.exception, ValidationError)
    assert "MEMSTREAM_SEGMENT_BY" in str(result.exception)


def test_a_list_that_is_not_json_fails_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMSTREAM_RECALL_API_KEYS", "k1,k2")
    with pytest.raises(ValueError, match="MEMSTREAM_RECALL_API_KEYS"):
        Settings()
