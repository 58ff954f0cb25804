"""The real all-MiniLM-L6-v2 model (no network; a few seconds to load, hence `integration`)."""

import math

import pytest

from memstream.adapters.embedders import LocalEmbedder

pytestmark = pytest.mark.integration


async def test_local_model_embeds_similar_sentences_closer() -> None:
    embedder = LocalEmbedder(batch_size=4)
    pet, cat, tax = await embedder.embed(
        [
            "Melanie adopted a small kitten from the shelter.",
            "She took home a young cat from the animal rescue.",
            "The quarterly tax return is due next Tuesday.",
        ]
    )
    assert embedder.dim == len(pet) == 384
    assert math.isclose(math.sqrt(sum(x * x for x in pet)), 1.0, rel_tol=1e-4)

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(pet, cat) > cos(pet, tax) + 0.2
    assert await embedder.embed([]) == []
