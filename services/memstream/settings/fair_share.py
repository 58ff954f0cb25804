"""The segmenter's per-tenant shares (docs/fair-share.md)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memstream.domain.fair_share import Share
from memstream.settings.groups import _group


class FairShareSettings(BaseModel):
    """Fair shares of the segmenter: a tenant over its share waits in the overflow topic."""

    model_config = _group("SEGMENTER_")

    tenant_share_turns_s: float | None = Field(
        default=None,
        gt=0,
        description="Turns a second each tenant may send through the segmenter's main path "
        "(per worker process; user ids outside every tenant count as one tenant); a turn "
        "over it, and every later record of its user until the overflow has caught up, "
        "goes to the overflow topic, read with the capacity left spare. Unset: off, no "
        "overflow agent. To turn it off, first raise it until the overflow lag is zero.",
    )
    tenant_share_burst: float = Field(
        default=50.0,
        ge=1,
        description="Turns a tenant may send at once above its share's rate (the bucket's size).",
    )
    tenant_share_lag_s: float = Field(
        default=0.25,
        gt=0,
        description="While the main path is this far behind (its oldest record waiting longer), "
        "a tenant over its share gets none of it: its turns all go to the overflow, so that "
        "the tenants within their share do not queue behind its share.",
    )
    overflow_batch_size: int = Field(
        default=16,
        gt=0,
        le=10_000,
        description="Most diverted records the segmenter takes from the overflow at once (read "
        "back from the turns topic at the places the overflow topic names): what one overflow "
        "batch may hold the main path up by.",
    )
    overflow_longest_wait_s: float = Field(
        default=1.0,
        gt=0,
        description="The longest an overflow batch waits for the main path to go quiet "
        "before it runs anyway, so a tenant over its share still progresses under load; with "
        "a turns topic per tenant, the time over which a paused tenant's topic gets its "
        "burst beside the others' traffic (in four trickles, each after a quarter of it).",
    )

    @property
    def share(self) -> Share | None:
        """Each tenant's share of the segmenter as set; None: no share (the default)."""
        rate = self.tenant_share_turns_s
        return None if rate is None else Share(rate, self.tenant_share_burst)
