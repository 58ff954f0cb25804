"""The frames' similarities (`domain.fact_frames`) with numpy, bit for bit the domain's sums.

The domain scores a message's vector against each prototype with `sum(map(mul, v, p))`:
a left fold of IEEE products, which a matrix product (pairwise or blocked sums) does not
reproduce to the last bit, and a score at a threshold must decide the same way wherever it
is computed. `numpy.add.accumulate` folds left too, over the same products; its last column
is the domain's sums. It runs for most user messages that name one candidate value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def left_fold_similarities(
    prototypes: Sequence[Sequence[float]],
) -> Callable[[Sequence[float]], list[float]]:
    """What scores a vector against every prototype as the domain's sums do."""
    matrix = np.asarray(prototypes, dtype=np.float64)

    def similarities(vector: Sequence[float]) -> list[float]:
        products = matrix * np.asarray(vector, dtype=np.float64)
        return np.add.accumulate(products, axis=1)[:, -1].tolist()

    return similarities
