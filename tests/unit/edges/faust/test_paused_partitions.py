"""The turns agent's pauses applied to Faust's consumer (`edges.faust.topic_pauses`)."""

from __future__ import annotations

from faust.types import TP

from memstream.domain.fair_share import Share
from memstream.edges.faust.topic_pauses import TopicPauses

FLOOD, QUIET = "turns.acme", "turns.globex"
FLOOD_TPS = {TP(FLOOD, 0), TP(FLOOD, 1)}
QUIET_TPS = {TP(QUIET, 0), TP(QUIET, 1)}


class Consumer:
    """Faust's consumer as far as the pauses use it (the same attributes and calls)."""

    def __init__(self) -> None:
        self._paused_partitions: set[TP] = set()
        self._active_partitions: set[TP] | None = FLOOD_TPS | QUIET_TPS
        self.resumed: list[set[TP]] = []

    def assignment(self) -> set[TP]:
        return FLOOD_TPS | QUIET_TPS

    def _get_active_partitions(self) -> set[TP]:
        assert self._active_partitions is not None
        return self._active_partitions

    def resume_partitions(self, tps: set[TP]) -> None:  # as Faust's: in place
        self._get_active_partitions().update(tps)
        self._paused_partitions.difference_update(tps)
        self.resumed.append(set(tps))


class App:
    """Faust's app as far as the pauses use it."""

    def __init__(self) -> None:
        self.consumer = Consumer()
        self.rebalancing = False


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pauses_and_app() -> tuple[TopicPauses, App, Clock]:
    clock = Clock()
    pauses = TopicPauses(
        ["turns", QUIET, FLOOD], Share(10.0, 5.0), behind_s=0.25, longest_s=60.0, clock=clock
    )
    return pauses, App(), clock


def flood_beside_quiet(pauses: TopicPauses, app: App, flood: int) -> int:
    """The quiet tenant's record, then the flood's one by one; how many the flood's
    records were when its topic was paused (0: never)."""
    pauses.message_in(QUIET, app)
    for n in range(1, flood + 1):
        pauses.message_in(FLOOD, app)
        if FLOOD in pauses.paused:
            return n
    return 0


def test_a_topic_over_its_share_stops_being_fetched_and_the_fetch_in_hand_stays_whole() -> None:
    pauses, app, _clock = pauses_and_app()
    consumer = app.consumer
    in_hand = consumer._get_active_partitions()  # what a fetch being handed over holds
    # Paused by the record that put it in debt (its burst is 5), not at the next tick.
    assert flood_beside_quiet(pauses, app, 30) == 6
    assert pauses.paused == {FLOOD}
    assert consumer._paused_partitions == FLOOD_TPS
    assert consumer._get_active_partitions() == QUIET_TPS
    # Faust drops the records of a partition not in that set: it must not change under it.
    assert in_hand == FLOOD_TPS | QUIET_TPS


def test_a_pause_undone_by_faust_is_applied_again_and_only_its_own_are_resumed() -> None:
    pauses, app, clock = pauses_and_app()
    consumer = app.consumer
    flood_beside_quiet(pauses, app, 30)
    # A rebalance's end (or a drained stream buffer) resumes everything in Faust.
    consumer.resume_partitions(FLOOD_TPS | QUIET_TPS)
    clock.now += 0.5
    pauses.message_in(QUIET, app)
    pauses.tick(app)
    assert consumer._paused_partitions == FLOOD_TPS
    assert FLOOD_TPS.isdisjoint(consumer._get_active_partitions())
    # The quiet tenant stops: nothing is delayed any more, the flood's topic is resumed.
    consumer.resumed.clear()
    clock.now += 3.5
    pauses.tick(app)
    assert pauses.paused == frozenset()
    assert consumer.resumed == [FLOOD_TPS]
    assert consumer._get_active_partitions() == FLOOD_TPS | QUIET_TPS


def test_a_tenant_alone_is_not_paused_whatever_its_backlog() -> None:
    pauses, app, _clock = pauses_and_app()
    for _ in range(500):
        pauses.message_in(FLOOD, app)
    assert pauses.paused == frozenset()


def test_the_longest_wait_resumes_one_partition_at_a_time() -> None:
    clock = Clock()
    pauses = TopicPauses(
        ["turns", QUIET, FLOOD], Share(10.0, 5.0), behind_s=0.25, longest_s=2.0, clock=clock
    )
    app = App()
    flood_beside_quiet(pauses, app, 10)  # paused, 5 turns in debt
    resumed: list[set[TP]] = []
    for _ in range(2):
        app.consumer.resumed.clear()
        clock.now += 2.5  # past the longest wait, the bucket refilled; globex still sends
        pauses.message_in(QUIET, app)
        pauses.tick(app)
        assert len(app.consumer.resumed) == 1 and len(app.consumer.resumed[0]) == 1
        resumed.append(app.consumer.resumed[0])
        assert app.consumer._paused_partitions == (FLOOD_TPS - resumed[-1])
        for _ in range(6):  # its burst, then the record that puts it in debt
            pauses.message_in(FLOOD, app)
        assert app.consumer._paused_partitions == FLOOD_TPS
    assert resumed[0] != resumed[1]  # another partition at the next longest wait


def test_the_sensor_charges_each_record_at_its_broker_time() -> None:
    pauses, app, clock = pauses_and_app()

    class Message:
        def __init__(self, timestamp: float) -> None:
            self.timestamp = timestamp

    sensor = pauses.sensor(app)
    # A second of the quiet tenant's records (8, within its share of 10 a second) fetched
    # at once, late: charged when they were sent, the tenant stays within its share...
    clock.now += 1.0
    for n in range(8):
        sensor.on_message_in(TP(QUIET, 0), n, Message(clock.now - 1.0 + n / 8))
    # ...so the flood beside it is paused once its burst is spent.
    for n in range(1, 30):
        sensor.on_message_in(TP(FLOOD, 0), n, Message(clock.now))
        if FLOOD in pauses.paused:
            break
    assert pauses.paused == {FLOOD} and n == 6
