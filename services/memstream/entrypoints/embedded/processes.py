"""Child processes the embedded stack owns: started in their own process group, always reaped."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import signal
import socket
import sys
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)


def free_port() -> int:
    """A loopback port nobody listens on right now. Another process may take it before the
    child binds it, so callers retry with a new port when the child exits early."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> list[str]:
    # If this Python process is SIGKILLed, nothing runs our cleanup. On Linux, `setpriv
    # --pdeathsig` (util-linux) makes the kernel send SIGTERM to the child when its parent
    # thread dies, so no broker is orphaned. It execs the target, so the pid is unchanged.
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


class ChildProcess:
    """One server process with its output in a log file."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._proc = proc

    @classmethod
    async def start(cls, name: str, argv: list[str], log_path: Path) -> ChildProcess:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("wb") as log_file:
            proc = await asyncio.create_subprocess_exec(
                *_die_with_parent(),
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                # Its own session and process group: a Ctrl+C in the terminal reaches only
                # us (we stop children in order), and stop() can signal the whole group.
                start_new_session=True,
            )
        log.debug("started %s (pid %d): %s", name, proc.pid, " ".join(argv))
        return cls(name, proc, log_path)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc.returncode is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def stop(self, timeout_s: float) -> None:
        """SIGTERM the process group, SIGKILL it after `timeout_s`, and reap the child."""
        if self.alive:
            self._signal_group(signal.SIGTERM)
            try:
                await asyncio.wait_for(self._proc.wait(), timeout_s)
            except TimeoutError:
                log.warning("%s ignored SIGTERM for %.0fs; killing it", self.name, timeout_s)
                self._signal_group(signal.SIGKILL)
                await self._proc.wait()
        # Anything the server forked (a Redis background save) is in the same group.
        self._signal_group(signal.SIGKILL)
        log.debug("%s (pid %d) stopped: exit %s", self.name, self.pid, self._proc.returncode)

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)


class DataDirLock:
    """An exclusive lock on a data directory: two stacks must not share Redis files or the
    Qdrant local-mode directory. The kernel drops it if the process dies."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "stack.lock"
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        handle = self._path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise RuntimeError(
                f"another memstream stack is running on {self._path.parent}; "
                "stop it or choose another MEMSTREAM_DATA_DIR"
            ) from None
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None
