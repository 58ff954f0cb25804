"""Which tenants' turns topics the segmenter stops fetching for now (docs/fair-share.md,
"A turns topic per tenant").

With a turns topic per tenant, a tenant over its share need not be read at all: its topic is
paused (the consumer stops fetching it) and its backlog waits in the log, in order. Each
topic has a token bucket of turns a second (`Share`), charged as records are fetched,
which may go into debt: the records a fetch brings are all handled, and the debt is what
keeps the topic paused for longer beside others. A tenant alone owes nothing: its debt is
forgiven while no other tenant has traffic.

A topic is paused when its bucket is empty, its tenant also sends past its share, and
either another topic within its share has had records within `active_s` (another tenant
has traffic) or such a topic's records waited too long (the main path is behind for someone
else: a tenant alone is not held back by its own backlog). Whether a tenant is within its
share is read from how it sends (its records' broker times), not from how they were
fetched. A paused topic is resumed once no other topic has traffic and none is behind
(nothing it would delay), or, under a steady load, once it has been paused for `longest_s`
and its bucket has refilled: its burst then goes through (one partition), a bounded share
that keeps it progressing, and the record that puts it in debt again pauses it, whatever
the others' buckets hold. That burst goes through in `steps` trickles, each after its part
of the longest wait: the segmenter handles a trickle as one batch, and the turns of the
others that arrive meanwhile wait behind it (a whole burst at once set the quiet tenant's
p99, run 40). Resuming it each time its bucket refills (`longest_s` 0) gives it its whole
share beside the others, which the fairness benchmark found several times as costly to them
(docs/figures/fairness.md, run 32). Pure: the clock and the records fetched are given.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from memstream.domain.fair_share import Share

ACTIVE_S = 3.0  # a topic with records this recently has traffic (a loaded worker fetches late)
TRICKLE_STEPS = 4  # a longest wait's burst goes through in this many trickles


def trickle_records(share: Share, steps: int = TRICKLE_STEPS) -> int:
    """The records one trickle brings: the consumer hands over at most this many a poll, so
    a partition resumed for a trickle brings no more before its pause."""
    return max(1, round(share.burst / steps))


@dataclass(frozen=True, slots=True)
class Debt:
    """A topic's bucket: `tokens` at `at` (below zero: turns handled past the share)."""

    tokens: float
    at: float

    def at_time(self, now: float, share: Share) -> float:
        return min(share.burst, self.tokens + max(0.0, now - self.at) * share.rate)


@dataclass(frozen=True, slots=True)
class Pauses:
    """Every topic's bucket, its sending, when it last had records, and the paused ones with
    when each was paused."""

    # What the segmenter took of each topic, charged as the consumer fetched it: the load
    # the topic put on the main path, which its pauses bound.
    buckets: Mapping[str, Debt] = field(default_factory=dict)
    seen: Mapping[str, float] = field(default_factory=dict)
    paused_at: Mapping[str, float] = field(default_factory=dict)
    # Resumed by the longest wait while the others still have traffic: one partition at a
    # time is fetched (a resume of every partition brings a block of each at once).
    trickling: frozenset[str] = frozenset()
    # How each topic's producers send, charged at each record's broker time and read as of
    # its latest record: whether a tenant is within its share, however bunched a busy
    # consumer fetched its records (fetched half a second at once, a quiet tenant's records
    # went into debt, and a flood beside it was then not paused, run 38); and a backlog sent
    # at once long ago is not within it, as a bucket refilled to now would say.
    sending: Mapping[str, Debt] = field(default_factory=dict)

    def held_back_now(self) -> frozenset[str]:
        """The topics paused or let through only by their longest wait."""
        return frozenset(self.paused_at) | self.trickling

    def sends_within(self, topic: str) -> bool:
        sending = self.sending.get(topic)
        return sending is None or sending.tokens >= 0.0

    @property
    def paused(self) -> frozenset[str]:
        return frozenset(self.paused_at)

    def held_back(self, now: float, share: Share) -> frozenset[str]:
        """The topics whose records a batch handles last: paused, trickling through their
        longest wait, or over their share (a record fetched before its pause)."""
        over = {t for t, b in self.buckets.items() if b.at_time(now, share) < 0.0}
        return self.held_back_now() | over


