"""Recall: what an agent should remember for a query, from a user's Temporal Memory Tree.

- `pipeline`: RecallPipeline (plan, leaf activation, ancestor climb, gate, order, fit);
- `service`: browsing and forgetting, for the API's other routes.

The rules they apply are pure domain logic: `domain.recall_options` (tunables),
`domain.ranking`, `domain.rerank`, `domain.cues` and `domain.query_heuristics`.
"""
