"""Waiting until the write path has done everything published to it (demo, eval, bench)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from memstream.adapters.kafka.lag import consumer_lag
from memstream.bootstrap import Container


async def wait_caught_up(
    container: Container,
    users: list[str],
    *,
    timeout_s: float,
    poll_s: float = 0.5,
    groups: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Return once both consumers have no lag and no user has a window left open.

    Checked twice in a row, since a closure can be in flight between the two topics.
    `groups`: each consumer group and the topics it reads (`runner.lag_groups`); by default
    the group `settings.broker.consumer_group` on both topics (all parts in one process).
    """
    settings = container.settings
    turns = settings.broker.turns_routing(container.catalog.turns.name).topics
    topics = [*turns, container.catalog.windows.name]
    groups = groups or {settings.broker.consumer_group: topics}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    quiet_polls = 0
    while quiet_polls < 2:
        if loop.time() > deadline:
            raise TimeoutError(f"consolidation did not catch up within {timeout_s:.0f} s")
        await asyncio.sleep(poll_s)
        lag = 0
        for group, read in groups.items():
            by_partition = await consumer_lag(settings.broker.bootstrap, group, list(read))
            lag += sum(by_partition.values())
        open_windows = 0
        for user in users:
            state = await container.tree.load_state(user)
            open_windows += len(state["open_windows"]) if state else 1
        quiet_polls = quiet_polls + 1 if lag == 0 and open_windows == 0 else 0
