"""The sealed envelope: a record carrying a user's words, encrypted under that user's data key.

memstream's own topics keep what they carry for their retention, and a forget cannot edit a
log. So the values that hold a user's words (a memory's text, a fact, a dead letter's
original bytes) travel sealed: the whole value, as JSON, encrypted with AES-256-GCM under
the user's data key, inside a `sealed.v1` value that says only whose it is and what type it
hides. A forget deletes the key, and every sealed copy of the user in every log becomes
unreadable at once (docs/forget-everywhere.md).

    {"type": "sealed.v1", "user_id": "u1", "sealed_type": "memory.v1", "v": 1,
     "nonce": "<base64, 12 bytes>", "ciphertext": "<base64: the value, then the 16-byte tag>"}

(`sealed_letter.v1` on the dead-letter topic: a type names one topic's values.) The
associated data binds the ciphertext to its envelope type, user and type: a record moved
under another user or topic, or relabelled, fails to open instead of opening as the other.
`v` names the format; a reader refuses a version it does not know rather than guess.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Collection, Mapping
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SEALED_TYPE = "sealed.v1"  # on the memories topic
SEALED_LETTER_TYPE = "sealed_letter.v1"  # on the dead-letter topic (types are unique)
ENVELOPE_TYPES = frozenset({SEALED_TYPE, SEALED_LETTER_TYPE})
ENVELOPE_VERSION = 1
KEY_BYTES = 32  # AES-256
NONCE_BYTES = 12  # random per record: 2^-32 collision odds only after 2^32 records per key

# The values that carry a user's words, by topic role. Everything else on these topics holds
# ids, times and counts only, and travels as it is (a consumer that only removes what was
# forgotten never needs a key).
SEALED_MEMORY_TYPES = frozenset({"memory.v1", "fact.v1", "fact_superseded.v1", "fact_reopened.v1"})
SEALED_LETTER_TYPES = frozenset({"dead_letter.v1"})


class EnvelopeError(ValueError):
    """A sealed value that cannot be opened with the key given: damaged, altered, moved to
    another user or type, or of a format version this reader does not know."""


def new_data_key() -> bytes:
    return AESGCM.generate_key(bit_length=KEY_BYTES * 8)


def is_sealed(value: Mapping[str, Any]) -> bool:
    return value.get("type") in ENVELOPE_TYPES


def _associated(envelope_type: str, user_id: str, sealed_type: str) -> bytes:
    return f"memstream/{envelope_type}/{user_id}/{sealed_type}".encode()


def seal(value: Mapping[str, Any], key: bytes, envelope_type: str = SEALED_TYPE) -> dict[str, Any]:
    """`value` (which names its `type` and `user_id`) sealed under `key`."""
    user_id, sealed_type = str(value["user_id"]), str(value["type"])
    nonce = os.urandom(NONCE_BYTES)
    plain = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    associated = _associated(envelope_type, user_id, sealed_type)
    ciphertext = AESGCM(key).encrypt(nonce, plain, associated)
    return {
        "type": envelope_type,
        "user_id": user_id,
        "sealed_type": sealed_type,
        "v": ENVELOPE_VERSION,
        "nonce": base64.b64encode(nonce).decode(),
        "ciphertext": base64.b64encode(ciphertext).decode(),
    }


def envelope_names(envelope: Mapping[str, Any], types: Collection[str]) -> tuple[str, str, str]:
    """(type, user_id, sealed_type) of an envelope of one of `types`, in the format version
    this reader knows; else `EnvelopeError`."""
    if envelope.get("v") != ENVELOPE_VERSION:
        raise EnvelopeError(
            f"sealed envelope version {envelope.get('v')!r} is not {ENVELOPE_VERSION}"
        )
    envelope_type = envelope.get("type")
    user_id, sealed_type = envelope.get("user_id"), envelope.get("sealed_type")
    if envelope_type not in types:
        raise EnvelopeError(f"{envelope_type!r} is not a sealed envelope of this kind")
    if not isinstance(user_id, str) or not isinstance(sealed_type, str):
        raise EnvelopeError("a sealed envelope names its user_id and sealed_type")
    return str(envelope_type), user_id, sealed_type


def opened_value(plain: bytes, user_id: str, sealed_type: str) -> dict[str, Any]:
    """The value decrypted from an envelope, checked to be the one the envelope names."""
    value = json.loads(plain)
    if not isinstance(value, dict) or (value.get("user_id"), value.get("type")) != (
        user_id,
        sealed_type,
    ):
        raise EnvelopeError("the sealed value is not the one its envelope names")
    return value


def open_sealed(
    envelope: Mapping[str, Any], key: bytes, types: Collection[str] = ENVELOPE_TYPES
) -> dict[str, Any]:
    """The value `envelope` (of one of `types`) hides; `EnvelopeError` if it does not open
    with `key` as itself."""
    envelope_type, user_id, sealed_type = envelope_names(envelope, types)
    try:
        nonce = base64.b64decode(str(envelope.get("nonce")), validate=True)
        ciphertext = base64.b64decode(str(envelope.get("ciphertext")), validate=True)
        associated = _associated(envelope_type, user_id, sealed_type)
        plain = AESGCM(key).decrypt(nonce, ciphertext, associated)
    except (binascii.Error, InvalidTag, ValueError) as exc:
        raise EnvelopeError("the sealed envelope does not open with this user's key") from exc
    return opened_value(plain, user_id, sealed_type)
