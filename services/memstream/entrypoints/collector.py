"""The cyclic garbage collector of memstream's long-running processes (API and workers).

Python collects generation 0 after 700 net allocations of container objects. A recall
request or a batch of turns allocates thousands (decoded records, nodes' lists and dicts,
coroutines, futures), almost all freed by reference counting, so at 700 the collector ran
several times a request or a batch, and its older generations walk every object the process
holds: the decoded-node cache in the API, the model client, Faust's and aiokafka's state in
a worker. In the API that cost about 1 ms of CPU a request at 50 clients (a sixth of it); in
the process of the ingest benchmark (the write path, 2,760 messages, the embedder alone
twice), 0.5 s against 0.1 s so tuned (`python -m memstream_lab.bench.ingest`): small
beside the loop's 1.7 s over the same messages, and a worker's heap only grows with its
caches and its partitions.

So both kinds of process collect generation 0 after 50,000 net allocations, and once they
run, what start-up built (modules, the apps, the clients, the loaded model's client) is
frozen out of every collection (`gc.freeze`): it lives as long as the process. Garbage
without cycles is freed at once as before; cycles wait longer, which costs memory only in
proportion to the 50,000.
"""

from __future__ import annotations

import gc

LONG_RUNNING_THRESHOLDS = (50_000, 20, 100)


def collect_less_often() -> None:
    """Set this process's collector for serving (call before the parts start)."""
    gc.set_threshold(*LONG_RUNNING_THRESHOLDS)


def freeze_start_up() -> None:
    """Keep what start-up built out of every later collection (call once the parts run)."""
    gc.freeze()
