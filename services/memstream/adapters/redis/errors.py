"""What went wrong when Redis failed a command, as a short kind: the metric's label and the
reason readiness gives.

A store that answers PING may still refuse every command memstream sends: a single-primary
client pointed at a cluster node is redirected (MOVED, ASK) or refused (CROSSSLOT: a
transaction across slots), and a cluster that lost a primary answers CLUSTERDOWN. Those
kinds are told apart from the network's (connection, timeout) and from the rest.
"""

from __future__ import annotations

from collections.abc import Callable

from redis import exceptions as redis_errors

# Ordered: the first class an error is an instance of names its kind (MovedError is an
# AskError, MasterDownError a ClusterDownError; all but the cluster client's own are
# ResponseErrors).
_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (redis_errors.MovedError, "moved"),
    (redis_errors.AskError, "ask"),
    (redis_errors.ClusterCrossSlotError, "crossslot"),
    (redis_errors.CrossSlotTransactionError, "crossslot"),  # the cluster client's own check
    (redis_errors.ClusterDownError, "cluster_down"),
    (redis_errors.SlotNotCoveredError, "cluster_down"),
    (redis_errors.TryAgainError, "try_again"),
    (redis_errors.ReadOnlyError, "read_only"),
    (redis_errors.TimeoutError, "timeout"),
    (redis_errors.ConnectionError, "connection"),
)
# A reply's error code, for errors redis-py raises as a plain ResponseError (inside a
# transaction, the queued command's error comes back as the EXEC's).
_CODES = {
    "MOVED": "moved",
    "ASK": "ask",
    "CROSSSLOT": "crossslot",
    "CLUSTERDOWN": "cluster_down",
    "MASTERDOWN": "cluster_down",
    "TRYAGAIN": "try_again",
    "READONLY": "read_only",
}
OnStoreError = Callable[[str], None]
# What a failed command raises: the cluster client's own refusals are not RedisErrors.
STORE_ERRORS = (redis_errors.RedisError, redis_errors.RedisClusterException)


def error_kind(error: BaseException) -> str:
    """The kind of a Redis failure (one of `metrics.STORE_ERROR_KINDS`)."""
    for cls, kind in _KINDS:
        if isinstance(error, cls):
            return kind
    if isinstance(error, redis_errors.ResponseError):
        message = str(error)
        for code, kind in _CODES.items():
            if f" {code} " in f" {message} " or message.startswith(code):
                return kind
        return "response"
    return "other"


class StoreRefused(Exception):
    """Redis answered memstream's probe with an error: `kind`, then its own words."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
