"""Plain classes shown, compared and hashed by their values, as dataclasses are.

The declarations and records of the compiled modules (``fields.Field``, ``rules.Rule``, the analysis
model's records, ...) are plain classes with ``__slots__`` and their own ``__init__``: mypyc 2.4 runs the
standard ``@dataclass`` decorator on a compiled dataclass at import (some 3 M instructions a class) and
leaves it that decorator's ``__init__``, a Python function.  Each names its fields in a class-level tuple
(``_FIELDS``) and its ``__repr__``, ``__eq__`` and ``__hash__`` are one line calling these.
"""
from __future__ import annotations


from .typenames import TYPE_CHECKING
if TYPE_CHECKING:
    from types import NotImplementedType


def record_values(obj: object, names: tuple[str, ...]) -> tuple[object, ...]:
    """The values of a record's fields, in order."""
    return tuple(getattr(obj, n) for n in names)


def record_repr(obj: object, names: tuple[str, ...]) -> str:
    """As a dataclass shows itself: ``Step(kind=..., frames=...)``."""
    return f"{type(obj).__name__}(" + ", ".join(f"{n}={getattr(obj, n)!r}" for n in names) + ")"


def record_eq(obj: object, other: object, names: tuple[str, ...]) -> bool | NotImplementedType:
    """As a dataclass compares: by the values, with an object of its own class only."""
    if other.__class__ is not obj.__class__:
        return NotImplemented
    return record_values(obj, names) == record_values(other, names)


def record_hash(obj: object, names: tuple[str, ...]) -> int:
    """As a frozen dataclass hashes: the hash of its values' tuple."""
    return hash(record_values(obj, names))
