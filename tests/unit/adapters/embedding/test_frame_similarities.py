"""The frames' similarities with numpy: the domain's sums to the last bit, since a score at a
threshold must decide the same way wherever a message is read."""

from __future__ import annotations

import random
import struct
from operator import mul

from memstream.adapters.embedding.frame_similarities import left_fold_similarities
from memstream.domain.fact_frames import frames_of, prototype_texts, similarities


def unit_vectors(rng: random.Random, count: int, dims: int = 384) -> list[list[float]]:
    """Unit vectors of float32 values, as the embedders hand them over."""
    out = []
    for _ in range(count):
        raw = [rng.gauss(0.0, 1.0) for _ in range(dims)]
        norm = sum(x * x for x in raw) ** 0.5
        out.append([float(_float32(x / norm)) for x in raw])
    return out


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def test_every_score_is_the_domains_sum_bit_for_bit() -> None:
    rng = random.Random(7)
    prototypes = unit_vectors(rng, len(prototype_texts()))
    plain = frames_of(prototypes)
    fast = left_fold_similarities(prototypes)
    for vector in unit_vectors(rng, 400):
        expected = [sum(map(mul, vector, p)) for _, p in plain.prototypes]
        assert similarities(vector, plain) == expected
        assert fast(vector) == expected
