"""What derived a memory: the backend, model, prompt version, embedder and lexicon that wrote it.

Every node records its derivation, and the fingerprint that decides whether a node must be
written again includes it (`nodes.fingerprint`): a rebuild with nothing changed finds every
node current and writes nothing, while a new prompt version, backend, model, embedder or
lexicon makes every node it reaches differ, so it is written again (same id, version + 1).

The lexicon names how the sparse (lexical) vectors' words were stemmed: a query is stemmed
the current way, so stored vectors stemmed another way miss some of its words until a
rebuild writes them again. Nodes written before the lexicon was recorded were stemmed by
memstream's first, light stemmer (`LIGHT_LEXICON`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memstream.domain.lexical import LEXICON

# The stemmer of every node written before derivations named their lexicon.
LIGHT_LEXICON = "light-en"


@dataclass(frozen=True, slots=True)
class Derivation:
    backend: str  # "offline" (the deterministic rules) or "openai" (an OpenAI-compatible API)
    model: str  # the chat model's name ("rules" for the offline backend)
    prompt_version: str  # the prompts' version (`adapters.llm.prompts.PROMPT_VERSION`)
    embedder: str  # what made the dense vectors, with their size: "hashing:384"
    lexicon: str = LEXICON  # what stemmed the sparse vectors' words (`lexical.LEXICON`)

    def key(self) -> str:
        """One string that changes whenever any part does (what fingerprints include)."""
        parts = (self.backend, self.model, self.prompt_version, self.embedder, self.lexicon)
        return "\x1f".join(parts)

    def to_json(self) -> dict[str, Any]:
        # Spelled out: `dataclasses.asdict` deep-copies every field, several times per L1.
        return {
            "backend": self.backend,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "embedder": self.embedder,
            "lexicon": self.lexicon,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Derivation:
        return cls(
            backend=str(doc["backend"]),
            model=str(doc["model"]),
            prompt_version=str(doc["prompt_version"]),
            embedder=str(doc["embedder"]),
            lexicon=str(doc.get("lexicon", LIGHT_LEXICON)),
        )
