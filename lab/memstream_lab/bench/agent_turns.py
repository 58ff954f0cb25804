"""The agent of the read-your-writes benchmarks: at a steady rate, a user's message published
with `flush`, then recalled with its receipt (`read_your_writes`, `read_your_writes_cpu`);
what each rate measures is described in `read_your_writes`."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient, Receipt
from memstream_lab.bench.cpu import CpuSpan, snapshot
from memstream_lab.bench.synthetic import sentence
from memstream_lab.bench.up_stack import LeanRecalls, spread, until_consuming

DRAIN_TIMEOUT_S = 300.0


async def measure(
    endpoints: dict[str, str],
    rate: float,
    turns: int,
    users: int,
    wait_ms: int,
    client: str,
    recall_each: bool = True,
) -> dict[str, Any]:
    """The figures of one rate. `recall_each=False` publishes the turns without recalling
    after them (read_your_writes_cpu: what the write alone costs)."""
    run_id = f"{time.time_ns():x}"
    acks: list[float] = []
    answers: list[float] = []
    waits: list[float] = []
    pending = refused = 0
    lean = LeanRecalls(endpoints["MEMSTREAM_RECALL_URL"])
    async with (
        AsyncMemstreamProducer(endpoints["MEMSTREAM_KAFKA_BOOTSTRAP"], idempotent=False) as out,
        AsyncRecallClient(endpoints["MEMSTREAM_RECALL_URL"], timeout_s=60) as memory,
    ):
        ready_s = await until_consuming(out, lean)

        async def recall(user: str, text: str, receipt: Receipt) -> tuple[bool, float] | None:
            if client == "sdk":
                got = await memory.recall(user, text, after=receipt, wait_ms=wait_ms)
                return got.pending, got.timings_ms["after"]
            answer = await lean.recall(user, text, receipt.token, wait_ms)
            if answer is None:
                return None
            return answer["pending"], answer["timings_ms"]["after"]

        last: dict[str, tuple[int, Receipt]] = {}  # each user's latest receipt, by seq

        async def turn(n: int) -> None:
            nonlocal pending, refused
            user = f"ryw-{run_id}-{n % users}"
            text = sentence(random.Random(n))
            started = time.perf_counter()
            receipt = await out.publish_turn(
                user_id=user, session_id="live", seq=n // users, text=text, flush=True
            )
            if last.get(user, (-1, receipt))[0] < n:
                last[user] = (n, receipt)
            acks.append((time.perf_counter() - started) * 1000)
            if not recall_each:
                return
            answered = await recall(user, text, receipt)
            if answered is None:
                refused += 1
                return
            was_pending, waited = answered
            answers.append((time.perf_counter() - started) * 1000)
            waits.append(waited)
            pending += was_pending

        tasks = []
        before, start = snapshot(), time.perf_counter()
        for n in range(turns):
            # A steady rate: each turn at its slot, however long the last ones take.
            delay = start + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(turn(n)))
        await asyncio.gather(*tasks)
        drained_s = await _drained(lean, last, wait_ms)
        cpu = _cpu(CpuSpan.between(before, snapshot()), turns, start)
    await lean.close()
    return {
        "rate_per_s": rate,
        "turns": turns,
        "client": client,
        "pending": pending,
        # Turns whose recall the API refused (503: more requests at once than it takes).
        "refused": refused,
        "publish_ack_ms": spread(acks),
        "publish_to_answer_ms": spread(answers),
        # The server's part: how long the read waited for the segmenter (`timings_ms.after`).
        "server_wait_ms": spread(waits),
        "cpu": cpu,
        # After the last answer, until the segmenter had passed every turn (None: it had not
        # within DRAIN_TIMEOUT_S); the CPU is measured to there, so it holds all of a turn's
        # work, however far behind the stack fell.
        "seconds_to_drain": drained_s,
        "secondsuntil_consuming": ready_s,
    }


async def _drained(
    lean: LeanRecalls, last: dict[str, tuple[int, Receipt]], wait_ms: int
) -> float | None:
    """Seconds until a recall after each user's latest receipt is no longer pending."""
    started = time.perf_counter()
    left = {user: receipt for user, (_, receipt) in last.items()}
    while left and time.perf_counter() - started < DRAIN_TIMEOUT_S:
        for user, receipt in list(left.items()):
            answer = await lean.recall(user, "drained?", receipt.token, wait_ms)
            if answer is not None and not answer["pending"]:
                del left[user]
    return None if left else round(time.perf_counter() - started, 1)


def _cpu(span: CpuSpan, turns: int, started: float) -> dict[str, Any]:
    """CPU milliseconds per turn by process (`agent`: this one, the publisher and recall
    caller), and the cores the run kept busy: what bounds the rate on a machine of N cores."""
    span.seconds["agent"] = span.seconds.pop("event_loop", 0.0)
    elapsed = time.perf_counter() - started
    return {
        "ms_per_turn": span.per_record_ms(turns),
        "cores_busy": round(sum(span.seconds.values()) / elapsed, 2),
    }
