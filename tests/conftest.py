"""The whole suite runs with the knowledge write on (`MEMSTREAM_KNOWLEDGE`).

Production leaves it off until its cost fits the ingest target; meanwhile its tests, the
crash suite's comparisons of facts and entities included, hold it to the write path's
guarantees. Processes the tests start inherit it.
"""

import os

os.environ.setdefault("MEMSTREAM_KNOWLEDGE", "true")
