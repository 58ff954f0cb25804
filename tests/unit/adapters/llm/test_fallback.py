from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memstream.adapters.llm.fallback import FallbackLanguageModel, build_language_model
from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.domain.models import Complexity, Level, MemoryNode, Plan, Summary, Turn, Window
from memstream.domain.query import Query, parse_query
from memstream.settings import Settings

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
TURNS = [Turn("e1", "u1", "s1", 1, "Caroline", "user", "I painted a lake.", T0)]
NODE = MemoryNode("n1", "u1", Level.SEGMENT, T0, T0, "Caroline said they painted a lake.")
WINDOW = Window("u1", Level.SESSION, T0, T0 + timedelta(hours=1), "s1")


class Broken:
    """A primary whose endpoint is down, after its own retries."""

    def __init__(self) -> None:
        self.calls = 0

    def _fail(self) -> None:
        self.calls += 1
        raise ConnectionError("endpoint down")

    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary:
        self._fail()
        raise AssertionError

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: object = None,
    ) -> Summary:
        self._fail()
        raise AssertionError

    async def plan(self, query: Query) -> Plan:
        self._fail()
        raise AssertionError

    async def gate(
        self, query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        self._fail()
        raise AssertionError


async def test_failures_fall_back_to_offline_marked_degraded() -> None:
    offline = OfflineLanguageModel()
    seen: list[str] = []
    llm = FallbackLanguageModel(Broken(), offline, on_fallback=lambda op, exc: seen.append(op))

    segment = await llm.write_segment(TURNS, [])
    assert segment.degraded
    assert segment.text == (await offline.write_segment(TURNS, [])).text

    session = await llm.consolidate(Level.SESSION, WINDOW, [NODE], [])
    assert session.degraded and session.text.startswith("Session on 8 May 2023 (Mon):")

    plan = await llm.plan(parse_query("When did Caroline paint a lake?"))
    assert plan.degraded and plan.complexity == "hybrid"

    assert await llm.gate(parse_query("lake?"), "simple", [NODE]) is None
    assert seen == ["segment", "consolidate_l2", "plan", "gate"]


async def test_a_working_primary_is_used_as_is() -> None:
    offline = OfflineLanguageModel()
    llm = FallbackLanguageModel(offline, offline)
    assert not (await llm.write_segment(TURNS, [])).degraded
    assert await llm.gate(parse_query("lake"), "simple", [NODE]) == ["n1"]


def test_build_language_model_is_offline_without_an_endpoint() -> None:
    assert isinstance(build_language_model(Settings(llm_base_url="")), OfflineLanguageModel)
    # With an endpoint: the OpenAI backend behind the fallback (no request is made here).
    built = build_language_model(Settings(llm_base_url="http://127.0.0.1:9/v1"))
    assert isinstance(built, FallbackLanguageModel)
