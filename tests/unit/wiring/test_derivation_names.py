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


def test_the_derivation_names_the_writing_tasks_a_model_does_when_it_does_not_do_all() -> None:
    url = "http://127.0.0.1:9/v1"
    every = derivation(Settings(llm_base_url=url))
    facts = derivation(Settings(llm_base_url=url, llm_tasks="facts,plan"))
    written = derivation(Settings(llm_base_url=url, llm_tasks="consolidate,segment"))
    recall_only = derivation(Settings(llm_base_url=url, llm_tasks="plan,gate"))
    assert (facts.backend, facts.extraction) == ("openai", FACTS_PROMPT_VERSION)
    assert facts.prompt_version == f"{every.prompt_version}+facts"  # plan writes nothing
    assert written.prompt_version == f"{every.prompt_version}+segment+consolidate"
    assert written.extraction == RULES_EXTRACTION
    # A model that only plans and gates derives no memory: the nodes are the offline ones.
    assert recall_only == derivation(Settings())
    # Each split is a derivation of its own: changing it re-derives on a rebuild.
    assert len({d.key() for d in (every, facts, written, recall_only)}) == 4
