"""memstream loads where the agent frameworks are not installed, and never imports them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "agents")
# The SDK, the composition root of the workers and the API, the CLI, and the adapters'
# package itself (whose modules are the only ones that import a framework).
CORE = ("memstream", "memstream.client", "memstream.bootstrap", "memstream.entrypoints.cli")

PROBE = textwrap.dedent(
    """
    import importlib, json, sys

    BLOCKED = set(json.loads(sys.argv[1]))


    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
            return None


    sys.meta_path.insert(0, NotInstalled())
    for module in [*json.loads(sys.argv[2]), "memstream.integrations"]:
        importlib.import_module(module)
    try:
        importlib.import_module("memstream.integrations.langchain_history")
        adapter = "imported"
    except ModuleNotFoundError as missing:
        adapter = missing.name
    loaded = sorted({m.partition(".")[0] for m in sys.modules} & BLOCKED)
    print(json.dumps({"loaded": loaded, "adapter": adapter}))
    """
)


def test_memstream_imports_no_framework_and_needs_none() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(FRAMEWORKS), json.dumps(CORE)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "services"), "PATH": "/usr/bin:/bin"},
        check=False,
    )

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert report["adapter"] == "langchain_core"  # the probe does block what an adapter needs
