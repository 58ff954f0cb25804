"""Ingest throughput: messages/s through the whole write path, against the raw embedder rate.

    python -m memstream_lab.bench.ingest --out bench-results/ingest.json
    python -m memstream_lab.bench.ingest --runtimes torch onnx-int8 --rounds 2 --out ...

`--runtimes` measures each embedder runtime in turn (alternated `--rounds` times), each
against its own raw rate: the ratio says how much of its embedder the pipeline keeps, the
absolute rates say which runtime ingests faster on this machine in this run. `--processes`
and `--publisher` alternate, within each runtime, the model processes (as
`MEMSTREAM_EMBED_PROCESSES`; the embedder alone runs the same ones) and who publishes (the
benchmark's event loop, or a process of its own as producers are other services). With
more than one run, the JSON's `summary` gives each configuration's median ratio, its range
and how many runs reached 0.8: the same code moves by 0.05-0.1 from run to run on shared
cores, so the median of a few rounds is the figure to read.

One run measures both figures on the same machine: the local embedder alone over the raw
message texts (batch 64, the ceiling), once before and once after the pipeline, and between
them the pipeline on the embedded stack (Tansu, Redis, Qdrant local mode, offline LLM, the
same local embedder) from the first publish until every message is in a stored L1. The
ratio is the figure of merit: how much of the embedder's speed the pipeline keeps. The
embedder's rate is the mean of its two runs, so a machine that speeds up or slows down
during the run (shared cores do) does not tilt the ratio either way.

Two modes (`--mode`, in turn within each runtime; the JSON says which as `mode`):

- `live` (the default, and the mode of every figure in docs/figures/ingest.md): the workers run
  and are warm, then the events are published; the clock runs from the first publish until every
  message is in a stored L1 (reading and validating the file and connecting the producer
  come before it, as a producer service is connected before its users talk). The consumer
  takes what has arrived, so its batches are as small as the publisher's pace makes them.
- `backlog`: every event is published first, with no worker running (neither timed nor
  counted), then the workers start; the clock, the CPU figures, the model's idle count and
  the profile run from the workers' partition assignment (their `partitions assigned`
  start-up line: from there they may consume) until every message is in a stored L1. That
  is a worker catching up on consumer lag: full batches from the first one, no publisher
  sharing the cores. It is the easier case for the pipeline, so its ratio is not the live
  one; report it beside the live figure, never instead.

Wall-clock rates on shared cores move with whatever else runs, so the JSON also gives the
CPU each process spent per message while the pipeline ran (`pipeline_cpu_ms_per_msg`: the
event loop, the model's process, the broker, Redis; see `cpu`), and the model's CPU per
message when it embeds alone (`raw_embedder_cpu_ms_per_msg`); `cpu_ratio` is the ratio
those give, and `cpu_use` the ratio over it (below 1: cores left unused, the model idle
while the loop works). `model_idle_share` is the share of the pipeline's time during which
the model had nothing to embed; `memory_mb` each kind of process's memory (PSS) once the
messages are in. `--profile DIR` writes a cProfile of the event loop over the pipeline (one
`.prof` per run) and prints its top lines.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import logging
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstream.adapters.embedding import model_process
from memstream.adapters.embedding.embedders import build_embedder
from memstream.contracts.catalog import load_catalog
from memstream.domain.models import Level
from memstream.edges.startup import PREFIX
from memstream.edges.startup import log as startup_log
from memstream.entrypoints.collector import collect_less_often, freeze_start_up
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import file_publisher
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings
from memstream_lab.bench.cpu import CpuSpan, memory_mb, snapshot
from memstream_lab.bench.model_busy import ModelBusy
from memstream_lab.bench.sender_process import Sent, sender_process
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation
from memstream_lab.measure import write_report

# The bar: the pipeline keeps at least this share of the embedder's own rate.
TARGET_RATIO = 0.8


def _write_events(files: list[Path], out: Path) -> tuple[list[str], list[str]]:
    """All conversations as one JSONL (one user each); returns users and message texts."""
    users: list[str] = []
    texts: list[str] = []
    with out.open("w") as sink:
        for path in files:
            for event in conversation_events(load_conversation(path)):
                sink.write(json.dumps(event) + "\n")
                if event["type"] == "turn.v1":
                    texts.append(event["text"])
            users.append(f"locomo-{path.stem}")
    return users, texts


async def _raw_embedder_rate(
    texts: list[str], batch: int, settings: Settings
) -> tuple[float, CpuSpan]:
    """Messages/s of the model as a worker runs it (runtime, threads, processes), alone, and
    the CPU it took."""
    embedder = build_embedder(settings.model_copy(update={"embed_batch_size": batch}))
    # Every model process loaded and warm outside the timing, as a worker is before it is ready.
    await embedder.embed(texts[:batch])
    cpu_before = snapshot()
    started = time.perf_counter()
    await embedder.embed(texts)
    rate = len(texts) / (time.perf_counter() - started)
    return rate, CpuSpan.between(cpu_before, snapshot())


async def run(
    files: list[Path],
    batch: int,
    runtime: str,
    model_cache: Path | None = None,
    profile: Path | None = None,
    processes: int = 0,
    publisher: str = "loop",
    mode: str = "live",
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as scratch:
        events_file = Path(scratch) / "events.jsonl"
        users, texts = _write_events(files, events_file)
        # The clock closes the last day, week and month once the replay ends; tick often.
        settings = Settings(
            data_dir=Path(scratch) / "data",
            embed_batch_size=batch,
            embed_runtime=runtime,
            embed_processes=processes,
            model_cache_dir=model_cache or Path(scratch) / "models",
            clock_interval_s=0.5,
            clock_grace_s=0.0,
        )
        raw_before, raw_cpu_before = await _raw_embedder_rate(texts, batch, settings)
        profiler = cProfile.Profile() if profile else None
        async with AsyncExitStack() as running:
            stack = await running.enter_async_context(EmbeddedStack(settings))
            # The model's processes (one set per model and settings; the embedder alone
            # started them, and the workers' embedder uses the same).
            with ModelBusy(model_process.running_model_executors()) as busy:
                span = _Span(busy, profiler)
                publisher_cpu_s = 0.0
                if mode == "backlog":
                    # All of it before any worker runs: not timed, its CPU not counted.
                    publish = await _publisher(publisher, events_file, stack.settings(), running)
                    published, _ = await publish()
                    running.enter_context(_on_partitions_assigned(span.start))
                # Collected as `memstream worker` collects (`entrypoints/collector.py`).
                workers = run_parts(
                    stack.settings(), WRITE_PATH, fast_rebalance=True, on_started=freeze_start_up
                )
                process = await running.enter_async_context(workers)
                container, segmenter = process.container, process.segmenter
                assert segmenter is not None
                if mode == "live":
                    await container.embedder.embed(["warm up"])
                    publish = await _publisher(publisher, events_file, container.settings, running)
                    span.start()
                    published, publisher_cpu_s = await publish()
                elif not span.started:
                    raise RuntimeError("the workers consumed without assigned partitions")
                await _until(lambda: segmenter.handled >= published)
                elapsed = time.perf_counter() - span.started
            if profiler:
                profiler.disable()
            pipeline_cpu = CpuSpan.between(span.cpu_before, snapshot())
            if publisher_cpu_s:  # it has exited: it reported its own
                pipeline_cpu.seconds["publisher"] = publisher_cpu_s
            memory = memory_mb()
            await wait_caught_up(container, users, timeout_s=1800, poll_s=0.25)
            caught_up = time.perf_counter() - span.started
            nodes = {
                user: {level.label: await container.tree.count(user, level) for level in Level}
                for user in users
            }
        gc.unfreeze()  # the next configuration's start-up freezes its own
        raw_after, raw_cpu_after = await _raw_embedder_rate(texts, batch, settings)
        model_process.stop_model_processes()  # the next configuration starts its own
    if profiler and profile:
        _write_profile(profiler, profile, f"{runtime}-{mode}")
    raw_model_cpu_s = sum(
        span.seconds.get("model", 0.0) for span in (raw_cpu_before, raw_cpu_after)
    )
    raw_cpu_per_msg = raw_model_cpu_s / (2 * len(texts))
    raw_rate = (raw_before + raw_after) / 2
    pipeline_rate = len(texts) / elapsed
    ratio = pipeline_rate / raw_rate
    cpu_ratio = raw_cpu_per_msg / pipeline_cpu.total_per_record(len(texts))
    return {
        # "ingested" = every message is in a stored, searchable L1 memory; consolidation of
        # the windows the replay closed runs concurrently and competes for the same cores.
        "benchmark": "ingest",
        "runtime": runtime,
        "messages": len(texts),
        "conversations": len(files),
        "embed_batch_size": batch,
        "model": _model_layout(settings),
        "publisher": publisher,
        "mode": mode,
        "raw_embedder_msgs_per_s": round(raw_rate, 1),
        "raw_embedder_runs_msgs_per_s": [round(raw_before, 1), round(raw_after, 1)],
        "pipeline_msgs_per_s": round(pipeline_rate, 1),
        "pipeline_seconds": round(elapsed, 2),
        "ratio": round(ratio, 3),
        # CPU per message while the pipeline ran (processes by kind; with `--publisher loop`
        # the event loop's includes the benchmark's publisher, which shares its process).
        "pipeline_cpu_ms_per_msg": pipeline_cpu.per_record_ms(len(texts)),
        # The share of the pipeline's time the model had no call to work on (`model_busy`).
        "model_idle_share": round(busy.idle_share(), 3),
        # Memory of each kind of process once every message is in (PSS, MB).
        "memory_mb": memory,
        "raw_embedder_cpu_ms_per_msg": round(1000 * raw_cpu_per_msg, 3),
        # The ratio by CPU: the model's CPU per message alone over all the pipeline's. What
        # the ratio would be if the pipeline got as many cores as the embedder alone did; on
        # saturated cores it bounds the ratio, and other load barely moves it.
        "cpu_ratio": round(cpu_ratio, 3),
        # The ratio over the ratio by CPU: the CPU the pipeline used a second over what the
        # embedder alone used. Below 1, the cores had time the pipeline left unused (the
        # model idle, waiting for the loop); at 1, only less CPU a message raises the ratio.
        "cpu_use": round(ratio / cpu_ratio, 3),
        "seconds_until_all_consolidated": round(caught_up, 2),
        "ratio_until_all_consolidated": round(len(texts) / caught_up / raw_rate, 3),
        "target_ratio": TARGET_RATIO,
        "nodes": nodes,
        "machine": {"python": platform.python_version(), "cpus": _cpus()},
    }


@dataclass
class _Span:
    """The measured span: its clock, the CPU figures, the model's idle count and the profile
    all start at `start()`."""

    busy: ModelBusy
    profiler: cProfile.Profile | None
    started: float = 0.0
    cpu_before: dict[int, tuple[str, float]] = field(default_factory=dict)

    def start(self) -> None:
        self.busy.restart()
        self.cpu_before = snapshot()
        if self.profiler:
            self.profiler.enable()
        self.started = time.perf_counter()


class _PartitionsAssigned(logging.Handler):
    """Calls `then` at the workers' `partitions assigned` start-up line (`edges.startup`):
    from there on they may consume."""

    def __init__(self, then: Callable[[], None]) -> None:
        super().__init__(logging.INFO)
        self._then: Callable[[], None] | None = then

    def emit(self, record: logging.LogRecord) -> None:
        if self._then and record.getMessage().startswith(f"{PREFIX}partitions assigned"):
            then, self._then = self._then, None
            then()


@contextmanager
def _on_partitions_assigned(then: Callable[[], None]) -> Iterator[None]:
    logger = logging.getLogger(startup_log.name)
    level, handler = logger.level, _PartitionsAssigned(then)
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def _publisher(
    mode: str, events: Path, settings: Settings, running: AsyncExitStack
) -> Callable[[], Awaitable[Sent]]:
    """What publishes the events once the clock starts, returning their count and the CPU
    seconds of a publisher process: this process (`loop`, counted in the event loop), or a
    process of its own, started now (`process`, see `publisher`). Either way the events are
    read and validated and the producer connected before: the clock starts at the first
    send. The loop's producer stays open, and a process that has not finished is killed,
    when `running` closes."""
    if mode == "loop":
        catalog = load_catalog(settings.broker.topic_prefix)
        ready = file_publisher(events, catalog=catalog, bootstrap=settings.broker.bootstrap)
        send = await running.enter_async_context(ready)

        async def publish_here() -> Sent:
            return await send(False), 0.0

        return publish_here
    started = sender_process(
        "the publisher process",
        "memstream_lab.bench.publisher",
        str(events),
        "--bootstrap",
        settings.broker.bootstrap,
        "--prefix",
        settings.broker.topic_prefix,
    )
    return await running.enter_async_context(started)


def _model_layout(settings: Settings) -> dict[str, int]:
    """How the worker (and so both measurements) ran the model: processes, threads each."""
    embedder = build_embedder(settings)
    return {
        "processes": getattr(embedder, "processes", 0),
        "threads": getattr(embedder, "threads", 0),
    }


def _write_profile(profiler: cProfile.Profile, directory: Path, name: str) -> None:
    """The event loop's profile over the pipeline, to a file and its top lines to stdout."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"ingest-{name}-{time.strftime('%H%M%S')}.prof"
    profiler.dump_stats(path)
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
    print(f"profile of the event loop: {path}\n{text.getvalue()}", flush=True)


