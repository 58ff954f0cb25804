"""Property-based API testing from the served OpenAPI spec: no 5xx, responses match it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from memstream.edges.http.server import BackgroundServer
from memstream.settings import Settings

from .trees import container_of, module_settings, served, user_tree, write_nodes

KEY = "schemathesis-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
# Bounded so the whole module runs in well under a minute on 2 cores.
EXAMPLES_PER_OPERATION = 30


@pytest.fixture(scope="module")
def server(
    stack_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BackgroundServer]:
    config = module_settings(
        stack_settings,
        tmp_path_factory.mktemp("schemathesis"),
        embedder="hashing",
        recall_api_keys=[SecretStr(KEY)],
    )
    with served(config) as running:
        container = container_of(running)
        nodes = user_tree("user", [["hiking paris", "dance"], ["pottery chess garden"]])
        running.call(lambda: write_nodes(container, nodes))
        yield running


def test_every_operation_honours_the_served_spec(server: BackgroundServer) -> None:
    # Operations are driven one by one with hypothesis: schemathesis' lazy pytest fixture
    # (`from_fixture`) does not work with the pytest this project uses.
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 8

    for operation in operations:
        # Valid and invalid input; paths naming the user that has memories, and random ones.
        strategies = [
            operation.as_strategy(GenerationMode.POSITIVE),
            operation.as_strategy(GenerationMode.NEGATIVE),
        ]
        if "{user_id}" in operation.path:
            strategies.append(operation.as_strategy(path_parameters={"user_id": "user"}))

        @given(case=st.one_of(strategies))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        )
        def honours_spec(case: schemathesis.Case) -> None:
            case.call_and_validate(
                base_url=server.url,
                headers=AUTH,
                checks=[not_a_server_error, response_schema_conformance],
                timeout=30,
            )

        honours_spec()
