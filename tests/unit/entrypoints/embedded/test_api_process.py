"""`memstream up` with its API apart: the child's environment and the stack's exit code."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from unittest import mock

from memstream.entrypoints.embedded.api_process import api_environment, exit_code
from memstream.settings import Settings


def test_the_stack_exits_with_its_api_process_s_code() -> None:
    assert exit_code(3) == 3
    assert exit_code(-signal.SIGKILL) == 128 + signal.SIGKILL  # as a shell reports it
    assert exit_code(0) == 1  # it was not asked to stop: a failure all the same
    assert exit_code(None) == 1


def test_the_api_process_gets_the_stack_s_endpoints_and_the_index_socket(
    tmp_path: Path,
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        kafka_bootstrap="127.0.0.1:9",
        redis_url="redis://127.0.0.1:7/0",
        api_port=8123,
        recall_auth_disabled=True,
        kafka_read_back_skipped=True,
        up_api_process=True,
    )
    env = api_environment(settings, tmp_path / "index.sock")
    assert env["MEMSTREAM_INDEX_SERVER"] == str(tmp_path / "index.sock")
    assert env["MEMSTREAM_UP_API_PROCESS"] == "false"  # the child runs no stack of its own
    read = _read_as_settings(env)
    assert read.broker.bootstrap == "127.0.0.1:9" and read.redis.url == "redis://127.0.0.1:7/0"
    assert read.api.port == 8123 and read.api.auth_disabled
    assert read.broker.read_back_skipped and read.data_dir == tmp_path
    assert read.handoff.index_server == tmp_path / "index.sock"
    assert read.api.workers == 1
    assert not read.api.up_api_process


def _read_as_settings(env: dict[str, str]) -> Settings:
    """Settings as the child reads them from its environment."""
    with mock.patch.dict(os.environ, env, clear=True):
        return Settings()
