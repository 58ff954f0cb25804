"""What derived a memory: the backend, model, prompt version and embedder that wrote it.

Every node records its derivation, and the fingerprint that decides whether a node must be
written again includes it (`nodes.fingerprint`): a rebuild with nothing changed finds every
node current and writes nothing, while a new prompt version, backend, model or embedder
makes every node it reaches differ, so it is written again (same id, version + 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Derivation:
    backend: str  # "offline" (the deterministic rules) or "openai" (an OpenAI-compatible API)
    model: str  # the chat model's name ("rules" for the offline backend)
    prompt_version: str  # the prompts' version (`adapters.llm.prompts.PROMPT_VERSION`)
    embedder: str  # what made the dense vectors, with their size: "hashing:384"

    def key(self) -> str:
        """One string that changes whenever any part does (what fingerprints include)."""
        return "\x1f".join((self.backend, self.model, self.prompt_version, self.embedder))

    def to_json(self) -> dict[str, Any]:
        # Spelled out: `dataclasses.asdict` deep-copies every field, several times per L1.
        return {
            "backend": self.backend,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "embedder": self.embedder,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Derivation:
        return cls(
            backend=str(doc["backend"]),
            model=str(doc["model"]),
            prompt_version=str(doc["prompt_version"]),
            embedder=str(doc["embedder"]),
        )
