"""The whole pipeline in this process with the recall API on a free port, for SDK and MCP tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from memstream.entrypoints.embedded.processes import free_port
from memstream.entrypoints.runner import EVERYTHING, RunningProcess, run_parts
from memstream.settings import Settings

API_KEY = "sdk-test-key"


@dataclass
class Served:
    running: RunningProcess
    settings: Settings

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.settings.api.port}"


@asynccontextmanager
async def serving_everything(settings: Settings, data_dir: Path) -> AsyncIterator[Served]:
    """Segmenter, consolidator, clock and the recall API (bearer key `API_KEY`)."""
    local = settings.model_copy(
        update={
            "data_dir": data_dir,
            "clock_grace_s": 0.0,
            "clock_interval_s": 0.5,
            "recall_api_keys": [SecretStr(API_KEY)],
            "api_host": "127.0.0.1",
            "api_port": free_port(),
        }
    )
    started = asyncio.Event()
    async with run_parts(local, EVERYTHING, fast_rebalance=True, on_started=started.set) as run:
        await asyncio.wait_for(started.wait(), 120)
        yield Served(run, local)
