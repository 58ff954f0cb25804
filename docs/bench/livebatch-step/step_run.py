"""Runs step_bench.py for two source trees, alternating, on one embedded stack:

    PYTHONPATH=. .venv/bin/python docs/bench/livebatch-step/step_run.py REPS AFTER_TREE BEFORE_TREE

from the repository root (step_bench imports the unit tests' fakes); BEFORE_TREE a `git
archive` of main. Batches of one turn for each of 1, 5 or 16 users, 40 each."""
import os, subprocess, sys, tempfile
from pathlib import Path
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.settings import Settings
reps, after, before = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with tempfile.TemporaryDirectory() as tmp:
    with BackgroundStack(Settings(data_dir=Path(tmp)), create_topics=False) as stack:
        s = stack.settings()
        for rep in range(reps):
            for label, code in (("before", before), ("after", after)):
                env = dict(os.environ, PYTHONPATH=f"{code}/services:{os.getcwd()}")
                for users in (1, 5, 16):
                    subprocess.run([sys.executable, str(Path(__file__).parent / "step_bench.py"), s.broker.bootstrap,
                                    s.redis.url, str(users), "40", label], env=env, check=True)
