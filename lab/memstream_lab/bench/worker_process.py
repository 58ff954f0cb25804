"""`memstream worker` as a child process of a benchmark, with its log and start-up phases.

The worker logs a line per start-up phase (`edges.startup`): `phases()` reads them back, so
a benchmark reports where a start's seconds went (and the CPU time, which is what compares
on a loaded machine).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.settings import Settings


@contextmanager
def standalone_stack(name: str) -> Iterator[tuple[Settings, Path]]:
    """A standalone broker and Redis for one benchmark run, and the settings of a worker on
    them with a consumer group and Redis namespace of its own; with a scratch directory that
    goes when the run ends."""
    with tempfile.TemporaryDirectory(prefix=f"memstream-{name}-") as tmp:
        scratch = Path(tmp)
        base = Settings(data_dir=scratch / "stack", kafka_bootstrap="", redis_url="")
        with BackgroundStack(base) as stack:
            uid = uuid.uuid4().hex[:8]
            settings = stack.settings().model_copy(
                update={
                    "consumer_group": f"memstream-{name}-{uid}",
                    "redis_namespace": f"{name}-{uid}",
                    "data_dir": scratch / "worker",
                }
            )
            yield settings, scratch


_PHASE = re.compile(r"start-up: (?P<name>.+) at (?P<wall>[\d.]+) s \(cpu (?P<cpu>[\d.]+) s\)")


def worker_environment(settings: Settings, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker on `settings` (nothing inherited from MEMSTREAM_*)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    return (
        env
        | {
            "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
            "MEMSTREAM_REDIS_URL": settings.redis.url,
            "MEMSTREAM_TOPIC_PREFIX": settings.broker.topic_prefix,
            "MEMSTREAM_CONSUMER_GROUP": settings.broker.consumer_group,
            "MEMSTREAM_REDIS_NAMESPACE": settings.redis.namespace,
            "MEMSTREAM_DATA_DIR": str(settings.data_dir),
            "MEMSTREAM_METRICS_PORT": "0",
            "MEMSTREAM_LOG_LEVEL": "INFO",
        }
        | (extra or {})
    )


class WorkerProcess:
    """`memstream worker --role <role>` in its own process group, logging to `log_path`."""

    def __init__(self, env: dict[str, str], log_path: Path, role: str = "all") -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.started = time.monotonic()
        command = [sys.executable, "-c", "from memstream.entrypoints.cli import app; app()"]
        self.proc = subprocess.Popen(
            [*command, "worker", "--role", role, "--host", "127.0.0.1"],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: a signal reaches it and its children only
        )

    def signal(self, signum: int) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signum)

    async def exited(self, timeout_s: float) -> int:
        """Wait (polling, with a deadline) for the process to end; its return code."""
        deadline = time.monotonic() + timeout_s
        while (code := self.proc.poll()) is None:
            if time.monotonic() > deadline:
                self.signal(signal.SIGKILL)
                raise TimeoutError(f"worker still running after {timeout_s:.0f} s")
            await asyncio.sleep(0.05)
        self._log.close()
        return code

    def phases(self) -> dict[str, dict[str, float]]:
        """Start-up phase -> {"at_s": since the process started, "cpu_s": used by then}."""
        found: dict[str, dict[str, float]] = {}
        for line in self.log_path.read_text(errors="replace").splitlines():
            if (match := _PHASE.search(line)) and match["name"] not in found:
                found[match["name"]] = {"at_s": float(match["wall"]), "cpu_s": float(match["cpu"])}
        return found

    def tail(self, lines: int = 20) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


async def committed(bootstrap: str, group: str, partitions: list[TopicPartition]) -> int:
    """The group's committed offsets over `partitions`, summed (0 where none)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group, partitions=partitions)
        return sum(max(meta.offset, 0) for meta in offsets.values())
    finally:
        await admin.close()


async def consuming_after(
    worker: WorkerProcess, bootstrap: str, group: str, partitions: list[TopicPartition]
) -> float:
    """Seconds from the worker's start until its group commits beyond where it stood: the
    start, the group join and a first batch handled (Faust commits every second)."""
    before = await committed(bootstrap, group, partitions)
    deadline = time.monotonic() + 300
    while await committed(bootstrap, group, partitions) <= before:
        if worker.proc.poll() is not None:
            raise RuntimeError(f"worker exited ({worker.proc.returncode})\n{worker.tail()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no progress after 300 s\n{worker.tail()}")
        await asyncio.sleep(0.05)
    return time.monotonic() - worker.started
