"""What the settings say recall runs with: the gate above the default ceiling."""

from __future__ import annotations

from memstream.settings import Settings
from memstream.wiring.handlers import recall_options


def test_a_model_gate_is_still_asked_above_the_default_ceiling_and_the_offline_one_is_not() -> None:
    offline = recall_options(Settings())
    online = recall_options(Settings(llm_base_url="http://127.0.0.1:9/v1"))
    above = 2 * offline.default_max_tokens
    assert not offline.gates(above) and online.gates(above)
    assert offline.gates(offline.default_max_tokens) and online.gates(online.default_max_tokens)


def test_a_gate_left_offline_is_not_asked_above_the_default_ceiling() -> None:
    url = "http://127.0.0.1:9/v1"
    writing_only = recall_options(Settings(llm_base_url=url, llm_tasks="facts,consolidate"))
    assert not writing_only.gates(2 * writing_only.default_max_tokens)
