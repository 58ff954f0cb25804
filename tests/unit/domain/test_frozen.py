"""`domain.frozen.replace` builds what `dataclasses.replace` builds, and refuses what it refuses."""

from __future__ import annotations

import dataclasses
from dataclasses import InitVar, dataclass, field
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.contracts.records import Outbound
from memstream.domain import frozen
from memstream.domain.frozen import replace
from memstream.domain.incarnations import SessionInfo
from memstream.domain.windows import UserWindows

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: str = "b"
    c: tuple[int, ...] = ()
    d: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Checked:
    a: int
    b: int = 0

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("a < 0")


@dataclass(frozen=True)
class Derived:
    a: int
    twice: int = field(init=False, default=0)


@dataclass(frozen=True, kw_only=True)
class KeywordOnly:
    a: int
    b: int = 1


@dataclass
class WithInitVar:
    a: int
    scale: InitVar[int]


def _same(made: object, expected: object) -> None:
    assert type(made) is type(expected)
    assert made == expected
    for f in dataclasses.fields(expected):  # type: ignore[arg-type]
        assert getattr(made, f.name) is getattr(expected, f.name)


def test_the_write_paths_values_are_built_as_dataclasses_replace_builds_them() -> None:
    state = UserWindows(user_id="u", tz="UTC", watermark=T0, pending=())
    info = SessionInfo("s1", T0, T0, T0, tz="UTC", first_seq=0)
    event = Outbound("topic", "u", {"type": "memory.v1", "user_id": "u"})
    cases: list[tuple[object, dict[str, object]]] = [
        (state, {"open_session": "s1", "watermark": None}),
        (state, {"tz": "Europe/Lisbon"}),
        (info, {"last_ts": T0.replace(hour=13), "next_seq": 4}),
        (event, {"value": {"type": "sealed.v1"}}),
        (Plain(1), {"d": {"x": 1}, "c": (1, 2)}),
        (Plain(1), {}),
    ]
    for value, changes in cases:
        _same(replace(value, **changes), dataclasses.replace(value, **changes))  # type: ignore[type-var]


@given(
    a=st.integers(),
    b=st.text(max_size=5),
    c=st.lists(st.integers(), max_size=3).map(tuple),
    changed=st.sets(st.sampled_from(["a", "b", "c", "d"])),
)
def test_any_change_of_any_fields_is_the_same_value(
    a: int, b: str, c: tuple[int, ...], changed: set[str]
) -> None:
    value = Plain(a, b, c, {"k": a})
    new = {"a": a + 1, "b": b + "x", "c": (*c, 9), "d": {}}
    changes = {name: new[name] for name in changed}
    _same(replace(value, **changes), dataclasses.replace(value, **changes))


def test_classes_with_rules_of_their_own_go_through_dataclasses_replace() -> None:
    with pytest.raises(ValueError, match="a < 0"):
        replace(Checked(1), a=-1)  # __post_init__ still runs
    with pytest.raises(ValueError):
        replace(Derived(1), twice=2)  # an init=False field cannot be replaced
    assert replace(Derived(1), a=2) == Derived(2)
    assert replace(KeywordOnly(a=1), b=2) == KeywordOnly(a=1, b=2)
    with pytest.raises(ValueError):
        replace(WithInitVar(1, 1), a=2)  # an InitVar without a default must be given
    assert replace(WithInitVar(1, 1), a=2, scale=3) == WithInitVar(2, 1)
    for cls in (Checked, Derived, KeywordOnly, WithInitVar):
        assert frozen._layouts[cls] is None
    assert frozen._layouts[Plain] is not None  # the short way was taken above


def test_what_dataclasses_replace_refuses_is_refused() -> None:
    with pytest.raises(TypeError):
        replace(Plain(1), nonsense=1)
    with pytest.raises(TypeError):
        replace(object())
    with pytest.raises(TypeError):
        replace(Plain, a=1)  # a class, not an instance
