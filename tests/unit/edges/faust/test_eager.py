"""A coroutine run at once is the coroutine awaited: the same result, errors, cancellation
and order of its steps, whether it finishes at once or waits (`edges.faust.eager`)."""

from __future__ import annotations

import asyncio

import pytest

from memstream.edges.faust.eager import Started, started


async def test_a_coroutine_that_never_waits_is_done_when_started_returns() -> None:
    done: list[str] = []

    async def deliver() -> None:
        done.append("delivered")

    assert started(deliver()) is None
    assert done == ["delivered"]


async def test_a_coroutine_that_waits_runs_up_to_its_wait_then_the_rest_when_awaited() -> None:
    steps: list[str] = []
    room = asyncio.Event()

    async def deliver() -> str:
        steps.append("before")
        await room.wait()
        steps.append("after")
        await asyncio.sleep(0)  # a bare yield to the loop on the way
        return "delivered"

    rest = started(deliver())
    assert isinstance(rest, Started)
    assert steps == ["before"]
    task = asyncio.ensure_future(rest)
    await asyncio.sleep(0)
    assert not task.done()
    room.set()
    assert await asyncio.wait_for(task, 5) == "delivered"
    assert steps == ["before", "after"]


async def test_an_error_before_the_first_wait_is_raised_by_started() -> None:
    async def deliver() -> None:
        raise ValueError("undecodable")

    with pytest.raises(ValueError, match="undecodable"):
        started(deliver())


async def test_an_error_after_a_wait_is_raised_where_the_rest_is_awaited() -> None:
    room = asyncio.Event()

    async def deliver() -> None:
        await room.wait()
        raise ValueError("late")

    rest = started(deliver())
    assert rest is not None
    task = asyncio.ensure_future(rest)
    room.set()
    with pytest.raises(ValueError, match="late"):
        await asyncio.wait_for(task, 5)


async def test_cancelling_the_rest_cancels_the_coroutine_at_its_wait() -> None:
    cleaned: list[str] = []
    never = asyncio.Event()

    async def deliver() -> None:
        try:
            await never.wait()
        finally:
            cleaned.append("finally")

    rest = started(deliver())
    assert rest is not None
    task = asyncio.ensure_future(rest)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally"]


async def test_a_coroutine_that_catches_the_cancellation_goes_on() -> None:
    never = asyncio.Event()

    async def deliver() -> str:
        try:
            await never.wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0)
            return "stopped cleanly"
        return "delivered"

    rest = started(deliver())
    assert rest is not None
    task = asyncio.ensure_future(rest)
    await asyncio.sleep(0)
    task.cancel()
    assert await task == "stopped cleanly"
