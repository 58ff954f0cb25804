"""Redis Cluster hash slots, and a hash tag for each that maps to it.

A cluster places a key by the CRC16 of its hash tag (the text between its first `{` and the
next `}`) modulo 16384. A user's transaction may only touch keys of its user's slot, so the
indexes shared by all users are split by slot: a user's entry lives in
`ms:due:{<tag of the user's slot>}`, and a reader asks each slot's key (`keys` lists them).

The tags are found by solving, not searched for: CRC16 (XMODEM: no initial value, no final
XOR) is linear over GF(2) for messages of one length, so crc(base XOR delta) = crc(base) XOR
crc(delta). A tag is `base` (five "@") with some of the low four bits of each character
flipped, which keeps it within "@" and "A".."O"; twenty bits of freedom span the fourteen of
a slot, and Gaussian elimination turns a slot into the flips that reach it.
"""

from __future__ import annotations

import binascii
from functools import cache

from redis.crc import key_slot

SLOTS = 16384  # fixed by the Redis Cluster specification
_TAG_LENGTH = 5
_FREE_BITS = 4  # per character: "@" (0x40) XOR 0..15 stays within "@", "A".."O"
_BASE = b"@" * _TAG_LENGTH


def slot_of(key: str) -> int:
    """The cluster slot of `key` (its hash tag's, when it has one)."""
    return int(key_slot(key.encode()))


def _crc_slot(data: bytes) -> int:
    return binascii.crc_hqx(data, 0) % SLOTS


@cache
def _basis() -> dict[int, tuple[int, int]]:
    """Pivot bit -> (the slot bits a flip pattern changes, the flip pattern as an integer
    over the tag's bytes), reduced so that each pivot is the highest bit of its row."""
    rows: dict[int, tuple[int, int]] = {}
    for position in range(_TAG_LENGTH):
        for bit in range(_FREE_BITS):
            flips = 1 << (8 * (_TAG_LENGTH - 1 - position) + bit)
            image = _crc_slot(flips.to_bytes(_TAG_LENGTH, "big"))
            while image:
                pivot = image.bit_length() - 1
                if pivot not in rows:
                    rows[pivot] = (image, flips)
                    break
                image ^= rows[pivot][0]
                flips ^= rows[pivot][1]
    if len(rows) != SLOTS.bit_length() - 1:
        raise AssertionError("the flips do not reach every slot")
    return rows


@cache
def slot_tag(slot: int) -> str:
    """A hash tag (without braces) whose keys land in `slot`."""
    if not 0 <= slot < SLOTS:
        raise ValueError(f"a cluster slot is within 0..{SLOTS - 1}, not {slot}")
    wanted, flips = slot ^ _crc_slot(_BASE), 0
    rows = _basis()
    while wanted:
        image, pattern = rows[wanted.bit_length() - 1]
        wanted ^= image
        flips ^= pattern
    tag = int.from_bytes(_BASE, "big") ^ flips
    return tag.to_bytes(_TAG_LENGTH, "big").decode("ascii")
