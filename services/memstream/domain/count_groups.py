"""The group an open session is gathering, in count mode, when a late turn is cut into it.

With `WindowRules.segment_by_exchange` off, a session's L1s are its messages in `seq`
order, every `segment_messages` of them (an in-order sender's tree). A turn later than the
reorder window shifts every message after it by one place, so the group the reducer is
gathering (`UserWindows.pending`) changes too: in order, it holds the session's newest
messages, as many as the count leaves over, and those may now include the newest message
already written in an L1. The cut of the session (`domain.resegment`) cannot decide this
alone: the reducer decides the reducer's state in the same step, before anything is read
from the store. So the reducer keeps the newest written messages of its open session
(`UserWindows.written_tail`, at most `segment_messages`) and decides from them which
messages it goes on gathering; the cut writes the others.

Why `segment_messages` written messages are enough: a completed group writes the session's
newest `segment_messages` messages and the tail becomes that group. Until the next group
completes, each late turn takes at most one written message back into the group being
gathered (the group grows by one, its messages stay the session's newest), and at most
`segment_messages` turns come before the group completes. Every message the tail has lost
is older than every message it keeps, so the tail is always the session's newest written
messages, and a late turn older than all of them is older than the group too.

What this rests on is the in-order tree's shape: the session's written L1s are whole groups
in `seq` order. A message sent with `flush` (a group closed early), a message forgotten out
of the tail, or a session gathered before the tail was kept breaks it; the cut then still
writes every message once (the reducer says which it keeps, the cut writes the rest), but
not always in the in-order groups.
"""

from __future__ import annotations

from collections.abc import Iterable

from memstream.domain.models import Turn


def seq_order(turn: Turn) -> tuple[int, object, str]:
    """The order of a session's messages: `seq`, then time and id for equal `seq`s."""
    return (turn.seq, turn.ts, turn.event_id)


def newest_written(
    tail: tuple[Turn, ...], groups: Iterable[tuple[Turn, ...]], size: int
) -> tuple[Turn, ...]:
    """The open session's newest written messages once `groups` are written too (at most
    `size`, oldest first)."""
    written = [*tail, *(t for group in groups for t in group)]
    return tuple(sorted(written, key=seq_order)[-size:])


def gathered_with_late(
    pending: tuple[Turn, ...], tail: tuple[Turn, ...], late: Turn, size: int
) -> tuple[tuple[Turn, ...], tuple[Turn, ...]]:
    """What the reducer gathers after `late` (a message that comes after its open session
    went past it) is cut in, and the session's newest written messages then.

    The group gathered grows by one message, or completes at `size` (the cut writes it):
    the newest of the session's messages. `pending` are the newest, `tail` the written
    ones just older; `late` is among them unless it is older than the whole tail (an empty
    tail: nothing written yet)."""
    known = [*tail, *pending]
    if not tail or seq_order(late) > seq_order(min(tail, key=seq_order)):
        known.append(late)
    known.sort(key=seq_order)
    keep = (len(pending) + 1) % size
    split = len(known) - keep
    return tuple(known[split:]), tuple(known[:split][-size:])
