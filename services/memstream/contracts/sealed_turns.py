"""A turn sealed by its producer: the same envelope as `contracts.sealed`, opened with the
same per-user data key, but sealed with a key that opens nothing.

A producer must be able to seal a user's turns without being able to read anything of the
user: it holds no Redis access, and a key it could open with would also open the user's
memories on the memories topic and would outlive a forget in the producer's memory. So the
user's data key gives, by HKDF, an X25519 key pair: the API hands producers the public half
(`GET /v1/users/{user_id}/turn-key`), the private half is derived again from the data key by
the segmenter and never stored. A producer seals each turn for the public key (a fresh
ephemeral key pair per record, its shared secret through HKDF to an AES-256-GCM key), and a
forget, which deletes the data key, leaves no way to open any sealed turn of the user:

    {"type": "sealed_turn.v1", "user_id": "ann", "sealed_type": "turn.v1", "v": 1,
     "epk": "<base64: the record's ephemeral public key, 32 bytes>",
     "nonce": "<base64, 12 bytes>", "ciphertext": "<base64: the value + the 16-byte tag>"}

The associated data is `memstream/sealed_turn.v1/<user_id>/turn.v1`, as for the other
envelopes: a record moved under another user or relabelled does not open.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memstream.contracts.sealed import EnvelopeError, envelope_names, open_sealed, seal

SEALED_TURN_TYPE = "sealed_turn.v1"  # on the turns topic
SEALED_TURN_TYPES = frozenset({"turn.v1"})  # the only input value that carries words
PUBLIC_KEY_BYTES = 32
_PAIR_INFO = b"memstream/turn-key/v1"  # binds the derived pair to this one use of the data key


def _hkdf(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)


def turn_private_key(data_key: bytes) -> X25519PrivateKey:
    """The private half of the user's turn key pair: derived, never stored."""
    return X25519PrivateKey.from_private_bytes(_hkdf(data_key, _PAIR_INFO))


def turn_public_key(data_key: bytes) -> bytes:
    """What a producer seals the user's turns for (32 raw bytes; not a secret)."""
    return turn_private_key(data_key).public_key().public_bytes_raw()


def _record_key(shared: bytes, ephemeral: bytes, recipient: bytes) -> bytes:
    # Both public keys in the derivation: the key is this record's, for this recipient.
    return _hkdf(shared, b"memstream/sealed_turn.v1/" + ephemeral + recipient)


def seal_turn(value: Mapping[str, Any], public_key: bytes) -> dict[str, Any]:
    """`value` (a `turn.v1`) sealed for the user's turn key; only its data key opens it."""
    return turn_sealer(public_key)(value)


def turn_sealer(public_key: bytes) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """Seals turns of one user for its turn key with one ephemeral key pair: the same
    envelopes as `seal_turn`, each with a nonce of its own under the one record key (random
    96-bit nonces, as every envelope has). For a batch of one user's turns sealed at once:
    the key agreement, most of what a seal costs, is then made once, not once a turn."""
    if len(public_key) != PUBLIC_KEY_BYTES:
        raise ValueError(f"a turn key is {PUBLIC_KEY_BYTES} bytes, not {len(public_key)}")
    ephemeral = X25519PrivateKey.generate()
    epk = ephemeral.public_key().public_bytes_raw()
    shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(public_key))
    key, named = _record_key(shared, epk, public_key), base64.b64encode(epk).decode()

    def sealed(value: Mapping[str, Any]) -> dict[str, Any]:
        return {**seal(value, key, SEALED_TURN_TYPE), "epk": named}

    return sealed


def open_turn(envelope: Mapping[str, Any], data_key: bytes) -> dict[str, Any]:
    """The turn `envelope` hides; `EnvelopeError` if it does not open under `data_key`."""
    envelope_names(envelope, (SEALED_TURN_TYPE,))
    private = turn_private_key(data_key)
    recipient = private.public_key().public_bytes_raw()
    try:
        epk = base64.b64decode(str(envelope.get("epk")), validate=True)
        shared = private.exchange(X25519PublicKey.from_public_bytes(epk))
    except (binascii.Error, ValueError) as exc:
        raise EnvelopeError("the sealed turn does not open with this user's key") from exc
    return open_sealed(envelope, _record_key(shared, epk, recipient), (SEALED_TURN_TYPE,))
