"""The scale benchmark's sample check: what the fill writes is what the pipeline writes.

One generated user goes through the real segmenter (`wiring.build_segmenter`: its load,
reducer, offline LLM, index upsert, commit and outbox published to the embedded broker);
another, generated alike, goes through the fill (`scale_fill`). Compared: the per-user key
families each has in Redis, the fields of an L1's JSON document, and the payload fields of
its Qdrant point. Summaries are not in the comparison: the fill builds them with the
consolidator's own functions (`window_node`, `fingerprint`) and commit, and the segmenter
alone writes none.
"""

from __future__ import annotations

import json
from typing import Any

from memstream.adapters.redis import keys
from memstream.bootstrap import Container
from memstream.contracts.codec import decode_input
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.models import Level
from memstream.wiring.handlers import build_segmenter
from memstream_lab.bench.scale_bytes import user_families
from memstream_lab.bench.scale_chat import ChatShape, user_chat
from memstream_lab.bench.scale_fill import Filler

PIPELINE_USER = "kind-pipeline"
FILL_USER = "kind-fill"
MESSAGES = 120


async def _leaf_fields(c: Container, client: Any, namespace: str, user: str) -> dict[str, Any]:
    prefix = keys.user_prefix(user, namespace)
    [leaf_id] = [
        i.decode() if isinstance(i, bytes) else i
        for i in await client.zrange(prefix + keys.level(Level.SEGMENT), 0, 0)
    ]
    doc = json.loads(await client.get(prefix + keys.node(leaf_id)))
    payload = (await c.index.get([leaf_id])).get(leaf_id, {})
    return {"document": sorted(doc), "payload": sorted(payload)}


async def check_kind(
    c: Container, client: Any, namespace: str, filler: Filler, shape: ChatShape
) -> dict[str, Any]:
    """Write one user each way and compare what they left."""
    events = list(user_chat(PIPELINE_USER, shape, MESSAGES, span_days=10))
    records = [
        Consumed(decode_input(e), RawEvent(json.dumps(e).encode(), timestamp=None)) for e in events
    ]
    await build_segmenter(c).handle_batch(records)
    await filler.fill_user(FILL_USER, user_chat(FILL_USER, shape, MESSAGES, span_days=10))
    families = {
        user: {
            f
            for f in await user_families(client, namespace, user)
            # The data key is made by the sealing publisher, not by the tree's writes: one
            # small string a user, no part of a memory's cost.
            if f != "datakey"
            and not f.startswith(
                (
                    "node:L2",
                    "node:L3",
                    "node:L4",
                    "node:L5",
                    "level:2",
                    "level:3",
                    "level:4",
                    "level:5",
                    # The session summaries' terms, kept beside them: summaries too.
                    "session_terms",
                )
            )
        }
        for user in (PIPELINE_USER, FILL_USER)
    }
    pipeline = await _leaf_fields(c, client, namespace, PIPELINE_USER)
    filled = await _leaf_fields(c, client, namespace, FILL_USER)
    return {
        "messages_each": MESSAGES,
        "families_pipeline_only": sorted(families[PIPELINE_USER] - families[FILL_USER]),
        "families_fill_only": sorted(families[FILL_USER] - families[PIPELINE_USER]),
        "l1_document_fields_equal": pipeline["document"] == filled["document"],
        "l1_payload_fields_equal": pipeline["payload"] == filled["payload"],
        "l1_document_fields": filled["document"],
        "l1_payload_fields": filled["payload"],
    }
