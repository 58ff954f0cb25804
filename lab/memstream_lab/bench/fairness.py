"""Fairness: a quiet tenant's L1 freshness and recall latency, alone and beside a tenant
flooding at ten times its rate, with the segmenter's tenant share on and off.

    python -m memstream_lab.bench.fairness --out bench-results/fairness.json
    memstream bench fairness --out bench-results/fairness.json

Two stacks, each `memstream up` in a process of its own (`up_stack.StackProcess`):

1. Share off. First the segmenter's capacity on this machine: a backlog of
   `--capacity-turns` turns published at once, and the time until every one has its L1
   (turns/s), the median of three such backlogs. Then `--off-rounds` rounds.
2. Share on (`MEMSTREAM_SEGMENTER_TENANT_SHARE_TURNS_S`), `--rounds` rounds.
3. With `--stacks ... tenant_topics` (experimental): the same share with a turns topic per
   tenant (`MEMSTREAM_TURNS_TOPIC_PER_TENANT`), the flood's topic paused while its tenant
   is over its share, `--rounds` rounds; the quiet tenant's producer and the flood write
   to their tenants' topics.

Each stack first takes a short flood that is not measured (`--warmup-seconds`). A round is
the quiet tenant alone, then the quiet tenant beside the flood, alternated, so that each
flood phase has an alone phase of its own a minute before it; after each phase the bench
waits until every flood turn has its L1, so no phase starts on another's backlog.

Unless given, the quiet rate is a fifth of the capacity, so the flood (ten times it) offers
twice what the segmenter can do: without a share, a backlog grows in front of the quiet
tenant for the whole phase. The share is 1.5 times the quiet rate (the quiet tenant
never reaches it; the flood does at once), and the overflow waits up to `--overflow-wait-s`
for the main path to go quiet. Each phase publishes for `--seconds`: the quiet tenant
at its rate over `--quiet-users` users, the flood over `--flood-users` (from this process's
event loop, or with `--flood-process` from a process of its own, as another tenant's service
would send it), each turn a message between people (role `other`), so each is an L1 of its
own at once; meanwhile this process recalls for a quiet user `--recalls-per-s` times a
second (plain recalls, no `after`). Then it waits for every quiet L1. Reported per phase,
for the quiet tenant: L1 freshness (publish to the L1 stored in Redis, polled by its
deterministic id) p50/p95/p99/max and recall latency p50/p95/p99; per round, the ratios
of its flood phase to its alone phase (the target: p99 freshness and p95 recall within
1.5x), and to the mean of the alone phases on either side of it (a closing alone phase
follows the last round), which a drift across the run does not bias; per stack, each
ratio's lowest, median and highest over the rounds. The machine is shared: the spread over
rounds is the figure to read.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import tempfile
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redis import asyncio as aioredis

from memstream.adapters.kafka.admin import KafkaTopicAdmin, admin_client
from memstream.adapters.redis.tree import RedisTree
from memstream.client import AsyncMemstreamProducer
from memstream.client.events import turn_event
from memstream.contracts.catalog import load_catalog
from memstream.contracts.records import encode_value
from memstream.contracts.tenant_topics import TurnsRouting
from memstream.domain.ids import segment_id
from memstream.domain.models import Level, MemoryNode
from memstream_lab.bench import cpu
from memstream_lab.bench.flood_publisher import flood_sender
from memstream_lab.bench.span_file import SpanFile
from memstream_lab.bench.synthetic import sentence
from memstream_lab.bench.turns_log import places_of
from memstream_lab.bench.up_stack import LeanRecalls, StackProcess, spread, until_consuming
from memstream_lab.measure import write_report

TARGET = "quiet tenant beside a 10x flood: L1 freshness p99 and recall p95 within 1.5x of alone"
QUIET_TENANT, FLOOD_TENANT = "globex", "acme"
POLL_S = 0.02
DRAIN_TIMEOUT_S = 600.0
SHARED_STACKS = ("share_on", "tenant_topics")  # the stacks with the tenant share set


class Phase:
    """One phase on a running stack: publish, probe, then wait for the quiet L1s."""

    def __init__(self, stack: StackProcess, tree: RedisTree, name: str) -> None:
        self.stack = stack
        self.tree = tree
        self.run = f"{name}-{time.time_ns():x}"
        self.published: dict[tuple[str, str], float] = {}
        self.events: dict[tuple[str, str], str] = {}  # the turn each awaited L1 is of
        self.freshness_ms: dict[tuple[str, str], float] = {}
        self.recall_ms: list[float] = []

    def note_in(self, spans: SpanFile, began: float, started: float) -> None:
        """The phase's window and each quiet turn's publish time and freshness, in epoch
        seconds (`started` is `began` on the perf counter)."""
        spans.note({"kind": "phase", "phase": self.run, "start": began, "end": time.time()})
        for key, at in self.published.items():
            spans.note(
                {
                    "kind": "turn",
                    "phase": self.run,
                    "published": began + at - started,
                    "freshness_ms": self.freshness_ms.get(key),
                }
            )

    def user(self, tenant: str, n: int) -> str:
        return f"{tenant}:{self.run}-{n}"

    async def publish_quiet(
        self, out: AsyncMemstreamProducer, rate: float, users: int, seconds: float
    ) -> None:
        start = time.perf_counter()
        for n in range(round(rate * seconds)):
            delay = start + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            user = self.user(QUIET_TENANT, n % users)
            event_id = f"q{n}"
            node = segment_id(user, [event_id])
            self.published[user, node] = time.perf_counter()
            self.events[user, node] = event_id
            await out.publish(_turn(user, event_id, n // users, n))
        await out.flush()

    def flood_records(self, rate: float, users: int, seconds: float) -> list[tuple[bytes, bytes]]:
        """The flood's records (key, value), built and encoded before the phase: this
        process shares the cores it measures, and the SDK checks each event it sends."""
        records = []
        for n in range(round(rate * seconds)):
            user = self.user(FLOOD_TENANT, n % users)
            records.append((user.encode(), encode_value(_turn(user, f"f{n}", n // users, n))))
        return records

    async def probe_recall(self, recalls: LeanRecalls, per_s: float, users: int) -> None:
        n = 0
        while True:
            user = self.user(QUIET_TENANT, n % users)
            started = time.perf_counter()
            if await recalls.recall(user, sentence(random.Random(n)), None, 0) is not None:
                self.recall_ms.append((time.perf_counter() - started) * 1000)
            n += 1
            await asyncio.sleep(max(0.0, 1 / per_s - (time.perf_counter() - started)))

    async def watch_quiet(self, publishing: asyncio.Task[None]) -> None:
        """Until every quiet turn published has its L1 (polled by id)."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while not publishing.done() or len(self.freshness_ms) < len(self.published):
            if publishing.done() and publishing.exception() is not None:
                # A send the broker refused: its turn would read as an L1 never written.
                raise RuntimeError("a quiet turn was not published") from publishing.exception()
            if time.monotonic() > deadline:
                raise TimeoutError(await self.missing())
            pending: dict[str, list[str]] = {}
            for user, node in self.published.keys() - self.freshness_ms.keys():
                pending.setdefault(user, []).append(node)
            for user, nodes in pending.items():
                for found in await self.tree.get_many(user, nodes):
                    key = (user, found.id)
                    self.freshness_ms[key] = (time.perf_counter() - self.published[key]) * 1000
            await asyncio.sleep(POLL_S)

    async def missing(self, shown: int = 5) -> str:
        """What a phase that timed out waits for: how many quiet L1s, and for the first few
        whether another L1 of the user holds the turn (merged or renamed) or none does,
        where the turns log holds it, and what its user's overflow ledger still holds."""
        absent = sorted(self.published.keys() - self.freshness_ms.keys())
        said = [f"{len(absent)} quiet L1s never written"]
        leaves: dict[str, list[MemoryNode]] = {}  # each user's L1s, read once
        first = [(user, self.events[user, node], node) for user, node in absent[:shown]]
        logged = await self.logged({(user, event_id) for user, event_id, _ in first})
        for user, event_id, node in first:
            if user not in leaves:
                ids = await self.tree.level_ids(user, Level.SEGMENT, limit=len(self.published))
                leaves[user] = await self.tree.get_many(user, ids)
            holding = [n.id for n in leaves[user] if event_id in n.source_ids]
            place = logged.get((user, event_id))
            ledger = await self.ledger(user)
            said.append(
                f"{user} {event_id} ({node}): in "
                + (", ".join(holding) or "no L1")
                + (f", turns log {place[0]}:{place[1]}" if place else ", not in the turns log")
                + f", overflow ledger {ledger}"
            )
        return "; ".join(said)

    async def logged(self, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[int, int]]:
        """Where the turns log holds each (user, event id) of `wanted`."""
        bootstrap = self.stack.endpoints["MEMSTREAM_KAFKA_BOOTSTRAP"]
        return await places_of(bootstrap, load_catalog().turns.name, wanted)

    async def ledger(self, user: str) -> list[tuple[int, int]]:
        """The places the user's overflow ledger still holds (the share on: not handled)."""
        return sorted(await self.tree.diverted(user))

    async def drain_flood(self, sent: int, users: int) -> float:
        """Seconds until every flood turn has its L1: the next phase starts on an idle
        segmenter (with the share on, the overflow drains the flood after the phase)."""
        names = [self.user(FLOOD_TENANT, u) for u in range(users)]
        started = time.perf_counter()
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while sent and await _segments(self.tree, names, sent) < sent:
            if time.monotonic() > deadline:
                raise TimeoutError("the flood's backlog was not written")
            await asyncio.sleep(0.2)
        return time.perf_counter() - started


