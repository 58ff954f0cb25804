"""The overflow takes a batch only when the turns agent leaves the capacity spare, and still
takes one after its longest wait; it never handles one beside a batch of turns."""

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
        async with spare.handling():
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
    async with spare.handling():
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


async def test_past_its_longest_wait_the_overflow_goes_between_two_turns_batches() -> None:
    spare = SpareCapacity(quiet_s=0.05, longest_s=0.0)
    order: list[str] = []
    first_in, release = asyncio.Event(), asyncio.Event()

    async def first_batch() -> None:
        async with spare.handling():
            first_in.set()
            await release.wait()
            order.append("turns 1")

    async def overflow_batch() -> None:
        await spare.turn()  # returns at once: its longest wait is over
        async with spare.overflow_handling():
            order.append("overflow")

    async def next_batch() -> None:
        async with spare.handling():
            order.append("turns 2")

    first = asyncio.create_task(first_batch())
    await first_in.wait()
    overflow = asyncio.create_task(overflow_batch())
    _, pending = await asyncio.wait({overflow}, timeout=0.2)
    assert pending, "the overflow batch was handled beside a batch of turns"
    following = asyncio.create_task(next_batch())  # gathered meanwhile: it waits its turn
    release.set()
    await asyncio.wait_for(asyncio.gather(first, overflow, following), timeout=5.0)
    assert order == ["turns 1", "overflow", "turns 2"]


async def test_a_turns_batch_waits_for_the_overflow_batch_being_handled() -> None:
    spare = SpareCapacity(quiet_s=0.05, longest_s=5.0)
    order: list[str] = []
    overflow_in, release = asyncio.Event(), asyncio.Event()

    async def overflow_batch() -> None:
        async with spare.overflow_handling():
            overflow_in.set()
            await release.wait()
            order.append("overflow")

    async def batch_of_turns() -> None:
        async with spare.handling():
            order.append("turns")

    overflow = asyncio.create_task(overflow_batch())
    await overflow_in.wait()
    turns = asyncio.create_task(batch_of_turns())
    _, pending = await asyncio.wait({turns}, timeout=0.2)
    assert pending, "a batch of turns was handled beside the overflow's"
    release.set()
    await asyncio.wait_for(asyncio.gather(overflow, turns), timeout=5.0)
    assert order == ["overflow", "turns"]
