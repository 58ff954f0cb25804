"""Property-based API testing from the served OpenAPI spec: no 5xx, and the server keeps
the spec's contract (documented status codes and content types, responses that match their
schemas, invalid input refused, valid input accepted).

Besides schemathesis' own generation, hostile cases built here: dates at the ends of the
calendar with extreme offsets, lone surrogates, huge strings and odd user ids.
`MEMSTREAM_FUZZ_EXAMPLES` sets the examples per operation and strategy (30 by default, so
the module runs in about a minute on 2 cores; 5,000 cases in all need about 210).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlencode

import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memstream.edges.http.server import BackgroundServer
from memstream.settings import Settings

from .knowledge_contract import BERLIN, MADRID, PORTO, write
from .trees import container_of, module_settings, served, user_tree, write_nodes

KEY = "schemathesis-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
EXAMPLES = int(os.environ.get("MEMSTREAM_FUZZ_EXAMPLES", "30"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_acceptance,
]

# Operations whose invalid bodies are mostly over the size limit (501 records of any shape):
# refused with 413 before they are read, a status schemathesis does not count as a rejection.
LIMITED_BEFORE_VALIDATED = {"/v1/feed:open"}

# Operations taking a cursor or write tokens, which only the server (or a producer) issues.
OPAQUE_INPUT = {
    "/v1/users",
    "/v1/recall",
    "/v1/users/{user_id}/memories",
    "/v1/users/{user_id}/profile",
    "/v1/memories/{memory_id}",
    "/v1/users/{user_id}/facts",
    "/v1/users/{user_id}/entities",
    "/v1/users/{user_id}/entities/{entity}",
}

# --- hostile values -------------------------------------------------------------------

OFFSETS = ["Z", "+00:00", "-14:00", "+14:00", "-23:59", "+23:59", "+05:45"]
extreme_dates = st.builds(
    lambda date, time, offset: f"{date}T{time}{offset}",
    st.sampled_from(["9999-12-31", "9999-12-30", "0001-01-01", "0001-01-02", "0001-06-01"])
    | st.dates().map(str),
    st.sampled_from(["00:00:00", "12:00:00", "23:59:59", "23:59:59.999999"]),
    st.sampled_from(OFFSETS),
)
surrogates = st.sampled_from(["\ud800", "\udfff", "a\udbff", "\udc00z"])


def odd_texts(longest: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=30),
        surrogates,
        st.builds(lambda a, s, b: a + s + b, st.text(max_size=5), surrogates, st.text(max_size=5)),
        st.integers(min_value=3_000, max_value=longest).map(lambda n: "x" * n),  # huge
        st.sampled_from(["\x00", "\u2028", "\ufeff", "%00", "../..", "{x}", "a|b", "*", "\\"]),
    )


# Bodies up to 200 kB (over the body limit: 413). A request head over 16 KiB is refused by
# the HTTP parser itself (400, connection closed), so paths and queries stay under that:
# each value is at most 8,000 characters, and a case whose values add up to more is not sent
# (`head_fits`; the facts route takes three such values, the memories route two).
HEAD_LIMIT = 16 * 1024
odd_text = odd_texts(200_000)
odd_url_text = odd_texts(8_000)
ODD_IDS = [".", "..", "...", "a/b", "%2F", "a b", "{u}", "user", "\u00a0", "😀"]
odd_user_ids = st.sampled_from(ODD_IDS) | odd_text
odd_url_ids = st.sampled_from(ODD_IDS) | odd_url_text


def segment(value: str) -> str:
    """`value` encoded as one URL path segment, as a client must send it (hand-built cases
    reach the wire as they are): dots as %2E, lest the client resolve them as dot segments."""
    if value in (".", ".."):
        return "%2E" * len(value)
    return quote(value, safe="", errors="surrogatepass")  # a surrogate as its raw bytes


def query_value(value: str) -> str | bytes:
    """A lone surrogate cannot be written as UTF-8: sent as its raw bytes, as a careless
    client would (the server decodes them as replacement characters)."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


