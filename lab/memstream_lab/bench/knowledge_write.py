"""What the online knowledge write costs per L1: `memstream bench knowledge-write --out F`.

A micro-benchmark in this one process, without servers. The L1s of every LoCoMo conversation
(`../shared/data/locomo`, when present) and of the knowledge-update set are made as the
segmenter makes them (the window reducer over their events, one L1 per exchange); then what
the segmenter adds to each L1's commit is timed: reading its facts and entity surfaces
(`domain.knowledge.leaf_knowledge`) and encoding them as the store keeps them. Beside it,
what a read derives from one whole user (decoding, fact versions, the entity index), which
a reader pays when the user's knowledge changed since its last read (RedisKnowledge keeps it
by revision otherwise). Each figure is the least CPU time (`process_time`) of `--rounds`
rounds, which another process on the shared cores moves far less than a wall-clock time.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from memstream.contracts.knowledge_codec import (
    decode_fact,
    decode_leaf_entities,
    encode_fact,
    encode_leaf_entities,
)
from memstream.domain.entity_index import read_leaf
from memstream.domain.fact_extraction import extract_facts
from memstream.domain.fact_frames import Frames, frames_of, leaf_facts, prototype_texts
from memstream.domain.knowledge import LeafKnowledge, current_facts, entity_index, leaf_knowledge
from memstream.domain.models import MemoryNode, Summary, Turn
from memstream.domain.nodes import segment_node
from memstream.domain.windows import SegmentReady
from memstream_lab.bench.scale_chat import l1s_of
from memstream_lab.knowledge.dataset import load_all, turn_events
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation
from memstream_lab.measure import nearest_rank, write_report


@dataclass(frozen=True)
class User:
    name: str
    leaves: list[MemoryNode]


def users(locomo_dir: Path | None) -> list[User]:
    found = [User(c["conversation_id"], l1s_of(c["user_id"], with_ends(c))) for c in load_all()]
    for path in conversation_files(locomo_dir) if locomo_dir is not None else []:
        conversation = load_conversation(path)
        name = f"locomo-{conversation.sample_id}"
        found.append(User(name, l1s_of(name, conversation_events(conversation))))
    return found


def with_ends(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """A knowledge-update conversation's turns, each session closed after its last."""
    events: list[dict[str, Any]] = []
    for turn in turn_events(conversation):
        last = events[-1] if events else None
        if last is not None and last["session_id"] != turn["session_id"]:
            events.append(_end(last))
        events.append(turn)
    return [*events, _end(events[-1])] if events else []


def _end(turn: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "session_end.v1",
        "user_id": turn["user_id"],
        "session_id": turn["session_id"],
        "ts": turn["ts"],
    }


def encoded(knowledge: LeafKnowledge) -> tuple[str, str]:
    """The two values the Redis adapter writes for one L1."""
    return (
        json.dumps([encode_fact(f) for f in knowledge.facts]),
        json.dumps(encode_leaf_entities(knowledge.entities)),
    )


def best_per_item(
    items: Sequence[MemoryNode], work: Callable[[MemoryNode], object], rounds: int
) -> list[float]:
    """CPU microseconds per item, each the least of `rounds` passes over all the items."""
    best = [float("inf")] * len(items)
    for _ in range(rounds):
        for i, item in enumerate(items):
            started = time.process_time()
            work(item)
            best[i] = min(best[i], (time.process_time() - started) * 1e6)
    return best


