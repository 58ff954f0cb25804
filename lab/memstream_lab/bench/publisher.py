"""The ingest benchmark's producer in a process of its own (`--publisher process`).

In production the producers are other services; publishing from the benchmark's own process
puts the producer's CPU in the event loop's figures. This process reads and validates the
file and connects first, says `ready`, waits for `go` on stdin (the benchmark starts its
clock then), publishes the file and prints how many events it sent and the CPU seconds it
took (it has exited by the time the benchmark takes its CPU figures, so it reports its own).

    python -m memstream_lab.bench.publisher EVENTS.jsonl --bootstrap HOST:PORT --prefix P
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.embedded.ingest import file_publisher


async def _publish(events: Path, bootstrap: str, prefix: str) -> tuple[int, float]:
    catalog = load_catalog(prefix)
    async with file_publisher(events, catalog=catalog, bootstrap=bootstrap) as send:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        cpu_before = time.process_time()
        count = await send(False)
        return count, time.process_time() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("events", type=Path)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--prefix", default="")
    args = parser.parse_args()
    count, cpu_seconds = asyncio.run(_publish(args.events, args.bootstrap, args.prefix))
    print(count, cpu_seconds, flush=True)


if __name__ == "__main__":
    main()
