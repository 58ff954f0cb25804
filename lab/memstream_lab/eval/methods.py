"""Running each method over every question: the flat baselines and the memstream variants."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from functools import partial
from pathlib import Path

import numpy as np

from memstream.bootstrap import Container
from memstream.domain.fact_recall import fact_tokens
from memstream.domain.models import Level
from memstream.domain.tokens import count_tokens
from memstream.recall.pipeline import RecallPipeline, RecallRequest
from memstream_lab.eval.answer import ContextMemory
from memstream_lab.eval.baselines import FlatIndex, FlatMethod, dated_message
from memstream_lab.eval.context import RunContext
from memstream_lab.eval.coverage import answer_coverage
from memstream_lab.eval.dataset import EvalQuestion
from memstream_lab.eval.ingestion import Deployment
from memstream_lab.eval.mem0_peer import MEM0_TOP_K, Mem0Peer
from memstream_lab.eval.memo import CachedEmbedder, ReplayingIndex
from memstream_lab.eval.records import Record
from memstream_lab.eval.variants import Variant

# "dated": a returned message carries its date in its text and tokens (baselines.py).
FLAT_FINGERPRINT = "bm25-k1.2-b0.75-sat5-w0.9-dated"
MEM0_METHOD = f"mem0@{MEM0_TOP_K}"
MEM0_FINGERPRINT = "infer-false-minilm-threshold0"


async def run_flat(ctx: RunContext, container: Container, methods: list[FlatMethod]) -> None:
    """Every flat method over every question; a conversation with nothing left is skipped
    before its messages are embedded."""
    tasks = {m.name: ctx.task(m.name)[0] for m in methods}
    for conv in ctx.split:
        todo = {
            m.name: [q for q in conv.questions if not _done(ctx, m.name, FLAT_FINGERPRINT, q)]
            for m in methods
        }
        for method in methods:
            ctx.progress.advance(tasks[method.name], len(conv.questions) - len(todo[method.name]))
        if not any(todo.values()):
            continue
        ids, texts = conv.documents()
        vectors = np.asarray(await container.embedder.embed(texts), dtype=np.float32)
        index = FlatIndex(ids, texts, vectors)
        times = ctx.message_times[conv.sample]
        shown = [dated_message(times[i], t) for i, t in zip(ids, texts, strict=True)]
        costs = [count_tokens(t) for t in shown]
        for method in methods:
            for q in todo[method.name]:
                started = time.perf_counter()
                rows = index.search(method, q.question, ctx.vector(q.question), costs)
                latency = (time.perf_counter() - started) * 1000
                record = Record(
                    method=method.name,
                    fingerprint=FLAT_FINGERPRINT,
                    sample=q.sample,
                    index=q.index,
                    category=q.category,
                    evidence=q.evidence,
                    recalled=tuple(ids[r] for r in rows),
                    tokens=sum(costs[r] for r in rows),
                    latency_ms=round(latency, 3),
                    memories=len(rows),
                    levels={"L1": len(rows)},
                    coverage=answer_coverage(q.answer, (shown[r] for r in rows)),
                )
                # The answerer's prompt dates every memory itself (`ContextMemory.render`).
                memories = [ctx.message_memory(q.sample, ids[r], texts[r]) for r in rows]
                ctx.emit(record, q, memories)
                ctx.progress.advance(tasks[method.name])


async def run_memstream(ctx: RunContext, deployment: Deployment, variant: Variant) -> None:
    """One variant of memstream's recall pipeline over every question, one at a time."""
    task, _ = ctx.task(variant.method)
    container = deployment.container
    index = ReplayingIndex(container.index, deployment.searches)
    embedder = CachedEmbedder(container.embedder, ctx.query_vectors)
    pipeline = RecallPipeline(
        tree=container.tree,
        index=index,
        embedder=embedder,
        llm=container.llm,
        options=variant.options,
        gate=variant.gate,
        fit=variant.fit,
        # As the API builds it (`wiring.handlers.build_recall`): facts and entities read when
        # written; a variant without entities reads neither.
        knowledge=container.tree if variant.entities else None,
    )
    for conv in ctx.split:
        for q in conv.questions:
            if _done(ctx, variant.method, variant.fingerprint, q):
                ctx.progress.advance(task)
                continue
            request = RecallRequest(
                user_id=deployment.user(conv),
                query=q.question,
                query_time=conv.query_time,
                complexity=variant.complexity,
                max_tokens=variant.max_tokens,
            )
            started = time.perf_counter()
            result = await pipeline.recall(request)
            latency = (time.perf_counter() - started) * 1000 + index.take_replayed_ms()
            nodes = [m.node for m in result.memories]
            sources = (s for n in nodes if n.level is Level.SEGMENT for s in n.source_ids)
            record = Record(
                method=variant.method,
                fingerprint=variant.fingerprint,
                sample=q.sample,
                index=q.index,
                category=q.category,
                evidence=q.evidence,
                recalled=tuple(dict.fromkeys(sources)),
                # The facts returned first count in the tokens, not in the evidence.
                tokens=sum(count_tokens(n.text) for n in nodes)
                + sum(map(fact_tokens, result.facts)),
                latency_ms=round(latency, 3),
                memories=len(nodes),
                levels=dict(Counter(n.level.label for n in nodes)),
                coverage=answer_coverage(q.answer, (n.text for n in nodes)),
            )
            memories = [ContextMemory(n.level, n.t_start, n.t_end, n.text) for n in nodes]
            ctx.emit(record, q, memories)
            ctx.progress.advance(task)


