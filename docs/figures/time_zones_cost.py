"""Reducer time per turn and state size: main's windows.py (loaded beside this tree's) against
this tree's, in one run, alternating; docs/figures/time-zones.md quotes it."""

import importlib.util
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from memstream.contracts.codec import encode_state
from memstream.domain.models import Turn
import memstream.domain.windows as new

spec = importlib.util.spec_from_file_location(
    "old_windows", "/work/main/services/memstream/domain/windows.py"
)
old = importlib.util.module_from_spec(spec)
sys.modules["old_windows"] = old
spec.loader.exec_module(old)


def turns(days, zones):
    start = datetime(2025, 1, 6, 9, tzinfo=UTC)
    out = []
    for d in range(days):
        tz = zones[(d // 7) % len(zones)]
        for seq in range(6):
            out.append(
                Turn(
                    f"e{d}-{seq}",
                    "u1",
                    f"s{d}",
                    seq,
                    "Ana",
                    "user" if seq % 2 == 0 else "assistant",
                    "hi",
                    start + timedelta(days=d, minutes=seq),
                    tz,
                )
            )
    return out


def run(mod, events):
    rules = mod.WindowRules()
    state = mod.initial_state("u1", events[0].tz)
    received = datetime(2030, 1, 1, tzinfo=UTC)
    t0 = time.perf_counter()
    for e in events:
        state, _ = mod.apply(state, e, received, rules)
    return (time.perf_counter() - t0) / len(events) * 1e6, state


for zones in (("Europe/Lisbon",), ("Europe/Lisbon", "Asia/Tokyo")):
    events = turns(365, zones)
    best = {"old": 1e9, "new": 1e9}
    for _ in range(3):
        for name, mod in (("old", old), ("new", new)):
            us, state = run(mod, events)
            best[name] = min(best[name], us)
    _, state = run(new, events)
    size = len(json.dumps(encode_state(state)))
    print(
        f"{' -> '.join(zones)}: old {best['old']:.0f} us/turn, new {best['new']:.0f} us/turn, ratio {best['new'] / best['old']:.2f}; state {size:,} bytes, {len(state.calendar)} calendar windows"
    )
