"""Where the stack's Unix-socket servers listen (the model server, the index server), and how.

`listen`: the socket is made mode 0600 between `bind` and `listen`, so no other user can
connect at any moment (a connection before `listen` is refused). Both servers trust their
peers: the index server unpickles what they send, the model server spends the model's CPU on
them.

`socket_path`: a socket's address holds at most 108 bytes on Linux (the terminating zero
included). A data directory deep enough to pass that (a test's temporary directory, a long
mount path) gets its sockets in a directory of this user's alone (mode 0700) under the
temporary directory instead, removed when `cleanup` closes. The process that picks the path
hands it to both ends (the server's command line, the clients' environment).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from pathlib import Path

SOCKET_PATH_MAX = 108  # sun_path on Linux, the terminating zero included


def socket_path(directory: Path, name: str, cleanup: contextlib.ExitStack) -> Path:
    """`directory/name`, unless that path is too long for a Unix socket: then `name` in a
    private temporary directory that `cleanup` removes."""
    path = directory.resolve() / name
    if len(os.fsencode(path)) < SOCKET_PATH_MAX:
        return path
    private = Path(tempfile.mkdtemp(prefix="memstream-"))  # mode 0700
    cleanup.callback(shutil.rmtree, private, ignore_errors=True)
    return private / name


def listen(path: Path, backlog: int) -> socket.socket:
    """A Unix socket listening at `path`, mode 0600 before it listens (a stale file left by an
    earlier server goes first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        os.chmod(path, 0o600)  # nobody can connect before listen()
        listener.listen(backlog)
    except BaseException:
        listener.close()
        raise
    return listener
