"""Running part of the set: `--only` names conversations by id and range, the default runs them
all, and an id the set does not hold stops the run instead of shrinking it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstream.entrypoints.cli import app
from memstream_lab.eval import commands
from memstream_lab.eval.knowledge.harness import KnowledgeConfig, select
from memstream_lab.knowledge.dataset import ids_in, load_all

SET = load_all()
FRESH = tuple(f"ku{n}" for n in range(35, 45))


def test_ids_and_ranges_name_conversations_in_the_order_given() -> None:
    assert ids_in("ku35-ku44") == FRESH
    assert ids_in("ku35-44, ku03,ku35") == (*FRESH, "ku03")
    assert ids_in("ku07") == ("ku07",)
    assert ids_in("ku08-ku10") == ("ku08", "ku09", "ku10")


@pytest.mark.parametrize("spec", ["", "ku35-", "35-44", "ku44-ku35", "ku35-lo44", "ku35;ku36"])
def test_what_is_not_an_id_or_a_range_is_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        ids_in(spec)


def test_only_keeps_the_named_conversations_with_all_their_questions() -> None:
    chosen = select(SET, None, None, ids_in("ku35-ku44"))
    assert [c["conversation_id"] for c in chosen] == list(FRESH)
    by_id = {c["conversation_id"]: c for c in SET}
    assert all(c["questions"] == by_id[c["conversation_id"]]["questions"] for c in chosen)
    # The count and the question cap apply within the named conversations.
    first_two = select(SET, 2, 1, ids_in("ku40-ku44"))
    assert [(c["conversation_id"], len(c["questions"])) for c in first_two] == [
        ("ku40", 1),
        ("ku41", 1),
    ]


def test_without_only_every_conversation_runs() -> None:
    assert [c["conversation_id"] for c in select(SET, None, None)] == [
        c["conversation_id"] for c in SET
    ]


def test_an_id_the_set_does_not_hold_is_an_error() -> None:
    with pytest.raises(ValueError, match="ku99"):
        select(SET, None, None, ("ku35", "ku99"))


class _Stopped(Exception):
    """Raised by the stand-in harness once it has seen the configuration."""


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[KnowledgeConfig]:
    """The configurations the command hands the harness, which stops at once."""
    configs: list[KnowledgeConfig] = []

    async def record(config: KnowledgeConfig, *_: Any) -> None:
        configs.append(config)
        raise _Stopped

    monkeypatch.setattr(commands, "run_knowledge", record)
    return configs


def test_the_command_passes_the_parsed_ids_and_refuses_a_bad_spec(
    seen: list[KnowledgeConfig], tmp_path: Path
) -> None:
    out = str(tmp_path / "run")
    ran = CliRunner().invoke(app, ["eval", "knowledge", "--out", out, "--only", "ku35-ku44"])
    assert isinstance(ran.exception, _Stopped)
    default = CliRunner().invoke(app, ["eval", "knowledge", "--out", out])
    assert isinstance(default.exception, _Stopped)
    assert [c.only for c in seen] == [FRESH, None]

    refused = CliRunner().invoke(app, ["eval", "knowledge", "--out", out, "--only", "fresh"])
    assert refused.exit_code == 2 and "--only" in refused.output
    assert len(seen) == 2


def test_the_command_writes_with_the_endpoint_only_when_asked(
    seen: list[KnowledgeConfig], tmp_path: Path
) -> None:
    out = str(tmp_path / "run")
    for flags in ([], ["--memory-llm"], ["--offline-memory"]):
        ran = CliRunner().invoke(app, ["eval", "knowledge", "--out", out, *flags])
        assert isinstance(ran.exception, _Stopped)
    assert [c.memory_llm for c in seen] == [False, True, False]


def test_the_gold_reader_and_the_endpoints_reading_are_one_or_the_other(tmp_path: Path) -> None:
    out = str(tmp_path / "run")
    both = ["eval", "knowledge", "--out", out, "--reader", "gold", "--memory-llm"]
    ran = CliRunner().invoke(app, both)
    assert ran.exit_code == 2 and "gold reader" in ran.output
    unknown = CliRunner().invoke(app, ["eval", "knowledge", "--out", out, "--reader", "model"])
    assert unknown.exit_code == 2 and "backend, gold" in unknown.output
