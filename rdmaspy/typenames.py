"""The names of ``typing`` and ``mypy_extensions`` that the modules of a command's start use, without
importing either at run time.

Importing ``typing`` (and ``mypy_extensions``, which imports it) was some 12 M instructions of every
process's start, a tenth of a one-frame ``decode``, for names read at run time in a few places only: the
annotations are not evaluated (``from __future__ import annotations``; mypyc does not read them).  mypy sees
the real names (re-exported below, so mypyc compiles ``i64``, ``Final`` and ``mypyc_attr`` as before); at
run time each stands in as far as the modules use it: subscripted in a type alias, a ``Protocol`` or
``Generic`` base, ``TypeVar``, ``cast``, an ``i64`` conversion, a ``mypyc_attr`` decorator.

This module stays interpreted: mypyc would compile its ``else`` branch, unreachable to mypy, as an error.
"""
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import (Any as Any, BinaryIO as BinaryIO, Callable as Callable, ClassVar as ClassVar,
                        Final as Final, Generic as Generic, Iterable as Iterable, Iterator as Iterator,
                        Literal as Literal, Mapping as Mapping, Protocol as Protocol, Sequence as Sequence,
                        TextIO as TextIO, TypeVar as TypeVar, Union as Union, cast as cast)

    from mypy_extensions import i64 as i64
    from mypy_extensions import mypyc_attr as mypyc_attr
else:
    class _Form:
        """A typing form in a type alias: subscripted, it stays itself."""
        __slots__ = ("name",)

        def __init__(self, name):
            self.name = name

        def __getitem__(self, params):
            return self

        def __repr__(self):
            return f"rdmaspy.typenames.{self.name}"

    Any = _Form("Any")
    BinaryIO = _Form("BinaryIO")
    Callable = _Form("Callable")
    ClassVar = _Form("ClassVar")
    Final = _Form("Final")
    Iterable = _Form("Iterable")
    Iterator = _Form("Iterator")
    Literal = _Form("Literal")
    Mapping = _Form("Mapping")
    Sequence = _Form("Sequence")
    TextIO = _Form("TextIO")
    Union = _Form("Union")

    class Protocol:
        """A protocol's base: to the interpreter, a plain class."""
        __slots__ = ()

    class Generic:
        """A generic class's base: ``Generic[T]`` is the class itself (no slots: a compiled class may derive)."""
        __slots__ = ()

        def __class_getitem__(cls, params):
            return cls

    def TypeVar(name, *constraints, **options):     # noqa: N802 (typing's name)
        return name

    def cast(typ, value):
        return value

    i64 = int       # mypy_extensions.i64(x) is int(x) to the interpreter

    def mypyc_attr(*attrs, **kwattrs):
        return lambda cls: cls
