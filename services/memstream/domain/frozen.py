"""`replace` for the frozen dataclasses the write path copies at every message.

The window reducer, the segmenter and the sealing publisher copy a frozen value with one or
two fields changed about ten times a message. `dataclasses.replace` looks up the class's
fields and builds a dictionary of keyword arguments at every call, which costs about as much
as the copy itself. This one does the same by position, from a per-class table of the
fields (read once), and then calls the same generated `__init__`: the value built is the
one `dataclasses.replace` builds.

Only classes for which that is plainly true take the short way: the class's own generated
`__init__`, every field an `__init__` argument by position, no `InitVar`, no
`__post_init__`. Any other class (and any argument the class does not have) goes through
`dataclasses.replace` itself, errors included. Pure, standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar

T = TypeVar("T")

# By class: (field names, their positions, a getter of every field at once), or None when
# the class goes through `dataclasses.replace`.
_Layout = tuple[tuple[str, ...], dict[str, int], Callable[[Any], tuple[Any, ...]]]
_layouts: dict[type, _Layout | None] = {}


def _layout_of(cls: type) -> _Layout | None:
    params = getattr(cls, "__dataclass_params__", None)
    declared = getattr(cls, "__dataclass_fields__", None)
    if params is None or declared is None or not params.init:
        return None
    if hasattr(cls, "__post_init__"):
        return None
    if any(f._field_type is not dataclasses._FIELD for f in declared.values()):  # type: ignore[attr-defined]
        return None  # an InitVar or a ClassVar: replace has rules of its own for them
    fields = dataclasses.fields(cls)
    if len(fields) < 2 or any(not f.init or f.kw_only for f in fields):
        return None
    names = tuple(f.name for f in fields)
    return names, {name: i for i, name in enumerate(names)}, attrgetter(*names)


def replace(obj: T, /, **changes: Any) -> T:
    """`dataclasses.replace(obj, **changes)`, the same value, with less work per call."""
    cls = type(obj)
    try:
        layout = _layouts[cls]
    except KeyError:
        layout = _layouts[cls] = _layout_of(cls)
    if layout is None or not changes.keys() <= layout[1].keys():
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    _, positions, every_field = layout
    values = list(every_field(obj))
    for name, value in changes.items():
        values[positions[name]] = value
    made: T = cls(*values)
    return made
