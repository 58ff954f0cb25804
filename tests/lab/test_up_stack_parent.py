"""A stack a benchmark started stops when the benchmark dies, even killed outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

PARENT = """
import subprocess, sys, time
from memstream_lab.bench.up_stack import stop_with_parent
# The child takes SIGINT's default action, as memstream up installs its own handler: a
# shell's background job inherits SIGINT ignored, which would outlast the signal. It says
# so once it has: a SIGINT that came while its interpreter was still starting would have
# been taken by Python's own handler and then dropped by that line (a race, not the test).
SLEEPER = (
    "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "print('ready', flush=True); time.sleep(60)"
)
child = subprocess.Popen(
    [sys.executable, "-c", SLEEPER], preexec_fn=stop_with_parent, stdout=subprocess.PIPE
)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (its parent gone, not yet reaped by init) counts as gone.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][0] != "Z"


def test_a_killed_benchmarks_stack_is_stopped() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child):
        assert time.monotonic() < deadline, "the child outlived its killed parent"
        time.sleep(0.05)
