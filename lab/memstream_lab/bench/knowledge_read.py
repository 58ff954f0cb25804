"""What the first knowledge read after a write costs, derived whole or stepped forward:
`memstream bench knowledge-read --out F`.

For each size, one user's chat is generated as the scale benchmark generates it
(`scale_chat`, LoCoMo's shapes, one message in eight stating a fact), cut into L1s by the
segmenter's window reducer, and committed to a real Redis in steps of `STEP_L1S` L1s with
their knowledge, as the segmenter commits it. Then, `--rounds` times, one more step is
committed and the user's facts and entity index are read by three readers in turn, each
timed in CPU (`process_time`, the least of the rounds) and wall time:

- `whole_before`: what every reader paid before the change log, read and derived as the
  store did then (both hashes whole, `timelines_of`, `entity_index`; the index built as it
  is built today, which is faster than the build of that time);
- `whole`: the store's reader with nothing held (`RedisKnowledge`, its whole read, which
  is also what it falls back to when the log cannot tell);
- `stepped`: the store's reader holding the revision before the step, which reads only the
  L1s the step changed and derives again only what they touch.

The three run in the same process on the same data, so their ratio is the figure; absolute
times move with whatever else the shared machine runs.

`--endings N ...` measures each size again with N of the speaker's messages, spread over
the history written before the rounds, saying an ending told without its attribute ("I've
left Oslo": `fact_endings`), which the reader resolves against the speaker's slots. In such a
run every round's step also states where the speaker lives, so that each step touches the
subject with the endings (otherwise the least of the rounds is a step that does not).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import done
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.codec import encode_state
from memstream.contracts.knowledge_codec import decode_fact, decode_leaf_entities
from memstream.domain.fact_timeline import timelines_of
from memstream.domain.knowledge import entity_index, knowledge_change
from memstream.domain.models import MemoryNode
from memstream.domain.windows import initial_state
from memstream.ports import UserCommit
from memstream_lab.bench.scale_chat import CITIES, l1s_of, locomo_shape, user_chat
from memstream_lab.measure import write_report

STEP_L1S = 8  # L1s a step commits: a step of 16 turns between two people
USER = "bench-knowledge"


async def _commit(tree: RedisTree, leaves: Sequence[MemoryNode]) -> None:
    state = encode_state(initial_state(USER, "UTC"))
    commit = UserCommit(USER, state, nodes=tuple(leaves), knowledge=knowledge_change(leaves))
    if not await tree.commit_user(commit):
        raise RuntimeError("the bench's commit was refused")


async def _whole_before(tree: RedisTree) -> int:
    """The read as it was before the change log: both hashes whole, derived again."""
    pipe = tree._r.pipeline(transaction=True)
    pipe.get(tree._key(USER, keys.KNOWLEDGE_REVISION))
    pipe.hgetall(tree._key(USER, keys.FACTS))
    pipe.hgetall(tree._key(USER, keys.ENTITIES))
    _, facts, surfaces = await pipe.execute()
    timelines = timelines_of(decode_fact(f) for doc in facts.values() for f in json.loads(doc))
    leaves = {i.decode(): decode_leaf_entities(json.loads(d)) for i, d in surfaces.items()}
    return len(timelines) + len(entity_index(leaves).entities)


async def _read(tree: RedisTree) -> int:
    return len(await tree.fact_versions(USER)) + len((await tree.entity_index(USER)).entities)


async def _timed(work: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    began, cpu = time.perf_counter(), time.process_time()
    await work()
    return time.process_time() - cpu, time.perf_counter() - began


def with_endings(events: list[dict[str, Any]], endings: int, before: int) -> list[dict[str, Any]]:
    """`events` with `endings` of the speaker's first `before` turns, evenly spread, saying
    that they left a city (the chat's homes), told without the attribute."""
    own = [
        i
        for i, e in enumerate(events[:before])
        if e["type"] == "turn.v1" and e["speaker"] == f"{USER}-me"
    ]
    if endings > len(own):
        raise ValueError(f"{endings} endings asked of {len(own)} messages")
    chosen = [own[len(own) * n // endings] for n in range(endings)] if endings else []
    changed = list(events)
    for n, index in enumerate(chosen):
        changed[index] = {**events[index], "text": f"I've left {CITIES[n % len(CITIES)]}."}
    return changed


def stating_home(leaves: Sequence[MemoryNode], city: str) -> list[MemoryNode]:
    """`leaves` with the speaker's first message among them saying where they live."""
    changed = list(leaves)
    for index, leaf in enumerate(leaves):
        own = [i for i, m in enumerate(leaf.messages) if m.speaker == f"{USER}-me"]
        if own:
            said = list(leaf.messages)
            said[own[0]] = replace(said[own[0]], text=f"I live in {city} these days.")
            text = " ".join(m.text for m in said)
            changed[index] = replace(leaf, messages=tuple(said), text=text)
            return changed
    raise ValueError("no message of the speaker in the step")


async def measure_size(
    client: aioredis.Redis, messages: int, rounds: int, endings: int = 0, homes: bool = False
) -> dict[str, Any]:
    namespace = f"bench-knowledge-read-{uuid.uuid4().hex[:8]}"
    events = list(user_chat(USER, locomo_shape(), messages, span_days=365.0 * messages / 20_000))
    # Within the history written before the rounds: the last rounds' L1s take the end.
    events = with_endings(events, endings, len(events) * 3 // 4)
    leaves = l1s_of(USER, events)
    held, extra = leaves[: -rounds * STEP_L1S], leaves[-rounds * STEP_L1S :]
    if homes:
        extra = [
            leaf
            for number in range(rounds)
            for leaf in stating_home(
                extra[number * STEP_L1S : (number + 1) * STEP_L1S], CITIES[number % len(CITIES)]
            )
        ]
    stepping = RedisTree(client, namespace)
    whole = RedisTree(client, namespace, knowledge_cache_users=0)
    figures: dict[str, list[tuple[float, float]]] = {"whole_before": [], "whole": [], "stepped": []}
    try:
        for start in range(0, len(held), STEP_L1S):
            await _commit(stepping, held[start : start + STEP_L1S])
        await _read(stepping)  # the reader holds the revision before the first step
        for number in range(rounds):
            await _commit(stepping, extra[number * STEP_L1S : (number + 1) * STEP_L1S])
            figures["whole_before"].append(await _timed(lambda: _whole_before(whole)))
            figures["whole"].append(await _timed(lambda: _read(whole)))
            figures["stepped"].append(await _timed(lambda: _read(stepping)))
        same = await _answers(stepping) == await _answers(whole)
        facts = await done(client.hlen(stepping._key(USER, keys.FACTS)))
    finally:
        found = [k async for k in client.scan_iter(match=f"{namespace}:*")]
        if found:
            await client.delete(*found)
    least = {name: (min(c for c, _ in v), min(w for _, w in v)) for name, v in figures.items()}
    return {
        "messages": messages,
        "endings": endings,
        "steps_state_a_home": homes,
        "l1s": len(leaves),
        "l1s_with_facts": facts,
        "step_l1s": STEP_L1S,
        "stepped_equals_whole": same,
        **{f"{name}_cpu_ms": round(1000 * cpu, 2) for name, (cpu, _) in least.items()},
        **{f"{name}_wall_ms": round(1000 * wall, 2) for name, (_, wall) in least.items()},
        "whole_before_cpu_us_per_l1": round(1e6 * least["whole_before"][0] / len(leaves), 1),
        "stepped_speedup_cpu": round(least["whole_before"][0] / least["stepped"][0], 1),
    }


async def _answers(tree: RedisTree) -> tuple[Any, ...]:
    return (await tree.fact_versions(USER), await tree.entity_index(USER))


async def measure(
    sizes: Sequence[int], rounds: int, redis_url: str, endings: Sequence[int] | None = None
) -> dict[str, Any]:
    client = aioredis.Redis.from_url(redis_url)
    try:
        return {
            "what": "first knowledge read after a write of one step, whole vs stepped",
            "rounds": rounds,
            "sizes": [
                await measure_size(client, n, rounds, ending, homes=endings is not None)
                for n in sizes
                for ending in endings or (0,)
            ],
        }
    finally:
        await client.aclose()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/knowledge-read.json"))
    parser.add_argument("--messages", type=int, nargs="+", default=[2_000, 20_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--endings",
        type=int,
        nargs="+",
        help="endings told without their attribute the speaker says, one run per count "
        "(each round's step then states the speaker's home)",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args(argv)
    if args.rounds < 1 or any(n < 100 for n in args.messages):
        parser.error("--rounds must be at least 1 and every --messages at least 100")
    if any(n < 0 for n in args.endings or ()):
        parser.error("--endings must not be negative")
    result = asyncio.run(measure(args.messages, args.rounds, args.redis_url, args.endings))
    write_report(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