def best_of(work: Callable[[], object], rounds: int) -> float:
    """CPU milliseconds of the least of `rounds` runs of `work`."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        work()
        times.append((time.process_time() - started) * 1000)
    return min(times)


def summary_us(values: Sequence[float]) -> dict[str, float]:
    return {
        "mean_us": round(statistics.fmean(values), 1),
        "p50_us": round(nearest_rank(values, 50), 1),
        "p99_us": round(nearest_rank(values, 99), 1),
        "max_us": round(max(values), 1),
    }


def read_side(user: User, rounds: int) -> dict[str, Any]:
    """What one read of a whole user costs: decode the stored values, derive, as the
    adapter does (facts and entities are read apart)."""
    said = {leaf.id: leaf_knowledge(leaf) for leaf in user.leaves}
    # As the adapter keeps them: only the L1s that say something, each in its hash.
    facts_docs = [encoded(k)[0] for k in said.values() if k.facts]
    surfaces = {i: encoded(k)[1] for i, k in said.items() if k.entities.surfaces}

    def facts_read() -> object:
        observed = [decode_fact(f) for doc in facts_docs for f in json.loads(doc)]
        return current_facts(observed)

    def entities_read() -> object:
        return entity_index({k: decode_leaf_entities(json.loads(v)) for k, v in surfaces.items()})

    return {
        "user": user.name,
        "l1s": len(user.leaves),
        "facts_read_ms": round(best_of(facts_read, rounds), 2),
        "entities_read_ms": round(best_of(entities_read, rounds), 2),
    }


# Messages at the size bound of the topic (20,000 characters) in shapes that make the
# patterns work hardest: many clause heads, capitals, lists, no sentence end.
HOSTILE = {
    "clauses": "and I love hiking and we moved to ",
    "capitals": "My Brother Moved To Berlin And ",
    "one_sentence": "Porto ",
    "list": "I love hiking, ",
    "dashes": "I live in - ",
}
HOSTILE_CHARS = 19_999


def hostile(rounds: int) -> dict[str, float]:
    """Milliseconds to read one L1 of one such message, by shape (best of `rounds`)."""
    at = datetime(2024, 1, 1, tzinfo=UTC)
    found = {}
    for name, unit in HOSTILE.items():
        text = ("I live in " + unit * (HOSTILE_CHARS // len(unit)))[:HOSTILE_CHARS]
        turn = Turn("h", "hostile", "s", 0, "Maya", "user", text, at)
        leaf = segment_node("hostile", SegmentReady((turn,), "s"), Summary(text))
        found[name] = round(best_of(partial(leaf_knowledge, leaf), rounds), 1)
    return found


def unit_vector(seed: str, dim: int = 384) -> list[float]:
    """A made-up unit vector: the frames cost the same whatever the vectors say."""
    draw = random.Random(seed)
    vector = [draw.gauss(0.0, 1.0) for _ in range(dim)]
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def made_up_frames() -> Frames:
    return frames_of([unit_vector(text) for _, text in prototype_texts()])


def run(locomo_dir: Path | None, rounds: int) -> dict[str, Any]:
    people = users(locomo_dir)
    leaves = [leaf for user in people for leaf in user.leaves]
    said = [leaf_knowledge(leaf) for leaf in leaves]
    frames = made_up_frames()
    vectors = {m.text: unit_vector(m.text) for leaf in leaves for m in leaf.messages}
    return {
        "users": len(people),
        "l1s": len(leaves),
        "messages": sum(len(leaf.messages) for leaf in leaves),
        "facts": sum(len(k.facts) for k in said),
        "surfaces": sum(len(k.entities.surfaces) for k in said),
        "per_l1": {
            "knowledge": summary_us(best_per_item(leaves, leaf_knowledge, rounds)),
            "facts_only": summary_us(
                best_per_item(
                    leaves, lambda n: extract_facts(n.messages, user_id=n.user_id), rounds
                )
            ),
            # The rules' facts and those the messages imply by their frames, with the
            # messages' vectors given (the segmenter has them from the L1's embedding).
            "facts_with_frames": summary_us(
                best_per_item(leaves, lambda n: leaf_facts(n, vectors, frames), rounds)
            ),
            "surfaces_only": summary_us(
                best_per_item(leaves, lambda n: read_leaf(n.messages), rounds)
            ),
            "knowledge_and_encoding": summary_us(
                best_per_item(leaves, lambda n: encoded(leaf_knowledge(n)), rounds)
            ),
        },
        "per_read": [read_side(user, rounds) for user in people if user.name.startswith("locomo")],
        "hostile_20k_chars_ms": hostile(rounds),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="memstream bench knowledge-write", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results/knowledge-write.json"))
    parser.add_argument("--rounds", type=int, default=3, help="passes; the fastest counts")
    parser.add_argument(
        "--locomo",
        type=Path,
        default=None,
        help="LoCoMo's directory (default: ../shared/data/locomo when it exists)",
    )
    parser.add_argument("--no-locomo", action="store_true", help="the knowledge-update set only")
    args = parser.parse_args(argv)
    locomo = None if args.no_locomo else (args.locomo or _default_locomo())
    report = run(locomo, max(1, args.rounds))
    report["rounds"] = max(1, args.rounds)
    write_report(args.out, report)
    print(json.dumps(report, indent=2))


def _default_locomo() -> Path | None:
    from memstream_lab.locomo import locomo_data_dir

    found = locomo_data_dir()
    return found if found.is_dir() else None


if __name__ == "__main__":
    main()
