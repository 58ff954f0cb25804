"""The fairness benchmark's flooding tenant in a process of its own (`--flood-process`).

In a deployment each tenant's producer is another service on other machines; sending the
flood from the benchmark's own event loop puts its sends between the quiet tenant's
publishes and the polls that time them. This process reads the flood's records (one JSON
line each: key and value as text), connects, and on `go` sends them at the given rate in
small bursts, each at its slot, and waits for every acknowledgement (the protocol:
`sender_process`).

    python -m memstream_lab.bench.flood_publisher RECORDS.jsonl --bootstrap HOST:PORT \
        --topic TOPIC --rate TURNS_S
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream_lab.bench.sender_process import Sent, report, send_when_told, sender_process

TICK_S = 0.05  # the flood is sent in small bursts, each at its slot
FLOOD_MODULE = "memstream_lab.bench.flood_publisher"  # this module, run as a process


@dataclass(frozen=True)
class FloodSent:
    """How many records the flood sent and, from a process of its own, the CPU seconds that
    process spent sending them (from the event loop they are in the loop's own)."""

    records: int
    cpu_seconds: float | None = None


async def send_at_rate(
    out: KafkaPublisher, topic: str, records: Sequence[tuple[bytes, bytes]], rate: float
) -> int:
    """`records` at `rate`, sent in small bursts, each at its slot; raises if the broker
    refused one."""
    start, sent = time.perf_counter(), 0
    acks = []
    while sent < len(records):
        due = min(len(records), round(rate * (time.perf_counter() - start)))
        for key, value in records[sent:due]:
            acks.append(await out.producer.send(topic, key=key, value=value))
        sent = max(sent, due)
        await asyncio.sleep(TICK_S)
    await asyncio.gather(*acks)
    return sent


def write_records(path: Path, records: Sequence[tuple[bytes, bytes]]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for key, value in records:
            out.write(json.dumps({"key": key.decode(), "value": value.decode()}) + "\n")


def read_records(path: Path) -> list[tuple[bytes, bytes]]:
    with path.open(encoding="utf-8") as lines:
        return [(one["key"].encode(), one["value"].encode()) for one in map(json.loads, lines)]


@asynccontextmanager
async def flood_sender(
    records: Sequence[tuple[bytes, bytes]],
    bootstrap: str,
    topic: str,
    rate: float,
    *,
    own_process: bool,
) -> AsyncIterator[Callable[[], Awaitable[FloodSent]]]:
    """What sends the flood once called, returning what it sent: from this event loop, or
    (`own_process`, with records to send) from a process of its own, started and connected
    on entry so that the call starts the sending and nothing else."""
    if not own_process or not records:
        out = KafkaPublisher.for_bootstrap(bootstrap)

        async def send_here() -> FloodSent:
            return FloodSent(await send_at_rate(out, topic, records, rate))

        await out.start()
        try:
            yield send_here
        finally:
            await out.stop()
        return
    with tempfile.TemporaryDirectory(prefix="memstream-flood-") as scratch:
        path = Path(scratch) / "flood.jsonl"
        write_records(path, records)
        arguments = (str(path), "--bootstrap", bootstrap, "--topic", topic, "--rate", str(rate))
        started = sender_process("the flood's process", FLOOD_MODULE, *arguments)
        async with started as send_there:

            async def send() -> FloodSent:
                return FloodSent(*await send_there())

            yield send


async def _flood(records_file: Path, bootstrap: str, topic: str, rate: float) -> Sent:
    records = read_records(records_file)
    out = KafkaPublisher.for_bootstrap(bootstrap)
    await out.start()
    try:
        return await send_when_told(lambda: send_at_rate(out, topic, records, rate))
    finally:
        await out.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--rate", type=float, required=True, help="Records a second.")
    args = parser.parse_args()
    report(asyncio.run(_flood(args.records, args.bootstrap, args.topic, args.rate)))


if __name__ == "__main__":
    main()
