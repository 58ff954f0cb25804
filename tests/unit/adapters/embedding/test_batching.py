"""Micro-batching: concurrent calls share one forward pass and get the vectors they asked for."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.adapters.embedding.batching import MicroBatcher, even_cuts
from memstream.adapters.embedding.embedders import HashingEmbedder


async def _settle() -> None:
    """Let every ready task run as far as it can (no wall-clock wait)."""
    for _ in range(20):
        await asyncio.sleep(0)


class RecordingModel:
    """The hashing embedder behind a gate, recording every batch it is given."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(32)
        self.calls: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()

    async def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.entered.set()
        await self.gate.wait()
        return await self.inner.embed(texts)


async def test_concurrent_calls_are_one_batched_call_with_identical_vectors() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=64)
    queries = [f"query number {i} about pottery" for i in range(20)]
    results = await asyncio.gather(*(batcher.embed([q]) for q in queries))
    assert model.calls == [queries]
    assert batcher.batches == 1
    for query, [vector] in zip(queries, results, strict=True):
        assert vector == model.inner.embed_one(query)


async def test_calls_arriving_during_a_batch_form_the_next_one() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=64)
    model.gate.clear()
    first = asyncio.create_task(batcher.embed(["first"]))
    await model.entered.wait()  # the first batch is in the model
    later = [asyncio.create_task(batcher.embed([f"later {i}", f"other {i}"])) for i in range(5)]
    await _settle()
    assert model.calls == [["first"]]  # nothing joins a batch already running
    model.gate.set()
    await asyncio.gather(first, *later)
    assert len(model.calls) == 2
    assert sorted(model.calls[1]) == sorted(
        t for i in range(5) for t in (f"later {i}", f"other {i}")
    )


async def test_a_batch_never_exceeds_max_texts() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=8)
    await asyncio.gather(*(batcher.embed([f"q{i}", f"r{i}", f"s{i}"]) for i in range(6)))
    assert all(len(call) <= 8 for call in model.calls)
    assert sum(len(call) for call in model.calls) == 18


async def test_a_query_waits_for_the_bulk_batches_already_sent_not_for_all_of_it() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=4, bulk_pieces=2, bulk_depth=2)
    model.gate.clear()
    # Texts of one token count (three), so the pieces hold four each.
    bulk_texts = [f"message {'x' * (1 + i % 7)} {i}" for i in range(40)]
    bulk = asyncio.create_task(batcher.embed(bulk_texts))
    await model.entered.wait()  # the first batch is in the model
    query = asyncio.create_task(batcher.embed(["where did I hike?"]))
    await _settle()
    assert len(model.calls) == 2  # two bulk batches sent, the query held back
    model.gate.set()
    vectors = await bulk
    await query
    # The two batches that were sent (two pieces each), then the query, then the rest: two
    # batches of two pieces, and the last two pieces a batch each (spread over the slots).
    assert [len(c) for c in model.calls[:2]] == [8, 8]
    assert model.calls[2] == ["where did I hike?"]
    assert [len(c) for c in model.calls[3:]] == [8, 8, 4, 4]
    assert vectors == [model.inner.embed_one(t) for t in bulk_texts]  # back in order


async def test_the_next_bulk_batch_is_in_the_model_before_the_running_one_returns() -> None:
    # The model's process must find its next batch queued, not wait for the event loop.
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=4, bulk_pieces=1, bulk_depth=2)
    model.gate.clear()
    bulk = asyncio.create_task(batcher.embed([f"text {i}" for i in range(16)]))
    await _settle()
    assert len(model.calls) == 2  # two sent, neither finished
    model.gate.set()
    await bulk
    assert batcher.batches == 4


async def test_bulk_batches_go_one_at_a_time_with_depth_one() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=4, bulk_pieces=1, bulk_depth=1)
    model.gate.clear()
    bulk = asyncio.create_task(batcher.embed([f"text {i}" for i in range(16)]))
    await _settle()
    assert len(model.calls) == 1
    model.gate.set()
    await bulk


