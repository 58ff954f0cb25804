"""The fault-injection hook: off unless armed, and a real SIGKILL at the armed hit."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memstream import faults

SERVICES = Path(__file__).resolve().parents[2] / "services"


def test_an_unarmed_or_other_point_does_nothing() -> None:
    faults.arm("")
    faults.reach("l1.before_commit")
    faults.arm("forget.after_redis:1")
    try:
        faults.reach("l1.before_commit")  # another point: no effect
    finally:
        faults.arm("")


@pytest.mark.parametrize("spec", ["nowhere:1", "l1.before_commit:0", "l1.before_commit:x"])
def test_a_bad_spec_is_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        faults.arm(spec)


def test_the_process_is_killed_at_the_armed_hit_and_not_before() -> None:
    script = (
        "from memstream import faults\n"
        "faults.arm('consolidation.after_qdrant:3')\n"
        "for hit in (1, 2, 3, 4):\n"
        "    print(hit, flush=True)\n"
        "    faults.reach('consolidation.after_qdrant')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": str(SERVICES)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["1", "2", "3"]
