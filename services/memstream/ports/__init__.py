"""The small interfaces memstream needs from outside; one adapter implements each.

Handlers (segmenter, consolidator, scheduler, recall) depend on these, never on an
adapter: the composition root (`memstream.bootstrap`) picks the adapters.
"""

from memstream.ports.knowledge import KnowledgeReads, ProfileFacts
from memstream.ports.messaging import Publisher
from memstream.ports.models import Embedder, FactReader, LanguageModel
from memstream.ports.progress import ProgressMarks, ProgressReads
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
    "DueIndex",
    "Embedder",
    "FactReader",
    "Forgetting",
    "KnowledgeReads",
    "LanguageModel",
    "MessageIndex",
    "NodeReader",
    "OutboxName",
    "Outboxes",
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