async def test_a_failed_batch_fails_its_callers_and_the_next_batch_runs() -> None:
    calls = 0

    async def flaky(texts: list[str]) -> list[list[float]]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("model died")
        return [[1.0] for _ in texts]

    batcher = MicroBatcher(flaky)
    results = await asyncio.gather(
        batcher.embed(["a"]), batcher.embed(["b"]), return_exceptions=True
    )
    assert all(isinstance(r, RuntimeError) for r in results)
    assert await batcher.embed(["c"]) == [[1.0]]


async def test_a_cancelled_caller_does_not_spoil_the_batch_for_the_others() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model)
    model.gate.clear()
    running = asyncio.create_task(batcher.embed(["running"]))
    await model.entered.wait()  # the first batch is in the model
    gone = asyncio.create_task(batcher.embed(["gone"]))
    kept = asyncio.create_task(batcher.embed(["kept"]))
    await asyncio.sleep(0)
    gone.cancel()
    model.gate.set()
    await running
    assert await kept == [model.inner.embed_one("kept")]
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert model.calls == [["running"], ["kept"]]


async def test_bulk_pieces_order_texts_by_words_and_marks_not_characters() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=2, bulk_pieces=1, bulk_depth=1)
    # Long in characters but one word each, and short in characters but many marks.
    words = ["incomprehensibilities", "electroencephalograph"]
    marks = ["a, b; c!", "x. y? z"]
    await batcher.embed([words[0], marks[0], words[1], marks[1]])
    assert set(model.calls[0]) <= set(marks)  # the most tokens go first
    assert set(words) <= set(model.calls[-1])


async def test_bulk_pieces_for_several_processes_are_of_equal_cost_not_count() -> None:
    # A worker's first batch: one piece per model process of two, but the long texts' piece
    # holds fewer of them, so that both processes finish together.
    long = [" ".join(["word"] * 30) + f" {i}" for i in range(20)]
    short = [f"short {i}" for i in range(40)]
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=64, bulk_pieces=1, bulk_depth=4, spread=2)
    await batcher.embed(long + short)
    assert [len(call) for call in model.calls] == [12, 48]
    assert set(model.calls[0]) <= set(long)
    # One model process: the same 60 texts are one small call, ahead of any bulk.
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=64, bulk_pieces=1, bulk_depth=1)
    model.gate.clear()
    bulk = asyncio.create_task(batcher.embed([f"text {i}" for i in range(256)]))
    await model.entered.wait()
    small = asyncio.create_task(batcher.embed(long + short))
    model.gate.set()
    await asyncio.gather(bulk, small)
    assert [len(call) for call in model.calls[:2]] == [64, 60]  # next after the running one


async def test_a_call_of_a_few_dozen_texts_is_spread_but_queries_still_share_a_batch() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=64, bulk_pieces=1, bulk_depth=4, spread=2)
    model.gate.clear()
    step = asyncio.create_task(batcher.embed([f"message {i}" for i in range(40)]))
    await _settle()
    assert [len(call) for call in model.calls] == [20, 20]  # both processes at once
    model.gate.set()
    await step
    model.calls.clear()
    queries = [f"where did I go on day {i}?" for i in range(40)]
    await asyncio.gather(*(batcher.embed([q]) for q in queries))
    assert [len(call) for call in model.calls] == [40]  # one forward pass, as before


