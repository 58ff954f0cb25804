"""One embedded stack for the whole integration run; each test gets its own topics.

Fixtures:
- `embedded_stack` (session): the running `EmbeddedStack` (`.endpoints`, `.settings()`).
- `stack_settings` (session): settings pointing at it, no topic prefix, no topics created.
- `settings` (per test): unique topic prefix (topics created), consumer group and Qdrant
  collection, so tests never see each other's data.
- `catalog` (per test): the topic catalog with that prefix.
- `redis_cluster` (session): a real three-primary Redis Cluster (`redis_cluster.py`), started
  by the first test that asks for it; a module runs on it too with `redis_cluster.on_layout`.

MEMSTREAM_KAFKA_BOOTSTRAP / _REDIS_URL / _QDRANT_URL still switch a part to a real server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstream.adapters.kafka.admin import ensure_topics
from memstream.contracts.catalog import Catalog, load_catalog
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.settings import Settings

from .redis_cluster import RedisClusterNodes, running_cluster

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything in this directory needs the stack: mark it so `-m "not integration"` works
    # even where a module forgets its pytestmark.
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def embedded_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedStack]:
    # In a thread with its own loop, so it suits tests on any event-loop scope. Topics are
    # per test (below), so the session stack creates none, not even on a real broker.
    settings = Settings(data_dir=tmp_path_factory.mktemp("stack"))
    with BackgroundStack(settings, create_topics=False) as stack:
        yield stack


@pytest.fixture(scope="session")
def stack_settings(embedded_stack: EmbeddedStack) -> Settings:
    return embedded_stack.settings()


@pytest.fixture
async def settings(stack_settings: Settings) -> Settings:
    uid = uuid.uuid4().hex[:12]
    unique = stack_settings.model_copy(
        update={
            "topic_prefix": f"test-{uid}.",
            "consumer_group": f"memstream-test-{uid}",
            "qdrant_collection": f"memstream_test_{uid}",
            "redis_namespace": f"test-{uid}",
        }
    )
    await ensure_topics(unique.broker.bootstrap, load_catalog(unique.broker.topic_prefix).topics)
    return unique


@pytest.fixture
def catalog(settings: Settings) -> Catalog:
    return load_catalog(settings.broker.topic_prefix)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterNodes]:
    """A real three-primary Redis Cluster (Debian's redis-server) for the whole run."""
    with running_cluster(tmp_path_factory.mktemp("redis-cluster")) as nodes:
        yield nodes