# An empty segment changes the route (404/405 are then right): a path holds at least a char.
path_ids = odd_url_ids.filter(bool).map(segment)
TIME_WORDS = ["yesterday", "last year", "last week", "this month", "three years ago", ""]


def hostile_cases(operation: Any) -> st.SearchStrategy[Any] | None:
    """Cases built by hand for each operation, or None for those without input."""
    path = operation.path
    if path == "/v1/recall":
        return st.builds(
            lambda user, words, text, when, complexity, tokens, explain: operation.Case(
                body={
                    "user_id": user,
                    "query": f"what happened {words} {text}".strip(),
                    "query_time": when,
                    "complexity": complexity,
                    "max_tokens": tokens,
                    "explain": explain,
                }
            ),
            st.sampled_from(["user"]) | odd_user_ids,
            st.sampled_from(TIME_WORDS),
            odd_text,
            extreme_dates | odd_text | st.integers() | st.none(),
            st.sampled_from(["auto", "simple", "hybrid", "complex"]) | odd_text,
            st.integers(min_value=-5, max_value=20_000) | st.none(),
            st.booleans(),  # the trace of an explained recall is held to its schema too
        )
    if path == "/v1/users":
        return st.builds(
            lambda prefix, cursor: operation.Case(
                query={k: v for k, v in (("prefix", prefix), ("cursor", cursor)) if v}
            ),
            st.sampled_from(["u", "us", "user", "*", "[u"]) | odd_url_text.map(query_value),
            odd_url_text.map(query_value) | st.none(),
        )
    if path == "/v1/users/{user_id}/memories":
        return st.builds(
            lambda user, start, end, cursor: operation.Case(
                path_parameters={"user_id": user},
                query={k: v for k, v in (("start", start), ("end", end), ("cursor", cursor)) if v},
            ),
            st.just("user") | path_ids,
            extreme_dates | odd_url_text.map(query_value) | st.none(),
            extreme_dates | st.none(),
            odd_url_text.map(query_value) | st.none(),
        )
    if path == "/v1/users/{user_id}/facts":
        return st.builds(
            lambda user, at, subject, history: operation.Case(
                path_parameters={"user_id": user},
                query={
                    k: v
                    for k, v in (("at", at), ("subject", subject), ("history", history))
                    if v is not None
                },
            ),
            st.just("user") | path_ids,
            extreme_dates | odd_url_text.map(query_value) | st.none(),
            st.sampled_from(["Maya", "speaker:maya", "Maya's brother", "<b>Maya</b>"])
            | odd_url_text.map(query_value)
            | st.none(),
            st.sampled_from(["true", "false", "1", "yes", ""]) | st.none(),
        )
    if path == "/v1/memories/{memory_id}":
        return st.builds(
            lambda memory, user: operation.Case(
                path_parameters={"memory_id": memory}, query={"user_id": user}
            ),
            odd_url_text.filter(bool).map(segment),
            st.just("user") | odd_url_ids.map(query_value),
        )
    if "{user_id}" in path:
        others = other_path_names(path)
        return st.builds(
            lambda user, values: operation.Case(
                path_parameters={"user_id": user, **dict(zip(others, values, strict=True))}
            ),
            path_ids,
            st.tuples(*[path_ids for _ in others]),
        )
    return None


def other_path_names(path: str) -> list[str]:
    """The path's parameters besides the user id (a message id, say)."""
    return [name for name in re.findall(r"{(\w+)}", path) if name != "user_id"]


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
        # Facts and entities for the known user, so the knowledge routes answer with some.
        said = [replace(n, user_id="user") for n in (PORTO, BERLIN, MADRID)]
        running.call(lambda: write(container.tree, *said, user="user"))
        yield running


