"""Files that feed the turns topic: JSONL of wire events, or a LoCoMo conversation.

Both come out as the same wire-format dicts, so the producer and the embedded demo do not
care where events came from. Events are not validated here: the pipeline validates against
the topic schema and sends bad events to the DLQ, where they stay visible.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memstream.entrypoints.embedded.locomo import (
    LocomoConversation,
    conversation_events,
    conversation_from_dict,
    is_locomo_document,
)


def read_events(path: Path | str) -> Iterator[dict[str, Any]]:
    """Yield the wire events a file holds, in file order (LoCoMo: time order)."""
    path = Path(path)
    document = _locomo_document(path)
    if document is not None:
        yield from conversation_events(_conversation(path, document))
    else:
        yield from _read_jsonl(path)


def count_events(path: Path | str) -> int:
    """How many events `read_events` will yield, without parsing JSONL lines (progress bars)."""
    path = Path(path)
    document = _locomo_document(path)
    if document is not None:
        return len(conversation_events(_conversation(path, document)))
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def _conversation(path: Path, document: dict[str, Any]) -> LocomoConversation:
    try:
        return conversation_from_dict(document, sample_id=path.stem)
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a readable LoCoMo conversation: {exc}") from exc


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    # Streamed line by line: replay files can be much larger than memory is worth spending.
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}, line {number}: invalid JSON: {exc.msg}") from exc
            if not isinstance(event, dict):
                raise ValueError(
                    f"{path}, line {number}: expected a JSON object, got {event!r:.40}"
                )
            yield event


def _locomo_document(path: Path) -> dict[str, Any] | None:
    """The parsed file if it is a LoCoMo conversation, else None (treat it as JSONL).

    Detection is by content, not by suffix: a LoCoMo file is one JSON document (usually
    pretty-printed over many lines), while each JSONL line is a complete event object.
    """
    with path.open(encoding="utf-8") as handle:
        first = next((line for line in handle if line.strip()), None)
    if first is None:
        return None
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        head = None
    if isinstance(head, dict) and "type" in head:
        return None  # the common case: a JSONL file of wire events
    if head is not None:
        # One complete value on the first line: a minified LoCoMo file, or JSONL.
        return head if is_locomo_document(head) else None
    try:
        with path.open(encoding="utf-8") as handle:
            document = json.load(handle)
    except json.JSONDecodeError:
        return None  # let the JSONL reader report the bad line by number
    return document if is_locomo_document(document) else None
