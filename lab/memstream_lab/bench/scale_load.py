"""Recall at an offered rate, for the scale benchmark: an open-loop load in a process of its own.

    python -m memstream_lab.bench.scale_load --url http://127.0.0.1:8000 --rate 200 \
        --seconds 10 --users light-0 light-1

The scale benchmark serves recall from its own process (the embedded Qdrant shard lives
there), so a load generator in that process would share its interpreter lock with the
server it measures; this one runs apart and prints its figures as one JSON line. Requests
leave on a fixed schedule of `rate` a second over `seconds`, spread over `connections`
keep-alive connections and over the users named in turn; a request's latency counts from
its scheduled time, so a server that falls behind shows it as latency instead of hiding it
as a lower rate; one that falls `OVERRUN` times behind is sent no more (`unsent`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from memstream_lab.bench.keepalive import KeepAliveConnection
from memstream_lab.bench.synthetic import queries
from memstream_lab.measure import ms_since, nearest_rank

CONNECTIONS = 32
# A server that falls this many times behind the schedule is not sent the rest: the run says
# how many went unsent instead of queueing them for minutes.
OVERRUN = 3.0


async def offered(
    url: str,
    users: Sequence[str],
    rate: float,
    seconds: float,
    connections: int = CONNECTIONS,
    overrun: float = OVERRUN,
) -> dict[str, Any]:
    """Latency percentiles of `rate * seconds` recalls sent on schedule; none leaves once the
    run is `overrun` times its length."""
    if rate <= 0 or seconds <= 0 or not users:
        raise ValueError("rate and seconds must be positive, and at least one user named")
    address = urlsplit(url)
    host, port = address.hostname or "127.0.0.1", address.port or 80
    total = int(rate * seconds)
    asks = queries(200)
    bodies = [
        json.dumps({"user_id": users[i % len(users)], "query": asks[i % len(asks)]}).encode()
        for i in range(total)
    ]
    latencies: list[float] = []
    errors = 0
    next_ask = 0
    start = time.perf_counter()
    give_up = start + seconds * overrun

    async def client() -> None:
        nonlocal next_ask, errors
        connection = KeepAliveConnection(host, port)
        try:
            while next_ask < total and time.perf_counter() < give_up:
                mine = next_ask
                next_ask += 1
                due = start + mine / rate
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                try:
                    status, _ = await connection.post("/v1/recall", bodies[mine])
                except ConnectionError:
                    status = 0
                latencies.append(ms_since(due))
                errors += status != 200
        finally:
            await connection.close()

    await asyncio.gather(*(client() for _ in range(connections)))
    elapsed = time.perf_counter() - start
    return {
        "offered_rps": rate,
        "achieved_rps": round(len(latencies) / elapsed, 1),
        "requests": len(latencies),
        "unsent": total - next_ask,
        "errors": errors,
        "users": len(users),
        "connections": connections,
        "p50_ms": round(nearest_rank(latencies, 50), 2),
        "p95_ms": round(nearest_rank(latencies, 95), 2),
        "p99_ms": round(nearest_rank(latencies, 99), 2),
    }


def measure(
    url: str, users: Sequence[str], rate: float, seconds: float, overrun: float = OVERRUN
) -> dict[str, Any]:
    """`offered` run in a child process (see the module's doc); its JSON line."""
    command = [sys.executable, "-m", __name__, "--url", url, "--rate", str(rate)]
    command += ["--seconds", str(seconds), "--overrun", str(overrun), "--users", *users]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds * overrun + 300)
    if done.returncode != 0:
        raise RuntimeError(f"the load generator failed: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="The recall API's base URL.")
    parser.add_argument("--rate", type=float, default=200.0, help="Requests offered a second.")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--users", nargs="+", required=True)
    parser.add_argument("--connections", type=int, default=CONNECTIONS)
    parser.add_argument(
        "--overrun", type=float, default=OVERRUN, help="Send nothing past this many run lengths."
    )
    args = parser.parse_args(argv)
    figures = asyncio.run(
        offered(args.url, args.users, args.rate, args.seconds, args.connections, args.overrun)
    )
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
