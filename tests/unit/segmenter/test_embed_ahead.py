"""Embedding a batch's steps ahead: in order, two calls at a time, without waiting for readers."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.segmenter.embed_ahead import (
    FAST_MODEL_STEP_GROWTH,
    LAST_STEP,
    EmbeddingsAhead,
    step_growth,
    step_sizes,
)


class RecordingEmbedder:
    """Vectors of one number (the text's length); notes each call and can fail on one."""

    dim = 1

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.running = 0
        self.most_running = 0
        self.fail_on = fail_on
        self.finished = asyncio.Event()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(0)  # a real embedder hands the work to another process
            if self.fail_on in texts:
                raise RuntimeError(f"cannot embed {self.fail_on}")
            return [[float(len(t))] for t in texts]
        finally:
            self.running -= 1
            self.finished.set()


class StuckEmbedder(RecordingEmbedder):
    """Notes each call, then answers only once `release` is set."""

    def __init__(self, release: asyncio.Event) -> None:
        super().__init__()
        self.release = release

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        await self.release.wait()
        return [[0.0] for _ in texts]


async def test_every_chunk_is_embedded_in_order_before_anyone_asks() -> None:
    embedder = RecordingEmbedder()
    ahead = EmbeddingsAhead(embedder, [["a"], ["bb", "ccc"], ["dddd"], ["e"]])
    async with asyncio.timeout(5):
        while len(embedder.calls) < 4 or embedder.running:
            embedder.finished.clear()
            await embedder.finished.wait()
    assert embedder.calls == [["a"], ["bb", "ccc"], ["dddd"], ["e"]]
    # The next chunk waits at the embedder while one runs; never more.
    assert embedder.most_running == 2
    assert await ahead.vectors(1) == {"bb": [2.0], "ccc": [3.0]}
    assert await ahead.vectors(0) == {"a": [1.0]}
    await ahead.close()


async def test_through_a_step_finds_the_texts_of_every_step_up_to_it() -> None:
    ahead = EmbeddingsAhead(RecordingEmbedder(), [["a", "bb"], ["ccc"], ["dddd"]])
    async with asyncio.timeout(5):
        through = await ahead.through(1)
    assert dict(through) == {"a": [1.0], "bb": [2.0], "ccc": [3.0]}
    assert "dddd" not in through  # a later step's texts are not found before their step
    await ahead.close()


async def test_a_failed_chunk_fails_it_and_every_later_one() -> None:
    embedder = RecordingEmbedder(fail_on="bad")
    ahead = EmbeddingsAhead(embedder, [["ok"], ["bad"], ["later"], ["never"]])
    assert await ahead.vectors(0) == {"ok": [2.0]}
    for step in (1, 2, 3):
        with pytest.raises(RuntimeError, match="cannot embed bad"):
            await ahead.vectors(step)
    assert ["never"] not in embedder.calls  # at most one chunk past the failed one was sent
    await ahead.close()


async def test_close_stops_what_no_step_will_read(caplog: pytest.LogCaptureFixture) -> None:
    embedder = RecordingEmbedder(fail_on="bad")
    ahead = EmbeddingsAhead(embedder, [["ok"], ["bad"], ["later"], ["never"]])
    await ahead.vectors(0)
    await ahead.close()  # step 1 failed unread and step 3 never ran: neither may complain
    del ahead
    gc.collect()  # asyncio reports an unread error when its future is collected
    assert ["never"] not in embedder.calls
    assert "never retrieved" not in caplog.text


async def test_close_cancels_a_chunk_still_being_embedded() -> None:
    release = asyncio.Event()
    embedder = StuckEmbedder(release)
    ahead = EmbeddingsAhead(embedder, [["a"], ["b"], ["c"]])
    for _ in range(3):
        await asyncio.sleep(0)
    assert embedder.calls == [["a"], ["b"]]
    await ahead.close()
    release.set()
    await asyncio.sleep(0)
    assert embedder.calls == [["a"], ["b"]]  # the third chunk was never started
    for step in (0, 1, 2):
        with pytest.raises(asyncio.CancelledError):
            await ahead.vectors(step)


async def test_texts_a_step_also_needs_are_embedded_at_once_and_found_through_it() -> None:
    release = asyncio.Event()

    class HeldEmbedder(RecordingEmbedder):
        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            if "held over" not in texts:  # the chunks wait; the held-over text does not
                await release.wait()
            return await super().embed(texts)

    embedder = HeldEmbedder()
    ahead = EmbeddingsAhead(embedder, [["a", "bb"], ["ccc"]])
    await asyncio.sleep(0)
    # Step 1's L1s cite "held over" (from an earlier batch) and "a" (from step 0).
    ahead.also(1, ["held over", "a", "ccc", "held over"])
    for _ in range(5):
        await asyncio.sleep(0)  # let the tasks run as far as they can (no wall-clock wait)
    assert ["held over"] in embedder.calls  # sent while the chunks are still embedding
    assert not release.is_set() and embedder.running == 0  # ... and already back
    release.set()
    async with asyncio.timeout(5):
        through = await ahead.through(1)
    assert dict(through) == {"a": [1.0], "bb": [2.0], "ccc": [3.0], "held over": [9.0]}
    assert sum(call.count("held over") for call in embedder.calls) == 1
    await ahead.close()


async def test_a_step_may_ask_for_more_texts_twice_and_each_is_embedded_once() -> None:
    # Each user's work asks for its L1s' texts (the frames read them), then the step for all.
    embedder = RecordingEmbedder()
    ahead = EmbeddingsAhead(embedder, [["a"]])
    ahead.also(0, ["first user's", "a"])
    ahead.also(0, ["second user's", "first user's"])
    async with asyncio.timeout(5):
        through = await ahead.through(0)
    assert set(through) == {"a", "first user's", "second user's"}
    texts = [text for call in embedder.calls for text in call]
    assert sorted(texts) == ["a", "first user's", "second user's"]
    await ahead.close()


async def test_close_cancels_texts_a_step_also_needed() -> None:
    ahead = EmbeddingsAhead(StuckEmbedder(asyncio.Event()), [["a"]])
    ahead.also(0, ["held over"])
    await asyncio.sleep(0)
    await ahead.close()
    with pytest.raises(asyncio.CancelledError):
        await ahead.through(0)


@given(st.integers(min_value=0, max_value=20_000), st.integers(min_value=1, max_value=4096))
def test_a_batch_goes_in_steps_of_at_most_step_size_that_shrink_at_its_end(
    count: int, step_size: int
) -> None:
    sizes = step_sizes(count, step_size)
    assert sum(sizes) == count
    assert all(0 < n <= step_size for n in sizes)
    after_the_first = sizes[1:]
    assert after_the_first == sorted(after_the_first, reverse=True)
    if len(sizes) > 1:
        assert sizes[-1] == min(LAST_STEP, step_size)


@given(st.integers(min_value=0, max_value=20_000), st.integers(min_value=1, max_value=4096))
def test_with_the_int8_model_the_two_steps_behind_a_step_hold_at_least_half_as_many_records(
    count: int, step_size: int
) -> None:
    # While a step is stored, the model embeds the two behind it; with the int8 model,
    # storing takes the event loop about half the time the model takes over as many
    # messages, so with fewer behind it the model waits. (The first step is stored while
    # the largest are embedded.)
    sizes = step_sizes(count, step_size, step_growth("local", "onnx-int8"))
    assert sum(sizes) == count
    for k in range(1, len(sizes) - 1):
        assert sizes[k] <= 2 * sum(sizes[k + 1 : k + 3])


def test_only_the_int8_model_has_its_last_steps_grow_by_two() -> None:
    assert step_growth("local", "onnx-int8") == FAST_MODEL_STEP_GROWTH == 2
    # Torch's model lost speed over the smaller calls; the others keep three.
    assert step_growth("local", "torch") == 3
    assert step_growth("local", "onnx-fp32") == 3
    assert step_growth("openai", "onnx-int8") == 3


def test_a_large_batch_ends_with_a_small_step() -> None:
    # Steps of 1,024 ended this batch with 730 records to store after the model was done.
    assert step_sizes(2778, 1024) == [218, 1024, 1024, 384, 128]
    # With the int8 model, steps of 384 and 128 left it waiting while the 384 were stored.
    assert step_sizes(2778, 1024, 2) == [858, 1024, 512, 256, 128]
    assert step_sizes(629, 1024, 2) == [245, 256, 128]
    assert step_sizes(100, 1024) == [100]  # a batch no larger than the last step: one
    assert step_sizes(6, 3) == [3, 3]
