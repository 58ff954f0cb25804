"""What the settings say a deployment derives memories with: the fact extraction too."""

from __future__ import annotations

from memstream.adapters.llm.prompts import FACTS_PROMPT_VERSION
from memstream.domain.derivation import NO_EXTRACTION, RULES_EXTRACTION
from memstream.settings import Settings
from memstream.wiring.handlers import derivation


def test_the_extraction_is_none_off_the_rules_offline_and_the_facts_prompt_online() -> None:
    off = Settings(knowledge=False)
    assert derivation(off).extraction == NO_EXTRACTION
    assert derivation(off.model_copy(update={"knowledge": True})).extraction == RULES_EXTRACTION
    online = off.model_copy(update={"knowledge": True, "llm_base_url": "http://127.0.0.1:9/v1"})
    assert derivation(online).extraction == FACTS_PROMPT_VERSION
    assert len({derivation(s).key() for s in (off, online)}) == 2
