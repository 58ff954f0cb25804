"""Settings hold recall's deployment overrides; the defaults come from `RecallOptions`."""

from dataclasses import replace

import pytest
import redis.asyncio as aioredis
from pydantic import SecretStr, ValidationError

from memstream.bootstrap import redis_tree
from memstream.domain.fair_share import Share
from memstream.domain.recall_options import RecallOptions
from memstream.settings import Settings


def test_recall_defaults_are_the_options_defaults() -> None:
    settings = Settings()
    defaults = RecallOptions()
    assert settings.recall.leaf_top_k == defaults.leaf_top_k
    assert settings.recall.dense_weight == defaults.dense_weight
    assert settings.recall.default_max_tokens == defaults.default_max_tokens
    assert settings.recall.options() == defaults


def test_a_deployment_overrides_recall_options() -> None:
    settings = Settings(
        recall_leaf_top_k=12, recall_dense_weight=0.9, recall_default_max_tokens=500
    )
    assert settings.recall.options() == replace(
        RecallOptions(), leaf_top_k=12, dense_weight=0.9, default_max_tokens=500
    )


@pytest.mark.parametrize("keys", ['[""]', '["  "]', '["good", "\\t"]'])
def test_an_empty_or_blank_api_key_is_refused_at_start_up(
    monkeypatch: pytest.MonkeyPatch, keys: str
) -> None:
    monkeypatch.setenv("MEMSTREAM_RECALL_API_KEYS", keys)
    with pytest.raises(ValidationError, match="empty or blank key"):
        Settings()


def test_the_recall_api_requires_keys_unless_auth_is_explicitly_disabled() -> None:
    with pytest.raises(ValueError, match="MEMSTREAM_RECALL_API_KEYS") as refused:
        Settings().api.required_keys()
    assert "MEMSTREAM_RECALL_AUTH_DISABLED" in str(refused.value)
    assert Settings(recall_auth_disabled=True).api.required_keys() == []
    keys = Settings(recall_api_keys=[SecretStr("k")], recall_auth_disabled=True)
    assert [k.get_secret_value() for k in keys.api.required_keys()] == ["k"]


def test_auth_is_required_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTREAM_RECALL_AUTH_DISABLED", "false")
    assert Settings().api.auth_disabled is False
    monkeypatch.delenv("MEMSTREAM_RECALL_AUTH_DISABLED")
    assert Settings().api.auth_disabled is False


def test_the_node_cache_is_bounded_by_memory_and_by_a_count_only_when_one_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = aioredis.from_url("redis://127.0.0.1:1")  # never connected: only built
    default = redis_tree(client, Settings()).node_cache
    assert default.bounds == (48 * 1024 * 1024, None)
    monkeypatch.setenv("MEMSTREAM_REDIS_NODE_CACHE_MB", "8")
    monkeypatch.setenv("MEMSTREAM_REDIS_NODE_CACHE", "500")
    bounded = redis_tree(client, Settings()).node_cache
    assert bounded.bounds == (8 * 1024 * 1024, 500)


def test_a_tenant_share_diverts_to_the_overflow_or_pauses_the_tenants_own_topics() -> None:
    assert Settings().overflow_share is None and Settings().paused_share is None
    shared = Settings(fair_share={"tenant_share_turns_s": 20.0, "tenant_share_burst": 60.0})
    assert shared.overflow_share == Share(20.0, 60.0) and shared.paused_share is None
    per_tenant = shared.model_copy(update={"broker": {"turns_topic_per_tenant": "acme, globex"}})
    assert per_tenant.paused_share == Share(20.0, 60.0) and per_tenant.overflow_share is None
