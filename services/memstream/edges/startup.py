"""Start-up phase lines: where a process's time went between its start and consuming.

`phase("connections")` logs `start-up: connections at 3.41 s (cpu 2.10 s)`: seconds since the
process was started (from the kernel's record of it, so the interpreter's own start and the
imports count) and the CPU time it has used so far. CPU time is what to compare on a loaded
machine, where the wall clock also counts the waits for a core. The restart benchmark
(`memstream_lab.bench.restart`) reads these lines.
"""

from __future__ import annotations

import logging
import os
import time

log = logging.getLogger(__name__)
PREFIX = "start-up: "
_imported_at = time.monotonic()


def process_age_s() -> float:
    """Seconds since this process started; since this module's import where the kernel
    does not say (not Linux)."""
    try:
        with open(f"/proc/{os.getpid()}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        # Field 22 of stat(5), the start in clock ticks after boot; [0] here is field 3.
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, IndexError, ValueError, AttributeError):
        return time.monotonic() - _imported_at


def phase(name: str) -> None:
    """Log that the process reached `name` (wall seconds since its start, CPU seconds used)."""
    log.info("%s%s at %.2f s (cpu %.2f s)", PREFIX, name, process_age_s(), time.process_time())
