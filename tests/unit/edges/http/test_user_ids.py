"""One user-id rule for the stream and the API (issues 12 and 15): the topics' schemas and
the API's models accept exactly the same ids, and every accepted id can be addressed as a
URL path segment."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from memstream.contracts.catalog import load_catalog
from memstream.edges.http.schemas import USER_ID_PATTERN, RecallRequestBase

TOPICS = Path(__file__).resolve().parents[4] / "topics"
CATALOG = load_catalog()


def user_id_patterns() -> list[str]:
    found = []
    for path in sorted(TOPICS.glob("*.json")):
        for schema in json.loads(path.read_text()).get("values", {}).values():
            user_id = schema["properties"].get("user_id")
            if user_id is not None:
                found.append(user_id["pattern"])
    return found


def stream_accepts(user_id: str) -> bool:
    return not CATALOG.validate(None, {"type": "forget.v1", "user_id": user_id})


def api_accepts(user_id: str) -> bool:
    try:
        RecallRequestBase(user_id=user_id, query="q")
    except ValidationError:
        return False
    return True


def test_every_topic_states_the_api_pattern() -> None:
    patterns = user_id_patterns()
    assert len(patterns) >= 7
    assert set(patterns) == {USER_ID_PATTERN}


def test_the_pattern_refuses_every_character_python_calls_whitespace() -> None:
    # Spelled without `\s` (which differs between regex dialects), it still covers it.
    allowed = re.compile(USER_ID_PATTERN)
    spaces = [chr(c) for c in range(0x110000) if re.match(r"\s", chr(c))]
    assert spaces and not any(allowed.match(f"a{s}b") for s in spaces)


def test_python_and_ecma_engines_read_the_pattern_alike() -> None:
    # jsonschema_rs is the ECMA-dialect validator schemathesis and many clients use; Python's
    # `re` is the stream's and the API's. They agree on every character.
    ecma = jsonschema_rs.validator_for({"type": "string", "pattern": USER_ID_PATTERN})
    python = re.compile(USER_ID_PATTERN)
    scalars = (chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert [c for c in scalars if ecma.is_valid(f"a{c}") != bool(python.match(f"a{c}"))] == []


@pytest.mark.parametrize(
    "user_id",
    [".", "..", "a/b", "a b", "a\tb", "u1\n", "{a}", "\x00", "\x7f", "\u2028", "\ud800", ""],
)
def test_ids_no_route_can_address_are_refused_by_both(user_id: str) -> None:
    assert not stream_accepts(user_id) and not api_accepts(user_id)


@pytest.mark.parametrize("user_id", ["u1", "...", "a.b", "é", "用户", "😀", "a|b", "x" * 128])
def test_ordinary_ids_are_accepted_by_both(user_id: str) -> None:
    assert stream_accepts(user_id) and api_accepts(user_id)


odd_ids = st.one_of(
    st.text(min_size=1, max_size=8),
    st.text(alphabet=st.characters(codec=None), min_size=1, max_size=4),  # surrogates too
    st.sampled_from([".", "..", "/", "{", "}", " ", "\ufeff", "\u3000"]).flatmap(
        lambda c: st.text(max_size=2).map(lambda t: t + c)
    ),
)


@given(odd_ids)
def test_the_stream_and_the_api_agree_on_any_id(user_id: str) -> None:
    accepted = stream_accepts(user_id)
    assert accepted == api_accepts(user_id)
    if accepted:
        # An id that can be written can be read back through /v1/users/{user_id}/...
        segment = quote(user_id, safe="")
        assert segment not in (".", "..") and "/" not in segment
