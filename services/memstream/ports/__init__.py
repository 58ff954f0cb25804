"""The small interfaces memstream needs from outside; one adapter implements each.

Handlers (segmenter, consolidator, scheduler, recall) depend on these, never on an
adapter: the composition root (`memstream.bootstrap`) picks the adapters.
"""

from memstream.ports.datakeys import DataKeys
from memstream.ports.knowledge import KnowledgeReads, LeafFacts, ProfileFacts
from memstream.ports.messaging import Forwarder, Publisher
from memstream.ports.models import Embedder, FactReader, LanguageModel
from memstream.ports.progress import (
    OverflowLedger,
    OverflowQueues,
    OverflowReads,
    ProgressMarks,
    ProgressReads,
)
from memstream.ports.stores import VectorIndex
from memstream.ports.tree import (
    BacklogReads,
    ConsolidatorSnapshot,
    ConsolidatorStore,
    DueIndex,
    Forgetting,
    MessageIndex,
    NodeReader,
    Outboxes,
    OutboxName,
    RebuildQueue,
    RecallReads,
    SegmenterStore,
    Tombstones,
    TreeStore,
    UserCommit,
)
from memstream.ports.users import UserDirectory

__all__ = [
    "BacklogReads",
    "ConsolidatorSnapshot",
    "ConsolidatorStore",
    "DataKeys",
    "DueIndex",
    "Embedder",
    "FactReader",
    "Forgetting",
    "Forwarder",
    "KnowledgeReads",
    "LanguageModel",
    "LeafFacts",
    "MessageIndex",
    "NodeReader",
    "OutboxName",
    "Outboxes",
    "OverflowLedger",
    "OverflowQueues",
    "OverflowReads",
    "ProfileFacts",
    "ProgressMarks",
    "ProgressReads",
    "Publisher",
    "RebuildQueue",
    "RecallReads",
    "SegmenterStore",
    "Tombstones",
    "TreeStore",
    "UserCommit",
    "UserDirectory",
    "VectorIndex",
]
