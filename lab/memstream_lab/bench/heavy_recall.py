"""The heavy user's recall against a light user's in one store: CPU a request and its stages.

    memstream bench heavy-recall --run-dir /tmp/hr-run --out hr.json --heavy-messages 20000

What it builds, once per run directory (resumable as `scale` is: the stores and
`progress.json` stay in `--run-dir`): `--light-users` light users of `--light-messages` each
over a month, a medium user of `--medium-messages` (more leaves than recall's candidate pool,
as a LoCoMo conversation has) and a heavy user of `--heavy-messages`, both over
`--heavy-years`, through the scale benchmark's fill (`scale_fill`, `scale_chat`: the real
adapters, the offline backend, resampled real embeddings). What it measures: the same
questions (`synthetic.queries`: they name the people the chats talk of) asked of the heavy,
the medium and a light user in turn, through the recall pipeline of this process (no HTTP),
once each user's knowledge has been read (the first read derives it whole, a cost of its
own: `knowledge_read`): the CPU a request (`time.process_time` of the whole process, the
embedded Qdrant included) and each stage's wall time from the result's timings; with
`--digest`, each answer's memories and a hash of them, so two checkouts run against one run
directory show whether a change moved what recall returns.

Two ratios say different things. Heavy over light is the issue's target; it also holds what
does not grow with history: a light user's 85 leaves are fewer than the candidates recall
reads (so it reads fewer nodes), and all of them stay in the decoded-node cache, where a
heavy user's questions read nodes not read before (`MEMSTREAM_REDIS_NODE_CACHE_MB=0` takes
the cache out of both). Heavy over medium is what grows past the candidate pool. With
`--rounds 2` the questions are asked again: in the second round each user's recall finds the
nodes, token counts and term sets it reads in the process's caches, so heavy over light
there is what grows with the history itself (the leaf search), apart from first reads.

Comparing code before and after a change: fill once, then run the probe from each checkout
(`PYTHONPATH=<other checkout>/services`) against the same `--run-dir`, in turn, and compare
the ratios each run measures (the cores are shared: absolute CPU moves between runs).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import hashlib
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import redis.asyncio as aioredis

from memstream.bootstrap import Container, recall_app
from memstream.edges.http.server import BackgroundServer
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.recall.pipeline import RecallPipeline, RecallRequest
from memstream.wiring.handlers import derivation, window_rules
from memstream_lab.bench.scale_chat import locomo_shape, user_chat
from memstream_lab.bench.scale_fill import Filled, Filler, ResampledVectors
from memstream_lab.bench.scale_run import Run, as_async, stack_settings, vector_bank
from memstream_lab.bench.scale_steps import HEAVY, LIGHT0, MEDIUM
from memstream_lab.bench.synthetic import queries
from memstream_lab.measure import nearest_rank, write_report

T = TypeVar("T")
WARM_UP = 3
USERS = (HEAVY, MEDIUM, LIGHT0)


def run(args: argparse.Namespace) -> dict[str, Any]:
    run_dir = Run(args.run_dir)
    settings = stack_settings(args.run_dir, "bench_heavy_recall")
    with BackgroundStack(settings) as stack, BackgroundServer(recall_app(stack.settings())) as srv:
        c: Container = srv.app.state.container
        pipeline: RecallPipeline = srv.app.state.parts.pipeline

        def call(work: Callable[[], Awaitable[T]]) -> T:
            return srv.call(work, timeout_s=24 * 3600)

        served = stack.settings()
        client = call(as_async(lambda: aioredis.Redis.from_url(served.redis.url)))
        _fill(args, run_dir, call, c, client, served.redis.namespace)
        call(client.aclose)
        asks = queries(args.queries + WARM_UP)
        for user in USERS:
            call(functools.partial(c.tree.facts, user))
            call(functools.partial(c.tree.entity_index, user))
            # A search starts reading the vectors of a user held in process, in a thread:
            # read before the questions, as they are after a process's first searches.
            call(functools.partial(pipeline.recall, RecallRequest(user, asks[0])))
        held = getattr(c.index, "_vectors", None)
        if held is not None:
            call(as_async(held.finish_reads))
        profiles = _profiles(args.profile, "first")
        measured = _measure(call, pipeline, asks, args.digest, profiles=profiles)
        _dump(args.profile, profiles)
        if args.rounds > 1:
            # The same questions again: every node they read is now in the process's caches,
            # as a light user's few nodes are from the first round on.
            measured["again"] = []
            for n in range(args.rounds - 1):
                profiles = _profiles(args.profile, f"again{n + 1}")
                again = _measure(call, pipeline, asks[WARM_UP:], False, 0, profiles)
                _dump(args.profile, profiles)
                measured["again"].append(again)
    return {"built": run_dir.doc["built"], "recall": measured}


def _fill(
    args: argparse.Namespace,
    run_dir: Run,
    call: Callable[..., Any],
    c: Container,
    client: Any,
    namespace: str,
) -> None:
    built: dict[str, Any] = run_dir.doc["built"]
    shape = locomo_shape()
    filler = Filler(
        client=client,
        namespace=namespace,
        index=c.index,
        vectors=ResampledVectors(vector_bank(run_dir, c, call)),
        rules=window_rules(c.settings),
        derivation=derivation(c.settings),
    )
    users = [(f"light-{i}", args.light_messages, 30.0) for i in range(args.light_users)]
    span_days = 365.25 * args.heavy_years
    users += [(MEDIUM, args.medium_messages, span_days), (HEAVY, args.heavy_messages, span_days)]
    for user, messages, span in users:
        if user in built:
            continue
        began = time.process_time()
        chat = user_chat(user, shape, messages, span)
        got: Filled = call(functools.partial(filler.fill_user, user, chat))
        built[user] = {
            "messages": got.messages,
            "l1": got.l1,
            "summaries": got.summaries,
            "fill_cpu_s": round(time.process_time() - began, 1),
        }
        run_dir.save()


def _profiles(where: Path | None, name: str) -> dict[str, tuple[Path, cProfile.Profile]]:
    """A profiler for each user's requests of one round, to be dumped under `where`."""
    if where is None:
        return {}
    where.mkdir(parents=True, exist_ok=True)
    return {u: (where / f"{name}-{u}.pstats", cProfile.Profile()) for u in USERS}


