"""The wrappers around a write-path handler, assembled here and nowhere else.

The Faust agents call a `RecordHandler` per batch. Between the agent and the handler
(`Segmenter.handle_batch`, `Consolidator.handle_records`) sit small wrappers, each a
function from a handler to a handler with the same call signature, composed in this fixed
order, outermost first:

1. `when_ready` (readiness): the Faust app starts, and joins its consumer group, before the
   process has connected to its stores; a batch that comes first waits for the handlers.
2. `holding_background_off` (turns only, when the segmenter shares its embedder with the
   consolidator): the online path embeds ahead of consolidation while a batch of turns runs.
3. `traced_batches` (`edges.tracing`): what the batch wrote as events of the batch span
   that the Faust edge opened; not put in place when tracing is off.
4. `instrumented_segmenter` / `instrumented_consolidator` (`edges.instrumentation`): the
   metrics of each batch, its duration and its failures.

Readiness is outermost because nothing inside it exists before the handlers do; the
hold-off wraps the whole handler, so background embedding stays off during the batch's
reduce and store steps as well as its embed calls (`PriorityEmbedder.online`). The batch
span itself is opened by the Faust edge around the decoding and the handler
(`edges.faust.app`), not here. `segmenter_chain` and `consolidator_chain` build 2-4 once
the handlers exist; the composition root puts `when_ready` around them when it builds the
Faust app from settings alone (`bootstrap.write_path_app`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from memstream.consolidator.handler import Consolidator
from memstream.contracts.records import Consumed, RawEvent
from memstream.edges.faust.app import DeadLetter, Opening, RecordHandler
from memstream.edges.faust.decoding import Rejected
from memstream.edges.faust.overflow import Places
from memstream.edges.instrumentation import (
    BatchHandling,
    InstrumentedConsolidator,
    InstrumentedSegmenter,
)
from memstream.edges.tracing import traced_batches
from memstream.metrics import Metrics

# Holds the background embedder off while it is open (`PriorityEmbedder.online`).
OnlineWindow = Callable[[], AbstractAsyncContextManager[object]]


@dataclass(frozen=True)
class WritePathHandlers:
    """Where the Faust app hands its records: the handlers of a connected container."""

    on_turns: RecordHandler | None
    on_windows: RecordHandler | None
    dead_letter: DeadLetter
    open_turns: Opening | None = None  # the turns sealed by their producers
    # The turns topic's opening when it differs from the overflow's: with a tenant share,
    # the split before decoding (`FairShare.opening`), then `open_turns`.
    open_main_turns: Opening | None = None
    # With a tenant share (`segmenter.fair_share`): the overflow topic's batches, its dead
    # letters (which also strike the record off its user's overflow ledger), and what strikes
    # off a batch's places once it is done (records the opening dropped included).
    on_overflow: RecordHandler | None = None
    overflow_dead_letter: DeadLetter | None = None
    overflow_struck_off: Callable[[Places], Awaitable[None]] | None = None


def segmenter_chain(
    segmenter: BatchHandling,
    metrics: Metrics,
    *,
    online: OnlineWindow | None = None,
    stage: str = "segmenter",
) -> RecordHandler:
    """The segmenter's batches (or those of its overflow, `stage`), instrumented, traced,
    and with `online` (when the embedder is shared) open around each."""
    handle = instrumented_segmenter(segmenter, metrics)
    handle = traced_batches(stage, handle)
    if online is not None:
        handle = holding_background_off(online, handle)
    return handle


def consolidator_chain(consolidator: Consolidator, metrics: Metrics) -> RecordHandler:
    """The consolidator's batches, instrumented and traced."""
    handle = instrumented_consolidator(consolidator, metrics)
    return traced_batches("consolidator", handle)


def instrumented_segmenter(segmenter: BatchHandling, metrics: Metrics) -> RecordHandler:
    return InstrumentedSegmenter(segmenter, metrics).handle_batch


def instrumented_consolidator(consolidator: Consolidator, metrics: Metrics) -> RecordHandler:
    return InstrumentedConsolidator(consolidator, metrics).handle_records


def holding_background_off(online: OnlineWindow, handle: RecordHandler) -> RecordHandler:
    """`handle` with `online` open while it runs."""

    async def handle_online(batch: list[Consumed[Any]]) -> object:
        async with online():
            return await handle(batch)

    return handle_online


def when_ready(
    handlers: Awaitable[WritePathHandlers],
    pick: Callable[[WritePathHandlers], RecordHandler | None],
    app_id: str,
) -> RecordHandler:
    """A handler that waits for `handlers`, then hands each batch to the one `pick` chooses;
    a batch for a handler that `handlers` lacks is an error of the app's wiring."""

    async def handle(batch: list[Consumed[Any]]) -> object:
        handler = pick(await handlers)
        if handler is None:
            raise RuntimeError(f"{app_id}: no handler for these records")
        return await handler(batch)

    return handle


def open_turns_when_ready(handlers: Awaitable[WritePathHandlers], *, main: bool = False) -> Opening:
    """The opener of sealed turns of `handlers`, once they exist (records pass as they are
    when `handlers` have none); with `main`, the turns topic's (`open_main_turns` first)."""

    async def open_turns(
        raws: Sequence[RawEvent],
    ) -> Sequence[RawEvent | Rejected | Consumed[Any] | None]:
        ready = await handlers
        opening = (ready.open_main_turns if main else None) or ready.open_turns
        return list(raws) if opening is None else await opening(raws)

    return open_turns


def overflow_struck_off_when_ready(
    handlers: Awaitable[WritePathHandlers],
) -> Callable[[Places], Awaitable[None]]:
    """What strikes an overflow batch's places off their users' ledgers, once it exists."""

    async def struck_off(places: Places) -> None:
        strike = (await handlers).overflow_struck_off
        if strike is not None:
            await strike(places)

    return struck_off


def dead_letter_when_ready(
    handlers: Awaitable[WritePathHandlers], *, overflow: bool = False
) -> DeadLetter:
    """The dead-letter sender of `handlers` (of their overflow, with `overflow`), once
    they exist."""

    async def dead_letter(raw: RawEvent, reason: str, field_path: str | None = None) -> None:
        ready = await handlers
        send = ready.overflow_dead_letter if overflow else None
        await (send or ready.dead_letter)(raw, reason, field_path)

    return dead_letter
