"""Recall: what an agent should remember for a query, from a user's Temporal Memory Tree.

- `pipeline`: RecallPipeline (parse, plan, leaf activation, ancestor climb, gate, order, fit);
- `stages`: the gate and the fit, which the pipeline takes as functions;
- `service`: browsing and forgetting, for the API's other routes.

The rules they apply are pure domain logic: `domain.recall_options` (tunables),
`domain.query` (the parsed query), `domain.ranking`, `domain.rerank` and
`domain.query_heuristics`.
"""
