"""The handlers of a connected `Container`: the segmenter, the consolidator, the clock and
the recall parts, each given the container's adapters and the settings' choices.

When tracing is on, a write-path handler's port calls are wrapped here (`_HandlerPorts`),
so that the handlers import no OpenTelemetry and pay nothing when it is off.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypedDict

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.llm.prompts import FACTS_PROMPT_VERSION, PROMPT_VERSION
from memstream.consolidator.handler import Consolidator
from memstream.contracts.tenant_topics import TurnsRouting
from memstream.domain.derivation import NO_EXTRACTION, RULES_EXTRACTION, Derivation
from memstream.domain.recall_options import RecallOptions
from memstream.domain.windows import WindowRules
from memstream.edges.faust.dead_letters import DeadLetters
from memstream.edges.sealing import SealingPublisher
from memstream.edges.tracing import (
    EMBEDDER_CALLS,
    INDEX_WRITES,
    LANGUAGE_MODEL_CALLS,
    PUBLISHER_CALLS,
    TREE_WRITES,
    phase,
    traced_port,
)
from memstream.edges.tracing import enabled as tracing_enabled
from memstream.ports import Embedder, LanguageModel, Publisher, TreeStore, VectorIndex
from memstream.recall.knowledge import KnowledgeService
from memstream.recall.opening import EnvelopeOpener
from memstream.recall.pipeline import RecallPipeline
from memstream.recall.service import MemoryService
from memstream.recall.turn_keys import TurnKeys
from memstream.recall.users import UserSearch
from memstream.recall.writes import WriteWaiter
from memstream.repair.jobs import RepairJobs
from memstream.scheduler.clock import ClockTicker, build_scheduler
from memstream.scheduler.rebuilds import RebuildPacer, pace
from memstream.segmenter.embed_ahead import step_growth
from memstream.segmenter.fair_share import FairShare
from memstream.segmenter.handler import Segmenter, Topics
from memstream.settings import Settings
from memstream.wiring.container import Container
from memstream.wiring.frames import framed_embedding
from memstream.wiring.repair import build_repair, divergence_watch

if TYPE_CHECKING:
    from memstream.edges.http.api import RecallParts


# The model's tasks that write memories (plan and gate only read them).
_WRITING_TASKS = ("segment", "facts", "consolidate")


def derivation(settings: Settings) -> Derivation:
    """What this deployment derives memories with, as every node records it. One for every
    level: with the model doing only some writing tasks, the prompt version names them, so a
    change of tasks is a change of derivation that a rebuild carries to every node."""
    writing = [task for task in _WRITING_TASKS if settings.llm.does(task)]
    prompts = settings.llm.prompt_version or PROMPT_VERSION
    if writing and len(writing) < len(_WRITING_TASKS):
        prompts = f"{prompts}+{'+'.join(writing)}"
    return Derivation(
        backend="openai" if writing else "offline",
        model=settings.llm.model if writing else "rules",
        prompt_version=prompts,
        embedder=embedder_id(settings),
        extraction=extraction_id(settings),
    )


def extraction_id(settings: Settings) -> str:
    """Names what reads the L1s' facts: a change means a rebuild re-derives them."""
    if not settings.lifecycle.knowledge:
        return NO_EXTRACTION
    return FACTS_PROMPT_VERSION if settings.llm.does("facts") else RULES_EXTRACTION


def embedder_id(settings: Settings) -> str:
    """Names what makes the dense vectors, with their size: a change means new vectors."""
    dim = settings.embedding.dim
    if settings.embedding.backend == "hashing":
        return f"hashing:{dim}"
    if settings.embedding.backend == "openai":
        return f"openai:{settings.embedding.model}:{dim}"
    return f"local:all-MiniLM-L6-v2:{settings.embedding.runtime}:{dim}"


def window_rules(settings: Settings) -> WindowRules:
    return WindowRules(
        segment_messages=settings.lifecycle.segment_messages,
        segment_by_exchange=settings.lifecycle.segment_by == "exchange",
        session_idle=timedelta(seconds=settings.lifecycle.session_idle_timeout_s),
        session_gap=(
            None
            if settings.lifecycle.session_reuse_gap_s is None
            else timedelta(seconds=settings.lifecycle.session_reuse_gap_s)
        ),
        clock_grace=timedelta(seconds=settings.lifecycle.clock_grace_s),
        default_tz=settings.lifecycle.default_tz,
        reorder_turns=settings.lifecycle.session_reorder_turns,
    )


def dead_letters(c: Container) -> DeadLetters:
    return DeadLetters(c.publisher, c.catalog.dlq.name)


