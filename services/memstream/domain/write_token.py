"""Write tokens: where in the turns log a published message sits, bound to its user.

A producer that publishes a turn gets back a token naming the record's partition and offset;
a read that passes it waits until the segmenter has committed past that record. The token is
opaque to callers; inside, after the version prefix `mst1.`, it is base64url (no padding) of

    partition (u16) | offset (u64) | issued, ms since the epoch (u64) | user digest (8 bytes)
    | MAC (16 bytes)

A record of a tenant's turns topic (`MEMSTREAM_TURNS_TOPIC_PER_TENANT`), where the same
partition number is in several topics, gets `mst2.` instead, and its body the first 8 bytes of
SHA-256 of the topic's name after the user digest. The shared topic's tokens stay `mst1.`, byte
for byte. A read compares the token's topic with the one the reader routes its user to: a
token of another topic (the tenants' list changed since it was issued, or the producer and
the reader were given different lists) is refused as `moved`, never compared with a mark of
the wrong topic.

The user digest (SHA-256 of the user id) lets a read refuse another user's token with that
reason; the MAC (HMAC-SHA-256 over the rest and the user id) is keyed with the deployment's
write-token key, so without the key no one can forge a token or move one to a later offset.
With no key configured both sides use the empty key: the MAC is then a checksum, which
still turns a mangled or hand-made token into a refusal instead of a wait.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
from dataclasses import dataclass

PREFIX = "mst1."
TOPIC_PREFIX = "mst2."  # a record of a tenant's turns topic
_BODY = struct.Struct(">HQQ8s")
_TOPIC = struct.Struct(">8s")
_MAC_BYTES = 16
# A token issued this far past the reader's clock is refused: clocks disagree, not by this.
FUTURE_SKEW_MS = 5 * 60 * 1000


@dataclass(frozen=True, slots=True)
class WritePosition:
    """A record of the turns topic: what a write token names. `topic`: a tenant's turns
    topic (`contracts.tenant_topics`); None, the shared one."""

    partition: int
    offset: int
    issued_ms: int
    topic: str | None = None


class BadWriteToken(ValueError):
    """A token a read must refuse; `reason` is one of `malformed`, `forged`, `other_user`,
    `moved`, `future`, `stale`."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        super().__init__(detail)


def _digest(user_id: str) -> bytes:
    return hashlib.sha256(user_id.encode()).digest()[:8]


def _mac(key: bytes, body: bytes, user_id: str) -> bytes:
    return hmac.new(key, body + user_id.encode(), hashlib.sha256).digest()[:_MAC_BYTES]


def _topic_digest(topic: str) -> bytes:
    return hashlib.sha256(topic.encode()).digest()[:8]


def issue(user_id: str, position: WritePosition, key: bytes = b"") -> str:
    body = _BODY.pack(position.partition, position.offset, position.issued_ms, _digest(user_id))
    prefix = PREFIX
    if position.topic is not None:
        body += _TOPIC.pack(_topic_digest(position.topic))
        prefix = TOPIC_PREFIX
    raw = body + _mac(key, body, user_id)
    return prefix + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def verify(
    token: str,
    user_id: str,
    *,
    now_ms: int,
    max_age_ms: int,
    key: bytes = b"",
    topic: str | None = None,
) -> WritePosition:
    """The position a token names, once it is shown to be this user's, genuine, of `topic`
    (the user's turns topic as the reader routes it; None: the shared one) and current."""
    if token.startswith(PREFIX):
        encoded, body_size = token[len(PREFIX) :], _BODY.size
    elif token.startswith(TOPIC_PREFIX):
        encoded, body_size = token[len(TOPIC_PREFIX) :], _BODY.size + _TOPIC.size
    else:
        raise BadWriteToken("malformed", f"a write token starts with {PREFIX!r}")
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        raise BadWriteToken("malformed", "not base64url") from None
    if len(raw) != body_size + _MAC_BYTES:
        raise BadWriteToken("malformed", "wrong length")
    body, mac = raw[:body_size], raw[body_size:]
    partition, offset, issued_ms, digest = _BODY.unpack(body[: _BODY.size])
    if not hmac.compare_digest(digest, _digest(user_id)):
        raise BadWriteToken("other_user", "the token was issued for another user")
    if not hmac.compare_digest(mac, _mac(key, body, user_id)):
        raise BadWriteToken("forged", "the signature does not match")
    named = body[_BODY.size :] or None  # the token's topic digest; None: the shared topic
    if named != (_topic_digest(topic) if topic is not None else None):
        raise BadWriteToken(
            "moved",
            "issued for a record of another turns topic than the user's now "
            "(the list of tenants' turns topics changed, or differs from the producer's)",
        )
    if issued_ms > now_ms + FUTURE_SKEW_MS:
        raise BadWriteToken("future", "issued in the future")
    if now_ms - issued_ms > max_age_ms:
        raise BadWriteToken("stale", "older than the turns topic keeps its records")
    return WritePosition(partition, offset, issued_ms, topic)


@dataclass(frozen=True, slots=True)
class HeldMessages:
    """A user's messages the window state holds back, not yet in a memory, by why: waiting
    for the reply they will be written with (the exchange rule), or for a turn of their
    session with an earlier `seq` (taken in `seq` order, `domain.reorder`)."""

    awaiting_reply: tuple[str, ...] = ()
    awaiting_earlier_seq: tuple[str, ...] = ()
