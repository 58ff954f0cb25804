"""One user's held vectors in cells, so a search scores the cells near the query instead of
every row.

The rows held for a heavy user (`leaf_vectors.py`) are grouped into cells of about
`CELL_ROWS` rows around centroids trained by spherical k-means on the rows themselves, each
cell's rows in a block of their own. A search scores the centroids, then the rows of the
nearest cells until it has scored `probe` rows: the work is the centroids plus a fixed number
of rows, not the user's history. The engine then scores the rows the search picks, so a score
is never approximate; which rows are looked at is: one among the exact best that sits in a
cell not probed is missed (docs/figures/scale.md measures how often). A probe of 0, or of at
least the user's rows, scores every row: the exact search.

A row written later goes to the cell of its nearest centroid (a rewritten one moves there); a
cell grown past `SPLIT_ROWS` is split in two by 2-means on its own rows, so the cells stay
small as a history grows without training again over every row. This is the inverted-file
index; a Qdrant server builds a graph per tenant instead (`docs/scaling.md`).

Deterministic: the seeds are fixed, so the same rows in the same order give the same cells,
and a process started again answers as the one before.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

# Rows a cell holds on average when trained: small cells lose fewer of the best rows for a
# given probe (cells of 256 lost several times as many on LoCoMo's questions), and the
# centroids then cost a 64th of a scan. Past `MAX_CELLS` the cells are larger, since
# training grows with rows times centroids; splits bring them back under `SPLIT_ROWS`.
CELL_ROWS = 64
MAX_CELLS = 1_024
SPLIT_ROWS = 4 * CELL_ROWS
# k-means trains on this many rows a centroid at most, for this many rounds: enough for
# cells that group near rows (what the probe needs), not for the best centroids.
_TRAIN_ROWS_PER_CELL = 16
_ROUNDS = 6
_SEED = 37
# Rows assigned a chunk at a time: a chunk's scores against every centroid stay a few MB.
_CHUNK = 4_096
_FIRST_ROWS = 16

Rows = npt.NDArray[np.float32]
Indexes = npt.NDArray[np.intp]
# What a search reads of the cells it probes: each cell's rows and their ids.
Probed = list[tuple[Rows, list[str]]]


def nearest(centroids: Rows, rows: Rows) -> Indexes:
    """The cell of each row: the centroid of the largest dot product."""
    cells = np.empty(len(rows), np.intp)
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        cells[start : start + len(chunk)] = np.argmax(chunk @ centroids.T, axis=1)
    return cells


def train(rows: Rows, count: int, seed: int = _SEED) -> Rows:
    """`count` spherical k-means centroids of `rows` (unit vectors)."""
    rng = np.random.default_rng(seed)
    sample = rows
    if len(rows) > _TRAIN_ROWS_PER_CELL * count:
        sample = rows[np.sort(rng.choice(len(rows), _TRAIN_ROWS_PER_CELL * count, replace=False))]
    centroids: Rows = sample[np.sort(rng.choice(len(sample), count, replace=False))].copy()
    for _ in range(_ROUNDS):
        cells = nearest(centroids, sample)
        sums = np.zeros_like(centroids)
        np.add.at(sums, cells, sample)
        norms = np.linalg.norm(sums, axis=1)
        kept = norms > 0  # an empty cell keeps its centroid
        centroids[kept] = sums[kept] / norms[kept, None]
    return centroids


@dataclass
class _Cell:
    """The first `len(ids)` rows of `rows`."""

    rows: Rows
    ids: list[str] = field(default_factory=list)

    def append(self, point_id: str, vector: Rows) -> int:
        slot = len(self.ids)
        if slot == len(self.rows):
            grown = np.empty((max(2 * slot, _FIRST_ROWS), self.rows.shape[1]), np.float32)
            grown[:slot] = self.rows[:slot]
            self.rows = grown
        self.rows[slot] = vector
        self.ids.append(point_id)
        return slot


class CellMatrix:
    """One user's rows by cell; `where` finds a point's cell and slot."""

    def __init__(self, centroids: Rows) -> None:
        self.centroids = centroids
        self._cells = [_Cell(np.empty((0, centroids.shape[1]), np.float32)) for _ in centroids]
        self.where: dict[str, tuple[int, int]] = {}

    @classmethod
    def of(cls, ids: list[str], rows: Rows) -> CellMatrix:
        """The rows (unit vectors) in cells of about `CELL_ROWS` (at most `MAX_CELLS` of
        them) trained on them."""
        if not len(rows):
            return cls(np.empty((0, 0), np.float32))
        matrix = cls(train(rows, min(MAX_CELLS, max(1, len(rows) // CELL_ROWS))))
        cells = nearest(matrix.centroids, rows)
        order = np.argsort(cells, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(cells, minlength=len(matrix._cells)))))
        for cell, (start, end) in enumerate(itertools.pairwise(bounds.tolist())):
            members = order[start:end]
            # An eighth of room: a cell grows a row at a time, and doubling every cell would
            # hold up to twice the rows' bytes.
            block = np.empty((len(members) + len(members) // 8 + 1, rows.shape[1]), np.float32)
            block[: len(members)] = rows[members]
            matrix._cells[cell] = _Cell(block, [ids[i] for i in members.tolist()])
            matrix.where.update((ids[i], (cell, slot)) for slot, i in enumerate(members.tolist()))
        return matrix

    def __len__(self) -> int:
        return len(self.where)

    @property
    def nbytes(self) -> int:
        return int(self.centroids.nbytes) + sum(int(c.rows.nbytes) for c in self._cells)

    def put(self, point_id: str, vector: Rows) -> None:
        """Add or replace the row of `point_id`, in the cell of its nearest centroid."""
        if not len(self.centroids):
            self.centroids = vector[None, :].copy()
            self._cells = [_Cell(np.empty((0, len(vector)), np.float32))]
        cell = int(np.argmax(np.einsum("ij,j->i", self.centroids, vector)))
        held = self.where.get(point_id)
        if held is not None and held[0] == cell:
            self._cells[cell].rows[held[1]] = vector
            return
        if held is not None:
            self._remove(point_id, *held)
        self._add(point_id, vector, cell)
        if len(self._cells[cell].ids) > SPLIT_ROWS:
            self._split(cell)

    def probed(self, query: Rows, probe: int) -> Probed:
        """The rows and ids of the cells nearest `query`, nearest first, until they hold at
        least `probe` rows; every cell with a probe of 0. The ids are copies and the rows
        views of arrays a write replaces rather than grows: a search reads them outside
        the lock (a row moved meanwhile is read as another, as a search racing a write may)."""
        cells = self._cells
        if 0 < probe < len(self.where):
            scores = np.einsum("ij,j->i", self.centroids, query)
            chosen: list[_Cell] = []
            held = 0
            for c in np.argsort(-scores, kind="stable").tolist():
                chosen.append(cells[c])
                held += len(cells[c].ids)
                if held >= probe:
                    break
            cells = chosen
        return [(c.rows[: len(c.ids)], list(c.ids)) for c in cells if c.ids]

    def _add(self, point_id: str, vector: Rows, cell: int) -> None:
        self.where[point_id] = (cell, self._cells[cell].append(point_id, vector))

    def _remove(self, point_id: str, cell: int, slot: int) -> None:
        """The cell's last row takes the slot's place (a new array: searches hold views)."""
        held = self._cells[cell]
        last = len(held.ids) - 1
        rows = held.rows.copy()
        if slot != last:
            moved = held.ids[last]
            rows[slot] = rows[last]
            held.ids[slot] = moved
            self.where[moved] = (cell, slot)
        held.ids.pop()
        held.rows = rows
        del self.where[point_id]

    def _split(self, cell: int) -> None:
        """Two cells in place of one, by 2-means on its rows."""
        held = self._cells[cell]
        rows = held.rows[: len(held.ids)]
        pair = train(rows, 2, seed=_SEED + cell)
        sides = nearest(pair, rows)
        if sides.min() == sides.max():
            return  # rows 2-means cannot part (all alike): the cell stays whole
        self.centroids = np.concatenate([self.centroids, pair[1:]])
        self.centroids[cell] = pair[0]
        self._cells[cell] = _Cell(np.empty((0, rows.shape[1]), np.float32))
        self._cells.append(_Cell(np.empty((0, rows.shape[1]), np.float32)))
        for point_id, row, side in zip(list(held.ids), rows, sides.tolist(), strict=True):
            self._add(point_id, row, cell if side == 0 else len(self._cells) - 1)
