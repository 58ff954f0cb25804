import math

import pytest

from memstream.adapters.embedding.embedders import (
    HashingEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    build_embedder,
)
from memstream.settings import Settings


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_vectors_are_deterministic_unit_length_and_sized() -> None:
    embedder = HashingEmbedder(64)
    first, again = (
        await embedder.embed(["pottery class on Friday"]),
        await embedder.embed(["pottery class on Friday"]),
    )
    assert first == again
    assert embedder.dim == 64 and len(first[0]) == 64
    assert math.isclose(math.sqrt(sum(x * x for x in first[0])), 1.0)


async def test_shared_words_make_texts_closer() -> None:
    a, b, c = await HashingEmbedder().embed(
        ["Melanie painted a lake sunrise", "a sunrise over the lake", "tax forms are due"]
    )
    assert _cos(a, b) > _cos(a, c)


async def test_text_without_content_words_still_gets_a_unit_vector() -> None:
    (vector,) = await HashingEmbedder(16).embed(["the and of"])
    assert math.isclose(sum(x * x for x in vector), 1.0)


def test_build_embedder_follows_settings_without_loading_anything() -> None:
    assert isinstance(
        build_embedder(Settings(embedder="hashing", embedding_dim=32)), HashingEmbedder
    )
    local = build_embedder(Settings(embedder="local"))
    assert isinstance(local, LocalEmbedder) and local.dim == 384
    remote = build_embedder(
        Settings(embedder="openai", embedding_base_url="http://127.0.0.1:9/v1", embedding_dim=8)
    )
    assert isinstance(remote, OpenAIEmbedder) and remote.dim == 8


def test_a_worker_shares_its_cores_out_between_its_model_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _: {0, 1, 2, 3})
    default = build_embedder(Settings(embedder="local"))
    assert isinstance(default, LocalEmbedder)
    assert (default.processes, default.threads) == (2, 2)
    one = build_embedder(Settings(embedder="local", embed_processes=1))
    assert isinstance(one, LocalEmbedder) and (one.processes, one.threads) == (1, 4)
    set_both = build_embedder(Settings(embedder="local", embed_processes=3, embed_threads=1))
    assert isinstance(set_both, LocalEmbedder) and (set_both.processes, set_both.threads) == (3, 1)
    torch = build_embedder(Settings(embedder="local", embed_runtime="torch"))
    assert isinstance(torch, LocalEmbedder) and (torch.processes, torch.threads) == (2, 2)
    monkeypatch.setattr("os.sched_getaffinity", lambda _: {0})
    single = build_embedder(Settings(embedder="local"))
    assert isinstance(single, LocalEmbedder) and (single.processes, single.threads) == (1, 1)