class GatedModel:
    """Each call waits for its own release, so a test can finish calls one at a time."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(32)
        self.calls: list[list[str]] = []
        self.releases: list[asyncio.Event] = []

    async def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        release = asyncio.Event()
        self.releases.append(release)
        await release.wait()
        return await self.inner.embed(texts)

    async def finish(self, *tasks: asyncio.Future[Any]) -> None:
        """Release every call, those the tasks make meanwhile too, until the tasks are done."""
        while not all(task.done() for task in tasks):
            for release in self.releases:
                release.set()
            await _settle()


async def test_a_query_takes_the_first_free_slot_not_the_end_of_every_running_batch() -> None:
    model = GatedModel()
    batcher = MicroBatcher(model, max_texts=4, bulk_pieces=1, bulk_depth=2)
    bulk = asyncio.create_task(batcher.embed([f"text {i}" for i in range(16)]))
    await _settle()
    query = asyncio.create_task(batcher.embed(["where did I hike?"]))
    await _settle()
    assert len(model.calls) == 2  # both slots taken by bulk: the query waits
    model.releases[0].set()  # one bulk batch returns; the other still runs
    await _settle()
    assert model.calls[2] == ["where did I hike?"]
    await model.finish(bulk, query)
    assert await query == [model.inner.embed_one("where did I hike?")]


async def test_bulk_keeps_the_free_slots_while_a_query_waits_for_the_one_before_it() -> None:
    # A held-over message embedded again in a worker is a small call: bulk pieces must not
    # stop going to idle model processes while it waits.
    model = GatedModel()
    batcher = MicroBatcher(model, max_texts=4, bulk_pieces=1, bulk_depth=4)
    first = asyncio.create_task(batcher.embed(["first query"]))
    await _settle()
    second = asyncio.create_task(batcher.embed(["second query"]))
    bulk = asyncio.create_task(batcher.embed([f"text {i}" for i in range(16)]))
    await _settle()
    # The first query runs, the second waits for it, and bulk fills the other three slots.
    assert model.calls[0] == ["first query"]
    assert len(model.calls) == 4 and ["second query"] not in model.calls
    model.releases[0].set()
    await _settle()
    assert model.calls[4] == ["second query"]  # the next free slot is the query's
    await model.finish(first, second, bulk)


async def test_a_short_bulk_call_is_spread_over_the_slots() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=4, bulk_pieces=2, bulk_depth=4)
    model.gate.clear()
    call = asyncio.create_task(batcher.embed([f"text {i}" for i in range(8)]))
    await _settle()
    assert [len(c) for c in model.calls] == [4, 4]  # two processes, a piece each
    model.gate.set()
    await call


async def test_a_bulk_call_sends_its_longest_texts_first() -> None:
    model = RecordingModel()
    batcher = MicroBatcher(model, max_texts=2, bulk_pieces=1, bulk_depth=1)
    texts = ["one", "one two three four five", "one two", "one two three four"]
    vectors = await batcher.embed(texts)
    assert model.calls == [
        ["one two three four five", "one two three four"],
        ["one two", "one"],
    ]
    assert vectors == [model.inner.embed_one(t) for t in texts]  # back in the call's order


costs_lists = st.lists(st.floats(min_value=0.5, max_value=100.0), min_size=1, max_size=200)


@given(costs_lists, st.data())
def test_even_cuts_make_the_pieces_asked_for_none_empty(costs: list[float], data: Any) -> None:
    pieces = data.draw(st.integers(min_value=1, max_value=len(costs)))
    bounds = even_cuts(costs, pieces)
    assert len(bounds) == pieces + 1
    assert bounds[0] == 0 and bounds[-1] == len(costs)
    assert all(lo < hi for lo, hi in itertools.pairwise(bounds))


# Many items, none dearer than twice another: no piece is forced by the ones around it.
similar_costs = st.lists(st.floats(min_value=1.0, max_value=2.0), min_size=32, max_size=200)


@given(similar_costs, st.integers(min_value=1, max_value=8))
def test_even_cuts_keep_each_piece_within_an_item_of_its_share(
    costs: list[float], pieces: int
) -> None:
    share = sum(costs) / pieces
    bounds = even_cuts(costs, pieces)
    for lo, hi in itertools.pairwise(bounds):
        assert abs(sum(costs[lo:hi]) - share) <= 2 * max(costs) + 1e-9