def vanishes_on_the_wire(case: schemathesis.Case) -> bool:
    """Whether a query parameter of the case is not sent at all: None, an empty list or
    object, or a list of them has no encoding in a query string, so a negative case resting
    on it (an unknown parameter `"": []`, a cursor `[[]]`, say) reaches the server as the
    valid request it is without it."""
    return any(_empty(value) for value in (case.query or {}).values())


def _empty(value: Any) -> bool:
    if isinstance(value, list):
        return all(_empty(v) for v in value)
    if isinstance(value, dict):
        return all(_empty(v) for v in value.values())
    return value is None


# Headers that frame the request itself: with a value no HTTP client sends there
# ("Content-Length: TuT3~>zeD", from a negative case's extra headers) the server's HTTP
# parser refuses the request (400) before any route sees it.
FRAMING_HEADERS = {"content-length", "transfer-encoding", "host", "connection", "expect"}


def frames_whole(case: schemathesis.Case) -> bool:
    """Whether the case leaves the headers that frame the request to the client."""
    return FRAMING_HEADERS.isdisjoint(name.lower() for name in (case.headers or {}))


def head_fits(case: schemathesis.Case) -> bool:
    """Whether the request line of the case stays under the parser's head limit, with a
    kilobyte left for the headers."""
    path = len(case.path) + sum(len(str(v)) for v in (case.path_parameters or {}).values())
    try:
        query = len(urlencode(case.query or {}, doseq=True))
    except TypeError:  # a negative case's query of a shape no client can encode: sent as is
        return True
    return path + query < HEAD_LIMIT - 1024


def fuzz(
    server: BackgroundServer,
    strategies: list[st.SearchStrategy[Any]],
    checks: list[Any],
    statuses: dict[int, int],
) -> None:
    """Run EXAMPLES cases per strategy through `checks`, counting responses by status."""

    @given(case=st.one_of(strategies))
    @settings(
        max_examples=EXAMPLES * len(strategies),
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def honours_spec(case: schemathesis.Case) -> None:
        assume(not vanishes_on_the_wire(case))
        assume(head_fits(case))
        assume(frames_whole(case))
        response = case.call_and_validate(
            base_url=server.url, headers=AUTH, checks=checks, timeout=30
        )
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    honours_spec()


def test_every_operation_honours_the_served_spec(server: BackgroundServer) -> None:
    # Operations are driven one by one with hypothesis: schemathesis' lazy pytest fixture
    # (`from_fixture`) does not work with the pytest this project uses.
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    # Every route of the app, so a new route is fuzzed as soon as it exists.
    assert len(operations) == 22
    statuses: dict[int, int] = {}

    for operation in operations:
        # Valid and invalid input; paths naming the user that has memories, random ones,
        # and the hostile values above.
        strategies = [
            operation.as_strategy(GenerationMode.POSITIVE),
            operation.as_strategy(GenerationMode.NEGATIVE),
        ]
        if "{user_id}" in operation.path:
            known = {"user_id": "user", **dict.fromkeys(other_path_names(operation.path), "m1")}
            strategies.append(operation.as_strategy(path_parameters=known))
        hostile = hostile_cases(operation)
        if hostile is not None:
            strategies.append(hostile)

        # A cursor and a write token (`after`) are opaque: a schema-valid string the server
        # did not issue is refused (422), so only there valid-looking input may be rejected.
        checks = CHECKS
        if operation.path in OPAQUE_INPUT:
            checks = [check for check in CHECKS if check is not positive_data_acceptance]
        if operation.path in LIMITED_BEFORE_VALIDATED:
            checks = [check for check in checks if check is not negative_data_rejection]

        fuzz(server, strategies, checks, statuses)

    cases = sum(statuses.values())
    print(f"schemathesis: {cases} cases, responses by status {dict(sorted(statuses.items()))}")
    assert not [status for status in statuses if status >= 500]
    assert cases >= EXAMPLES * len(operations)
