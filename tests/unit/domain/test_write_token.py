"""Write tokens: a position bound to its user, refused with a reason when it is not genuine."""

from __future__ import annotations

import base64

import pytest

from memstream.domain.write_token import (
    FUTURE_SKEW_MS,
    PREFIX,
    BadWriteToken,
    WritePosition,
    issue,
    verify,
)

NOW_MS = 1_750_000_000_000
DAY_MS = 24 * 3600 * 1000
KEY = b"deployment key"
POSITION = WritePosition(partition=4, offset=123_456_789, issued_ms=NOW_MS)


def check(
    token: str, user: str = "ann", *, key: bytes = KEY, now_ms: int = NOW_MS
) -> WritePosition:
    return verify(token, user, now_ms=now_ms, max_age_ms=8 * DAY_MS, key=key)


def reason(token: str, **kwargs: object) -> str:
    with pytest.raises(BadWriteToken) as refused:
        check(token, **kwargs)  # type: ignore[arg-type]
    return refused.value.reason


def test_a_token_gives_back_the_position_it_was_issued_for() -> None:
    token = issue("ann", POSITION, KEY)
    assert token.startswith(PREFIX) and "=" not in token
    assert check(token) == POSITION


def test_a_token_of_another_user_is_refused_as_such() -> None:
    assert reason(issue("bo", POSITION, KEY)) == "other_user"


def test_a_token_signed_with_another_key_is_forged() -> None:
    assert reason(issue("ann", POSITION, b"guessed")) == "forged"
    assert reason(issue("ann", POSITION)) == "forged"  # unsigned, read by a keyed deployment


def test_a_token_moved_to_a_later_offset_is_forged() -> None:
    raw = bytearray(base64.urlsafe_b64decode(issue("ann", POSITION, KEY)[len(PREFIX) :] + "="))
    raw[9] ^= 0x01  # a bit of the offset
    moved = PREFIX + base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    assert reason(moved) == "forged"


@pytest.mark.parametrize(
    "token", ["", "mst1.", "mst1.!!!", "mst2." + "A" * 64, "mst1.AAAA", "mst1." + "A" * 90]
)
def test_anything_else_is_malformed(token: str) -> None:
    assert reason(token) == "malformed"


def test_a_token_from_the_future_or_past_the_logs_retention_is_refused() -> None:
    future = WritePosition(4, 1, NOW_MS + FUTURE_SKEW_MS + 1)
    assert reason(issue("ann", future, KEY)) == "future"
    old = WritePosition(4, 1, NOW_MS - 9 * DAY_MS)
    assert reason(issue("ann", old, KEY)) == "stale"
    assert check(issue("ann", WritePosition(4, 1, NOW_MS + 1000), KEY)).offset == 1  # skew


def test_without_a_key_the_token_is_still_checked() -> None:
    token = issue("ann", POSITION)
    assert check(token, key=b"") == POSITION
    assert reason(token[:-2] + ("AA" if not token.endswith("AA") else "BB"), key=b"") == "forged"


ACME = "memstream.turns.v1.acme"


def test_a_token_of_a_tenants_topic_names_it_and_gives_back_its_position() -> None:
    position = WritePosition(4, 17, NOW_MS, topic=ACME)
    token = issue("acme:ann", position, KEY)
    assert token.startswith("mst2.")
    read = verify(token, "acme:ann", now_ms=NOW_MS, max_age_ms=DAY_MS, key=KEY, topic=ACME)
    assert read == position


@pytest.mark.parametrize(
    ("issued_for", "read_as"),
    [
        (None, ACME),  # issued before the tenant got its topic
        (ACME, None),  # issued before the tenant was taken off the list
        (ACME, "memstream.turns.v1.globex"),
    ],
)
def test_a_token_of_another_topic_than_the_readers_is_refused_as_moved(
    issued_for: str | None, read_as: str | None
) -> None:
    token = issue("acme:ann", WritePosition(4, 17, NOW_MS, issued_for), KEY)
    with pytest.raises(BadWriteToken) as refused:
        verify(token, "acme:ann", now_ms=NOW_MS, max_age_ms=DAY_MS, key=KEY, topic=read_as)
    assert refused.value.reason == "moved"


def test_a_tenants_token_with_its_topic_edited_is_forged() -> None:
    token = issue("acme:ann", WritePosition(4, 17, NOW_MS, ACME), KEY)
    raw = bytearray(base64.urlsafe_b64decode(token[len("mst2.") :] + "=="))
    raw[27] ^= 0x01  # a bit of the topic's digest
    edited = "mst2." + base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    with pytest.raises(BadWriteToken) as refused:
        verify(edited, "acme:ann", now_ms=NOW_MS, max_age_ms=DAY_MS, key=KEY, topic=ACME)
    assert refused.value.reason == "forged"
