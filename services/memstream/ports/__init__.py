"""The small interfaces memstream needs from outside; one adapter implements each.

Handlers (segmenter, consolidator, scheduler, recall) depend on these, never on an
adapter: the composition root (`memstream.bootstrap`) picks the adapters.
"""

from memstream.ports.messaging import Publisher
from memstream.ports.models import Embedder, LanguageModel
from memstream.ports.stores import OutboxName, TreeStore, VectorIndex

__all__ = ["Embedder", "LanguageModel", "OutboxName", "Publisher", "TreeStore", "VectorIndex"]
