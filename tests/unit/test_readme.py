"""The README is the user's manual: it must list every setting and name real commands."""

from __future__ import annotations

from pathlib import Path

from typer.main import get_command

from memstream.entrypoints.cli import app

README = (Path(__file__).parents[2] / "README.md").read_text()


def test_the_settings_are_one_link_away() -> None:
    # Every setting's variable is checked against docs/configuration.md (test_configuration).
    assert "(docs/configuration.md)" in README.split("## Configuration", 1)[1]


def test_documented_commands_exist() -> None:
    commands = set(get_command(app).commands)  # type: ignore[attr-defined]
    for name in ("up", "demo", "ingest", "topics"):
        assert name in commands
        assert f"memstream {name}" in README


def test_the_agent_example_is_python_under_30_lines() -> None:
    section = README.split("## Use it from an agent", 1)[1].split("\n## ", 1)[0]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    compile(example, "README example", "exec")  # a syntax error fails here
    assert len(example.strip().splitlines()) < 30
    assert "publish_turn" in example and ".recall(" in example
