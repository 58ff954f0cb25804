"""Fair shares of the segmenter: which records of a batch it handles now, which it defers.

Kafka keeps each partition in order and turns are keyed by user, so a flooding tenant's
backlog sits in front of every other tenant's turns. Each tenant gets a token bucket of
turns a second (`Share`) on the segmenter's main path; a turn over its tenant's share is
diverted to the overflow topic, which the segmenter reads only with spare capacity. To keep
each user's order, once a user has records in the overflow every later record of that user
goes there too, until the overflow has caught up with the user (`held`, from the store).

A whole-user or message forget is never diverted: it must not wait behind a flood, and its
tombstone already orders it (a diverted turn that predates the forget in the turns log is
dropped when the overflow brings it; one of a forgotten message likewise). See
docs/fair-share.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from memstream.domain.tenancy import tenant_of
from memstream.domain.token_bucket import Bucket, full, take

DEFAULT_TENANT = ""  # every user id outside a tenant's namespace: one tenant of its own


class Kind(Enum):
    TURN = "turn"  # costs a token of its tenant's share
    FORGET = "forget"  # never diverted
    FOLLOWER = "follower"  # a session end, a tick, a rebuild: goes where its user's turns go


@dataclass(frozen=True, slots=True)
class Share:
    """What one tenant may send through the main path: `rate` turns a second, `burst` saved."""

    rate: float
    burst: float

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError("a share needs a positive rate and a burst of at least one turn")


@dataclass(frozen=True, slots=True)
class Pending:
    """A record of the batch, as the split sees it: `at`, when the broker received it
    (epoch seconds; None: unknown, the batch's `now` stands in)."""

    user_id: str
    kind: Kind
    at: float | None = None


@dataclass(frozen=True, slots=True)
class Split:
    kept: tuple[int, ...]  # positions in the batch the segmenter handles now, in order
    diverted: tuple[int, ...]  # positions that go to the overflow, in order
    buckets: Mapping[str, Bucket]  # every tenant's bucket after the batch
    diverted_by_tenant: Mapping[str, int]  # turns diverted, per tenant


def tenant_key(user_id: str) -> str:
    """The tenant whose share a user's turns draw on (`DEFAULT_TENANT` outside every one)."""
    return tenant_of(user_id) or DEFAULT_TENANT


def split(
    batch: Sequence[Pending],
    held: Collection[str],
    buckets: Mapping[str, Bucket],
    share: Share,
    now: float,
    behind: bool = False,
) -> Split:
    """Keep or divert each record, in order. `held`: users with records still in the
    overflow (all their records follow them there); `buckets`: each tenant's bucket before
    the batch (a tenant not in it starts full); `behind`: whether the main path is behind
    (`is_behind`).

    A tenant over its share is not served before another within it: one whose turns in the
    batch outrun its bucket keeps none of them when the batch also holds turns of a tenant
    within its share, or when the main path is behind; while it is behind, neither does a
    tenant with a user held. Its bucket is emptied, so it refills from nothing at the rate
    once the main path has caught up, without a burst. The burst is for a tenant within its
    share; spent by a flood, it is a queue in front of every such tenant's next records,
    which arrive while the main path works through it. The flood progresses through the
    overflow meanwhile.

    The buckets fill in the log's time, each record's broker time: a share bounds what a
    tenant sends, not how fast the segmenter happens to read it. In wall time, a batch that
    came late (the segmenter behind) would hold more of a tenant's turns than one burst,
    and a tenant within its share would be diverted for the segmenter's delay."""
    plan = _assign(batch, held, buckets, share, now, over=frozenset())
    outrun = plan.outrun
    if behind:
        outrun |= {tenant_key(user_id) for user_id in held}
    served = {tenant_key(batch[i].user_id) for i in plan.kept if batch[i].kind is Kind.TURN}
    if outrun and (behind or served - outrun):
        plan = _assign(batch, held, buckets, share, now, over=frozenset(outrun))
    return Split(plan.kept, plan.diverted, plan.buckets, plan.diverted_by_tenant)


@dataclass(frozen=True, slots=True)
class _Assigned:
    kept: tuple[int, ...]
    diverted: tuple[int, ...]
    buckets: Mapping[str, Bucket]
    diverted_by_tenant: Mapping[str, int]
    outrun: set[str]  # tenants with a turn over their bucket


def _assign(
    batch: Sequence[Pending],
    held: Collection[str],
    buckets: Mapping[str, Bucket],
    share: Share,
    now: float,
    over: frozenset[str],
) -> _Assigned:
    """One pass of `split`: each turn takes a token of its tenant's bucket, except those of
    tenants `over` their share, which are diverted and leave the bucket empty."""
    after = dict(buckets)
    following = set(held)
    outrun: set[str] = set()
    kept: list[int] = []
    diverted: list[int] = []
    counts: dict[str, int] = {}
    for position, record in enumerate(batch):
        if record.kind is Kind.FORGET:
            kept.append(position)
            continue
        tenant = tenant_key(record.user_id)
        divert = record.user_id in following
        if not divert and record.kind is Kind.TURN:
            at = now if record.at is None else record.at
            if tenant in over:
                after[tenant], divert = Bucket(0.0, at), True
            else:
                before = after.get(tenant) or full(share.burst, at)
                after[tenant], wait = take(before, at, share.rate, share.burst)
                divert = wait > 0
                if divert:
                    outrun.add(tenant)
        if divert:
            following.add(record.user_id)
            diverted.append(position)
            if record.kind is Kind.TURN:
                counts[tenant] = counts.get(tenant, 0) + 1
        else:
            kept.append(position)
    return _Assigned(tuple(kept), tuple(diverted), after, counts, outrun)


def is_behind(batch: Sequence[Pending], now: float, lag_s: float) -> bool:
    """Whether the main path is behind: the batch's oldest record reached the broker more
    than `lag_s` before `now` (records of unknown time say nothing). The turns log is read
    in order, so that record's wait is the main path's lag, whichever tenant it is of."""
    stamps = [record.at for record in batch if record.at is not None]
    return bool(stamps) and now - min(stamps) > lag_s


def served_first(tenants: Sequence[str], over_share: Collection[str]) -> list[int]:
    """The order the main path handles a batch's kept records in, as positions in
    `tenants` (each kept record's tenant): the records of tenants within their share first,
    then those of tenants over it (`over_share`: some of their records were diverted), each
    group in its own order. A user belongs to one tenant, so each user's records keep their
    order; the L1s of a tenant within its share are then written before the kept part of a
    flood in the same batch, not after it. A batch of tenants' turns topics is ordered so too,
    by topic, the paused ones last (`edges.faust.topic_pauses`)."""
    first = [i for i, tenant in enumerate(tenants) if tenant not in over_share]
    later = [i for i, tenant in enumerate(tenants) if tenant in over_share]
    return first + later


def queue_for(taken: Mapping[str, int], partitions: int) -> int:
    """The overflow partition for a tenant diverted for the first time, given the ones
    `taken` by the tenants before it: the partition fewest of them have (the lowest on a
    tie). Two tenants then share a queue only once every partition has one; hashing their
    names made any two share one with a chance of one in `partitions`."""
    counts = Counter(taken.values())
    return min(range(partitions), key=lambda partition: (counts[partition], partition))


def position_field(partition: int, offset: int) -> str:
    """How the store names a diverted record: its place in the turns log."""
    return f"{partition}:{offset}"


def parse_position(field: str) -> tuple[int, int]:
    partition, _, offset = field.partition(":")
    return int(partition), int(offset)


def waits_on(diverted: Collection[tuple[int, int]], partition: int, offset: int) -> bool:
    """Whether a read of the record at (`partition`, `offset`) must wait for the overflow:
    the user has a diverted record there at or before it (order: it may be that one, or
    one it comes after)."""
    return any(p == partition and o <= offset for p, o in diverted)