async def _until(done: Callable[[], bool], poll_s: float = 0.05) -> None:
    """Poll a counter the workers advance; the wait is the measurement, so poll finely."""
    while not done():  # noqa: ASYNC110 - a counter, not an event we could await
        await asyncio.sleep(poll_s)


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each configuration's runs in one line: the ratio's median and range, and how many
    runs reached the target.

    The same code's ratio moves by 0.05-0.1 from run to run on shared cores, so whether the
    pipeline keeps 0.8 of its embedder is read off the median of several runs, not one.
    """
    groups: dict[tuple[str, int, str, str], list[dict[str, Any]]] = {}
    for r in runs:
        key = (r["runtime"], r["model"]["processes"], r["publisher"], r["mode"])
        groups.setdefault(key, []).append(r)
    summary = []
    for (runtime, processes, publisher, mode), group in groups.items():
        ratios = [r["ratio"] for r in group]
        summary.append(
            {
                "runtime": runtime,
                "processes": processes,
                "publisher": publisher,
                "mode": mode,
                "runs": len(group),
                "ratio_median": round(statistics.median(ratios), 3),
                "ratio_range": [min(ratios), max(ratios)],
                "runs_at_target": sum(ratio >= TARGET_RATIO for ratio in ratios),
                "cpu_ratio_median": round(statistics.median(r["cpu_ratio"] for r in group), 3),
                "cpu_use_median": round(statistics.median(r["cpu_use"] for r in group), 3),
                "pipeline_msgs_per_s_median": round(
                    statistics.median(r["pipeline_msgs_per_s"] for r in group), 1
                ),
            }
        )
    return summary


def _cpus() -> int:
    return len(os.sched_getaffinity(0))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/ingest.json"))
    parser.add_argument("--conversations", type=int, default=5, help="how many LoCoMo files")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--runtimes",
        nargs="+",
        default=[Settings().embedding.runtime],
        choices=["torch", "onnx-fp32", "onnx-int8"],
        help="Embedder runtimes to measure, in turn (alternated --rounds times).",
    )
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--publisher",
        nargs="+",
        default=["loop"],
        choices=["loop", "process"],
        help="Who publishes the events: the benchmark's event loop (its CPU counted in the "
        "loop's) or a process of its own, as producers are other services (in turn).",
    )
    parser.add_argument(
        "--mode",
        nargs="+",
        default=["live"],
        choices=["live", "backlog"],
        help="live: workers running, timed from the first publish (what the figures quote); "
        "backlog: everything published first, timed from the workers' partition "
        "assignment, as a worker catching up on consumer lag (in turn).",
    )
    parser.add_argument(
        "--processes",
        nargs="+",
        type=int,
        default=[0],
        help="Model processes (MEMSTREAM_EMBED_PROCESSES; 0: the default) to measure, in turn "
        "within each runtime.",
    )
    parser.add_argument(
        "--profile", type=Path, default=None, help="Write a cProfile of the event loop here."
    )
    args = parser.parse_args(argv)
    collect_less_often()  # as `memstream worker` does
    files = conversation_files()[: args.conversations]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memstream-models-") as models:
        for runtime in {r for r in args.runtimes if r != "torch"}:
            # Exported in a process of its own: a model process that exported would hold
            # torch in memory for the rest of its run.
            export = [sys.executable, "-m", "memstream.adapters.embedding.onnx_model"]
            subprocess.run([*export, "--cache-dir", models, "--runtime", runtime], check=True)
        for _ in range(args.rounds):
            for runtime in args.runtimes:
                for processes in args.processes:
                    for publisher in args.publisher:
                        for mode in args.mode:
                            measured = run(
                                files,
                                args.batch,
                                runtime,
                                Path(models),
                                args.profile,
                                processes,
                                publisher,
                                mode,
                            )
                            runs.append(asyncio.run(measured))
                            print(json.dumps(runs[-1]), flush=True)
    if len(runs) == 1:
        result = runs[0]
    else:
        result = {"benchmark": "ingest", "summary": summarize(runs), "runs": runs}
    write_report(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
