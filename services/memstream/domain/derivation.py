"""What derived a memory: the backend, model, prompts, embedder, lexicon and fact extraction.

Every node records its derivation, and the fingerprint that decides whether a node must be
written again includes it (`nodes.fingerprint`): a rebuild with nothing changed finds every
node current and writes nothing, while a new prompt version, backend, model, embedder or
lexicon makes every node it reaches differ, so it is written again (same id, version + 1).

The lexicon names how the sparse (lexical) vectors' words were stemmed: a query is stemmed
the current way, so stored vectors stemmed another way miss some of its words until a
rebuild writes them again. Nodes written before the lexicon was recorded were stemmed by
memstream's first, light stemmer (`LIGHT_LEXICON`).

The extraction names what read an L1's facts (`domain.knowledge.leaf_knowledge`): the rules
of `fact_extraction` in their version, the LLM backend's facts prompt, or nothing when the
knowledge write is off. An L1 written under another extraction says other facts than the
current one would, so a rebuild writes it again and its knowledge with it (the segmenter
commits an L1's knowledge with every write of it); a deployment that turns the write on
gets the facts of its older L1s the same way. Nodes written before the extraction was
recorded read as the first rules (`FIRST_EXTRACTION`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memstream.domain.lexical import LEXICON

# The stemmer of every node written before derivations named their lexicon.
LIGHT_LEXICON = "light-en"
# The offline rules' version: change it with any change to the patterns or vocabulary
# (`fact_extraction`, `fact_patterns`, `fact_vocabulary`) that changes what they extract.
RULES_EXTRACTION = "rules-12"
# What every node written before derivations named their extraction was read with.
FIRST_EXTRACTION = "rules-1"
# The knowledge write is off: an L1 says no fact.
NO_EXTRACTION = "none"


@dataclass(frozen=True, slots=True)
class Derivation:
    backend: str  # "offline" (the deterministic rules) or "openai" (an OpenAI-compatible API)
    model: str  # the chat model's name ("rules" for the offline backend)
    prompt_version: str  # the prompts' version (`adapters.llm.prompts.PROMPT_VERSION`)
    embedder: str  # what made the dense vectors, with their size: "hashing:384"
    lexicon: str = LEXICON  # what stemmed the sparse vectors' words (`lexical.LEXICON`)
    extraction: str = RULES_EXTRACTION  # what read the L1s' facts (see the module docstring)

    def key(self) -> str:
        """One string that changes whenever any part does (what fingerprints include)."""
        parts = (
            self.backend,
            self.model,
            self.prompt_version,
            self.embedder,
            self.lexicon,
            self.extraction,
        )
        return "\x1f".join(parts)

    def to_json(self) -> dict[str, Any]:
        # Spelled out: `dataclasses.asdict` deep-copies every field, several times per L1.
        return {
            "backend": self.backend,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "embedder": self.embedder,
            "lexicon": self.lexicon,
            "extraction": self.extraction,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Derivation:
        return cls(
            backend=str(doc["backend"]),
            model=str(doc["model"]),
            prompt_version=str(doc["prompt_version"]),
            embedder=str(doc["embedder"]),
            lexicon=str(doc.get("lexicon", LIGHT_LEXICON)),
            extraction=str(doc.get("extraction", FIRST_EXTRACTION)),
        )
