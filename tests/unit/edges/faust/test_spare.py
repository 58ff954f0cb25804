"""The overflow takes a batch only when the turns agent leaves the capacity spare, and still
takes one after its longest wait."""

from __future__ import annotations

import asyncio
import time

from memstream.edges.faust.spare import SpareCapacity


async def test_with_no_batch_of_turns_the_overflow_goes_at_once() -> None:
    spare = SpareCapacity(quiet_s=0.05, longest_s=5.0)
    started = time.monotonic()
    await spare.turn()
    assert time.monotonic() - started < 0.05


async def test_the_overflow_waits_for_the_turns_batch_and_a_quiet_gap_after_it() -> None:
    spare = SpareCapacity(quiet_s=0.05, longest_s=5.0)
    ended_at: list[float] = []

    async def batch_of_turns() -> None:
        with spare.busy():
            await asyncio.sleep(0.2)
        ended_at.append(time.monotonic())

    running = asyncio.create_task(batch_of_turns())
    await asyncio.sleep(0)  # the batch has begun
    await spare.turn()
    went_at = time.monotonic()
    await running
    assert ended_at and went_at - ended_at[0] >= 0.05 - 0.005


async def test_under_a_steady_load_the_overflow_still_goes_after_its_longest_wait() -> None:
    spare = SpareCapacity(quiet_s=0.05, longest_s=0.3)
    with spare.busy():
        started = time.monotonic()
        await spare.turn()
        waited = time.monotonic() - started
    assert 0.3 - 0.01 <= waited < 2.0


async def test_the_overflow_waits_while_records_are_gathered_for_the_next_batch() -> None:
    spare = SpareCapacity(quiet_s=0.05, longest_s=60.0)
    gathered = ["a turn"]
    spare.waiting_in(gathered)
    going = asyncio.create_task(spare.turn())
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # records wait: the overflow must not go meanwhile
        assert not going.done()
        await asyncio.sleep(0.01)
    gathered.clear()  # the batch is taken and handled
    await asyncio.wait_for(going, timeout=5.0)  # then it goes, well before its longest wait


async def test_gathered_records_under_a_steady_load_let_it_go_after_its_longest_wait() -> None:
    spare = SpareCapacity(quiet_s=0.05, longest_s=0.3)
    spare.waiting_in(["a turn"])
    started = time.monotonic()
    await spare.turn()
    assert 0.3 - 0.01 <= time.monotonic() - started < 2.0
