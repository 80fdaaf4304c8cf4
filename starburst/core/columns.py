"""Frozen values built a column at a time: the simulator's bulk of jobs and outcomes.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (an
attribute lookup on ``object``, an argument tuple, a type lookup of the slot): several times
the cost of storing the value, once per field and value. Reading a trace of 8,000 jobs of
20 fields built them that way for a tenth of ``starburst simulate``. ``from_columns`` builds
the same values by storing each slot through its own descriptor, over a whole column at C
speed. ``slot_setters`` gives the same setters to a class that builds one value at a time
in a hot loop (a handwritten ``__init__`` storing each field through them).

Invariant: only for slotted dataclasses that check nothing at construction (no
``__post_init__``: refused), so a value built from columns is the one ``cls(**row)`` gives
for each row — frozen, equal and hashed alike.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, fields
from itertools import repeat
from typing import Any, TypeVar

T = TypeVar("T")

#: per class, each field's default (a factory, a value, or MISSING) and its slot's setter
_Plan = list[tuple[str, Callable[[], object] | None, object, Callable[[object, object], None]]]
_PLANS: dict[type, _Plan] = {}


def from_columns(cls: type[T], count: int, columns: Mapping[str, Iterable[object]]) -> list[T]:
    """``count`` values of the slotted dataclass ``cls`` from columns (field name → one value
    per row; a field left out takes its default, a fresh one per row for a default factory):
    the values ``cls(**row)`` gives for each row."""
    plan = _plan(cls)
    unknown = columns.keys() - {name for name, *_ in plan}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    values = list(map(object.__new__, repeat(cls, count)))
    for name, factory, default, store in plan:
        column = columns.get(name)
        if column is None:
            if factory is not None:
                column = [factory() for _ in values]
            elif default is not MISSING:
                column = repeat(default, count)
            elif count:
                raise TypeError(f"{cls.__name__} needs the column {name!r}")
            else:
                continue
        deque(map(store, values, column), maxlen=0)  # (stored, nothing kept)
    return values


def _plan(cls: type[Any]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        if hasattr(cls, "__post_init__") or not hasattr(cls, "__slots__"):
            raise TypeError(f"{cls.__name__} is not a slotted dataclass that checks nothing")
        plan = _PLANS[cls] = [
            (
                f.name,
                None if f.default_factory is MISSING else f.default_factory,
                f.default,
                vars(cls)[f.name].__set__,
            )
            for f in fields(cls)
        ]
    return plan


def slot_setters(cls: type[Any], *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of the slots ``names`` of the slotted class ``cls``: each stores one field
    of a frozen value as its dataclass ``__init__`` would, without ``object.__setattr__``
    looking the attribute up again each time. Call it once the class is made (``slots=True``
    makes a new class)."""
    return tuple(vars(cls)[name].__set__ for name in names)
