"""The ingest benchmark's producer in a process of its own (`--publisher process`).

In production the producers are other services; publishing from the benchmark's own process
puts the producer's CPU in the event loop's figures. This process reads and validates the
file and connects first, and on `go` publishes it (the protocol: `sender_process`).

    python -m memstream_lab.bench.publisher EVENTS.jsonl --bootstrap HOST:PORT --prefix P
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.embedded.ingest import file_publisher
from memstream_lab.bench.sender_process import Sent, report, send_when_told


async def _publish(events: Path, bootstrap: str, prefix: str) -> Sent:
    catalog = load_catalog(prefix)
    async with file_publisher(events, catalog=catalog, bootstrap=bootstrap) as send:
        return await send_when_told(lambda: send(False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("events", type=Path)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--prefix", default="")
    args = parser.parse_args()
    report(asyncio.run(_publish(args.events, args.bootstrap, args.prefix)))


if __name__ == "__main__":
    main()