def turns_routing(c: Container) -> TurnsRouting:
    """Which turns topic each user's records go to (`contracts.tenant_topics`)."""
    return c.settings.broker.turns_routing(c.catalog.turns.name)


def build_fair_share(c: Container, segmenter: Segmenter) -> FairShare | None:
    """The segmenter behind its tenants' shares, None with no share set (the default) or
    with a turns topic per tenant (there the topics of tenants over their share are paused
    instead, `edges.faust.topic_pauses`)."""
    share = c.settings.overflow_share
    if share is None:
        return None
    # The overflow's records are places in the turns log (`contracts.turns_places`), no
    # words: sent past the sealing publisher, which seals the events that carry them.
    kafka = c.publisher.inner if isinstance(c.publisher, SealingPublisher) else c.publisher
    if not isinstance(kafka, KafkaPublisher):
        raise TypeError("a tenant share forwards records: it needs the Kafka publisher")
    # The overflow uses the same segmenter and the online embedder: its priority is when it
    # runs (`edges.faust.spare`). In the background embedder's turn (after 0.5 s without an
    # online call) it never ran under a steady flood, and its consumer left its group.
    return FairShare(
        segmenter,
        ledger=c.tree,
        queues=c.tree,
        forwarder=kafka,
        overflow_topic=c.catalog.overflow.name,
        overflow_partitions=c.catalog.overflow.partitions,
        share=share,
        behind_s=c.settings.fair_share.tenant_share_lag_s,
    )


@dataclass(frozen=True)
class _HandlerPorts:
    """The ports a write-path handler is given: each call in a span of its own when tracing
    is on (the handler's batch span is their parent), the container's own ones when off."""

    tree: TreeStore
    index: VectorIndex
    embedder: Embedder
    llm: LanguageModel
    publisher: Publisher

    @classmethod
    def of(cls, c: Container, embedder: Embedder, traced: bool = True) -> _HandlerPorts:
        if not (traced and tracing_enabled()):
            return cls(c.tree, c.index, embedder, c.llm, c.publisher)
        return cls(
            traced_port(c.tree, TREE_WRITES),
            traced_port(c.index, INDEX_WRITES),
            traced_port(embedder, EMBEDDER_CALLS),
            traced_port(c.llm, LANGUAGE_MODEL_CALLS),
            traced_port(c.publisher, PUBLISHER_CALLS),
        )


def _chosen(c: Container, override: Derivation | None) -> Derivation:
    return derivation(c.settings) if override is None else override


def build_segmenter(
    c: Container,
    *,
    embedder: Embedder | None = None,
    derivation: Derivation | None = None,
    rebuild_chunk_leaves: int | None = None,
    bare: bool = False,
) -> Segmenter:
    """The deployment's segmenter; a benchmark probe names its own embedder, derivation and
    rebuild chunk. `bare`: the handler's work alone, as a probe times it: no tracing, the
    handler's own step size and wall clock, no listener told of its progress marks."""
    ports = _HandlerPorts.of(c, embedder or c.online_embedder, traced=not bare)
    messages_embedder, frames = framed_embedding(c, ports.embedder, named=embedder is not None)
    lifecycle = c.settings.lifecycle
    return Segmenter(
        tree=ports.tree,
        index=ports.index,
        embedder=messages_embedder,
        llm=ports.llm,
        publisher=ports.publisher,
        topics=Topics(memories=c.catalog.memories.name, windows=c.catalog.windows.name),
        forget=c.forget_user,
        rules=window_rules(c.settings),
        # The newest L1s are context for a model writing an L1; the offline writer renders
        # the messages without them, so then they are not read (a store round trip a user a
        # step).
        history_window=lifecycle.history_window if c.settings.llm.does("segment") else 0,
        **_pacing(c, bare),
        retention=timedelta(days=lifecycle.retention_days) if lifecycle.retention_days else None,
        derivation=_chosen(c, derivation),
        rebuild_chunk_leaves=c.settings.rebuild.chunk_leaves
        if rebuild_chunk_leaves is None
        else rebuild_chunk_leaves,
        knowledge=lifecycle.knowledge,
        # A model that reads facts reads an L1's itself; otherwise the segmenter applies the
        # rules.
        facts=ports.llm if c.settings.llm.does("facts") else None,
        frames=frames,
        on_progress=None if bare else c.progress_marked,
        # With a topic per tenant, a tenant's topic's records are marked under its name.
        shared_topic=c.catalog.turns.name if turns_routing(c).on else None,
    )


