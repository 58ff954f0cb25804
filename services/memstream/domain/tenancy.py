"""Tenants: who a key speaks for, and which user ids it reaches.

A tenant owns the user ids that start with its name and a colon (`acme:ann`). The name is
lowercase ASCII letters, digits and inner hyphens, so the comparison is exact, byte for byte:
no case folding, no Unicode normalisation, nothing a confusable or a fullwidth letter could
slip through. An operator reaches every user.

Keys are held as SHA-256 digests (hex) only: the key file lists digests, and the keys of
`MEMSTREAM_RECALL_API_KEYS` are digested when the ring is built.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

SEPARATOR = ":"
TENANT_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$")
KEY_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")
_FILE_FIELDS = frozenset({"operators", "tenants"})
_KEY_FIELDS = frozenset({"id", "sha256"})


class KeyFileError(ValueError):
    """The key file is refused as a whole; the message says where and why."""


@dataclass(frozen=True)
class Caller:
    """Whoever presented a key: its id (never the key) and its tenant (None: an operator)."""

    key_id: str
    tenant: str | None = None

    @property
    def operator(self) -> bool:
        return self.tenant is None

    def reaches(self, user_id: str) -> bool:
        return self.tenant is None or owns(self.tenant, user_id)


def owns(tenant: str, user_id: str) -> bool:
    """Whether `user_id` is in `tenant`'s namespace (`tenant:` and at least one character)."""
    namespace = tenant + SEPARATOR
    return len(user_id) > len(namespace) and user_id.startswith(namespace)


def tenant_of(user_id: str) -> str | None:
    """The tenant whose namespace holds `user_id`, None for an id outside every namespace."""
    name, separator, rest = user_id.partition(SEPARATOR)
    return name if separator and rest and TENANT_NAME.match(name) else None


def scoped_prefix(tenant: str, prefix: str) -> str | None:
    """The id prefix a listing by `tenant` searches: `prefix` inside the namespace, the
    namespace itself for a prefix of it (`""`, `"ac"`), None for anything outside it."""
    namespace = tenant + SEPARATOR
    if prefix.startswith(namespace):
        return prefix
    return namespace if namespace.startswith(prefix) else None


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def fingerprint(digest: str) -> str:
    """A short name for a key that has no id (an environment key): its digest's head."""
    return f"key-{digest[:12]}"


@dataclass(frozen=True)
class KeyTable:
    """Every accepted key, by digest."""

    callers: Mapping[str, Caller] = field(default_factory=dict)

    def identify(self, token: str | None) -> Caller | None:
        return self.callers.get(key_digest(token)) if token else None

    @property
    def tenants(self) -> frozenset[str]:
        return frozenset(c.tenant for c in self.callers.values() if c.tenant is not None)

    def merged(self, other: KeyTable) -> KeyTable:
        """Both tables; a key in both is refused (which caller would it be?)."""
        shared = sorted(set(self.callers) & set(other.callers))
        if shared:
            ids = ", ".join(f"{self.callers[d].key_id}/{other.callers[d].key_id}" for d in shared)
            raise KeyFileError(f"the same key is configured twice: {ids}")
        return KeyTable({**self.callers, **other.callers})


def operator_keys(keys: Iterable[str]) -> KeyTable:
    """The environment's plain key list, as operator keys named by fingerprint."""
    digests = {key_digest(key) for key in keys}
    return KeyTable({d: Caller(fingerprint(d)) for d in sorted(digests)})


def parse_key_file(document: object) -> KeyTable:
    """The keys of a parsed key file:

        operators: [{id: ops-1, sha256: <hex>}]
        tenants: {acme: [{id: acme-bot, sha256: <hex>}]}

    Refused (KeyFileError) as a whole: unknown fields, a bad tenant name or key id, a value
    that is not a SHA-256 hex digest, a tenant without keys, a key id or a key used twice.
    """
    if not isinstance(document, dict):
        raise KeyFileError("the key file must be a mapping with `operators` and/or `tenants`")
    unknown = sorted(set(map(str, document)) - _FILE_FIELDS)
    if unknown:
        raise KeyFileError(f"unknown field(s) {unknown}: only `operators` and `tenants`")
    operators = _key_list(document.get("operators") or [], "operators")
    entries: list[tuple[str | None, tuple[str, str]]] = [(None, e) for e in operators]
    tenants = document.get("tenants") or {}
    if not isinstance(tenants, dict):
        raise KeyFileError("`tenants` must map tenant names to lists of keys")
    for name, keys in tenants.items():
        if not isinstance(name, str) or not TENANT_NAME.match(name):
            raise KeyFileError(
                f"tenant name {str(name)[:40]!r}: lowercase ASCII letters, digits and inner "
                "hyphens, 1-32 characters"
            )
        listed = _key_list(keys or [], f"tenants.{name}")
        if not listed:
            raise KeyFileError(f"tenant {name!r} has no keys: give it one or remove it")
        entries += [(name, e) for e in listed]
    return _table(entries)


def _key_list(value: object, where: str) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        raise KeyFileError(f"`{where}` must be a list of {{id, sha256}}")
    keys = []
    for position, entry in enumerate(value):
        at = f"{where}[{position}]"
        if not isinstance(entry, dict) or set(map(str, entry)) != _KEY_FIELDS:
            raise KeyFileError(f"{at} must have exactly the fields `id` and `sha256`")
        key_id, digest = entry["id"], entry["sha256"]
        if not isinstance(key_id, str) or not KEY_ID.match(key_id):
            raise KeyFileError(f"{at}.id: ASCII letters, digits, '.', '_', '-', 1-64 characters")
        if not isinstance(digest, str) or not DIGEST.match(digest):
            # Not echoed: a plaintext key pasted here must not reach the logs.
            raise KeyFileError(
                f"{at}.sha256 is not a SHA-256 hex digest (64 lowercase hex characters); "
                "the file holds digests, never keys"
            )
        keys.append((key_id, digest))
    return keys


def _table(entries: list[tuple[str | None, tuple[str, str]]]) -> KeyTable:
    callers: dict[str, Caller] = {}
    ids: set[str] = set()
    for tenant, (key_id, digest) in entries:
        if key_id in ids:
            raise KeyFileError(f"key id {key_id!r} is used twice")
        if digest in callers:
            raise KeyFileError(
                f"keys {callers[digest].key_id!r} and {key_id!r} are the same key "
                "(one key belongs to one tenant or operator)"
            )
        ids.add(key_id)
        callers[digest] = Caller(key_id, tenant)
    return KeyTable(callers)
