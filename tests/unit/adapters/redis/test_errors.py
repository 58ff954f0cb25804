"""How a Redis failure is named: the store-errors metric's kind and readiness's reason."""

from __future__ import annotations

import pytest
from redis import exceptions as redis_errors

from memstream.adapters.redis.errors import error_kind
from memstream.metrics import STORE_ERROR_KINDS


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (redis_errors.MovedError("3999 127.0.0.1:7001"), "moved"),
        (redis_errors.AskError("3999 127.0.0.1:7001"), "ask"),
        (redis_errors.ClusterCrossSlotError(), "crossslot"),
        (redis_errors.CrossSlotTransactionError("keys in several slots"), "crossslot"),
        (redis_errors.ClusterDownError("CLUSTERDOWN The cluster is down"), "cluster_down"),
        (redis_errors.MasterDownError("MASTERDOWN"), "cluster_down"),
        (redis_errors.SlotNotCoveredError("slot 12 not covered"), "cluster_down"),
        (redis_errors.TryAgainError(), "try_again"),
        (redis_errors.ReadOnlyError("READONLY"), "read_only"),
        (redis_errors.TimeoutError("Timeout reading"), "timeout"),
        (redis_errors.ConnectionError("Error 111 connecting"), "connection"),
        # Inside a transaction, a queued command's refusal comes back as a plain reply error.
        (redis_errors.ResponseError("Command # 1 (EXISTS k) of pipeline: MOVED 1 h:1"), "moved"),
        (redis_errors.ResponseError("CROSSSLOT Keys in request don't hash"), "crossslot"),
        (redis_errors.ResponseError("WRONGTYPE Operation against a key"), "response"),
        (ValueError("not Redis's"), "other"),
    ],
)
def test_each_failure_has_its_kind(error: BaseException, kind: str) -> None:
    assert error_kind(error) == kind
    assert kind in STORE_ERROR_KINDS