def _dump(where: Path | None, profiles: dict[str, tuple[Path, cProfile.Profile]]) -> None:
    for path, profile in profiles.values():
        profile.dump_stats(path)


def _profiled(
    pipeline: RecallPipeline, request: RecallRequest, profile: cProfile.Profile | None
) -> Callable[[], Awaitable[Any]]:
    """The request, profiled on the thread of the server's event loop if `profile` is given
    (the engine's search, in a worker thread, is not in it: its CPU is in the totals)."""

    async def recall() -> Any:
        if profile is None:
            return await pipeline.recall(request)
        profile.enable()
        try:
            return await pipeline.recall(request)
        finally:
            profile.disable()

    return recall


def _measure(
    call: Callable[..., Any],
    pipeline: RecallPipeline,
    asks: Sequence[str],
    digest: bool,
    warm_up: int = WARM_UP,
    profiles: dict[str, tuple[Path, cProfile.Profile]] | None = None,
) -> dict[str, Any]:
    """Every question asked of each user in turn: a change in the machine's load reaches
    them alike. The first `warm_up` questions are asked and not counted (nor profiled)."""
    profiles = profiles or {}
    cpu: dict[str, list[float]] = {u: [] for u in USERS}
    stages: dict[str, dict[str, list[float]]] = {u: {} for u in USERS}
    answers: dict[str, list[str]] = {u: [] for u in USERS}
    for n, query in enumerate(asks):
        for user in USERS:
            profile = profiles[user][1] if user in profiles and n >= warm_up else None
            began = time.process_time()
            result = call(_profiled(pipeline, RecallRequest(user, query), profile))
            spent = 1000 * (time.process_time() - began)
            if n < warm_up:
                continue
            cpu[user].append(spent)
            for stage, ms in result.timings_ms.items():
                stages[user].setdefault(stage, []).append(ms)
            answers[user].append(
                "|".join(f"{m.node.id}:{m.score:.6f}" for m in result.memories)
                + f"#{result.tokens}"
            )
    figures: dict[str, Any] = {}
    for user in USERS:
        figures[user] = {
            "requests": len(cpu[user]),
            "cpu_ms_per_request_mean": round(statistics.fmean(cpu[user]), 2),
            "cpu_ms_per_request_p50": round(nearest_rank(cpu[user], 50), 2),
            "cpu_ms_per_request_p95": round(nearest_rank(cpu[user], 95), 2),
            "stage_p50_ms": {
                s: round(nearest_rank(v, 50), 2) for s, v in sorted(stages[user].items())
            },
        }
        if digest:
            figures[user]["answers_digest"] = hashlib.sha256(
                "\n".join(answers[user]).encode()
            ).hexdigest()[:16]
            figures[user]["answers"] = answers[user]
    for name, (over, under) in {
        "heavy_over_light": (HEAVY, LIGHT0),
        "heavy_over_medium": (HEAVY, MEDIUM),
    }.items():
        figures[name] = {
            stat: round(
                figures[over][f"cpu_ms_per_request_{stat}"]
                / figures[under][f"cpu_ms_per_request_{stat}"],
                2,
            )
            for stat in ("mean", "p50", "p95")
        }
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--run-dir", type=Path, default=Path("bench-results/heavy-recall-run"))
    parser.add_argument("--heavy-messages", type=int, default=20_000)
    parser.add_argument("--medium-messages", type=int, default=2_000)
    parser.add_argument("--heavy-years", type=float, default=5.0)
    parser.add_argument("--light-users", type=int, default=3)
    parser.add_argument("--light-messages", type=int, default=85)
    parser.add_argument("--queries", type=int, default=60, help="Questions asked of each user.")
    parser.add_argument("--digest", action="store_true", help="Record what each answer held.")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="Write a cProfile of each user's counted requests of each round to this "
        "directory (`<round>-<user>.pstats`); the profiler's own cost is in the CPU figures.",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="Ask the questions this many times; the rounds after the first find every node "
        "they read in the process's caches (reported under `again`).",
    )
    args = parser.parse_args(argv)
    if min(args.heavy_messages, args.medium_messages) < 10 or args.light_messages < 2:
        parser.error("--heavy-messages and --medium-messages >= 10, --light-messages >= 2")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.light_users < 1:
        parser.error("--light-users must be at least 1")
    report = run(args)
    report["setup"] = {k: str(v) for k, v in vars(args).items()}
    write_report(args.out, report, default=str)
    rec = report["recall"]
    each = ", ".join(f"{u} {rec[u]['cpu_ms_per_request_p50']}" for u in USERS)
    print(
        f"recall CPU a request, p50 (ms): {each}; heavy over light "
        f"{rec['heavy_over_light']['p50']}x, over medium {rec['heavy_over_medium']['p50']}x"
    )
    for n, again in enumerate(rec.get("again", ()), start=2):
        each = ", ".join(f"{u} {again[u]['cpu_ms_per_request_p50']}" for u in USERS)
        print(
            f"round {n}, p50 (ms): {each}; heavy over light {again['heavy_over_light']['p50']}x "
            f"(p95 {again['heavy_over_light']['p95']}x), over medium "
            f"{again['heavy_over_medium']['p50']}x"
        )


if __name__ == "__main__":
    main()
