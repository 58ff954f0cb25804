"""The tenants' key file (YAML or JSON; a Kubernetes Secret mounts it), read at start-up and
again whenever its content changes, without a restart.

A file that cannot be read or is refused (`domain.tenancy.parse_key_file`) at start-up stops
the API from starting; later, it leaves the keys in force, logs an error and calls
`on_reload("refused")`. The content is compared, not the modification time: a Secret's
update swaps a symlink, and a copy may keep the old time.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path

import yaml

from memstream.domain.tenancy import KeyFileError, KeyTable, parse_key_file
from memstream.edges.http.gate import KeyRing

log = logging.getLogger(__name__)

ReloadObserver = Callable[[str, KeyTable | None], None]  # outcome, the keys now in force


def read_key_file(path: Path) -> tuple[KeyTable, str]:
    """The file's keys and its content's digest; KeyFileError when it cannot be used."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read the key file: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
        document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        # The parser's message may quote the file (digests, or a pasted key): not logged.
        raise KeyFileError(f"the key file does not parse as {_format(path)}") from exc
    return parse_key_file(document), hashlib.sha256(raw).hexdigest()


def _format(path: Path) -> str:
    return "JSON" if path.suffix == ".json" else "YAML"


class KeyFileWatcher:
    """Keeps `ring` serving the keys of `path`."""

    def __init__(self, path: Path, ring: KeyRing, on_reload: ReloadObserver) -> None:
        self._path = path
        self._ring = ring
        self._on_reload = on_reload
        self._loaded: str | None = None
        self._refused: str | None = None

    def load(self) -> None:
        """The first read: KeyFileError stops the start-up."""
        table, digest = read_key_file(self._path)
        self._ring.replace_file_keys(table)
        self._loaded = digest
        log.info("key file: %d keys, %d tenants", len(table.callers), len(table.tenants))
        self._on_reload("loaded", self._ring.table)

    def check(self) -> None:
        """Reload when the content changed; a refused content is reported once."""
        try:
            raw_digest = hashlib.sha256(self._path.read_bytes()).hexdigest()
        except OSError:
            raw_digest = "unreadable"
        if raw_digest in (self._loaded, self._refused):
            return
        try:
            table, digest = read_key_file(self._path)
            self._ring.replace_file_keys(table)
        except KeyFileError as refused:
            self._refused = raw_digest
            log.error("key file refused, the previous keys stay in force: %s", refused)
            self._on_reload("refused", None)
            return
        self._loaded, self._refused = digest, None
        log.info("key file reloaded: %d keys, %d tenants", len(table.callers), len(table.tenants))
        self._on_reload("reloaded", self._ring.table)

    async def run(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            self.check()
