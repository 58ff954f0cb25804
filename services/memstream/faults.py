"""Fault injection for the crash suite: a process kills itself at a named point.

Off unless armed. `memstream worker` arms it from `MEMSTREAM_FAULT_POINT` (settings
`handoff.fault_point`), "name:n": the n-th time the process reaches the point named `name`, it sends
itself SIGKILL, as the kernel's OOM killer or a node failure would: no clean-up, no flush,
no offset commit. Tests use it to stop a worker at an exact step of the write path, where a
sleep could only guess. The points, in the order a record meets them:

    l1.before_commit          L1 vectors indexed, the user's transaction not yet run
    l1.before_publish         L1s and closures committed (outbox), nothing published
    consolidation.after_qdrant  summaries indexed, their nodes not yet committed
    forget.after_redis        a forget deleted the user's keys, not yet their points
    overflow.after_batch      a batch of the segmenter's overflow handled and struck off its
                              users' ledgers, the overflow record naming it not committed
    rebuild.before_commit     a rebuild chunk's leaves re-derived and indexed, the chunk and
                              the job's progress not yet committed
    repair.after_page         `memstream repair` wrote one page of nodes into the index or
                              the tree, not the rest

This module sits below every layer (it needs only the standard library), so a handler may
mark a point without knowing anything about processes.
"""

from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger(__name__)

POINTS = frozenset(
    {
        "l1.before_commit",
        "l1.before_publish",
        "consolidation.after_qdrant",
        "forget.after_redis",
        "overflow.after_batch",
        "rebuild.before_commit",
        "repair.after_page",
    }
)

_armed: tuple[str, int] | None = None
_hits = 0


def arm(spec: str) -> None:
    """Arm the point "name:n" (n >= 1; "name" alone is "name:1"); "" disarms."""
    global _armed, _hits
    _hits = 0
    if not spec:
        _armed = None
        return
    name, _, count = spec.partition(":")
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}; known: {', '.join(sorted(POINTS))}")
    times = int(count or 1)
    if times < 1:
        raise ValueError("a fault point fires on a hit numbered from 1")
    _armed = (name, times)
    log.warning("fault injection armed: SIGKILL at hit %d of %s", times, name)


def reach(point: str) -> None:
    """Mark that the process reached `point`; kill it there if that point is armed and due."""
    global _hits
    if _armed is None or _armed[0] != point:
        return
    _hits += 1
    if _hits >= _armed[1]:
        log.warning("fault injection: SIGKILL at %s (hit %d)", point, _hits)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os.kill(os.getpid(), signal.SIGKILL)
