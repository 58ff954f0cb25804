"""What probing the cells of held vectors loses against the exact dense search (LoCoMo questions).

    memstream bench leaf-cells --run-dir /tmp/hr-run --out cells.json --probes 2400 4800

The held vectors of a heavy user are searched cell by cell (`coarse_cells.py`): a search
scores the rows of the cells nearest the query until it has scored `--probes` rows. This
measures, for LoCoMo's questions embedded by the real embedder, the share of the exact
dense search's best `--depth` (the dense prefetch's depth) the probe finds, and of its best
10, on two sets of rows: the vectors of `--user` in a `heavy-recall` run directory (LoCoMo
messages' real embeddings resampled with noise: `scale_fill.ResampledVectors`), and every
LoCoMo message embedded (real vectors, fewer of them: the probes are then shares of them).
Run it while no other process holds the run directory's stores.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memstream.adapters.qdrant.coarse_cells import CellMatrix
from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.adapters.qdrant.leaf_vectors import best_probed, units
from memstream.bootstrap import Container, recall_app
from memstream.domain.models import Level
from memstream.edges.http.server import BackgroundServer
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream_lab.bench.scale_run import stack_settings
from memstream_lab.bench.scale_steps import HEAVY
from memstream_lab.locomo import (
    ADVERSARIAL_CATEGORY,
    conversation_files,
    load_conversation,
    message_text,
)
from memstream_lab.measure import write_report

TOP = 10


def found_share(
    cells: CellMatrix, rows: np.ndarray, ids: list[str], queries: np.ndarray, probe: int, depth: int
) -> dict[str, float]:
    """The mean share of the exact best `depth` (and best `TOP`) that a probe finds."""
    deep, top, scored = [], [], []
    for query in queries:
        exact = best_probed([(rows, ids)], query, depth)
        scores = rows @ query
        first = {ids[i] for i in np.argsort(-scores)[:TOP].tolist()}
        probed = cells.probed(query, probe)
        got = set(best_probed(probed, query, depth))
        deep.append(len(got & set(exact)) / len(set(exact)))
        top.append(len(got & first) / TOP)
        scored.append(sum(len(i) for _, i in probed))
    return {
        f"found_of_best_{depth}": round(float(np.mean(deep)), 4),
        f"found_of_best_{TOP}": round(float(np.mean(top)), 4),
        f"worst_of_best_{TOP}": round(float(np.min(top)), 2),
        "rows_scored_mean": round(float(np.mean(scored)), 1),
    }


def measure(
    rows: np.ndarray, ids: list[str], queries: np.ndarray, probes: Sequence[int], depth: int
) -> dict[str, Any]:
    began = time.process_time()
    cells = CellMatrix.of(ids, rows)
    built = time.process_time() - began
    return {
        "rows": len(rows),
        "cells": len(cells.centroids),
        "build_cpu_s": round(built, 2),
        "probes": {str(p): found_share(cells, rows, ids, queries, p, depth) for p in probes},
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = stack_settings(args.run_dir, "bench_heavy_recall")
    questions = [
        q.question
        for f in conversation_files()
        for q in load_conversation(f).questions
        if q.category != ADVERSARIAL_CATEGORY
    ][:: args.every]
    messages = [
        message_text(m)
        for f in conversation_files()
        for s in load_conversation(f).sessions
        for m in s.messages
    ]
    with BackgroundStack(settings) as stack, BackgroundServer(recall_app(stack.settings())) as srv:
        c: Container = srv.app.state.container
        index = c.index
        assert isinstance(index, EdgeIndex)

        def call(work: Any) -> Any:
            return srv.call(work, timeout_s=24 * 3600)

        async def embed(texts: list[str]) -> list[list[float]]:
            return list(await c.embedder.embed(texts))

        queries = units(call(lambda: embed(questions)))
        ids: list[str] = []
        pages = []
        for page_ids, vectors in index._dense_vectors(args.user, Level.SEGMENT):
            ids += page_ids
            pages.append(units(vectors))
        held = np.concatenate(pages)
        real = units(call(lambda: embed(messages)))
    depth = args.depth
    return {
        "questions": len(questions),
        "depth": depth,
        "held_user": measure(held, ids, queries, args.probes, depth),
        "locomo_messages": measure(
            real,
            [str(i) for i in range(len(real))],
            queries,
            [max(depth, int(share * len(real))) for share in (0.1, 0.2, 0.4)],
            depth,
        ),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--run-dir", type=Path, required=True, help="A heavy-recall run dir.")
    parser.add_argument("--user", default=HEAVY)
    parser.add_argument("--probes", type=int, nargs="+", default=[1200, 2400, 4800, 9600])
    parser.add_argument("--depth", type=int, default=300, help="The dense prefetch's depth.")
    parser.add_argument("--every", type=int, default=4, help="Every Nth LoCoMo question.")
    args = parser.parse_args(argv)
    report = run(args)
    write_report(args.out, report, default=str)
    for name in ("held_user", "locomo_messages"):
        part = report[name]
        for probe, got in part["probes"].items():
            print(f"{name} ({part['rows']} rows, {part['cells']} cells) probe {probe}: {got}")


if __name__ == "__main__":
    main()
