"""Several model processes: which one a call goes to, warming each, replacing a dead one.

The dispatch test runs the children as threads (the same executor interface, and a call can
be held inside one); the others start real `spawn` processes running standard-library
functions, so no model is loaded.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from concurrent.futures import Executor, ThreadPoolExecutor

import psutil

from memstream.adapters.embedding.model_process import ModelProcesses, ModelSpec


class ThreadChildren(ModelProcesses):
    def _start(self) -> Executor:  # type: ignore[override]
        return ThreadPoolExecutor(max_workers=1)


def _held(started: threading.Event, release: threading.Event) -> int:
    started.set()
    release.wait(30)
    return threading.get_ident()


async def test_a_call_goes_to_the_child_with_the_fewest_calls_outstanding() -> None:
    children = ThreadChildren(ModelSpec(path="unused", processes=2))
    started, release = threading.Event(), threading.Event()
    held = asyncio.create_task(children.call(_held, started, release))
    assert await asyncio.to_thread(started.wait, 30)
    beside = await children.call(threading.get_ident)  # the first child is busy
    release.set()
    first = await held
    assert beside != first
    # Both idle again: the tie goes to the first child.
    assert await children.call(threading.get_ident) == first
    for executor in children.executors:
        executor.shutdown()


async def test_call_each_runs_in_every_process() -> None:
    children = ModelProcesses(ModelSpec(path="unused", processes=2))
    try:
        pids = await children.call_each(os.getpid)
        assert len(set(pids)) == 2
        assert os.getpid() not in pids
    finally:
        for executor in children.executors:
            executor.shutdown()


async def test_a_killed_process_is_replaced_and_the_call_tried_again() -> None:
    children = ModelProcesses(ModelSpec(path="unused", processes=2))
    try:
        first, second = await children.call_each(os.getpid)
        os.kill(first, signal.SIGKILL)
        await asyncio.to_thread(psutil.wait_procs, [psutil.Process(first)], 30)
        # Both idle: the call goes to the first child, finds it dead, and runs in a new one.
        replacement = await children.call(os.getpid)
        assert replacement not in (first, second)
        assert sorted(await children.call_each(os.getpid)) == sorted([replacement, second])
    finally:
        for executor in children.executors:
            executor.shutdown()
