"""The README is the front door and docs/ the manual: settings, commands and links must be real."""

from __future__ import annotations

import re
from pathlib import Path

from typer.main import get_command

from memstream.entrypoints.cli import app

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text()
MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# A link target in markdown: [text](target) or ![alt](target); the target ends at a space,
# a closing parenthesis or an anchor.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s#]*)(?:#[^)\s]*)?\)")


def test_the_settings_are_one_link_away() -> None:
    # Every setting's variable is checked against docs/configuration.md (test_configuration).
    assert "(docs/configuration.md)" in README


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


def test_the_readme_is_read_in_ten_minutes() -> None:
    assert len(README.splitlines()) <= 250


def relative_links(page: Path) -> list[str]:
    """The page's link targets that point into the repository (no scheme, not an anchor alone)."""
    targets = LINK.findall(page.read_text())
    return [t for t in targets if t and "://" not in t and not t.startswith("mailto:")]


def test_the_link_pattern_finds_relative_links_only() -> None:
    text = "[a](docs/x.md) ![b](img.png) [c](https://e.org/y) [d](#top) [e](z.md#part)"
    found = [t for t in LINK.findall(text) if t and "://" not in t]
    assert found == ["docs/x.md", "img.png", "z.md"]


def test_every_relative_link_resolves_to_a_file() -> None:
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in MARKDOWN
        for target in relative_links(page)
        if not (page.parent / target).exists()
    ]
    assert broken == []
