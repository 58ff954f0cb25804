"""`memstream demo`: the whole pipeline on the embedded stack, over a bundled conversation.

It starts the stack and the workers in this process, publishes the synthetic conversation
(two users in two time zones, several weeks), waits until every window is consolidated,
prints each user's tree and exits. The idle timeout and the clock's grace are shortened so
the sessions the story leaves open close within seconds rather than half an hour, and the
knowledge write is on, so each profile opens with what is true at its month's end and what
changed in it (Ana's April: her move).
"""

from __future__ import annotations

import json
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from memstream.bootstrap import Container
from memstream.domain.models import Level
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.entrypoints.views import user_tree
from memstream.settings import Settings

DEMO_FILE = Path(__file__).with_name("conversations.jsonl")
DEMO_OVERRIDES = {
    "session_idle_timeout_s": 2.0,
    # The story's turns are minutes apart in event time: a session id is reused only after
    # a longer gap than the two seconds that close a quiet session quickly here.
    "session_reuse_gap_s": 1800.0,
    "clock_grace_s": 0.0,
    "clock_interval_s": 1.0,
    "knowledge": True,
}


def demo_users(path: Path = DEMO_FILE) -> list[str]:
    users: dict[str, None] = {}
    with path.open() as lines:
        for line in lines:
            if line.strip():
                users[json.loads(line)["user_id"]] = None
    return list(users)


async def run_demo(settings: Settings, console: Console, *, timeout_s: float = 280.0) -> None:
    started = time.monotonic()
    users = demo_users()
    with tempfile.TemporaryDirectory(prefix="memstream-demo-") as scratch:
        base = settings.model_copy(update={**DEMO_OVERRIDES, "data_dir": Path(scratch)})
        async with AsyncExitStack() as running:
            with console.status("starting the embedded stack (broker, Redis, Qdrant) and workers"):
                stack = await running.enter_async_context(EmbeddedStack(base))
                workers = run_parts(stack.settings(), WRITE_PATH, fast_rebalance=True)
                container = (await running.enter_async_context(workers)).container
            count = await publish_file(
                DEMO_FILE, catalog=container.catalog, bootstrap=container.settings.broker.bootstrap
            )
            console.print(f"published {count} events for {len(users)} users")
            with console.status("consolidating: sessions, days, weeks, months"):
                remaining = timeout_s - (time.monotonic() - started)
                await wait_caught_up(container, users, timeout_s=remaining)
            for user in users:
                console.print(await user_panel(container, user))
    console.print(f"demo finished in {time.monotonic() - started:.0f} s")


async def user_panel(container: Container, user: str) -> Panel:
    tree = container.tree
    counts = {level: await tree.count(user, level) for level in Level}
    profile = await tree.profile(user)
    sessions = await tree.recent(user, Level.SESSION, 3)
    return user_tree(user, counts, profile, sessions)
