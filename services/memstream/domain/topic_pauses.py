"""Which tenants' turns topics the segmenter stops fetching for now (docs/fair-share.md,
"A turns topic per tenant").

With a turns topic per tenant, a tenant over its share need not be read at all: its topic is
paused (the consumer stops fetching it) and its backlog waits in the log, in order. Each
topic has a token bucket of turns a second (`Share`), which may go into debt: the records a
fetch brings are all handled, and the debt is what keeps the topic paused for longer.

A topic is paused when its bucket is empty and either another topic has had records within
`active_s` (another tenant has traffic) or another topic's records waited too long (the main
path is behind for someone else: a tenant alone is not held back by its own backlog). It is
resumed once no other topic has traffic and none is behind (nothing it would delay), or,
under a steady load, once it has been paused for `longest_s` and its bucket has refilled:
its burst then goes through, a bounded share that keeps it progressing. Resuming it each
time its bucket refills (`longest_s` 0) gives it its whole share beside the others, which
the fairness benchmark found several times as costly to them (docs/figures/fairness.md,
run 32). Pure: the clock and the records fetched are given.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from memstream.domain.fair_share import Share

ACTIVE_S = 3.0  # a topic with records this recently has traffic (a loaded worker fetches late)


@dataclass(frozen=True, slots=True)
class Debt:
    """A topic's bucket: `tokens` at `at` (below zero: turns handled past the share)."""

    tokens: float
    at: float

    def at_time(self, now: float, share: Share) -> float:
        return min(share.burst, self.tokens + max(0.0, now - self.at) * share.rate)


@dataclass(frozen=True, slots=True)
class Pauses:
    """Every topic's bucket, when it last had records, and the paused ones with when each
    was paused."""

    buckets: Mapping[str, Debt] = field(default_factory=dict)
    seen: Mapping[str, float] = field(default_factory=dict)
    paused_at: Mapping[str, float] = field(default_factory=dict)
    # Resumed by the longest wait while the others still have traffic: one partition at a
    # time is fetched (a resume of every partition brings a block of each at once).
    trickling: frozenset[str] = frozenset()

    @property
    def paused(self) -> frozenset[str]:
        return frozenset(self.paused_at)


def took(state: Pauses, counts: Mapping[str, int], now: float, share: Share) -> Pauses:
    """`state` after the consumer fetched `counts` records of each topic, at `now`."""
    buckets = dict(state.buckets)
    seen = dict(state.seen)
    for topic, count in counts.items():
        if count <= 0:
            continue
        bucket = buckets.get(topic)
        tokens = share.burst if bucket is None else bucket.at_time(now, share)
        buckets[topic] = Debt(tokens - count, now)
        seen[topic] = now
    return Pauses(buckets, seen, state.paused_at, state.trickling)


def decided(
    state: Pauses,
    now: float,
    share: Share,
    *,
    longest_s: float,
    behind: Collection[str] = (),
    active_s: float = ACTIVE_S,
) -> Pauses:
    """`state` with the topics to pause from `now` on; `behind`: the topics whose records
    waited too long before the main path took them."""
    paused_at: dict[str, float] = {}
    trickling: set[str] = set()
    within = {
        t for t, b in state.buckets.items() if b.at_time(now, share) >= 0.0
    } - state.paused_at.keys()
    for topic, bucket in state.buckets.items():
        tokens = bucket.at_time(now, share)
        others_behind = any(other != topic for other in behind)
        # Stays paused while any other tenant has traffic; is paused only beside one within
        # its share: two tenants over theirs do not pause each other (a steady tenant whose
        # records came bunched by a slow fetch is briefly in debt, and was paused for a
        # longest wait beside the flood, run 36).
        delays = _others_active(state.seen, topic, now, active_s) or others_behind
        within_others = {t: at for t, at in state.seen.items() if t in within}
        pausing = _others_active(within_others, topic, now, active_s) or others_behind
        since = state.paused_at.get(topic)
        if since is not None:
            waited = tokens >= share.burst and now - since >= longest_s
            if delays and not waited:
                paused_at[topic] = since
            elif delays:
                trickling.add(topic)
        elif tokens < 0.0 and pausing:  # took more than its bucket held
            paused_at[topic] = now
        elif delays and topic in state.trickling:
            trickling.add(topic)
    return Pauses(state.buckets, state.seen, paused_at, frozenset(trickling))


def _others_active(seen: Mapping[str, float], topic: str, now: float, active_s: float) -> bool:
    return any(other != topic and now - at <= active_s for other, at in seen.items())