def _done(ctx: RunContext, method: str, fingerprint: str, q: EvalQuestion) -> bool:
    wanted = ctx.wants_answer(method)
    return ctx.log.done(method, fingerprint, q.sample, q.index, need_answer=wanted)


async def run_mem0(ctx: RunContext, root: Path) -> list[float]:
    """mem0 (raw messages, no LLM) over every question; returns every message's add latency."""
    task, _ = ctx.task(MEM0_METHOD)
    peer = await asyncio.to_thread(Mem0Peer, root)
    try:
        added = peer.ingested()
        for conv in ctx.split:
            todo = [q for q in conv.questions if not _done(ctx, MEM0_METHOD, MEM0_FINGERPRINT, q)]
            ctx.progress.advance(task, len(conv.questions) - len(todo))
            if not todo:
                continue
            ids, texts = conv.documents()
            if conv.user_id not in added:
                adding = ctx.progress.add_task(f"mem0 add {conv.sample}", total=len(ids))
                added[conv.user_id] = await asyncio.to_thread(
                    peer.add_conversation,
                    conv.user_id,
                    list(zip(ids, texts, strict=True)),
                    partial(ctx.progress.advance, adding),
                )
            for q in todo:
                hits, latency = await asyncio.to_thread(peer.search, conv.user_id, q.question)
                record = Record(
                    method=MEM0_METHOD,
                    fingerprint=MEM0_FINGERPRINT,
                    sample=q.sample,
                    index=q.index,
                    category=q.category,
                    evidence=q.evidence,
                    recalled=tuple(h.dia_id for h in hits),
                    tokens=sum(count_tokens(h.text) for h in hits),
                    latency_ms=round(latency, 3),
                    memories=len(hits),
                    levels={"L1": len(hits)},
                    coverage=answer_coverage(q.answer, (h.text for h in hits)),
                )
                memories = [
                    ctx.message_memory(q.sample, h.dia_id, h.text)
                    for h in hits
                    if h.dia_id in ctx.message_times[q.sample]
                ]
                ctx.emit(record, q, memories)
                ctx.progress.advance(task)
    finally:
        await asyncio.to_thread(peer.close)
    return [ms for latencies in added.values() for ms in latencies]
