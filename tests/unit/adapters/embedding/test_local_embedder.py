"""The real all-MiniLM-L6-v2 model (no network; a few seconds to load, hence `integration`)."""

import asyncio
import math
import signal
import sys

import psutil
import pytest

from memstream.adapters.embedding.embedders import LocalEmbedder

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


PARENT = """
import asyncio
from memstream.adapters.embedding.embedders import LocalEmbedder

async def main():
    await LocalEmbedder().embed(["hello"])
    print("embedded", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_the_model_process_exits_when_its_parent_is_killed() -> None:
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PARENT, stdout=asyncio.subprocess.PIPE
    )
    assert parent.stdout is not None
    try:
        async with asyncio.timeout(120):
            assert await parent.stdout.readline() == b"embedded\n"
        children = psutil.Process(parent.pid).children(recursive=True)
        model = [c for c in children if "spawn_main" in " ".join(c.cmdline())]
        assert len(model) == 1
        parent.send_signal(signal.SIGKILL)  # no atexit, no pool shutdown: only the watch
        async with asyncio.timeout(60):  # the child holds the pipe: wait() returns when it goes
            await parent.wait()
        _, alive = psutil.wait_procs(model, timeout=10)
        assert alive == []
    finally:
        if parent.returncode is None:
            parent.kill()
            await parent.wait()
