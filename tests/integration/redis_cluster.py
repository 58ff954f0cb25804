"""The Redis layouts an integration test module may run on: a single primary (the embedded
stack's) and a real three-primary Redis Cluster (`memstream_lab.redis_cluster`)."""

from __future__ import annotations

import pytest

from memstream.settings import Settings
from memstream_lab.redis_cluster import RedisClusterNodes, running_cluster

__all__ = ["LAYOUTS", "RedisClusterNodes", "on_layout", "running_cluster"]

# The two Redis layouts a test module may run on (`on_layout`): pytest ids of its cases.
LAYOUTS = ("single-primary", "cluster")


def on_layout(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """`settings` on the layout `request.param` names; on the cluster, the session's
    `redis_cluster`, with cluster mode on. A module runs on both by overriding `settings`:

        @pytest.fixture(params=LAYOUTS)
        def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
            return on_layout(settings, request)
    """
    if request.param == "single-primary":
        return settings
    nodes: RedisClusterNodes = request.getfixturevalue("redis_cluster")
    return settings.model_copy(update={"redis_url": nodes.url, "redis_cluster": True})
