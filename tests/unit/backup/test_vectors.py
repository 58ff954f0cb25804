"""A stored node's vectors are made as the workers make them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from memstream.backup.vectors import indexed
from memstream.domain.models import Level, MemoryNode, SourceMessage
from memstream.domain.nodes import EMBEDDED_SUMMARY_WORDS, mean_direction
from memstream.domain.sparse import document_vector

AT = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)


class LengthEmbedder:
    """A vector per text that says which text it was: its length, and one."""

    dim = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]


async def test_an_l1_from_its_messages_a_summary_from_its_head_in_one_call() -> None:
    said = ("I moved to Porto.", "Porto has lovely tiles, they say.")
    messages = tuple(SourceMessage(f"m{i}", "Ana", "user", t, AT) for i, t in enumerate(said))
    leaf = MemoryNode("l", "u", Level.SEGMENT, AT, AT, "On 4 March Ana said ...", messages=messages)
    long_text = " ".join(f"word{i}" for i in range(200))
    session = MemoryNode("s", "u", Level.SESSION, AT, AT, long_text)
    embedder = LengthEmbedder()
    made = await indexed(embedder, [leaf, session])
    head = " ".join(long_text.split()[:EMBEDDED_SUMMARY_WORDS])
    assert embedder.calls == [[*said, head]]
    assert made[0].dense == mean_direction([[float(len(t)), 1.0] for t in said])
    assert made[1].dense == [float(len(head)), 1.0]
    assert [m.sparse for m in made] == [document_vector(leaf.text), document_vector(long_text)]
