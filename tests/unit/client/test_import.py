"""The SDK loads in a Python where the worker's dependencies cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WORKER_ONLY = ("torch", "faust", "qdrant_client", "qdrant_edge", "redis", "sentence_transformers")

PROBE = textwrap.dedent(
    """
    import json, sys

    BLOCKED = set(json.loads(sys.argv[1]))


    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
            return None


    sys.meta_path.insert(0, NotInstalled())
    import memstream.client as sdk

    producer = sdk.AsyncMemstreamProducer("127.0.0.1:1")  # loads the catalog, connects later
    assert producer.catalog.turns.name == "memstream.turns.v1"
    loaded = sorted({m.partition(".")[0] for m in sys.modules} & BLOCKED)
    memstream_parts = sorted({m.split(".")[1] for m in sys.modules if m.startswith("memstream.")})
    print(json.dumps({"loaded": loaded, "parts": memstream_parts}))
    """
)


def test_client_imports_without_worker_dependencies() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(WORKER_ONLY)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "services"), "PATH": "/usr/bin:/bin"},
        check=False,
    )

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert set(report["parts"]) <= {"client", "contracts", "domain"}
