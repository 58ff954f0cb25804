"""A turns topic per tenant (`MEMSTREAM_TURNS_TOPIC_PER_TENANT`, docs/fair-share.md).

With the mode on, a user of a configured tenant (the part of the id before the first colon,
`domain.tenancy`) has every record of the turns topic's types (turns, session ends, forgets,
ticks, rebuilds) in `<turns topic>.<tenant>`, so a tenant's records are in partitions of
their own, which the segmenter can stop fetching while the tenant is over its share, and a
tenant's producer can be held to its topic by Kafka ACLs. Ids outside every configured
tenant keep the shared turns topic. Every producer and the segmenter must be given the same
tenants, or a user's records would be in two logs, out of order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from memstream.contracts.catalog import TopicSpec
from memstream.domain.tenancy import TENANT_NAME, tenant_of


def tenant_topic(turns: str, tenant: str) -> str:
    """The name of `tenant`'s turns topic, given the (prefixed) shared one's."""
    return f"{turns}.{tenant}"


@dataclass(frozen=True, slots=True)
class TurnsRouting:
    """Which turns topic each user's records go to."""

    shared: str
    tenants: frozenset[str] = frozenset()

    @classmethod
    def of(cls, shared: str, tenants: Iterable[str] = ()) -> TurnsRouting:
        names = frozenset(tenants)
        bad = sorted(name for name in names if not TENANT_NAME.match(name))
        if bad:
            raise ValueError(f"not tenant names: {', '.join(bad)}")
        return cls(shared, names)

    @property
    def on(self) -> bool:
        return bool(self.tenants)

    def topic_for(self, user_id: str) -> str:
        tenant = tenant_of(user_id)
        return tenant_topic(self.shared, tenant) if tenant in self.tenants else self.shared

    def marked_topic(self, user_id: str) -> str | None:
        """The user's turns topic when it is a tenant's, None when it is the shared one: how
        progress marks and write tokens name a topic (the shared topic's keep the layout
        they had before topics per tenant)."""
        topic = self.topic_for(user_id)
        return None if topic == self.shared else topic

    @property
    def topics(self) -> tuple[str, ...]:
        """Every turns topic: the shared one first, then each tenant's, by name."""
        return (self.shared, *(tenant_topic(self.shared, t) for t in sorted(self.tenants)))

    @property
    def tenant_of_topic(self) -> dict[str, str]:
        """Each tenant's turns topic, and its tenant."""
        return {tenant_topic(self.shared, t): t for t in sorted(self.tenants)}

    def specs(self, turns: TopicSpec) -> tuple[TopicSpec, ...]:
        """The tenants' topics as the shared one is configured, for creating them."""
        return tuple(replace(turns, name=name) for name in self.topics[1:])


def parse_tenants(value: str) -> tuple[str, ...]:
    """Tenant names from a comma-separated setting (blanks ignored)."""
    return tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))


# A user id's turns topic: a `TurnsRouting.topic_for`, or one topic's name for every user.
TurnsTopic = str | Callable[[str], str]


def topic_of(turns: TurnsTopic) -> Callable[[str], str]:
    """`turns` as a function of the user id."""
    if isinstance(turns, str):
        return lambda _user: turns
    return turns
