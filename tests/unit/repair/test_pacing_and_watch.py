"""The repair's pace and the divergence check's reuse, on a clock the test moves."""

from __future__ import annotations

from memstream.domain.divergence import Divergence, divergence
from memstream.repair.divergence import DivergenceWatch
from memstream.repair.restore import Pacer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def every_interval(found: list[Divergence]) -> list[tuple[bool, tuple[str, ...]]]:
    """What a watch of a 15 s interval answers when asked once an interval, each check
    finding the next of `found`: readiness, and the users it reports differing."""
    clock, calls = Clock(), iter(found)

    async def check() -> Divergence:
        return next(calls)

    watch = DivergenceWatch(check, every_s=15.0, clock=clock)
    answers = []
    for _ in found:
        ready = await watch.stores_agree()
        answers.append((ready, (await watch.latest()).users_differing))
        clock.now += 15.0
    return answers


async def test_the_pacer_waits_only_when_ahead_of_its_rate() -> None:
    clock = Clock()
    pacer = Pacer(100.0, clock=clock, sleep=clock.sleep)
    await pacer.spent(50)  # half a second of work done at once: wait it out
    assert clock.slept == [0.5]
    clock.now += 2.0  # slow work since: no wait
    await pacer.spent(50)
    assert clock.slept == [0.5]
    await pacer.spent(0)
    assert clock.slept == [0.5]


async def test_the_watch_checks_again_only_once_its_interval_passed() -> None:
    clock = Clock()
    results = [divergence(True, 0, {}), divergence(True, 5, {})]
    calls: list[Divergence] = []

    async def check() -> Divergence:
        calls.append(results[len(calls)])
        return calls[-1]

    watch = DivergenceWatch(check, every_s=15.0, clock=clock)
    assert await watch.stores_agree() is False
    clock.now += 14.0
    assert await watch.stores_agree() is False and len(calls) == 1
    clock.now += 1.0
    assert await watch.stores_agree() is True and len(calls) == 2


async def test_an_empty_tree_fails_readiness_only_when_two_checks_in_a_row_find_it() -> None:
    answers = await every_interval(
        [
            divergence(False, 3, {}),  # the first write: its points, not yet its nodes
            divergence(True, 3, {}),
            divergence(False, 3, {}),  # Redis lost
            divergence(False, 3, {}),
        ]
    )
    assert [ready for ready, _ in answers] == [True, True, True, False]


async def test_an_empty_tree_is_checked_again_after_a_second_not_a_whole_interval() -> None:
    clock = Clock()
    calls = 0

    async def check() -> Divergence:
        nonlocal calls
        calls += 1
        return divergence(False, 3, {})  # Redis lost

    watch = DivergenceWatch(check, every_s=15.0, clock=clock)
    assert await watch.stores_agree() is True  # not yet confirmed
    clock.now += 0.5
    assert await watch.stores_agree() is True and calls == 1
    clock.now += 0.5
    assert await watch.stores_agree() is False and calls == 2
    clock.now += 14.0  # confirmed: back to the interval
    assert await watch.stores_agree() is False and calls == 2


async def test_an_empty_index_fails_readiness_at_the_first_check() -> None:
    async def check() -> Divergence:
        return divergence(True, 0, {})

    assert await DivergenceWatch(check, every_s=1.0).stores_agree() is False


async def test_the_watch_reports_a_user_differing_only_when_two_checks_find_the_same_gap() -> None:
    answers = await every_interval(
        [
            divergence(True, 5, {"ana": ({1: 4}, {1: 5})}),  # a write between the two stores
            divergence(True, 6, {"ana": ({1: 5}, {1: 6})}),  # the next one
            divergence(True, 6, {"ana": ({1: 6}, {1: 5})}),  # a leaf lost from the index
            divergence(True, 6, {"ana": ({1: 6}, {1: 5})}),
        ]
    )
    assert [differing for _, differing in answers] == [(), (), (), ("ana",)]