class _Pacing(TypedDict, total=False):
    step_size: int
    step_growth: int
    phase: Callable[[str], AbstractContextManager[object]] | None
    clock: Callable[[], datetime]


def _pacing(c: Container, bare: bool) -> _Pacing:
    """The segmenter's step size (and how its last steps grow, for the embedder), tracing
    phase and clock as the deployment sets them; bare, the handler's own."""
    if bare:
        return _Pacing()
    embedding = c.settings.embedding
    return _Pacing(
        step_size=c.settings.worker.consume_step_size,
        step_growth=step_growth(embedding.backend, embedding.runtime),
        phase=phase if tracing_enabled() else None,
        clock=c.clock,
    )


def build_consolidator(
    c: Container,
    *,
    embedder: Embedder | None = None,
    derivation: Derivation | None = None,
    bare: bool = False,
) -> Consolidator:
    """The deployment's consolidator; a probe names its embedder and derivation, and with
    `bare` gets no tracing."""
    ports = _HandlerPorts.of(c, embedder or c.background_embedder, traced=not bare)
    return Consolidator(
        tree=ports.tree,
        index=ports.index,
        embedder=ports.embedder,
        llm=ports.llm,
        publisher=ports.publisher,
        memories_topic=c.catalog.memories.name,
        history_window=c.settings.lifecycle.history_window,
        derivation=_chosen(c, derivation),
        knowledge=ports.tree if c.settings.lifecycle.knowledge else None,
    )


def build_clock(c: Container) -> AsyncIOScheduler:
    """The wall clock: closes windows of users who went quiet, retries degraded nodes."""
    ticker = ClockTicker(
        tree=c.tree,
        publisher=c.publisher,
        turns_topic=turns_routing(c).topic_for,
        windows_topic=c.catalog.windows.name,
        retry_degraded=c.settings.llm.does("consolidate"),
        clock=c.clock,
    )
    paced = pace(c.settings.rebuild.leaves_per_s, c.settings.rebuild.chunk_leaves)
    pacer = RebuildPacer(
        tree=c.tree,
        publisher=c.publisher,
        turns_topic=turns_routing(c).topic_for,
        users_per_run=paced.users_per_run,
    )
    return build_scheduler(ticker, c.settings.lifecycle.clock_interval_s, pacer, paced.period_s)


def recall_options(settings: Settings) -> RecallOptions:
    """Recall's options for this deployment. Above the default ceiling the offline gate is
    not asked (`RecallOptions.ceiling_gate`: it only ordered what the fit took, by shared
    words); a model's gate judges what a question means, and was not measured there, so
    with an LLM it is still asked."""
    options = settings.recall.options()
    if settings.llm.does("gate"):
        return replace(options, ceiling_gate=True)
    return options


def build_recall(c: Container, audit_failed: Callable[[], None] | None = None) -> RecallParts:
    """The API's parts; `audit_failed` is told of every audit record not published."""
    from memstream.edges.http.api import RecallParts
    from memstream.edges.http.audit import AuditTrail

    # With tenant shares on, a receipt's record may wait in the overflow topic; with a turns
    # topic per tenant, a receipt names a record of its user's topic.
    writes = WriteWaiter(
        c.tree,
        overflow=c.tree if c.settings.overflow_share is not None else None,
        marked_topic=turns_routing(c).marked_topic,
    )
    c.progress_listeners.append(writes.progressed)
    return RecallParts(
        pipeline=RecallPipeline(
            tree=c.tree,
            index=c.index,
            # Recall is on an agent's critical path: ahead of consolidation's batches.
            embedder=c.online_embedder,
            llm=c.llm,
            options=recall_options(c.settings),
            knowledge=c.tree if c.settings.lifecycle.knowledge else None,
        ),
        service=MemoryService(
            tree=c.tree,
            forget_user=c.forget_user,
            publisher=c.publisher,
            turns_topic=turns_routing(c).topic_for,
        ),
        checks={
            "redis": c.tree.ping,
            "qdrant": c.index.ping,
            # False while one store is empty beside the other: recall would answer empty.
            "stores_agree": divergence_watch(c, sample_users=1).stores_agree,
        },
        writes=writes,
        users=UserSearch(c.tree),
        knowledge=(
            KnowledgeService(knowledge=c.tree, tree=c.tree)
            if c.settings.lifecycle.knowledge
            else None
        ),
        repairs=RepairJobs(build_repair(c), c.tree, c.index),
        audit=AuditTrail(c.publisher, c.catalog.audit.name, on_failure=audit_failed),
        opener=EnvelopeOpener(c.tree),
        turn_keys=TurnKeys(c.tree),
    )
