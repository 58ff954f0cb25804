"""What the stores hold, by key family and level: the scale benchmark's byte accounting.

Redis: every key of a user (read by SCAN on the user's prefix: a lab tool, never a
product path) is given its family from the key table (`adapters.redis.keys`) and its
`MEMORY USAGE` summed by family; a node key's family is its level (`node:L1`...), read from
the user's level indexes. Qdrant: the size on disk of the collection's directory, and the
process's resident memory (the embedded shard lives in this process).
"""

from __future__ import annotations

import os
import resource
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstream.adapters.redis import keys
from memstream.domain.models import Level

# What bounds each per-user family (read from the code; `growth` checks it on the heavy
# user). "unbounded" families grow with the user's history: only forgetting, or retention
# (`MEMSTREAM_RETENTION_DAYS`, which expires messages and so their L1s), shrinks them.
BOUNDS = {
    keys.STATE: "bounded: the open session and windows, the calendar windows of the last two "
    "months (domain.calendar_windows) and at most 64 earlier sessions of reused ids",
    keys.SESSIONS: "bounded: at most MAX_REMEMBERED_SESSIONS closed sessions (domain.windows)",
    keys.SESSION_AGES: "bounded: one member per session in `sessions`",
    keys.CLOSED: "bounded: the newest MAX_REMEMBERED_CLOSED closed windows (domain.windows)",
    keys.SEEN: "bounded: markers older than the seen horizon (8 days) trimmed at each commit, "
    "and at most SEEN_MAX (200,000) per user",
    keys.FORGOTTEN: "bounded: tombstones older than the seen horizon trimmed at each forget",
    keys.FORGET_REACHES: "bounded: pruned with the tombstones (one field per tombstone)",
    "outbox": "bounded: cleared once published (holds one step's events at most)",
    "outbox:consolidator": "bounded: cleared once published",
    keys.EXPIRY: "bounded by retention: one entry per message kept, when retention is set",
    keys.TOMBSTONE: "constant (one value, expires)",
    keys.REBUILD: "bounded by the user's L1s while a rebuild runs (every leaf id of the job)",
    keys.KNOWLEDGE_REVISION: "constant (one token)",
    keys.KNOWLEDGE_CHANGES: "bounded: the last 32 revisions (knowledge_log.KEPT)",
    keys.KEYS: "unbounded: two members per node",
    keys.SOURCES: "unbounded: one field per message held by an L1",
    keys.SESSION_TERMS: "unbounded: one field per session summary (L2)",
    keys.FACTS: "unbounded: one field per L1 stating a fact",
    keys.FACT_SLOTS: "unbounded: one member per fact written (slot and L1)",
    keys.ENTITIES: "unbounded: one field per L1 naming an entity",
    "children": "unbounded in number (one set per node with children); each set bounded by "
    "its window's length",
    **{f"level:{int(lv)}": "unbounded: one member per node of the level" for lv in Level},
    **{f"node:L{int(lv)}": "unbounded: one key per node of the level" for lv in Level},
}


def family(suffix: str, level_of: dict[str, int]) -> str:
    if suffix.startswith("node:"):
        return f"node:L{level_of.get(suffix[5:], 0)}"
    if suffix.startswith("children:"):
        return "children"
    return suffix


async def user_families(client: Any, namespace: str, user_id: str) -> Counter[str]:
    """Bytes (MEMORY USAGE) of one user's keys, by family."""
    prefix = keys.user_prefix(user_id, namespace)
    level_of: dict[str, int] = {}
    for lv in Level:
        for member in await client.zrange(prefix + keys.level(lv), 0, -1):
            level_of[member.decode() if isinstance(member, bytes) else member] = int(lv)
    names = [k async for k in client.scan_iter(match=_glob_escape(prefix) + "*", count=1000)]
    sizes: Counter[str] = Counter()
    for lo in range(0, len(names), 500):
        chunk = names[lo : lo + 500]
        pipe = client.pipeline(transaction=False)
        for name in chunk:
            pipe.memory_usage(name, samples=0)
        for name, used in zip(chunk, await pipe.execute(), strict=True):
            text = name.decode() if isinstance(name, bytes) else name
            sizes[family(text[len(prefix) :], level_of)] += int(used or 0)
    return sizes


async def level_counts(client: Any, namespace: str, user_id: str) -> dict[int, int]:
    prefix = keys.user_prefix(user_id, namespace)
    return {int(lv): int(await client.zcard(prefix + keys.level(lv))) for lv in Level}


async def redis_figures(client: Any, namespace: str, users: Sequence[str]) -> dict[str, Any]:
    per_user: dict[str, Any] = {}
    for user in users:
        families = await user_families(client, namespace, user)
        per_user[user] = {
            "levels": await level_counts(client, namespace, user),
            "bytes_by_family": dict(sorted(families.items())),
            "bytes": sum(families.values()),
        }
    info = await client.info("memory")
    return {"used_memory": int(info["used_memory"]), "users": per_user}


def per_memory(redis: dict[str, Any], light: Sequence[str]) -> dict[str, Any]:
    """Bytes per memory of the light users sampled, by level where a family has one."""
    total = memories = 0
    by_level: dict[str, int] = {}
    for user in light:
        fig = redis["users"][user]
        total += fig["bytes"]
        memories += sum(fig["levels"].values())
        for fam, size in fig["bytes_by_family"].items():
            if fam.startswith("node:L"):
                by_level[fam] = by_level.get(fam, 0) + size
    return {
        "redis_bytes_per_memory": round(total / max(memories, 1), 1),
        "redis_bytes_per_light_user": round(total / max(len(light), 1), 1),
        "node_bytes_by_level": by_level,
    }


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def qdrant_dir(data_dir: Path) -> Path | None:
    """The embedded Qdrant's directory under the stack's data directory."""
    found = [p for p in data_dir.rglob("*") if p.is_dir() and "qdrant" in p.name.lower()]
    return min(found, key=lambda p: len(p.parts)) if found else None


def rss_bytes() -> int:
    """This process's resident memory now (Linux), else its peak."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def growth(checkpoints: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per family: bytes at the first and last checkpoint, the ratio of their growth to the
    messages', and the bound the code sets."""
    if len(checkpoints) < 2:
        return {}
    first, last = checkpoints[0], checkpoints[-1]
    msg_ratio = last["messages"] / max(first["messages"], 1)
    out: dict[str, dict[str, Any]] = {}
    for fam in sorted(set(first["bytes"]) | set(last["bytes"])):
        a, b = first["bytes"].get(fam, 0), last["bytes"].get(fam, 0)
        base = fam.split(":")[0] if fam.startswith(("node:", "level:")) else fam
        out[fam] = {
            "bytes_first": a,
            "bytes_last": b,
            "growth_vs_messages": round((b / a) / msg_ratio, 3) if a else None,
            "bound": BOUNDS.get(fam, BOUNDS.get(base, "unknown")),
        }
    return out
