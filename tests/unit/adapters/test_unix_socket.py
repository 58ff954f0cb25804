"""Where the stack's socket servers listen, and that only their user can connect."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from pathlib import Path

from memstream.adapters.unix_socket import SOCKET_PATH_MAX, listen, socket_path


def test_a_socket_is_in_its_directory_unless_that_path_is_too_long(tmp_path: Path) -> None:
    with contextlib.ExitStack() as cleanup:
        assert socket_path(tmp_path, "x.sock", cleanup) == tmp_path.resolve() / "x.sock"
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    with contextlib.ExitStack() as cleanup:
        path = socket_path(deep, "x.sock", cleanup)
        assert len(os.fsencode(path)) < SOCKET_PATH_MAX
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700  # this user's alone
        private = path.parent
        with listen(path, 1) as listener, socket.socket(socket.AF_UNIX) as client:
            client.connect(str(path))  # the path is one a socket can have
            listener.accept()[0].close()
    assert not private.exists()  # removed on exit


def test_a_listening_socket_is_its_user_s_alone_and_replaces_a_stale_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sub" / "x.sock"
    old = os.umask(0)  # the widest mode a bind could give the file
    try:
        with listen(path, 1):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
        with listen(path, 1):  # the earlier socket's file is still there
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        os.umask(old)
