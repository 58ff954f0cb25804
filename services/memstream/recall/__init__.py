"""Recall: what an agent should remember for a query, from a user's Temporal Memory Tree.

- `pipeline`: RecallPipeline (plan, leaf activation, ancestor climb, gate, order, fit);
- `options`: RecallOptions, the tunables (budgets, leaf depth, gating) for ablations;
- `ranking`: pure scoring, pruning, ordering and token-fitting helpers;
- `service`: browsing and forgetting, for the API's other routes;
- `schemas`, `api`: the HTTP API (FastAPI), `server`: running it with uvicorn;
- `commands`: `memstream recall` and `memstream serve`.
"""
