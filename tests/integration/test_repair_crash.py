"""`memstream repair` killed in the middle (SIGKILL, no clean-up) and run again ends with the
stores an uninterrupted repair leaves: the same nodes and the same index payloads as before
the loss.

The small conversation of the forget test is built through the pipeline (hashing embedder);
the index's directory is deleted; `memstream repair --user` runs as a child process that
kills itself at `repair.after_page` (the leaves indexed, the summaries not yet), then again
without the fault point.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from memstream.bootstrap import connect, open_index, qdrant_edge_dir
from memstream.domain.models import Level, MemoryNode
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings

from .crash_rig import SERVICES, scenario_settings
from .test_forget_message import USER, all_nodes, conversation

pytestmark = [pytest.mark.integration, pytest.mark.crash]


def repair_process(settings: Settings, fault_point: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env |= {
        "PYTHONPATH": str(SERVICES),
        "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
        "MEMSTREAM_REDIS_URL": settings.redis.url,
        "MEMSTREAM_TOPIC_PREFIX": settings.broker.topic_prefix,
        "MEMSTREAM_REDIS_NAMESPACE": settings.redis.namespace,
        "MEMSTREAM_QDRANT_COLLECTION": settings.qdrant.collection,
        "MEMSTREAM_DATA_DIR": str(settings.data_dir),
        "MEMSTREAM_EMBEDDER": "hashing",
        "MEMSTREAM_FAULT_POINT": fault_point,
    }
    argv = [sys.executable, "-c", "from memstream.entrypoints.cli import app; app()"]
    return subprocess.run(
        [*argv, "repair", "--user", USER],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )


async def stored(settings: Settings) -> tuple[dict[str, MemoryNode], dict[str, Any], int]:
    """The user's nodes, index payloads and points."""
    async with connect(settings, producer=False) as rt:
        nodes = {n.id: n for n in await all_nodes(rt)}
        payloads = await rt.index.get(list(nodes), user_id=USER)
        return nodes, payloads, await rt.index.count(USER)


async def test_a_repair_killed_midway_and_run_again_ends_as_an_uninterrupted_one(
    stack_settings: Settings, tmp_path: Path
) -> None:
    settings = await scenario_settings(stack_settings, tmp_path, "repair")
    settings = settings.model_copy(update={"clock_grace_s": 0.0, "clock_interval_s": 0.5})
    source = tmp_path / "conversation.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in conversation()))
    async with connect(settings, prioritise_online=True) as rt:
        started = asyncio.Event()
        async with run_parts(rt, WRITE_PATH, fast_rebalance=True, on_started=started.set):
            await asyncio.wait_for(started.wait(), 60)
            await publish_file(
                source, catalog=rt.catalog, bootstrap=settings.broker.bootstrap, show_progress=False
            )
            await wait_caught_up(rt, [USER], timeout_s=120)
    before = await stored(settings)
    leaves = sum(1 for n in before[0].values() if n.level == Level.SEGMENT)
    assert 0 < leaves < len(before[0])
    shutil.rmtree(qdrant_edge_dir(settings) / settings.qdrant.collection)

    killed = repair_process(settings, fault_point="repair.after_page:1")
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    async with AsyncExitStack() as stack:
        index = await open_index(
            settings, settings.qdrant.collection, settings.embedding.dim, stack
        )
        assert await index.count(USER) == leaves  # the leaves' page, nothing above

    finished = repair_process(settings)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert f"{len(before[0]) - leaves} point(s) indexed" in finished.stdout
    assert await stored(settings) == before
