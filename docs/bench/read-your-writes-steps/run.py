"""Runs step_bench.py for two source trees, alternating, on one embedded stack.

    .venv/bin/python docs/bench/read-your-writes-steps/run.py REPS AFTER_TREE BEFORE_TREE

from the repository root (step_bench imports the unit tests' fakes); BEFORE_TREE e.g. a
`git archive` of main. The "after" segmenter reads no L1s as context (history 0, as the
wiring now gives it with no LLM), the "before" one reads the 3 newest, as it did."""
import os, subprocess, sys, tempfile
from pathlib import Path
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.settings import Settings

here = Path(__file__).parent
reps, after, before = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with tempfile.TemporaryDirectory() as tmp:
    with BackgroundStack(Settings(data_dir=Path(tmp)), create_topics=False) as stack:
        s = stack.settings()
        for rep in range(reps):
            for label, code, history in (("after", after, "0"), ("before", before, "3")):
                env = dict(os.environ, PYTHONPATH=f"{code}/services:{os.getcwd()}")
                for users in (1, 5, 20):
                    subprocess.run(
                        [sys.executable, str(here / "step_bench.py"), s.broker.bootstrap,
                         s.redis.url, str(users), "20", label, history],
                        env=env, check=True,
                    )