# Backlogs the capacity is the median of.
CAPACITY_BACKLOGS = 3


async def _segments(tree: RedisTree, users: Sequence[str], most: int) -> int:
    return sum([len(await tree.level_ids(u, Level.SEGMENT, limit=most)) for u in users])


async def capacity(
    stack: StackProcess, tree: RedisTree, turns: int, users: int, backlogs: int = CAPACITY_BACKLOGS
) -> dict[str, Any]:
    """Turns a second the segmenter writes L1s for: the median over `backlogs` backlogs, each
    published at once. One backlog of a few seconds can meet a burst of the shared cores (it
    once read 788 turns/s where others read 317-350), which doubles every rate set from it."""
    each = [await _backlog(stack, tree, f"capacity{n}", turns, users) for n in range(backlogs)]
    return median_backlog(each)


def median_backlog(each: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The backlog of the median rate (the upper one of an even count), with all of them."""
    median = sorted(each, key=lambda one: float(one["turns_per_s"]))[len(each) // 2]
    return {**median, "backlogs": list(each)}


async def _backlog(
    stack: StackProcess, tree: RedisTree, name: str, turns: int, users: int
) -> dict[str, Any]:
    """Turns a second the segmenter writes L1s for, from one backlog published at once."""
    phase = Phase(stack, tree, name)
    names = [phase.user(FLOOD_TENANT, u) for u in range(users)]
    bootstrap = stack.endpoints["MEMSTREAM_KAFKA_BOOTSTRAP"]
    async with AsyncMemstreamProducer(bootstrap, idempotent=False) as out:
        start = time.perf_counter()
        for n in range(turns):
            await out.publish(_turn(names[n % users], f"c{n}", n // users, n))
        await out.flush()
        published_s = time.perf_counter() - start
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while await _segments(tree, names, turns) < turns:
        if time.monotonic() > deadline:
            raise TimeoutError("the capacity backlog was not written")
        await asyncio.sleep(0.1)
    took = time.perf_counter() - start
    return {
        "turns": turns,
        "published_in_s": round(published_s, 2),
        "written_in_s": round(took, 2),
        "turns_per_s": round(turns / took, 1),
    }


async def measure_phase(
    stack: StackProcess,
    tree: RedisTree,
    name: str,
    args: argparse.Namespace,
    flood_rate: float,
    spans: SpanFile | None = None,
) -> dict[str, Any]:
    phase = Phase(stack, tree, name)
    recalls = LeanRecalls(stack.endpoints["MEMSTREAM_RECALL_URL"])
    bootstrap = stack.endpoints["MEMSTREAM_KAFKA_BOOTSTRAP"]
    flood = phase.flood_records(flood_rate, args.flood_users, args.seconds)
    tenants = args.tenant_topics
    flood_topic = await flood_topic_of(bootstrap, args.flood_elsewhere, tenants)
    quiet = AsyncMemstreamProducer(bootstrap, idempotent=False, tenant_topics=tenants)
    flooding = flood_sender(
        flood, bootstrap, flood_topic, flood_rate, own_process=args.flood_process
    )
    async with quiet as quiet_out, flooding as send_flood:
        probing = asyncio.create_task(
            phase.probe_recall(recalls, args.recalls_per_s, args.quiet_users)
        )
        publishing = asyncio.create_task(
            phase.publish_quiet(quiet_out, args.quiet_rate, args.quiet_users, args.seconds)
        )
        flooded = send_flood()
        started, cpu_before = time.perf_counter(), cpu.snapshot()
        began = time.time()
        flood_sent, _ = await asyncio.gather(flooded, phase.watch_quiet(publishing))
        cpu_span = cpu.CpuSpan.between(cpu_before, cpu.snapshot())
        if spans is not None:
            phase.note_in(spans, began, started)
        probing.cancel()
        await asyncio.gather(probing, return_exceptions=True)
        waited_s = time.perf_counter() - started
    await recalls.close()
    drained_s = await phase.drain_flood(
        0 if args.flood_elsewhere else flood_sent.records, args.flood_users
    )
    drained_s = round(drained_s + waited_s, 1)
    freshness = list(phase.freshness_ms.values())
    return {
        "phase": name,
        "quiet_rate_per_s": args.quiet_rate,
        "flood_rate_per_s": flood_rate,
        "quiet_turns": len(phase.published),
        "flood_turns": flood_sent.records,
        "seconds_until_every_quiet_l1": round(waited_s, 1),
        "seconds_until_every_flood_l1": drained_s,
        "quiet_l1_freshness_ms": spread(freshness),
        "quiet_recall_ms": spread(phase.recall_ms) | {"count": len(phase.recall_ms)},
        # Of the 2 cores, while the quiet tenant published: what the stack had against what
        # the broker and this process (the publishers, the recall probe) took beside it.
        "cores_busy": cores_busy(cpu_span, waited_s, flood_sent.cpu_seconds),
    }


# Where `--flood-elsewhere` sends the flood: a topic like the turns topic that nothing reads.
ELSEWHERE = "memstream.bench.flood-elsewhere"


async def flood_topic_of(bootstrap: str, elsewhere: bool, tenants: Sequence[str] = ()) -> str:
    """The flooding tenant's turns topic (the shared one, or its own with `tenants`, the
    stack's MEMSTREAM_TURNS_TOPIC_PER_TENANT); with `elsewhere`, a topic of its shape no
    part of the stack reads, created if missing: the flood then costs the machine its
    producer's and the broker's work and the stack none of its own (the floor any share
    could reach here)."""
    turns = load_catalog().turns
    if not elsewhere:
        return TurnsRouting.of(turns.name, tenants).topic_for(f"{FLOOD_TENANT}:x")
    async with admin_client(bootstrap) as client:
        await KafkaTopicAdmin(client).ensure_topics([replace(turns, name=ELSEWHERE)])
    return ELSEWHERE


def traced_to(spans: SpanFile) -> dict[str, str]:
    """A stack's settings that send its spans to `spans`, none dropped: a batch's spans are
    few, but the exporter's queue would drop what a flood's seconds add up to."""
    return {
        "MEMSTREAM_OTLP_TRACES_ENDPOINT": spans.endpoint,
        "OTEL_BSP_MAX_QUEUE_SIZE": "200000",
        "OTEL_BSP_SCHEDULE_DELAY": "1000",
    }


def cores_busy(
    span: cpu.CpuSpan, seconds: float, flood_cpu_seconds: float | None = None
) -> dict[str, float]:
    """Cores each kind of process kept busy over `seconds` (this process: `bench`; the
    flood's own process, which has ended before the span's end is read, by what it said)."""
    named = {("bench" if kind == "event_loop" else kind): s for kind, s in span.seconds.items()}
    if flood_cpu_seconds is not None:
        named["flood"] = flood_cpu_seconds
    return {kind: round(s / seconds, 2) for kind, s in sorted(named.items())}


async def run_stack(
    stack: StackProcess,
    args: argparse.Namespace,
    measure_capacity: bool,
    rounds: int,
    spans: SpanFile | None = None,
) -> dict[str, Any]:
    """Rounds of the quiet tenant alone, then beside the flood, alternated on one stack; the
    flood's backlog is written before the next round, so no alone phase meets it."""
    redis = aioredis.from_url(stack.endpoints["MEMSTREAM_REDIS_URL"])
    tree = RedisTree(redis)
    found: dict[str, Any] = {"rounds": []}
    try:
        recalls = LeanRecalls(stack.endpoints["MEMSTREAM_RECALL_URL"])
        bootstrap = stack.endpoints["MEMSTREAM_KAFKA_BOOTSTRAP"]
        async with AsyncMemstreamProducer(bootstrap, idempotent=False) as out:
            found["seconds_until_consuming"] = await until_consuming(out, recalls)
        await recalls.close()
        print(f"  consuming after {found['seconds_until_consuming']} s", flush=True)
        if measure_capacity:
            found["capacity"] = await capacity(stack, tree, args.capacity_turns, args.flood_users)
            print(f"  capacity {found['capacity']}", flush=True)
        if args.quiet_rate is None:
            args.quiet_rate = round(found["capacity"]["turns_per_s"] / 5, 1)
        if args.warmup_seconds > 0:
            # A short flood first, not measured: the first flood of a stack also meets what
            # runs once (the overflow's first records, its consumer's first fetches).
            print("  warm-up flood", flush=True)
            warm = argparse.Namespace(**{**vars(args), "seconds": args.warmup_seconds})
            flood = 10 * args.quiet_rate
            found["warmup"] = await measure_phase(stack, tree, "warmup", warm, flood)
        for n in range(rounds):
            one: dict[str, Any] = {}
            for name, flood in (("alone", 0.0), ("flood", 10 * args.quiet_rate)):
                print(f"  round {n + 1} {name}", flush=True)
                one[name] = await measure_phase(stack, tree, name, args, flood, spans)
                print(f"  {one[name]}", flush=True)
            one["ratios"] = _ratios(one["alone"], one["flood"])
            print(f"  round {n + 1} ratios {one['ratios']}", flush=True)
            found["rounds"].append(one)
        if rounds:
            # The alone phases drift over a run (the embedded broker's log grows, the
            # machine's load moves): one more after the last flood phase puts an alone
            # phase on either side of every flood phase.
            print("  closing alone", flush=True)
            found["closing_alone"] = await measure_phase(stack, tree, "alone", args, 0.0, spans)
            bracket(found["rounds"], found["closing_alone"])
    finally:
        await redis.aclose()
    found["ratios"] = _ratio_spread([r["ratios"] for r in found["rounds"]])
    bracketed = [r["ratios_bracketed"] for r in found["rounds"] if "ratios_bracketed" in r]
    found["ratios_bracketed"] = _ratio_spread(bracketed)
    return found


def bracket(rounds: list[dict[str, Any]], closing_alone: dict[str, Any]) -> None:
    """Each round's ratios to the mean of the alone phases on either side of its flood phase
    (its own and the next round's, or the closing one), as `ratios_bracketed`: a drift
    across the run then weighs on neither side, where the round's own alone phase, always
    the earlier, makes a rising drift count against the flood."""
    afters = [one["alone"] for one in rounds[1:]] + [closing_alone]
    for one, after in zip(rounds, afters, strict=True):
        one["ratios_bracketed"] = _ratios(_mean_of_phases(one["alone"], after), one["flood"])


def _mean_of_phases(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The two phases' latency quantiles, each the mean of the two (missing in either: left
    out)."""
    kinds = ("quiet_l1_freshness_ms", "quiet_recall_ms")
    return {
        kind: {
            quantile: (value + after[kind][quantile]) / 2
            for quantile, value in before[kind].items()
            if quantile != "count" and after[kind].get(quantile) is not None
        }
        for kind in kinds
    }


def _ratio_spread(rounds: list[dict[str, float | None]]) -> dict[str, dict[str, float]]:
    """Each ratio across the rounds: lowest, median and highest (not the best round)."""
    spread_of: dict[str, dict[str, float]] = {}
    for key in rounds[0] if rounds else ():
        values = sorted(v for r in rounds if (v := r.get(key)) is not None)
        if values:
            spread_of[key] = {
                "min": values[0],
                "median": values[len(values) // 2],
                "max": values[-1],
            }
    return spread_of


def _ratios(alone: dict[str, Any], flood: dict[str, Any]) -> dict[str, float | None]:
    def ratio(kind: str, quantile: str) -> float | None:
        base, loaded = alone[kind].get(quantile), flood[kind].get(quantile)
        return round(loaded / base, 2) if base and loaded is not None else None

    return {
        "l1_freshness_p50": ratio("quiet_l1_freshness_ms", "p50"),
        "l1_freshness_p99": ratio("quiet_l1_freshness_ms", "p99"),
        "recall_p95": ratio("quiet_recall_ms", "p95"),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {}
    scratch = (
        nullcontext(str(args.keep))
        if args.keep
        else tempfile.TemporaryDirectory(prefix="memstream-bench-")
    )
    with scratch as tmp, SpanFile(args.trace) if args.trace else nullcontext() as spans:
        models = Path(tmp) / "models"
        for n, (label, name, code) in enumerate(_stacks(args)):
            settings: dict[str, str] = {}
            args.tenant_topics = ()
            if name == "tenant_topics":
                # A turns topic per tenant: the flood's topic paused while over its share.
                args.tenant_topics = (QUIET_TENANT, FLOOD_TENANT)
                settings["MEMSTREAM_TURNS_TOPIC_PER_TENANT"] = ",".join(args.tenant_topics)
            if name in SHARED_STACKS:
                share = args.share or round(1.5 * args.quiet_rate, 1)
                settings["MEMSTREAM_SEGMENTER_TENANT_SHARE_TURNS_S"] = str(share)
                # Two seconds of the share at once by default: this process sends the quiet
                # tenant's turns in bunches whenever its own loop stalls (it shares the
                # cores). It is also the queue a flood puts in front of the quiet tenant at
                # its start (docs/figures/fairness.md, run 26).
                burst = max(1, round(args.burst_s * share))
                settings["MEMSTREAM_SEGMENTER_TENANT_SHARE_BURST"] = str(burst)
                report["share_burst_turns"] = burst
                wait = str(args.overflow_wait_s)
                settings["MEMSTREAM_SEGMENTER_OVERFLOW_LONGEST_WAIT_S"] = wait
                report["share_turns_per_s"] = share
                report["overflow_longest_wait_s"] = args.overflow_wait_s
                if spans is not None:
                    settings |= traced_to(spans)
            print(label, flush=True)
            stack = StackProcess(Path(tmp) / label, 5_000, models, code=code, settings=settings)
            try:
                stack.wait_ready()
                rounds = args.off_rounds if name == "share_off" else args.rounds
                report[label] = asyncio.run(run_stack(stack, args, n == 0, rounds, spans))
            finally:
                stack.stop()
    report["setup"] = {
        "stack": "memstream up (embedded: Tansu, redis-server, qdrant-edge), default settings",
        "turn": "a message between people (role other): one L1 at once",
        "quiet_users": args.quiet_users,
        "flood_users": args.flood_users,
        "seconds_per_phase": args.seconds,
        "flood_elsewhere": args.flood_elsewhere,
        "flood_process": args.flood_process,
        "rounds": {"share_on": args.rounds, "share_off": args.off_rounds},
        "baseline": str(args.baseline) if args.baseline else None,
        "recalls_per_s": args.recalls_per_s,
        "target": TARGET,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return report


def _stacks(args: argparse.Namespace) -> list[tuple[str, str, Path | None]]:
    """(label, stack, source tree) in order: with `--baseline`, each stack with a share of
    this tree comes right after one of the baseline's (`share_on_baseline`,
    `tenant_topics_baseline`), for before/after. A
    stack named again (`--stacks share_on share_on`: alternated, so that a machine whose
    load drifts meets both trees alike) is labelled with its count (`share_on_2`)."""
    stacks: list[tuple[str, str, Path | None]] = []
    seen: dict[str, int] = {}
    for name in args.stacks:
        seen[name] = seen.get(name, 0) + 1
        suffix = f"_{seen[name]}" if seen[name] > 1 else ""
        if name in SHARED_STACKS and args.baseline is not None:
            stacks.append((f"{name}_baseline{suffix}", name, args.baseline))
        stacks.append((f"{name}{suffix}", name, None))
    return stacks


def _turn(user: str, event_id: str, seq: int, n: int) -> dict[str, Any]:
    """A message between people (role `other`): an L1 of its own at once."""
    text = sentence(random.Random(n))
    return turn_event(
        user_id=user,
        session_id="live",
        seq=seq,
        text=text,
        role="other",
        speaker="Ana",
        event_id=event_id,
        tz="UTC",
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument(
        "--quiet-rate", type=float, help="Quiet tenant's turns/s (default: capacity / 5)."
    )
    parser.add_argument(
        "--share", type=float, help="The tenant share, turns/s (default: 1.5 x the quiet rate)."
    )
    parser.add_argument(
        "--burst-s",
        type=float,
        default=2.0,
        help="The tenant share's burst, in seconds of the share (default: 2).",
    )
    parser.add_argument(
        "--overflow-wait-s",
        type=float,
        default=5.0,
        help="MEMSTREAM_SEGMENTER_OVERFLOW_LONGEST_WAIT_S of the stack with the share on.",
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="Publishing time a phase.")
    parser.add_argument("--capacity-turns", type=int, default=1500)
    parser.add_argument("--quiet-users", type=int, default=4)
    parser.add_argument("--flood-users", type=int, default=8)
    parser.add_argument("--recalls-per-s", type=float, default=5.0)
    parser.add_argument(
        "--rounds", type=int, default=3, help="Alone/flood rounds a stack, alternated."
    )
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        default=5.0,
        help="A flood phase of this length before the rounds, not counted (0: none).",
    )
    parser.add_argument("--off-rounds", type=int, default=1, help="Rounds of the share-off stack.")
    parser.add_argument(
        "--stacks",
        nargs="+",
        choices=("share_off", "share_on", "tenant_topics"),
        default=["share_off", "share_on"],
        help="Which stacks, in order (the first measures the capacity); tenant_topics: the "
        "share with a turns topic per tenant (experimental, docs/fair-share.md).",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="A source tree (e.g. `git archive` of main) whose share-on and tenant-topics "
        "stacks each run right before this tree's, in the same run, for before/after figures.",
    )
    parser.add_argument(
        "--flood-elsewhere",
        action="store_true",
        help="Send the flood to a topic nothing reads: what the flood's producer and the "
        "broker alone cost the quiet tenant on this machine (a floor, not a figure).",
    )
    parser.add_argument(
        "--flood-process",
        action="store_true",
        help="Send the flood from a process of its own (as another service would), not "
        "from this process's event loop, which also publishes and times the quiet turns.",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        help="Trace the share-on stacks' batches into this file (JSON lines), with each "
        "quiet turn's publish time and freshness; `python -m memstream_lab.bench."
        "trace_batches FILE` tells where the slow turns waited.",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="Keep the stacks' stores and models in this directory (default: a temporary "
        "one, removed at the end), to look into a run that went wrong.",
    )
    args = parser.parse_args(argv)
    if args.stacks[0] != "share_off" and args.quiet_rate is None:
        parser.error("--quiet-rate is needed unless the share-off stack comes first")
    report = run(args)
    write_report(args.out, report)
    for label, _, _ in _stacks(args):
        print(label, report[label]["ratios"], "bracketed", report[label]["ratios_bracketed"])


if __name__ == "__main__":
    main()
