"""The scale benchmark's probes after the fill, in order, each measured once per run directory:
the segmenter's step for users of three histories, the window state, the knowledge
derivation (`scale_probe`), then the lifecycle (`scale_lifecycle`): consolidating, rebuilding,
and at last forgetting the heavy user."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memstream.bootstrap import Container
from memstream_lab.bench import scale_lifecycle as life
from memstream_lab.bench.scale_probe import (
    PROBE_MESSAGES,
    knowledge_derive,
    saturated_state,
    segmenter_cpu,
    state_cost,
    user_state_cost,
)
from memstream_lab.bench.scale_run import Run

HEAVY, MEDIUM, FRESH = "heavy-user", "medium-user", "fresh-user"
LIGHT0 = "light-0"


def run_probes(
    run_dir: Run,
    call: Callable[..., Any],
    c: Container,
    built: dict[str, Any],
    rebuild_budget_s: float,
    only_segmenter: bool = False,
) -> None:
    if not run_dir.done("segmenter_step"):
        last = datetime.fromisoformat(str(built[HEAVY]["last_ts"]))
        # Probes taken before on these stores (a result removed from progress.json to measure
        # again): this one's steps come after theirs, and an empty user of its own.
        probe = run_dir.doc.get("segmenter_probes_taken", 0)
        run_dir.keep("segmenter_probes_taken", probe + 1)
        taken = probe * PROBE_MESSAGES
        history = {
            f"{FRESH}-{probe}" if probe else FRESH: 0,
            MEDIUM: built[MEDIUM]["messages"] + taken,
            HEAVY: built[HEAVY]["messages"] + taken,
        }
        steps = call(lambda: segmenter_cpu(c, list(history), last, probe))
        run_dir.keep(
            "segmenter_step",
            {f"{user} ({messages} messages)": steps[user] for user, messages in history.items()},
        )
    if only_segmenter:
        return
    if not run_dir.done("window_state"):
        run_dir.keep(
            "window_state",
            {
                "at_bound": state_cost(saturated_state()),
                **{u: call(functools.partial(user_state_cost, c, u)) for u in (HEAVY, LIGHT0)},
            },
        )
    if not run_dir.done("knowledge_derive"):
        run_dir.keep(
            "knowledge_derive",
            {u: call(functools.partial(knowledge_derive, c, u)) for u in (HEAVY, LIGHT0)},
        )
    budget = functools.partial(life.rebuild_user, budget_s=rebuild_budget_s)
    lifecycle = (
        ("consolidate_heavy", life.consolidate_latest, HEAVY),
        ("consolidate_light", life.consolidate_latest, LIGHT0),
        ("rebuild_medium", life.rebuild_user, MEDIUM),
        ("rebuild_heavy", budget, HEAVY),
        ("forget_heavy", life.forget_user, HEAVY),
    )
    for name, probe, user in lifecycle:
        if not run_dir.done(name):
            run_dir.keep(name, call(functools.partial(probe, c, user)))
            if name == "forget_heavy":  # a larger step run later fills past what is left
                built["memories"] -= built[HEAVY]["l1"] + built[HEAVY]["summaries"]
                run_dir.save()
