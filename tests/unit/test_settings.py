"""Settings hold recall's deployment overrides; the defaults come from `RecallOptions`."""

from dataclasses import replace

from memstream.domain.recall_options import RecallOptions
from memstream.settings import Settings


def test_recall_defaults_are_the_options_defaults() -> None:
    settings = Settings()
    defaults = RecallOptions()
    assert settings.recall_leaf_top_k == defaults.leaf_top_k
    assert settings.recall_dense_weight == defaults.dense_weight
    assert settings.recall_default_max_tokens == defaults.default_max_tokens
    assert settings.recall_options() == defaults


def test_a_deployment_overrides_recall_options() -> None:
    settings = Settings(
        recall_leaf_top_k=12, recall_dense_weight=0.9, recall_default_max_tokens=500
    )
    assert settings.recall_options() == replace(
        RecallOptions(), leaf_top_k=12, dense_weight=0.9, default_max_tokens=500
    )
