"""Which texts share a forward pass: texts of one pass are padded to its longest.

A pass over `k` texts padded to `n` tokens costs about `overhead + k * n * (1 + n / quadratic)`
token-units: the per-token work of the layers, the attention's part that grows with the
square of the length, and a fixed cost per pass. The two constants are fitted to
all-MiniLM-L6-v2 int8 on ONNX Runtime with one thread (the fit: `docs/figures/ingest.md`):
the square term equals the per-token work at `QUADRATIC_TOKENS`, and a pass costs what
`PASS_OVERHEAD_TOKENS` tokens cost. Padding, not the per-pass cost, is what a mixed batch
wastes: chat messages vary severalfold in length, so a pass of mixed ones padded to its
longest costs a multiple of the tokens it holds.

`forward_passes` sorts the texts by length and cuts the sorted run where that is cheaper,
by dynamic programming over the cut points: exact for this cost model, and a few
microseconds a text.
"""

from __future__ import annotations

from collections.abc import Sequence

PASS_OVERHEAD_TOKENS = 8.0
QUADRATIC_TOKENS = 440.0


def pass_cost(texts: int, longest: int) -> float:
    """The modelled cost of one forward pass over `texts` texts padded to `longest` tokens."""
    return PASS_OVERHEAD_TOKENS + texts * text_cost(longest)


def text_cost(tokens: int) -> float:
    """The modelled cost of one text of `tokens` tokens within a pass (no padding, no
    share of the pass's fixed cost)."""
    return tokens * (1.0 + tokens / QUADRATIC_TOKENS)


def forward_passes(lengths: Sequence[int], max_texts: int) -> list[list[int]]:
    """Indices into `lengths` (token counts) grouped into passes of at most `max_texts`,
    each pass of similar lengths, for the least modelled cost (`pass_cost`)."""
    if max_texts <= 0:
        raise ValueError("max_texts must be positive")
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    # best[end]: the least cost of the first `end` texts in `order`; cut[end]: where its last
    # pass starts. Sorted ascending, a pass ending at `end` is padded to order[end - 1].
    best = [0.0] * (len(order) + 1)
    cut = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        per_text = text_cost(lengths[order[end - 1]])
        start = min(
            range(max(0, end - max_texts), end),
            key=lambda s: best[s] + (end - s) * per_text,
        )
        best[end] = best[start] + PASS_OVERHEAD_TOKENS + (end - start) * per_text
        cut[end] = start
    passes: list[list[int]] = []
    end = len(order)
    while end:
        passes.append(order[cut[end] : end])
        end = cut[end]
    return passes[::-1]
