"""Hypothesis strategies for records a hostile or careless producer could publish.

Schema-aware: valid turns (some of them stored, some in the far future), almost-valid ones
(one field wrong), odd user ids, lone surrogates, deep nesting, extreme timestamps, random
bytes and originals up to the broker's default message limit. Shared by the fast suite (on
the edge functions) and the integration suite (a real broker and worker).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

ODD_USERS = [".", "..", "a/b", "ü", "😀", "a\ud800", "\udfff", "", "a b", "{x}", "x" * 129]
USERS = st.one_of(st.sampled_from(["ana", "mira", "jo"]), st.sampled_from(ODD_USERS))
OFFSETS = ["Z", "+00:00", "+02:00", "-23:59", "+14:00", "+99:99", ""]
EXTREME_YEARS = [1, 1899, 1900, 1970, 2199, 2200, 2999, 9999]


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    """Plausible past times, mostly; extreme years, odd offsets and impossible dates too."""
    plausible = draw(st.booleans())
    year = draw(st.integers(2020, 2025) if plausible else st.sampled_from(EXTREME_YEARS))
    month = draw(st.integers(1, 12) if plausible else st.integers(0, 13))
    day = draw(st.integers(1, 28) if plausible else st.integers(0, 31))
    hour, minute = draw(st.integers(0, 23)), draw(st.integers(0, 59))
    offset = draw(st.sampled_from(OFFSETS[:3] if plausible else OFFSETS))
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:00{offset}"


TEXTS = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["lone \ud800 high", "\udfff", "pair \ud83d\ude00 ok", "x" * 16_001]),
)
JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10))
METADATA = st.one_of(
    st.dictionaries(st.text(max_size=10), JSON_LEAVES, max_size=5),
    st.integers(1, 60).map(lambda depth: json.loads('{"a":' * depth + "1" + "}" * depth)),
)


@st.composite
def turns(draw: st.DrawFn, users: st.SearchStrategy[str] = USERS) -> dict[str, Any]:
    session = draw(st.sampled_from(["s1", "s2", "s3"]))
    role = draw(st.sampled_from(["user", "assistant", "other"]))
    value: dict[str, Any] = {
        "type": "turn.v1",
        "event_id": draw(st.sampled_from(["e1", "e2", "e3"]) | st.uuids().map(str)),
        "user_id": draw(users),
        "session_id": session,
        "seq": draw(st.integers(0, 50)),
        "speaker": role.title(),
        "role": role,
        "text": draw(TEXTS),
        "ts": draw(timestamps()),
    }
    if draw(st.booleans()):
        value["tz"] = draw(st.sampled_from(["Europe/Paris", "UTC", "Mars/Olympus", "Etc/GMT+12"]))
    if draw(st.booleans()):
        value["metadata"] = draw(METADATA)
    return value


@st.composite
def almost_valid(draw: st.DrawFn) -> dict[str, Any]:
    """A turn with one field missing, of the wrong type, or one field too many."""
    value = draw(turns())
    field = draw(st.sampled_from(sorted(value)))
    change = draw(st.sampled_from(["drop", "retype", "extra"]))
    if change == "drop":
        del value[field]
    elif change == "retype":
        value[field] = draw(st.sampled_from([None, 5, 1.5, [], {}, True, "", "NaN"]))
    else:
        value["unexpected"] = draw(JSON_LEAVES)
    return value


def encoded(value: dict[str, Any]) -> bytes:
    """As a producer's JSON library writes it: lone surrogates become \\ud800 escapes."""
    return json.dumps(value).encode()


COMMANDS = st.one_of(
    st.builds(
        lambda user, ts: {"type": "session_end.v1", "user_id": user, "session_id": "s1", "ts": ts},
        USERS,
        timestamps(),
    ),
    st.builds(
        lambda user, ts: {"type": "tick.v1", "user_id": user, "now": ts}, USERS, timestamps()
    ),
)
RAW_BYTES = st.one_of(
    st.binary(max_size=300),
    st.integers(1, 200_000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(1, 200_000).map(lambda depth: b'{"user_id":"ana","a":' + b"[" * depth),
    st.just(b'{"type": "turn.v1", "seq": NaN}'),
)
# Sizes around the broker's default 1 MiB message limit (a dead letter must still fit).
OVERSIZE = st.sampled_from([790_000, 1_000_000]).map(
    lambda size: b'{"type":"turn.v1","user_id":"ana","text":"' + b"x" * size + b'"}'
)


def records(*, oversize: bool = True) -> st.SearchStrategy[bytes]:
    """Any record, valid or not, as the bytes on the topic."""
    shaped = st.one_of(turns(), almost_valid(), COMMANDS).map(encoded)
    options = [shaped, shaped, RAW_BYTES] + ([OVERSIZE] if oversize else [])
    return st.one_of(*options)
