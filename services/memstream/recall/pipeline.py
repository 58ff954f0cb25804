"""The recall pipeline (TiMem section 3.3): plan, activate leaves, climb, gate, order, fit.

    pipeline = RecallPipeline(tree=tree, index=index, embedder=embedder, llm=llm,
                              options=settings.recall.options())
    result = await pipeline.recall(RecallRequest(user_id="u1", query="Where did I hike?"))

Decisions worth knowing:
- The planner runs concurrently with leaf activation, so the lexical channel cannot use
  the planner's keywords: it uses the query's own content terms (the offline planner's
  keywords are exactly those). Planner keywords are returned and given to the gate.
- A caller who forces the complexity skips the LLM planner; keywords then come from the
  offline heuristic (`domain/query_heuristics.py`), which costs microseconds.
- Leaves are fetched deeper than needed and re-ranked (speaker, time, and the terms of the
  session summary above each, read with one HMGET; `domain/rerank.py`).
- `max_tokens` (`default_max_tokens` when a request names none) is a ceiling: a question
  after one fact spends `focused_share` of it, one that gathers facts spends all of it;
  summaries may take `summary_share` of it, and leave out the facts of the leaves returned
  beside them (`domain/summary_trim.py`). A ceiling above the default is spent by every
  question: the counts tuned at the default (leaves searched and kept, each level's
  memories, the entity join) grow in proportion to it and the candidates searched faster
  (`RecallOptions.at_ceiling`), and the gate is not asked: the fit takes the candidates in
  score order (`RecallOptions.ceiling_gate`). For a question gathering facts at or below
  the default ceiling (`RecallOptions.gate_fill`), what the gate left out fills what the
  memories it kept leave, after them.
- The terms of the session summaries above the leaf pool are read in one HMGET (for the
  re-rank: `NodeReader.session_terms`, kept beside the nodes); the ancestors of the leaves
  kept, by following `parent_id` upwards, in one MGET when the store has seen them before
  (`get_with_ancestors`), else one MGET per level. An
  ancestor's score is derived from the recalled leaves below it (see `RecallOptions`).
- When no recalled path reaches a profile (L5), the user's latest profile stands in, with
  score 0: it is the first memory dropped when the token budget is short.
- The gate removes memories, or, where they fill the budget, fits them after those it kept,
  never in their place. Where what it kept is stale at the asked time, the candidate leaf
  a returned fact was read from goes on beside it (`domain/fact_evidence.py`): the slot
  matched the fact, not the words. When it cannot decide (LLM failure) the ungated set is
  returned and `degraded` is set; a failed planner also sets `degraded`.
- With knowledge on, the facts a question asks about are read beside the leaves
  (`recall/facts.py`): they come first, count in the token budget (their sentence and
  dates, at most `fact_recall.FACT_SHARE` of it), and every memory returned carries its
  validity on the asked slots; for a question about a state, a memory stale at the asked
  time never outranks one that holds then (`domain/memory_validity.py`).
- After the fit, with or without knowledge, the memories may tell a change no fact dates
  (`domain/told_changes.py`): about now, what was said before the newest telling of a
  change of the person asked about holds until it; about before, the change is read from
  the facts or the first session naming what followed it, and the leaves said just before
  it join in place of the weakest said after it; there, what ended by the change keeps its
  place (only what began after it goes last), and with no fact version closed, the versions
  told before the change the memories date are the answer (`fact_recall.held_before_change`).
- With the knowledge write on, the user's entity index is read beside the leaf search; the
  leaves of the entities the query names that the search missed join the pool (one more
  MGET), and the re-rank reads which entities each leaf names (docs/knowledge.md,
  "Entities in recall"). A question gathering facts searches a wider pool.
- With `explain`, a `TraceRecorder` (`recall/trace.py`) gathers a `RecallTrace`; off, each
  of its hooks costs one None check.
- The query is parsed once, on arrival (`domain/query.py`); every stage reads the parsed
  `Query`. The gate and the fit are functions passed in (`recall/stages.py`), so an
  evaluation replaces a stage rather than switching one off.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memstream.domain.ended_values import closed_by_ended_values
from memstream.domain.entity_index import EntityIndex
from memstream.domain.excerpt import omitted_leaves, shorten_leaves
from memstream.domain.fact_evidence import with_fact_evidence
from memstream.domain.fact_recall import asked_instant, fit_facts, held_before_change
from memstream.domain.facts import AtomicFact
from memstream.domain.memory_validity import (
    before_change,
    begun_after_last,
    order_before,
    stale_below_holding,
    stale_last,
    with_validity,
)
from memstream.domain.models import (
    REQUESTED_COMPLEXITIES,
    Complexity,
    Level,
    MemoryNode,
    Plan,
    RequestedComplexity,
)
from memstream.domain.newest_statement import asked_subjects, with_newest_statement
from memstream.domain.query import Query, parse_query
from memstream.domain.query_heuristics import plan_query
from memstream.domain.ranking import (
    RecalledMemory,
    Support,
    order,
    order_as_of,
    parent_support,
    prune,
)
from memstream.domain.recall_options import RecallOptions
from memstream.domain.rerank import rerank
from memstream.domain.sparse import query_vector
from memstream.domain.told_changes import (
    SAID_BEFORE,
    asked_names,
    before_instant,
    closed_by_told_change,
    first_named,
    said_by_named,
    said_just_before,
    telling_leaves,
)
from memstream.ports import Embedder, LanguageModel, NodeReader, VectorIndex
from memstream.ports.knowledge import KnowledgeReads
from memstream.recall.entities import join_entity_leaves
from memstream.recall.facts import AskedKnowledge, read_asked_knowledge
from memstream.recall.stages import Fit, Gate, fit_in_place_of_leaves, gate_by_model
from memstream.recall.stopwatch import Stopwatch
from memstream.recall.trace import RecallTrace, TraceRecorder

__all__ = ["RecallPipeline", "RecallRequest", "RecallResult"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecallRequest:
    user_id: str
    query: str
    query_time: datetime | None = None
    complexity: RequestedComplexity = "auto"
    max_tokens: int | None = None
    explain: bool = False  # give the result a `RecallTrace`

    def __post_init__(self) -> None:
        if self.complexity not in REQUESTED_COMPLEXITIES:
            raise ValueError(f"complexity must be one of {REQUESTED_COMPLEXITIES}")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ValueError("max_tokens must be >= 0")


@dataclass(frozen=True)
class RecallResult:
    complexity: Complexity
    keywords: tuple[str, ...]
    memories: list[RecalledMemory]
    tokens: int
    timings_ms: dict[str, float]
    degraded: bool
    # The fact versions the query asks about (knowledge on), the one true at the asked time
    # first, or for a "before" question what it replaced (`domain.fact_recall`); each
    # carries its own validity.
    facts: list[AtomicFact] = field(default_factory=list)
    omitted_for_budget: int = 0  # leaves the gate kept that the token budget left out
    trace: RecallTrace | None = None  # with `RecallRequest.explain`


class RecallPipeline:
    """Stateless: safe to share between concurrent requests."""

    def __init__(
        self,
        *,
        tree: NodeReader,
        index: VectorIndex,
        embedder: Embedder,
        llm: LanguageModel,
        options: RecallOptions,
        gate: Gate = gate_by_model,
        fit: Fit = fit_in_place_of_leaves,
        knowledge: KnowledgeReads | None = None,
    ) -> None:
        self._tree = tree
        self._index = index
        self._embedder = embedder
        self._llm = llm
        self.options = options
        self._gate = gate
        self._fit = fit
        # Facts and entities, read when the knowledge write is on; None: recall without them.
        self._knowledge = knowledge

    async def recall(self, request: RecallRequest) -> RecallResult:
        clock = Stopwatch()
        trace = TraceRecorder() if request.explain else None
        started = time.perf_counter()
        when = request.query_time or datetime.now(UTC)
        query = parse_query(request.query, when)
        max_tokens = (
            request.max_tokens
            if request.max_tokens is not None
            else self.options.default_max_tokens
        )
        options = self.options.at_ceiling(max_tokens)
        # Read once, by the heatmap and the facts stage both.
        index = self._read_entity_index(request.user_id, clock)
        planning = asyncio.ensure_future(clock.time("plan", self._plan(request, query)))
        activating = asyncio.ensure_future(
            clock.time("leaves", self._activate(request, query, options, index, clock, trace))
        )
        knowing = asyncio.ensure_future(self._facts(request, query, when, index, clock))
        try:
            plan, (leaves, parents), asked = await asyncio.gather(planning, activating, knowing)
        except BaseException:
            # A failed store makes the plan useless (and vice versa): stop the siblings, and
            # let the original exception through (a TaskGroup would wrap it in a group).
            for sibling in (planning, activating, knowing, index):
                if sibling is not None:
                    sibling.cancel()
            raise
        complexity = plan.complexity
        budgets = options.levels(complexity, query.aggregative)
        climbing = self._climb(request.user_id, leaves, budgets, parents, trace)
        candidates = await clock.time("ancestors", climbing)
        if not options.gates(max_tokens):
            # Above the default ceiling the gate would only order what the fit takes, and
            # the re-rank's order keeps more evidence (`RecallOptions.ceiling_gate`).
            kept, gate_failed = candidates, False
        else:
            gating = self._gate(self._llm, query, complexity, candidates)
            kept, gate_failed = await clock.time("gate", gating)
        instant = asked_instant(query, when)
        before = query.state == "before" and bool(asked.versions)
        if before:
            # What held before a change is read at the instant before it: the versions it
            # replaced hold then, and the one holding now is not yet true.
            instant = before_change(asked.versions, query.term_set, when) or instant
        if asked.versions:  # a state question whose slots have versions
            evidenced = with_fact_evidence(kept, candidates, asked.facts, asked.versions, instant)
            kept = stale_below_holding(with_validity(evidenced, asked.versions), instant)
        if trace is not None:
            trace.gate(candidates, kept, gate_failed)
        order_start = time.perf_counter()
        budget = options.token_budget(max_tokens, query.aggregative)
        facts, fact_tokens = fit_facts(asked.facts, budget)
        excerpts = options.excerpts(query.aggregative)
        if excerpts is not None:
            cap, whole = excerpts
            kept = shorten_leaves(kept, query.term_set, cap, whole, budget - fact_tokens)
        fitted, tokens = self._fit(query, kept, budget - fact_tokens, options.summary_share)
        if options.fills_after_gate(max_tokens, query.aggregative):
            # What the gate left out fills what the memories it kept leave of the budget,
            # best first, after them.
            passed = {m.node.id for m in kept}
            left_out = [m for m in candidates if m.node.id not in passed]
            room = budget - fact_tokens - tokens
            if left_out and room > 0:
                more, added = self._fit(query, left_out, room, options.summary_share)
                fitted, tokens = fitted + more, tokens + added
        names = asked_names(query)
        if query.state == "now" and not facts:
            # No fact answers it: the newest of the statements the search found most like
            # the question may tell what holds now in words the gate did not keep, and
            # closes the older of them it restates.
            room = budget - fact_tokens - tokens
            subjects = asked_subjects(query)
            fitted, added = with_newest_statement(fitted, candidates, subjects, instant, room)
            tokens += added
        if query.state == "before":
            # Read again with what the fit kept: the memories may name or tell the change
            # where no fact version does.
            told = before_instant(query, asked.versions, fitted, names, when)
            before, instant = told is not None, told or instant
            named = first_named(query, fitted)
            if named is not None and not facts and asked.versions:
                # No version was closed, but the memories date the change the question
                # names: what held just before it is the answer, if it fits the room left.
                held, held_tokens = fit_facts(
                    held_before_change(query, asked.versions, named), budget
                )
                if held_tokens <= budget - tokens:
                    facts, fact_tokens = held, held_tokens
        if before:
            # What the change replaced was said just before it, often in words the question
            # does not share ("before her cat": the hamster's name): those leaves come in.
            earlier = self._tree.recent(request.user_id, Level.SEGMENT, 2 * SAID_BEFORE, instant)
            room = budget - fact_tokens - tokens
            fitted, added = said_just_before(fitted, await earlier, instant, room)
            tokens += added
        # A question about a past time (`asked_instant` moved the instant into it), read up
        # to the end of the time it names.
        until = min(query.time_range.end, when) if query.time_range is not None else when
        past = not before and instant < when
        if past:
            # What held then was last said by then, often in words the question does not
            # share ("in March" finds the climbing leaves; pottery was said in January):
            # the leaves said just before its end join in the room the fit left, taking
            # nothing's place (most such questions ask for events, not states), and only
            # what the person asked about said: another's lines name other people's values.
            reading = self._tree.recent(request.user_id, Level.SEGMENT, 2 * SAID_BEFORE, until)
            theirs = [n for n in await reading if said_by_named(n, names)]
            room = budget - fact_tokens - tokens
            fitted, added = said_just_before(fitted, theirs, until, room, displace=False)
            tokens += added
        if before:
            memories = order_before(fitted, instant)
        elif past:
            memories = order_as_of(fitted, instant, until)
        else:
            memories = order(fitted, when)
        if asked.versions:
            # Again after the fit: a trimmed summary states only the facts it kept. What was
            # said before a change is closed by it, here only: the slots asked are matched by
            # words, and may not be what a memory is about, so it changes no memory's place
            # in the fit.
            memories = with_validity(memories, asked.versions, said_before=True)
        if query.state == "now":
            # What no fact dates may still have been replaced by a change told in words;
            # after the fit for the same reason.
            memories = closed_by_told_change(memories, names, instant)
            # What such a change says ended ("nobody calls him Biscuit anymore") closes
            # what named it before, even where a fact the memory states still holds.
            telling = telling_leaves(memories, names, instant)
            memories = closed_by_ended_values(
                memories, telling, asked.versions, query.term_set, instant
            )
        if before:
            # What ended by the change is the answer to a question about before it: only
            # what began after it goes last.
            memories = begun_after_last(memories, instant)
        elif asked.versions or query.state == "now":
            memories = stale_last(memories, instant)
        clock.timings["order"] = round((time.perf_counter() - order_start) * 1000, 3)
        clock.timings["total"] = round((time.perf_counter() - started) * 1000, 3)
        explained = None
        if trace is not None:
            trace.fitted(memories, facts, tokens + fact_tokens, max_tokens, budget - fact_tokens)
            explained = await trace.finish(query, plan, budgets, request.query_time, clock.timings)
        return RecallResult(
            complexity=complexity,
            keywords=plan.keywords,
            memories=memories,
            tokens=tokens + fact_tokens,
            timings_ms=clock.timings,
            degraded=plan.degraded or gate_failed,
            facts=facts,
            omitted_for_budget=omitted_leaves(kept, fitted),
            trace=explained,
        )

    # --- stages ----------------------------------------------------------------------------

    async def _plan(self, request: RecallRequest, query: Query) -> Plan:
        if request.complexity != "auto":
            return Plan(complexity=request.complexity, keywords=query.keywords)
        try:
            return await self._llm.plan(query)
        except Exception:
            # A bare LLM (no fallback wrapper) may raise; recall still answers.
            log.warning("recall planner failed; using the offline heuristic", exc_info=True)
            return dataclasses.replace(plan_query(query), degraded=True)

    async def _facts(
        self,
        request: RecallRequest,
        query: Query,
        when: datetime,
        index: asyncio.Future[EntityIndex] | None,
        clock: Stopwatch,
    ) -> AskedKnowledge:
        """The facts the query asks about (none with knowledge off)."""
        if self._knowledge is None:
            return AskedKnowledge()
        reading = read_asked_knowledge(self._knowledge, request.user_id, query, when, index)
        return await clock.time("facts", reading)

    async def _activate(
        self,
        request: RecallRequest,
        query: Query,
        options: RecallOptions,
        entity_index: asyncio.Future[EntityIndex] | None,
        clock: Stopwatch,
        trace: TraceRecorder | None,
    ) -> tuple[list[RecalledMemory], dict[str, MemoryNode]]:
        """The best L1 memories of the user: fused dense + lexical score, then re-ranked; and
        the summaries read for that, with their ancestors (the climb starts from them)."""
        [dense] = await clock.time("embed", self._embedder.embed([query.text]))
        sparse, limit = query_vector(query), options.candidates_for(query.aggregative)
        if trace is not None:
            trace.search_channels(self._index, request.user_id, dense, sparse, limit)
        searching = self._index.search_leaves(
            request.user_id,
            dense,
            sparse,
            limit=limit,
            dense_weight=options.dense_weight,
            level=Level.SEGMENT,
        )
        hits = await clock.time("search", searching)
        index = await entity_index if entity_index is not None else None
        scores = {hit.id: hit.score for hit in hits}
        nodes = await self._tree.get_many(request.user_id, list(scores))
        # The index filters on the user already; checking again costs nothing and keeps a
        # stray point (a bug, a half-finished forget) from leaking between users.
        pool = [
            RecalledMemory(n, scores[n.id])
            for n in nodes
            if n.user_id == request.user_id and n.level == Level.SEGMENT
        ]
        heat = None
        if index is not None:
            joining = join_entity_leaves(self._tree, request.user_id, query, index, pool, options)
            heat, pool = await clock.time("entities", joining)
        sessions, unwritten = await self._sessions(request.user_id, pool)
        ranked = rerank(query, pool, options, sessions, heat)
        leaves = ranked[: options.leaves_for(query.aggregative)]
        if trace is not None:
            trace.leaves_ranked(scores, ranked, len(leaves), len(hits), heat)
        return leaves, await self._lineage(request.user_id, leaves, unwritten)

    def _read_entity_index(
        self, user_id: str, clock: Stopwatch
    ) -> asyncio.Future[EntityIndex] | None:
        """The user's entity index, being read (None with knowledge off)."""
        if self._knowledge is None:
            return None
        reading = clock.time("entity_index", self._knowledge.entity_index(user_id))
        return asyncio.ensure_future(reading)

    async def _sessions(
        self, user_id: str, pool: list[RecalledMemory]
    ) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
        """The terms of the session summaries above the pool, for the summary signal (none
        when it is off), and the sessions named that are not written (yet): a live session's
        leaves point to the summary its end will write. Only the terms: a heavy user's pool
        spans about a session a leaf, and decoding those summaries whole was most of a first
        read of its question."""
        if not self.options.summary_signal:
            return {}, frozenset()
        wanted = list(dict.fromkeys(m.node.parent_id for m in pool if m.node.parent_id))
        terms = await self._tree.session_terms(user_id, wanted) if wanted else {}
        return terms, frozenset(wanted).difference(terms)

    async def _lineage(
        self, user_id: str, leaves: list[RecalledMemory], unwritten: frozenset[str]
    ) -> dict[str, MemoryNode]:
        """Every ancestor of the leaves kept, which the climb starts from.

        The store reads them in one round trip where the climb reads one level a round trip.
        Only the kept leaves' (a tenth of the pool): the pool's sessions are read for their
        terms alone (`_sessions`). Sessions `_sessions` found unwritten are not asked again:
        in a live conversation that is the kept leaves' one session, and a read for nothing."""
        wanted = list(
            dict.fromkeys(
                m.node.parent_id
                for m in leaves
                if m.node.parent_id and m.node.parent_id not in unwritten
            )
        )
        found = await self._tree.get_with_ancestors(user_id, wanted) if wanted else []
        return {n.id: n for n in found if n.user_id == user_id}

    async def _climb(
        self,
        user_id: str,
        leaves: list[RecalledMemory],
        budgets: dict[Level, int],
        known: dict[str, MemoryNode],
        trace: TraceRecorder | None = None,
    ) -> list[RecalledMemory]:
        """Leaves plus their ancestors at the budgeted levels, best first within each level.

        `known` is the leaves' lineage (`_lineage`): every ancestor they have, so a parent
        not in it is not written (or not the user's), and is not read again."""
        support = {m.node.id: Support.of_leaf(m.score) for m in leaves}
        by_level: dict[Level, list[MemoryNode]] = {Level.SEGMENT: [m.node for m in leaves]}
        current = by_level[Level.SEGMENT]
        top = max(budgets, default=Level.SEGMENT)
        seen = set(support)
        # Ancestors above the top budgeted level are never needed: stop climbing there.
        while current and max(n.level for n in current) < top:
            parents = parent_support(current, support)
            wanted = [pid for pid in parents if pid not in seen]
            if not wanted:
                break
            found = [known[pid] for pid in wanted if pid in known]
            seen.update(wanted)
            support.update(parents)
            for node in found:
                by_level.setdefault(node.level, []).append(node)
            current = found
        if trace is not None:
            trace.climbed(by_level)
        recalled: list[RecalledMemory] = []
        for level, budget in budgets.items():
            recalled += prune(
                by_level.get(level, []), support, budget, self.options.ancestor_scoring
            )
        if budgets.get(Level.MONTH) and not by_level.get(Level.MONTH):
            profile = await self._tree.profile(user_id)
            if profile is not None and profile.user_id == user_id:
                recalled.append(RecalledMemory(profile, 0.0))
        return recalled
