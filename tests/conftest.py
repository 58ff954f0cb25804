"""Settings every test shares."""

from __future__ import annotations

from hypothesis import settings

# Hypothesis fails an example that runs past a deadline (200 ms by default). On a shared
# 2-core machine running three test processes, a pure-function example can take that long
# for reasons of its own (a full suite on a loaded machine failed once so, and passed
# again alone): a timing is not what these tests assert.
settings.register_profile("memstream", deadline=None)
settings.load_profile("memstream")
