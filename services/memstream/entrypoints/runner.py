"""The one runner: every long-running memstream process starts its parts here.

`memstream worker --role ...`, `memstream serve` and `memstream up` (on its embedded stack)
each choose a set of `Part`s and call `run_until_stopped`; tests, tools and benchmarks use
`run_parts`, the same without the stop signal.

- The consuming parts (segmenter, consolidator) share one Faust app. A process running both
  uses the consumer group `<group>`; a process running one uses `<group>-<part>`, so that one
  role's restarts never pause the other's partitions and each scales on its own lag.
- The scheduler runs the wall clock and the backlog collector (consumer lag, open windows).
- The api serves the recall API with its own `/metrics`, `/healthz` and `/readyz`; a process
  without it serves those on `metrics_port` (`edges.probes`) when given a host.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import faust
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memstream.bootstrap import (
    Container,
    WritePathHandlers,
    build_clock,
    build_consolidator,
    build_segmenter,
    connect,
    divergence_watch,
    recall_app,
    write_path_app,
    write_path_handlers,
)
from memstream.consolidator.handler import Consolidator
from memstream.edges.faust.app import AgentHealth
from memstream.edges.instrumentation import BacklogCollector
from memstream.edges.probes import process_registry, serve_probes, store_ready
from memstream.edges.startup import phase
from memstream.edges.tracing import configure as configure_tracing
from memstream.entrypoints.api_workers import wait_for_each_other
from memstream.metrics import Metrics
from memstream.repair.divergence import DivergenceWatch
from memstream.segmenter.handler import Segmenter
from memstream.settings import Settings

log = logging.getLogger(__name__)


class Part(StrEnum):
    SEGMENTER = "segmenter"
    CONSOLIDATOR = "consolidator"
    SCHEDULER = "scheduler"
    API = "api"


WRITE_PATH = frozenset({Part.SEGMENTER, Part.CONSOLIDATOR, Part.SCHEDULER})
EVERYTHING = WRITE_PATH | {Part.API}

# A process that owns its consumer group alone can rebalance quickly at no cost.
FAST_REBALANCE = {
    "broker_session_timeout": 6.0,
    "broker_heartbeat_interval": 1.0,
    "broker_rebalance_timeout": 6.0,
}


def _consumers_together(parts: Collection[Part]) -> bool:
    return Part.SEGMENTER in parts and Part.CONSOLIDATOR in parts


def recent_vectors_kept(
    settings: Settings, parts: Collection[Part], *, api_apart: bool = False
) -> int:
    """Texts whose vectors the online path keeps: recall's queries are often the messages
    the segmenter of the same process has just embedded (`adapters.embedding.recent`), or,
    with `api_apart`, those an API process of the same stack asks this one for
    (`adapters.qdrant.index_server`)."""
    recall = Part.API in parts or api_apart
    return settings.embedding.recent_vectors if Part.SEGMENTER in parts and recall else 0


def consumer_group(settings: Settings, parts: Collection[Part]) -> str:
    """The Kafka consumer group of the Faust app running `parts`."""
    if _consumers_together(parts):
        return settings.broker.consumer_group
    [consumer] = [p for p in parts if p in (Part.SEGMENTER, Part.CONSOLIDATOR)]
    return f"{settings.broker.consumer_group}-{consumer}"


def lag_groups(
    settings: Settings, parts: Collection[Part], container: Container
) -> dict[str, list[str]]:
    """The consumer groups (and their topics) whose lag the backlog collector reports."""
    turns = list(settings.broker.turns_routing(container.catalog.turns.name).topics)
    windows = container.catalog.windows.name
    if _consumers_together(parts):
        return {settings.broker.consumer_group: [*turns, windows]}
    return {
        consumer_group(settings, {Part.SEGMENTER}): turns,
        consumer_group(settings, {Part.CONSOLIDATOR}): [windows],
    }


@dataclass
class RunningProcess:
    """The parts one process runs; `live()` and `ready()` back the probes."""

    container: Container
    metrics: Metrics
    segmenter: Segmenter | None = None
    consolidator: Consolidator | None = None
    app: faust.App | None = None
    clock: AsyncIOScheduler | None = None
    collector: asyncio.Task[None] | None = None
    api: asyncio.Task[None] | None = None
    # The model's load and first run, under way while the consumer joins its group.
    model: asyncio.Task[None] | None = None
    probes_port: int | None = None
    # The scheduler's process compares the tree with the index (a metric, and readiness).
    divergence: DivergenceWatch | None = None
    started: bool = False
    agents: AgentHealth = field(default_factory=AgentHealth)
    # Set once the consumer group has handed this process its partitions (the first
    # rebalance completed): before that, a started worker consumes nothing.
    joined: asyncio.Event = field(default_factory=asyncio.Event)

    def parts(self) -> dict[str, bool]:
        """Whether each part this process runs is alive (a dead one stays dead)."""
        status: dict[str, bool] = {}
        app_up = self.app is None or not (self.app.crashed or self.app.should_stop)
        for name, handler in (("segmenter", self.segmenter), ("consolidator", self.consolidator)):
            if handler is not None:
                died = any(agent.endswith(f"-{name}") for agent in self.agents.dead)
                status[name] = app_up and not died
        if self.clock is not None:
            status["scheduler"] = not self.started or self.clock.running
        for name, task in (("backlog-collector", self.collector), ("api", self.api)):
            if task is not None:
                status[name] = not task.done()
        return status

    def live(self) -> bool:
        """False once a part has died: the orchestrator should restart the process."""
        return all(self.parts().values())

    async def ready(self) -> dict[str, bool | str]:
        """Per part: started and alive; and whether Redis runs memstream's commands (every
        part needs it), or why not. `started` first: it turns true once every part runs
        and the model is warm (the parts start while it warms up), and an empty set of
        parts must not read as all of them ready."""
        status: dict[str, bool | str] = {"started": self.started}
        status |= {name: ok and self.started for name, ok in self.parts().items()}
        if self.app is not None:
            status["consumer-group"] = self.joined.is_set()
        status["redis"] = await store_ready(self.container.tree.ping)
        if self.divergence is not None:
            status["stores_agree"] = await self.divergence.stores_agree()
        return status


@asynccontextmanager
async def run_parts(
    source: Settings | Container,
    parts: Collection[Part],
    *,
    metrics: Metrics | None = None,
    probes_host: str | None = None,
    collect_interval_s: float = 15.0,
    fast_rebalance: bool = False,
    faust_options: Mapping[str, Any] | None = None,
    on_started: Callable[[], None] | None = None,
    api_apart: bool = False,
) -> AsyncIterator[RunningProcess]:
    """Start `parts` on `source` (settings to connect with, or the caller's open container);
    stop them on exit.

    `probes_host`: serve the probes on `metrics_port` there (when the api is not run).
    `api_apart`: an API process of the same stack reads this process's index and recent
    vectors (`memstream up` with `MEMSTREAM_UP_API_PROCESS`).
    `on_started` runs once every part runs (with the api: once it accepts connections).
    """
    parts = frozenset(parts)
    phase("imports and settings")
    metrics = metrics or Metrics(process_registry())
    settings = source.settings if isinstance(source, Container) else source
    health, joined = AgentHealth(), asyncio.Event()
    async with AsyncExitStack() as stack:
        consumer: _StartingConsumer | None = None
        if Part.SEGMENTER in parts or Part.CONSOLIDATOR in parts:
            # The group join first: seconds of waiting on the broker (Tansu holds a static
            # member's join for a fixed pause), which
            # the connections and the model's warm-up below now fill. Records that come
            # before the handlers wait for them.
            options = {**(FAST_REBALANCE if fast_rebalance else {}), **(faust_options or {})}
            consumer = _StartingConsumer.start(
                settings, metrics, parts, options=options, health=health, joined=joined
            )
            stack.push_async_callback(consumer.stop)  # if connecting fails
        if isinstance(source, Container):
            container = source
        else:
            # One embedder for both consumers: the online path goes first (PriorityEmbedder).
            opened = connect(
                source,
                metrics,
                prioritise_online=_consumers_together(parts),
                recent_vectors=recent_vectors_kept(source, parts, api_apart=api_apart),
                warm_connections=True,
            )
            container = await stack.enter_async_context(opened)
        running = RunningProcess(container, metrics, agents=health, joined=joined)
        if probes_host is not None and Part.API not in parts:
            # First, so liveness answers while the parts are still starting.
            running.probes_port = await stack.enter_async_context(
                serve_probes(
                    metrics.registry,
                    settings.observability.metrics_port,
                    host=probes_host,
                    live=running.live,
                    ready=running.ready,
                )
            )
        phase("connections")
        if consumer is not None:
            # Load and run the model while the consumer joins its group (seconds each, the
            # one in the model's process, the other waiting on the broker); `run_parts`
            # yields, and /readyz turns true, only once both are done. A record that comes
            # first waits for the model: the embedder's calls queue behind the warm-up.
            running.model = _warming_up(container.embedder)
            if running.model is not None:
                stack.push_async_callback(_cancel, running.model)
            if Part.SEGMENTER in parts:
                running.segmenter = build_segmenter(container)
            if Part.CONSOLIDATOR in parts:
                running.consolidator = build_consolidator(container)
            stack.push_async_callback(consumer.stop)  # before the connections close
            consumer.handlers.set_result(
                write_path_handlers(
                    container,
                    metrics,
                    segmenter=running.segmenter,
                    consolidator=running.consolidator,
                )
            )
            running.app = consumer.app
            await _unless_it_fails(running.model, consumer.starting)
            phase("consumer started")
        if Part.API in parts and running.model is None:
            # Warm before the port opens, so that the wait below (and `on_started`) comes
            # after it; the app's own start-up then finds the model warm.
            running.model = _warming_up(container.embedder)
            if running.model is not None:
                stack.push_async_callback(_cancel, running.model)
        if Part.SCHEDULER in parts:
            running.clock = build_clock(container)
            running.clock.start()
            stack.callback(running.clock.shutdown, wait=False)
            running.divergence = divergence_watch(container)
            collector = BacklogCollector(
                metrics,
                tree=container.tree,
                bootstrap=settings.broker.bootstrap,
                groups=lag_groups(settings, parts, container),
                divergence=running.divergence.latest,
            )
            running.collector = asyncio.create_task(
                collector.run(collect_interval_s), name="backlog-collector"
            )
            stack.push_async_callback(_cancel, running.collector)
        if running.model is not None:
            await running.model  # a model that cannot load stops the start here, as before
        if Part.API in parts and settings.handoff.api_start_together is not None:
            # The pod is ready once every API process is: they open the port together.
            await wait_for_each_other(settings.handoff.api_start_together)
            phase("every API process warm")
        if Part.API in parts:
            # Imported here: the HTTP server (uvicorn, fastapi) is no part of a worker's start.
            from memstream.edges.http.server import serve_until_cancelled

            app = recall_app(container, metrics)
            serving = serve_until_cancelled(
                app,
                settings.api.host,
                settings.api.port,
                settings.observability.log_level,
                on_started,
                reuse_port=settings.handoff.api_reuse_port,
            )
            running.api = asyncio.create_task(serving, name="recall-api")
            stack.push_async_callback(_cancel, running.api)
        elif on_started is not None:
            on_started()
        running.started = True
        phase("running")
        log.info("running %s", ", ".join(sorted(parts)))
        yield running


@dataclass
class _StartingConsumer:
    """The Faust app of the consuming parts, started before their handlers exist."""

    app: faust.App
    handlers: asyncio.Future[WritePathHandlers]
    starting: asyncio.Task[None]
    stopped: bool = False

    @classmethod
    def start(
        cls,
        settings: Settings,
        metrics: Metrics,
        parts: Collection[Part],
        *,
        options: Mapping[str, Any],
        health: AgentHealth,
        joined: asyncio.Event,
    ) -> _StartingConsumer:
        handlers: asyncio.Future[WritePathHandlers] = asyncio.get_running_loop().create_future()
        app = write_path_app(
            settings,
            metrics,
            handlers,
            turns=Part.SEGMENTER in parts,
            windows=Part.CONSOLIDATOR in parts,
            app_id=consumer_group(settings, parts),
            options=options,
            health=health,
        )
        app.on_rebalance_complete.connect(_set_when_called(joined))
        return cls(app, handlers, asyncio.create_task(app.start(), name="consumer-start"))

    async def stop(self) -> None:
        """Stop the app (once), and whatever of its start was under way."""
        if self.stopped:
            return
        self.stopped = True
        await _cancel(self.starting)
        await self.app.stop()


def _warming_up(embedder: object) -> asyncio.Task[None] | None:
    """The embedder's warm-up as a task (None for an embedder with nothing to load)."""
    warm_up: Callable[[], Awaitable[None]] | None = getattr(embedder, "warm_up", None)
    if warm_up is None:
        return None

    async def warmed() -> None:
        await warm_up()
        phase("model loaded and warmed up")

    return asyncio.create_task(warmed(), name="model-warm-up")


async def _unless_it_fails(warming: asyncio.Task[None] | None, work: Awaitable[None]) -> None:
    """Await `work`; if `warming` fails first, give up on `work` and raise its error (a
    model that cannot load should not wait for a group join to be reported)."""
    task = asyncio.ensure_future(work)
    pending: set[asyncio.Future[None]] = {task} if warming is None else {task, warming}
    while not task.done():
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if warming in done and warming.exception() is not None:
            await _cancel(task)
            await warming  # raises the model's error
    await task


def _set_when_called(event: asyncio.Event) -> Callable[..., Awaitable[None]]:
    async def on_rebalance_complete(*_: Any, **__: Any) -> None:
        if not event.is_set():
            phase("partitions assigned")
        event.set()

    return on_rebalance_complete


async def _cancel(task: asyncio.Future[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@contextmanager
def stop_on_signals(
    signals: Collection[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
) -> Iterator[asyncio.Event]:
    """An event set by SIGINT or SIGTERM while in the block (on the running loop)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for signum in signals:
        loop.add_signal_handler(signum, stopping.set)
    try:
        yield stopping
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


async def run_until_stopped(
    settings: Settings, parts: Collection[Part], stopping: asyncio.Event, **options: Any
) -> int:
    """Run `parts` (`options` as for `run_parts`) until `stopping` is set (exit code 0) or a
    part dies (exit code 1). Traces go to the configured OTLP endpoint, if any."""
    stop_tracing = configure_tracing(settings.observability.otlp_traces_endpoint, "memstream")
    try:
        async with run_parts(settings, parts, **options) as running:
            while not stopping.is_set():
                if not running.live():
                    log.error("a part stopped (%s); exiting", ", ".join(sorted(parts)))
                    return 1
                with suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), timeout=1.0)
        return 0
    finally:
        if stop_tracing is not None:
            stop_tracing()  # flushes the spans still queued
