"""`memstream up` in a process of its own, and a lean agent for it: what the benchmarks that
measure a whole stack from outside share (`read_your_writes`, `fairness`)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memstream.client import AsyncMemstreamProducer
from memstream_lab.bench.keepalive import KeepAliveConnection
from memstream_lab.measure import free_port, nearest_rank

START_TIMEOUT_S = 300.0
_PR_SET_PDEATHSIG = 1


def stop_with_parent() -> None:
    """In the child, before exec: it gets SIGINT (Ctrl-C: every part stops in order) when the
    benchmark that started it dies, however. A benchmark killed outright left its stack
    running, and the stack's CPU then weighed on every measurement after it. Not Linux (no
    prctl): the stack would outlive a killed benchmark. The child also takes SIGINT
    unblocked: it inherits the signal mask of the thread that starts it, and one that blocks
    SIGINT (a test runner's worker thread does) would leave the signal pending for good."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


class StackProcess:
    """`memstream up` in a process of its own, read until it says it is ready."""

    def __init__(
        self,
        scratch: Path,
        max_wait_ms: int,
        models: Path,
        code: Path | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        """`models`: where the ONNX graph is exported once and kept for every stack of the
        run; `code`: a source tree to run the stack from instead of the installed one;
        `settings`: more MEMSTREAM_* variables for it."""
        env = {
            **os.environ,
            **(settings or {}),
            "MEMSTREAM_DATA_DIR": str(scratch),
            "MEMSTREAM_API_PORT": str(free_port()),
            "MEMSTREAM_API_MAX_WAIT_MS": str(max_wait_ms),
            "MEMSTREAM_LOG_LEVEL": "WARNING",
            "MEMSTREAM_MODEL_CACHE_DIR": os.environ.get("MEMSTREAM_MODEL_CACHE_DIR", str(models)),
        }
        if code is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                [str(code / "services"), *filter(None, [os.environ.get("PYTHONPATH")])]
            )
        command = [sys.executable, "-c", "from memstream.entrypoints.cli import app; app()"]
        self.process = subprocess.Popen(
            [*command, "up"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            preexec_fn=stop_with_parent,  # started from the benchmark's main thread
        )
        self.endpoints: dict[str, str] = {}

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        assert self.process.stdout is not None
        for line in self.process.stdout:
            name, sep, value = line.strip().partition("=")
            if sep and name.startswith("MEMSTREAM_"):
                self.endpoints[name] = value
            if line.startswith("Ready."):
                return
            if time.monotonic() > deadline:
                break
        raise RuntimeError("memstream up did not become ready")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)  # as Ctrl-C: every part stops in order
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def each_stack(
    rounds: int,
    baseline: Path | None,
    max_wait_ms: int,
    measure: Callable[[str, int, StackProcess], None],
    this_settings: Mapping[str, str] | None = None,
) -> None:
    """`measure(code, round, stack)` on a ready stack of this tree ("this") and then, when
    given, one of the `baseline` source tree ("baseline"), alternating for `rounds` rounds;
    each stack stopped after its turn, their scratch and the exported model in a temporary
    directory. What the benchmarks that compare two trees on whole stacks share.
    `this_settings`: MEMSTREAM_* variables for this tree's stacks only (an option the
    baseline lacks)."""
    codes: list[tuple[str, Path | None]] = [("this", None)]
    if baseline is not None:
        codes.append(("baseline", baseline))
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        for round_ in range(1, rounds + 1):
            for name, code in codes:
                stack = StackProcess(
                    Path(tmp) / f"{name}-{round_}",
                    max_wait_ms,
                    Path(tmp) / "models",
                    code,
                    settings=this_settings if code is None else None,
                )
                try:
                    stack.wait_ready()
                    measure(name, round_, stack)
                finally:
                    stack.stop()


class LeanRecalls:
    """`POST /v1/recall` over a pool of kept-alive connections, one per request in flight:
    the agent shares the cores with the stack it measures, and the SDK's client (httpx,
    retries, pydantic answers) costs several milliseconds of CPU a request (`--client sdk`
    measures with it)."""

    def __init__(self, url: str) -> None:
        address = urlsplit(url)
        self._host, self._port = address.hostname or "127.0.0.1", address.port or 80
        self._idle: list[KeepAliveConnection] = []

    async def recall(
        self, user: str, text: str, token: str | None, wait_ms: int
    ) -> dict[str, Any] | None:
        """The answer; None when the API refused the request (a 503 past its
        `MEMSTREAM_API_MAX_CONNECTIONS`) or closed the connection. With no `token`, a
        plain recall (no `after`)."""
        body: dict[str, Any] = {"user_id": user, "query": text}
        if token is not None:
            body |= {"after": token, "wait_ms": wait_ms}
        connection = self._idle.pop() if self._idle else KeepAliveConnection(self._host, self._port)
        try:
            status, answer = await connection.post("/v1/recall", json.dumps(body).encode())
        except ConnectionError:
            return None
        self._idle.append(connection)
        if status == 503:
            return None
        if status != 200:
            raise RuntimeError(f"recall answered {status}: {answer[:300]!r}")
        found: dict[str, Any] = json.loads(answer)
        return found

    async def close(self) -> None:
        for connection in self._idle:
            await connection.close()


async def until_consuming(out: AsyncMemstreamProducer, recalls: LeanRecalls) -> float:
    """Publish a turn and recall after it until the answer holds it: the consumer has
    joined its group (`Ready.` comes once the API listens, which can be before) and the
    first batch's costs are paid. Seconds it took."""
    started = time.perf_counter()
    for attempt in range(1, 1 + int(START_TIMEOUT_S // 5)):
        receipt = await out.publish_turn(
            user_id="ryw-warm-up", session_id="warm-up", seq=attempt, text="warm up", flush=True
        )
        answer = await recalls.recall("ryw-warm-up", "warm up", receipt.token, 5_000)
        if answer is not None and not answer["pending"]:
            return round(time.perf_counter() - started, 1)
    raise RuntimeError("the segmenter did not handle a turn within the start timeout")


def setting_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """`--this-setting KEY=VALUE` arguments as variables (KEY without its MEMSTREAM_ prefix
    gets it)."""
    found: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--this-setting takes KEY=VALUE, not {pair!r}")
        key = key.upper()
        found[key if key.startswith("MEMSTREAM_") else f"MEMSTREAM_{key}"] = value
    return found


def spread(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "p50": round(nearest_rank(values, 50), 1),
        "p95": round(nearest_rank(values, 95), 1),
        "p99": round(nearest_rank(values, 99), 1),
        "max": round(max(values), 1),
    }
