"""A user's held vectors in cells (`coarse_cells.py`): every row kept once, found by its id,
and a probe that scores a bounded number of rows whatever the user's history."""

from __future__ import annotations

import numpy as np

from memstream.adapters.qdrant.coarse_cells import CELL_ROWS, SPLIT_ROWS, CellMatrix
from memstream.adapters.qdrant.leaf_vectors import best_probed as best

DIM = 24


def clustered(count: int, seed: int, topics: int = 40) -> np.ndarray:
    """Unit rows gathered around topics, as a sentence model's vectors of one person's chats."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, DIM))
    rows = centres[rng.integers(topics, size=count)] + rng.normal(scale=0.5, size=(count, DIM))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def ids(count: int) -> list[str]:
    return [f"p{i}" for i in range(count)]


def held(matrix: CellMatrix) -> dict[str, np.ndarray]:
    """Each id's row, read through the cells every probe of 0 returns."""
    found: dict[str, np.ndarray] = {}
    for rows, cell_ids in matrix.probed(np.ones(DIM, np.float32), 0):
        for point_id, row in zip(cell_ids, rows, strict=True):
            assert point_id not in found
            found[point_id] = row
    return found


def test_every_row_is_held_once_under_its_id_through_writes_and_splits() -> None:
    rows = clustered(3 * CELL_ROWS, seed=1)
    matrix = CellMatrix.of(ids(len(rows)), rows)
    more = clustered(2 * SPLIT_ROWS, seed=2, topics=2)  # two topics: their cells split
    for n, row in enumerate(more):
        matrix.put(f"q{n}", row)
    moved = clustered(10, seed=3)
    for n, row in enumerate(moved):
        matrix.put(f"p{n}", row)  # rewritten: to the cell of its new vector
    found = held(matrix)
    assert len(found) == len(matrix) == len(rows) + len(more)
    assert all(np.array_equal(found[f"p{n}"], moved[n]) for n in range(10))
    assert np.array_equal(found["p11"], rows[11])
    assert np.array_equal(found[f"q{len(more) - 1}"], more[-1])
    sizes = [len(cell_ids) for _, cell_ids in matrix.probed(np.ones(DIM, np.float32), 0)]
    assert max(sizes) <= SPLIT_ROWS


def test_a_probe_of_every_row_is_the_exact_search() -> None:
    rows = clustered(2_000, seed=4)
    matrix = CellMatrix.of(ids(len(rows)), rows)
    query = clustered(1, seed=5)[0]
    exact = set(best([(rows, ids(len(rows)))], query, 50))
    assert set(best(matrix.probed(query, 0), query, 50)) == exact
    assert set(best(matrix.probed(query, len(rows)), query, 50)) == exact


def test_a_probe_scores_a_bound_of_rows_whatever_the_history_and_finds_most_of_the_best() -> None:
    probe, depth = 1_200, 50
    scored: dict[int, int] = {}
    for count in (2_000, 16_000):
        rows = clustered(count, seed=count)
        matrix = CellMatrix.of(ids(count), rows)
        queries = clustered(20, seed=count + 1)
        found = 0
        scored[count] = 0
        for query in queries:
            probed = matrix.probed(query, probe)
            scored[count] += sum(len(cell_ids) for _, cell_ids in probed)
            exact = set(best([(rows, ids(count))], query, depth))
            found += len(exact & set(best(probed, query, depth)))
        assert found >= 0.85 * depth * len(queries), (count, found)
    # A fixed number of rows, whatever the history: the probe and at most one cell past it.
    assert all(probe * 20 <= n <= (probe + SPLIT_ROWS) * 20 for n in scored.values()), scored
