"""The dense vectors of each user's leaves held in process, to narrow the embedded engine's search.

The in-process engine keeps no graph (edge.py), so its dense prefetch scores every point of the
user through the payload index, at about twice a plain product's cost per point. For users of
many points this cache holds the dense vectors of one level as one contiguous float32 matrix
(below a few tens of thousands the product and the id list cost what the engine's scan does:
docs/scaling.md); a search scores
them all with one matrix-vector product, takes the best `depth` and everything within
`MARGIN` of the last of them, and the engine's dense prefetch then scores only those ids.
The engine computes every score it returns, so the answer is the exact search's: the margin
covers what the matrix's arithmetic differs by (another summation order, float32 against the
shard's float16), far above either. The product is linear in the user's points too: this
makes the scan cheaper, it does not bound it.

With a `probe`, a held user's rows are kept in cells instead (`coarse_cells.py`), and a
search scores the rows of the cells nearest the query until it has scored `probe` rows: a
fixed number whatever the user's history, at the cost of missing one of the exact best that
sits in a cell not probed (docs/figures/scale.md measures how often). Off by default.

Kept current by the index itself: every write to the shard goes through `EdgeIndex` (one
process holds a shard), which passes each upsert here before sending it to the engine, and
drops the user on a delete. A user is read from the engine (and put in cells), in a thread,
from its first search on (the searches scan until it is held); a user whose vectors alone
would not fit the budget is not held, and its search scans as before.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memstream.adapters.qdrant.coarse_cells import CellMatrix, Probed
from memstream.domain.models import IndexedMemory

log = logging.getLogger(__name__)

# Far above the float16 rounding of a unit vector's components (2^-11 relative, a bound on
# the score's error) and the summation order's float32 error.
MARGIN = 2e-3
_FIRST_ROWS = 64

UserLevel = tuple[str, int]
Counter = Callable[[], int]
# Pages of (point ids, their dense vectors).
Loader = Callable[[], Iterable[tuple[list[str], list[list[float]]]]]


@dataclass
class _Matrix:
    """One user's vectors of one level: the first `len(ids)` rows of `rows`."""

    rows: npt.NDArray[np.float32] = field(default_factory=lambda: np.empty((0, 0), np.float32))
    ids: list[str] = field(default_factory=list)
    where: dict[str, int] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes)

    def put(self, point_id: str, vector: npt.NDArray[np.float32]) -> None:
        row = self.where.get(point_id)
        if row is None:
            row = len(self.ids)
            self._room(row + 1, len(vector))
            self.ids.append(point_id)
            self.where[point_id] = row
        self.rows[row] = vector

    def extend(self, point_ids: list[str], vectors: npt.NDArray[np.float32]) -> None:
        """Rows for points not held yet (a page the shard gave)."""
        start = len(self.ids)
        self._room(start + len(point_ids), vectors.shape[1])
        self.rows[start : start + len(point_ids)] = vectors
        self.where.update(zip(point_ids, range(start, start + len(point_ids)), strict=True))
        self.ids.extend(point_ids)

    def _room(self, rows: int, dim: int) -> None:
        """At least `rows` rows, doubling: an upsert costs one row, not a copy."""
        if rows <= len(self.rows):
            return
        grown = np.empty((max(2 * len(self.rows), rows, _FIRST_ROWS), dim), np.float32)
        if self.ids:
            grown[: len(self.ids)] = self.rows[: len(self.ids)]
        self.rows = grown

    def trim(self) -> None:
        """Room for an eighth more rows, not the doubling's up to twice as many."""
        size = len(self.ids)
        self.rows = self.rows[: size + max(size // 8, _FIRST_ROWS)].copy()

    def snapshot(self) -> tuple[npt.NDArray[np.float32], list[str]]:
        """The rows held now and their ids: later puts append past them or write a new
        array when the rows grow, so a product can run on these outside the lock (a row
        rewritten meanwhile is read half old, as a search racing a write may)."""
        return self.rows[: len(self.ids)], self.ids


def best(
    rows: npt.NDArray[np.float32], ids: list[str], query: npt.NDArray[np.float32], depth: int
) -> list[str]:
    """The ids of the `depth` best rows by dot product with `query`, and of those within
    `MARGIN` of the last of them."""
    size = len(rows)
    if size <= depth:
        return ids[:size]
    # einsum keeps the product on this thread: BLAS would spread a matrix-vector product
    # over its own threads, which spin on a shared machine.
    scores = np.einsum("ij,j->i", rows, query)
    kth = np.partition(scores, size - depth)[size - depth]
    (near,) = np.nonzero(scores >= kth - MARGIN)
    return [ids[i] for i in near.tolist()]


def best_probed(probed: Probed, query: npt.NDArray[np.float32], depth: int) -> list[str]:
    """`best` over the rows of the probed cells."""
    ids = [i for _, cell_ids in probed for i in cell_ids]
    if len(ids) <= depth:
        return ids
    scores = np.concatenate([np.einsum("ij,j->i", rows, query) for rows, _ in probed])
    kth = np.partition(scores, len(ids) - depth)[len(ids) - depth]
    (near,) = np.nonzero(scores >= kth - MARGIN)
    return [ids[i] for i in near.tolist()]


def units(vectors: list[list[float]]) -> npt.NDArray[np.float32]:
    """`unit` of each row."""
    rows = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    scaled: npt.NDArray[np.float32] = rows / norms
    return scaled


def unit(vector: Sequence[float]) -> npt.NDArray[np.float32]:
    """The vector as the engine's cosine distance stores and compares it: of length one."""
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


class LeafVectors:
    """Users' dense vectors by (user, level), for those of at least `from_points` points, the
    least recently searched evicted past `budget` bytes; `budget` 0 holds none. With a
    `probe`, a search scores the rows of the cells nearest the query until it has scored
    that many (`coarse_cells.py`); 0 scores every row (exact)."""

    def __init__(self, budget: int, from_points: int = 0, probe: int = 0) -> None:
        if probe < 0:
            raise ValueError("probe must not be negative")
        self._budget = budget
        self._from = from_points
        self._probe = probe
        self._held: OrderedDict[UserLevel, _Matrix | CellMatrix] = OrderedDict()
        # Users with fewer points than `from_points` when counted, plus their upserts since
        # (an overwrite counts as well: at the bound the user is counted again).
        self._small: dict[UserLevel, int] = {}
        # Upserts that arrive while a user is read from the engine, put once it is read.
        self._loading: dict[UserLevel, list[IndexedMemory]] = {}
        # Users being read when some of their points were deleted: what is read is dropped.
        self._stale: set[UserLevel] = set()
        self._too_large: set[UserLevel] = set()
        self._lock = threading.Lock()
        self._reads: list[threading.Thread] = []
        self.scored = 0  # rows the products scored, for tests and benchmarks

    def candidates(
        self, key: UserLevel, query: Sequence[float], depth: int, count: Counter, load: Loader
    ) -> list[str] | None:
        """The ids that hold the user's `depth` best by dense score, or None when the user is
        not held. A user not held is counted with `count` and, if it has enough points, read
        with `load` in a thread of its own: this search and those until it is read scan."""
        if self._budget <= 0:
            return None
        with self._lock:
            if key in self._too_large or key in self._loading or key in self._small:
                return None
            matrix = self._held.get(key)
            if isinstance(matrix, CellMatrix):
                self._held.move_to_end(key)
                asked = unit(query)
                probed = matrix.probed(asked, max(self._probe, depth))
                self.scored += sum(len(ids) for _, ids in probed)
            elif matrix is not None:
                self._held.move_to_end(key)
                rows, ids = matrix.snapshot()
                self.scored += len(rows)
        if isinstance(matrix, CellMatrix):
            return best_probed(probed, asked, depth)
        if matrix is not None:
            return best(rows, ids, unit(query), depth)
        points = count() if self._from > 0 else 0
        with self._lock:
            if points < self._from:
                self._small[key] = points
                return None
            if key in self._loading or key in self._held:
                return None
            self._loading[key] = []
        reading = threading.Thread(target=self._load, args=(key, load), daemon=True)
        with self._lock:
            self._reads = [t for t in self._reads if t.is_alive()] + [reading]
        reading.start()
        return None

    def at_most(self, key: UserLevel, points: int) -> bool:
        """Whether the user had at most `points` points when last counted, its upserts since
        included (False when not counted: a user held, being read, or not searched yet)."""
        with self._lock:
            counted = self._small.get(key)
        return counted is not None and counted <= points

    def finish_reads(self) -> None:
        """Wait for the users being read: the shard must not close under a read."""
        with self._lock:
            reads = list(self._reads)
        for reading in reads:
            reading.join()

    def holds(self, key: UserLevel) -> bool:
        """Whether a search of this user and level is narrowed by the product."""
        with self._lock:
            return key in self._held

    def _load(self, key: UserLevel, load: Loader) -> None:
        held: _Matrix | CellMatrix | None = None
        try:
            matrix = _Matrix()
            for point_ids, vectors in load():
                matrix.extend(point_ids, units(vectors))
                if matrix.nbytes > self._budget:
                    # Stays out until some of its points are deleted (`forget`).
                    with self._lock:
                        self._too_large.add(key)
                    return
            if self._probe:
                held = CellMatrix.of(matrix.ids, matrix.rows[: len(matrix.ids)])
            else:
                matrix.trim()
                held = matrix
        except Exception:
            # The shard closed or failed under the read: searches go on scanning.
            log.warning("reading the vectors of %s failed", key, exc_info=True)
            return
        finally:
            # In one hold of the lock: an upsert finds the user being read or held, never
            # neither (its row would be lost).
            with self._lock:
                arrived = self._loading.pop(key, [])
                deleted = key in self._stale  # read again at the next search
                self._stale.discard(key)
                if held is not None and not deleted:
                    for m in arrived:
                        held.put(m.node.id, unit(m.dense))
                    self._held[key] = held
                    self._evict()

    def _evict(self) -> None:
        total = sum(m.nbytes for m in self._held.values())
        while total > self._budget and len(self._held) > 1:
            _, dropped = self._held.popitem(last=False)
            total -= dropped.nbytes

    def upserted(self, memories: Sequence[IndexedMemory]) -> None:
        """Points about to be written to the engine: the held users' rows added or replaced."""
        if self._budget <= 0:
            return
        with self._lock:
            for m in memories:
                key = (m.node.user_id, int(m.node.level))
                matrix = self._held.get(key)
                if matrix is not None:
                    matrix.put(m.node.id, unit(m.dense))
                elif key in self._small:
                    self._small[key] += 1
                    if self._small[key] >= self._from:
                        del self._small[key]
                elif key in self._loading:
                    self._loading[key].append(m)
            self._evict()

    def forget(self, user_id: str) -> None:
        """Drop a user's vectors (points of it deleted): read again when next searched."""
        with self._lock:
            for key in [k for k in self._held if k[0] == user_id]:
                del self._held[key]
            self._too_large = {k for k in self._too_large if k[0] != user_id}
            self._small = {k: n for k, n in self._small.items() if k[0] != user_id}
            self._stale.update(k for k in self._loading if k[0] == user_id)
