"""The recall load benchmark's CPU accounting, read from /proc (Linux, as CI)."""

from __future__ import annotations

import os
import subprocess
import sys

from memstream_lab.bench.recall_load import cpu_seconds

# Burns 0.2 s of CPU, says so, then waits for its stdin to close.
_BURNER = (
    "import sys, time\n"
    "while time.process_time() < 0.2: pass\n"
    "print('burnt', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_a_child_is_counted_apart_from_its_parent() -> None:
    own_before, children_before = cpu_seconds([os.getpid()])
    with subprocess.Popen(
        [sys.executable, "-c", _BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline() == b"burnt\n"
        own_after, children_after = cpu_seconds([os.getpid()])
        child_own, _ = cpu_seconds([child.pid])
        child.stdin.close()
    assert children_after - children_before >= 0.15  # the child's 0.2 s, in clock ticks
    assert child_own >= 0.15
    assert own_after - own_before < 0.15  # the parent only waited


def test_a_process_that_is_gone_counts_nothing() -> None:
    gone = 2**22 + 1  # above the kernel's largest pid: no such process
    assert cpu_seconds([gone]) == (0.0, 0.0)