def took(
    state: Pauses,
    counts: Mapping[str, int],
    now: float,
    share: Share,
    *,
    sent_at: float | None = None,
) -> Pauses:
    """`state` after the consumer fetched `counts` records of each topic, at `now`, sent at
    `sent_at` (their broker time; `now` if not known)."""
    buckets = dict(state.buckets)
    sending = dict(state.sending)
    seen = dict(state.seen)
    sent = now if sent_at is None else min(sent_at, now)  # a clock ahead counts as now
    for topic, count in counts.items():
        if count <= 0:
            continue
        buckets[topic] = _charged(buckets.get(topic), count, now, share)
        sending[topic] = _charged(sending.get(topic), count, sent, share)
        seen[topic] = now
    return Pauses(buckets, seen, state.paused_at, state.trickling, sending)


def _charged(bucket: Debt | None, count: int, at: float, share: Share) -> Debt:
    """`bucket` after `count` records at `at` (one older than its latest refills nothing)."""
    if bucket is None:
        return Debt(share.burst - count, at)
    return Debt(bucket.at_time(at, share) - count, max(bucket.at, at))


def decided(
    state: Pauses,
    now: float,
    share: Share,
    *,
    longest_s: float,
    behind: Collection[str] = (),
    active_s: float = ACTIVE_S,
    steps: int = 1,
) -> Pauses:
    """`state` with the topics to pause from `now` on; `behind`: the topics whose records
    waited too long before the main path took them; `steps`: the trickles a longest wait's
    burst is let through in."""
    paused_at: dict[str, float] = {}
    trickling: set[str] = set()
    buckets = dict(state.buckets)
    within = {t for t in state.seen if state.sends_within(t)} - state.held_back_now()
    for topic, bucket in state.buckets.items():
        tokens = bucket.at_time(now, share)
        # Only a tenant within its share counts as kept waiting: the records of one held back
        # are old by design (a trickle brings what waited through the longest wait), and
        # counted, they paused the quiet tenant beside the flood for seconds (run 38).
        others_behind = any(other != topic and other in within for other in behind)
        # Stays paused while any other tenant has traffic; is paused only beside one within
        # its share: two tenants over theirs do not pause each other (a steady tenant whose
        # records came bunched was paused for a longest wait beside the flood, run 36).
        delays = _others_active(state.seen, topic, now, active_s) or others_behind
        within_others = {t: at for t, at in state.seen.items() if t in within}
        pausing = _others_active(within_others, topic, now, active_s) or others_behind
        since = state.paused_at.get(topic)
        if since is not None:
            waited = tokens >= share.burst / steps and now - since >= longest_s / steps
            if delays and not waited:
                paused_at[topic] = since
            elif delays:
                # Its step of the burst, whatever the bucket refilled meanwhile.
                trickling.add(topic)
                buckets[topic] = Debt(min(tokens, share.burst / steps), now)
        elif tokens < 0.0 and (
            (pausing and not state.sends_within(topic)) or (delays and topic in state.trickling)
        ):
            # Taken past its share and sending past it, beside a tenant within its share (one
            # that sends within it is never paused, however bunched its records came); or
            # its longest wait's burst spent, whatever the others hold: a trickle that ran on
            # while the other tenant read as over its share gave the flood a partition for a
            # whole phase (run 38).
            paused_at[topic] = now
        elif delays and topic in state.trickling:
            trickling.add(topic)
        elif not delays and tokens < 0.0:
            # Alone, a tenant has the whole segmenter and owes nothing for it: its bucket
            # refills from empty once another tenant comes. Its debt for draining its own
            # backlog alone kept it paused for minutes beside the next tenant (run 38).
            buckets[topic] = Debt(0.0, now)
    return Pauses(buckets, state.seen, paused_at, frozenset(trickling), state.sending)


def _others_active(seen: Mapping[str, float], topic: str, now: float, active_s: float) -> bool:
    return any(other != topic and now - at <= active_s for other, at in seen.items())
